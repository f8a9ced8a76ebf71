// The ESLint configuration this repository lints with: `npx n8n-node lint`, `npm run lint`
// and a bare `npx eslint` all load this file.
//
// Why two files: package.json declares "n8n": {"strict": true}. In strict mode `n8n-node lint`
// first checks that eslint.config.mjs is, word for word, n8n's default
// (`import { config } from '@n8n/node-cli/eslint'; export default config;`), then runs
// `eslint .`. ESLint (9.x, without the unstable_config_lookup_from_file flag) loads a single
// config file from the working directory, taking the first of eslint.config.js, .mjs, .cjs,
// .ts, .mts, .cts that exists: this file. eslint.config.mjs stays the untouched default, and
// this file applies it:
//
// - to the shipped source (nodes/, credentials/, package.json) exactly as n8n defines it:
//   every config object of the default config, unchanged (n8n Cloud's rules: no Node
//   built-ins, no `process`, no `setTimeout`, ..., plus @eslint/js, typescript-eslint and
//   import-x recommended);
// - with the scanner's layers on top (eslint.scanner.config.mjs: the community plugin's
//   recommended set and eslint-plugin-n8n-nodes-base's rule sets on the shipped files,
//   no-console, and inline eslint-disable comments ignored, as the scanner ignores them);
// - not to development code (test/ with the sandbox, bench/, scripts/, examples/): it is not
//   shipped, runs on Node and uses Node's APIs, which the Cloud rules forbid. It is
//   type-checked (`npm run typecheck`) and tested instead.
//
// `npm run lint` also runs eslint.config.mjs alone on the shipped source, so nothing in this
// file can weaken n8n's default rules there unnoticed.
//
// CommonJS (package.json has no "type"), so the two ES modules are loaded with import():
// ESLint awaits a config array given as a promise.
'use strict';

const DEVELOPMENT_CODE = ['test/', 'bench/', 'scripts/', 'examples/'];
const SHIPPED_SOURCE = ['nodes/**/*.ts', 'credentials/**/*.ts', 'package.json'];

// Loaded one after the other: both reach @n8n/eslint-plugin-community-nodes (an ES module that
// @n8n/node-cli's CommonJS config require()s), and Node refuses to require() a module that a
// concurrent import() is still loading.
async function load() {
	const n8nDefault = (await import('./eslint.config.mjs')).default;
	const { scannerLayers } = await import('./eslint.scanner.config.mjs');
	return [
		{ name: 'business-messaging/development-code-not-shipped', ignores: DEVELOPMENT_CODE },
		...n8nDefault,
		...scannerLayers.map((layer) =>
			layer.files || layer.linterOptions ? layer : { ...layer, files: SHIPPED_SOURCE },
		),
	];
}

module.exports = load();
