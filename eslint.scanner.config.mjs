// The same rules n8n's community-package scanner (@n8n/scan-community-package) applies:
// @n8n/eslint-plugin-community-nodes' recommended config, no-console, and
// eslint-plugin-n8n-nodes-base's community / credentials / nodes rule sets with the
// scanner's own exceptions. Inline eslint-disable comments are ignored, as the scanner does.
//
// Used two ways:
// - whole (`eslint --config eslint.scanner.config.mjs`): `npm run lint:dist`, the built files
//   as the scanner's tarball leg sees them (n8n's default config ignores dist/);
// - `scannerLayers`, added by eslint.config.js on top of n8n's default config for the
//   shipped source (nodes/, credentials/, package.json).
import tsParser from '@typescript-eslint/parser';
import { n8nCommunityNodesPlugin } from '@n8n/eslint-plugin-community-nodes';
import n8nNodesBase from 'eslint-plugin-n8n-nodes-base';

/**
 * The rule layers, without registering the n8n-nodes-base plugin: n8n's default config
 * registers its own copy (@n8n/node-cli's eslint-plugin-n8n-nodes-base 1.16.7, the scanner's
 * version; ours is 2.0.0 with the same 132 rules), and ESLint refuses a second plugin object
 * under the same name.
 */
export const scannerLayers = [
	{ linterOptions: { noInlineConfig: true, reportUnusedDisableDirectives: 'off' } },
	n8nCommunityNodesPlugin.configs.recommended,
	{ rules: { 'no-console': 'error' } },
	{ files: ['package.json'], rules: { ...n8nNodesBase.configs.community.rules } },
	{
		files: ['**/credentials/**/*.ts'],
		rules: {
			...n8nNodesBase.configs.credentials.rules,
			'n8n-nodes-base/cred-class-field-documentation-url-miscased': 'off',
			'n8n-nodes-base/cred-class-field-type-options-password-missing': 'off',
		},
	},
	{
		files: ['**/nodes/**/*.ts'],
		rules: {
			...n8nNodesBase.configs.nodes.rules,
			'n8n-nodes-base/node-class-description-inputs-wrong-regular-node': 'off',
			'n8n-nodes-base/node-class-description-outputs-wrong': 'off',
			'n8n-nodes-base/node-param-type-options-max-value-present': 'off',
		},
	},
];

export default [
	{
		ignores: [
			'node_modules/**',
			'test/**',
			'bench/**',
			'scripts/**',
			'examples/**',
			'*.js',
			'*.mjs',
			'package-lock.json',
		],
	},
	{ plugins: { 'n8n-nodes-base': n8nNodesBase } },
	...scannerLayers,
	{ files: ['**/*.json', '**/*.ts'], languageOptions: { parser: tsParser } },
];
