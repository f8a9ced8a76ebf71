/**
 * `npm run check:pack` (after `npm run build`): what `npm pack` would publish, checked and scanned.
 *
 * 1. The packed file list holds only dist/ (compiled nodes, credentials, icons), package.json, README.md and
 *    LICENSE: no tests, sandbox, bench, scripts, examples, docs or source maps of such files; every node and
 *    credential package.json declares is in it. Prints the tarball's size.
 * 2. n8n's own scanner (@n8n/scan-community-package, pinned) on the source and on the packed tarball, offline.
 *    Its CLI cannot run offline: `analyzePackageByName` reads the registry's metadata and provenance
 *    attestation, downloads the source from codeload.github.com at the attested commit and the tarball with
 *    `npm pack <name>@<version>`, all before any analysis. This script calls the function those steps feed,
 *    `analyzePackage(dir, patterns)`, with the same two legs and patterns as the CLI: the repository with
 *    SOURCE_FILE_PATTERNS (what the attested source checkout would be) and the extracted local tarball with
 *    `**\/*.js` + `package.json`. The provenance leg cannot be checked before publishing: publish.yml publishes
 *    with `--provenance`.
 *
 * Exit code 0 only when both parts pass.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

interface PackFile {
	path: string;
	size: number;
}
interface PackResult {
	filename: string;
	size: number;
	unpackedSize: number;
	entryCount: number;
	files: PackFile[];
}
interface ScanResult {
	passed: boolean;
	message?: string;
	details?: string;
}
interface Scanner {
	analyzePackage(dir: string, patterns?: string[]): Promise<ScanResult>;
	SOURCE_FILE_PATTERNS: string[];
}

const root = resolve(__dirname, '..');
const TOP_LEVEL = new Set(['package.json', 'README.md', 'LICENSE']);
const DIST_DIRS = ['dist/nodes/', 'dist/credentials/', 'dist/icons/'];
/** Path segments that belong to development code, never to the package. */
const FORBIDDEN_SEGMENT =
	/(^|\/)(test|tests|__tests__|sandbox|bench|scripts|examples|docs|coverage|node_modules)(\/|$)|\.(test|spec)\.[jt]s/;

/** Reasons the file list is wrong; empty when it is right. */
export function packProblems(
	files: string[],
	declared: string[],
	mapSources: Map<string, string[]>,
): string[] {
	const problems: string[] = [];
	for (const file of files) {
		if (TOP_LEVEL.has(file)) continue;
		if (!DIST_DIRS.some((dir) => file.startsWith(dir)))
			problems.push(
				`${file}: not dist/nodes, dist/credentials, dist/icons, package.json, README.md or LICENSE`,
			);
		else if (FORBIDDEN_SEGMENT.test(file)) problems.push(`${file}: development code`);
	}
	for (const file of TOP_LEVEL) if (!files.includes(file)) problems.push(`${file} is missing`);
	for (const file of declared)
		if (!files.includes(file)) problems.push(`${file} (declared in package.json "n8n") is missing`);
	for (const [map, sources] of mapSources) {
		const stray = sources.filter(
			(source) => !/^(\.\.\/)+(nodes|credentials)\//.test(source) || FORBIDDEN_SEGMENT.test(source),
		);
		if (stray.length > 0)
			problems.push(`${map}: maps files that are not shipped source: ${stray.join(', ')}`);
	}
	return problems;
}

const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;

async function main(): Promise<number> {
	const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
		n8n: { nodes: string[]; credentials: string[] };
	};
	if (!existsSync(join(root, 'dist'))) throw new Error('no dist/: run `npm run build` first');
	const work = mkdtempSync(join(tmpdir(), 'bm-check-pack-'));
	try {
		const output = execFileSync('npm', ['pack', '--json', '--pack-destination', work], {
			cwd: root,
			encoding: 'utf8',
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		const [packed] = JSON.parse(output) as PackResult[];
		const tarball = join(work, packed.filename);
		const extracted = join(work, 'package');
		execFileSync('tar', ['-xzf', tarball, '-C', work]);

		const files = packed.files.map((f) => f.path).sort();
		const mapSources = new Map<string, string[]>();
		for (const file of files.filter((f) => f.endsWith('.map'))) {
			mapSources.set(
				file,
				(JSON.parse(readFileSync(join(extracted, file), 'utf8')) as { sources: string[] }).sources,
			);
		}
		const problems = packProblems(files, [...pkg.n8n.nodes, ...pkg.n8n.credentials], mapSources);
		console.log(
			`npm pack: ${packed.filename}, ${kib(packed.size)} packed, ${kib(packed.unpackedSize)} unpacked, ${packed.entryCount} files ` +
				`(${files.filter((f) => f.endsWith('.js')).length} .js, ${files.filter((f) => f.endsWith('.d.ts')).length} .d.ts, ${mapSources.size} .map)`,
		);
		if (problems.length > 0) {
			console.log(`FAIL: the package would publish what it must not:\n  ${problems.join('\n  ')}`);
		} else {
			console.log(
				'PASS: only dist/ (nodes, credentials, icons), package.json, README.md, LICENSE; every declared node and credential present',
			);
		}

		// The scanner is an ES module; TypeScript's CommonJS output would turn import() into require().
		const importModule = new Function('specifier', 'return import(specifier)') as (
			s: string,
		) => Promise<Scanner>;
		const scanner = await importModule(
			require.resolve('@n8n/scan-community-package/scanner/scanner.mjs'),
		);
		const legs: Array<[string, string, string[]]> = [
			["source (repository, the CLI's source patterns)", root, scanner.SOURCE_FILE_PATTERNS],
			[
				`packed tarball (${packed.filename}, **/*.js + package.json)`,
				extracted,
				['**/*.js', 'package.json'],
			],
		];
		let scanned = true;
		for (const [label, dir, patterns] of legs) {
			const started = Date.now();
			const result = await scanner.analyzePackage(dir, patterns);
			const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
			if (result.passed) console.log(`PASS: @n8n/scan-community-package on the ${label} (${took})`);
			else {
				scanned = false;
				console.log(
					`FAIL: @n8n/scan-community-package on the ${label}: ${result.message}\n${result.details ?? ''}`,
				);
			}
		}
		// A scan over nothing, or with rules that did not load, would pass: the same leg on the tarball plus one
		// file doing what n8n forbids (console, process, child_process) must fail.
		if (!readdirSync(join(extracted, 'dist', 'nodes')).length)
			throw new Error('the tarball has no dist/nodes');
		writeFileSync(
			join(extracted, 'dist', 'nodes', 'canary.js'),
			"const { exec } = require('child_process');\nconsole.log(process.env);\nexec('id');\n",
		);
		const canary = await scanner.analyzePackage(extracted, ['**/*.js', 'package.json']);
		if (canary.passed) {
			scanned = false;
			console.log(
				'FAIL: the scanner passed a file using console, process and child_process: its rules did not run',
			);
		} else
			console.log(
				`PASS: control: the same scan refuses a file using console, process and child_process (${(canary.details?.match(/error/g) ?? []).length} errors)`,
			);
		return problems.length === 0 && scanned ? 0 : 1;
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

if (require.main === module) {
	main()
		.then((code) => process.exit(code))
		.catch((error: Error) => {
			console.error(`check:pack failed: ${error.message}`);
			process.exit(1);
		});
}
