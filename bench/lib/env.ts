/**
 * One real n8n 2.41.1 (the e2e install, Node 24; or 1.123.81 on Node 20 with `line: 1`) with the
 * packed package, the sandbox in this process, an owner and a credential: what benchmarks 2 to 4 run
 * against. Everything is the real-n8n driver the end-to-end suite uses (test/real-n8n), started with
 * the settings the benchmarks need.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
	installN8n,
	installPackage,
	LINES,
	N8nClient,
	N8nProcess,
	REPO_ROOT,
	type Installation,
	type Line,
} from '../../test/real-n8n/n8n';
import { CREDENTIAL_TYPE } from '../../test/support/constants';
import { launchSandbox, SandboxControl, type Sandbox } from '../../test/real-n8n/sandbox';
import { log } from '../../test/real-n8n/util';

export interface BenchEnvironment {
	installation: Installation;
	n8n: N8nProcess;
	sandbox: Sandbox;
	control: SandboxControl;
	client: N8nClient;
	credential: { id: string; name: string };
	userFolder: string;
	/** flatted.parse from n8n's own dependencies, to read execution data. */
	parseExecutionData(text: string): unknown;
	stop(): Promise<void>;
}

/** npm run build, then npm pack into `outDir`: the tarball users would install. */
export function buildAndPack(outDir: string, skipBuild = false): string {
	mkdirSync(outDir, { recursive: true });
	if (!skipBuild) {
		const build = spawnSync('npm', ['run', 'build'], { cwd: REPO_ROOT, encoding: 'utf8' });
		if (build.status !== 0)
			throw new Error(`npm run build failed:\n${build.stdout}\n${build.stderr}`);
	}
	for (const file of readdirSync(outDir)) if (file.endsWith('.tgz')) rmSync(join(outDir, file));
	const pack = spawnSync('npm', ['pack', '--silent', '--pack-destination', outDir], {
		cwd: REPO_ROOT,
		encoding: 'utf8',
	});
	const name = pack.stdout.trim().split('\n').pop() ?? '';
	if (pack.status !== 0 || !name.endsWith('.tgz'))
		throw new Error(`npm pack failed:\n${pack.stdout}\n${pack.stderr}`);
	return join(outDir, name);
}

export const N8N_SETTINGS: Record<string, string> = {
	// Benchmark 4: binary data goes to disk, the mode users are told to use for large files.
	N8N_DEFAULT_BINARY_DATA_MODE: 'filesystem',
	// Benchmark 2 counts executions: none may be pruned while it runs (the default keeps 10,000).
	EXECUTIONS_DATA_PRUNE: 'false',
};

export async function startBenchEnvironment(options: {
	tarball: string;
	/** More packages to install beside ours, the same way (benchmark 2's minimal trigger). */
	extraTarballs?: string[];
	outDir: string;
	keep?: boolean;
	/** More n8n settings, over N8N_SETTINGS. */
	env?: Record<string, string>;
	/** Name of the n8n log file in outDir. */
	logName?: string;
	/** n8n 2.41.1 on Node 24 (the default) or 1.123.81 on Node 20. */
	line?: Line;
}): Promise<BenchEnvironment> {
	const line = options.line ?? 2;
	log(
		`n8n ${LINES[line].version}: checking the install (scripts/install-n8n.sh; the first run downloads it)`,
	);
	const installation = installN8n(line, join(options.outDir, 'install.log'));
	const userFolder = mkdtempSync(join(tmpdir(), 'bm-bench-n8n-'));
	installPackage(userFolder, options.tarball);
	for (const extra of options.extraTarballs ?? []) installAlso(userFolder, extra);
	const sandbox = await launchSandbox();
	let n8n: N8nProcess | undefined;
	try {
		const logFile = join(options.outDir, options.logName ?? 'n8n.log');
		rmSync(logFile, { force: true });
		n8n = await N8nProcess.start({
			installation,
			userFolder,
			logFile,
			env: { ...N8N_SETTINGS, ...options.env },
		});
		log(
			`n8n ${installation.version} at ${n8n.url} (pid ${n8n.child.pid}, log ${logFile}); sandbox at ${sandbox.baseUrl}`,
		);
		const client = new N8nClient(n8n.url, line, installation.dir);
		await client.setupOwner();
		const credential = await client.createCredential(
			'Business Messaging (bench)',
			CREDENTIAL_TYPE,
			{
				apiKey: sandbox.keys.all,
				baseUrl: sandbox.baseUrl,
				webhookSecret: '',
			},
		);
		const requireFromN8n = createRequire(
			join(installation.dir, 'node_modules', 'n8n', 'package.json'),
		);
		const flatted = requireFromN8n('flatted') as { parse: (text: string) => unknown };
		const bench: BenchEnvironment = {
			installation,
			n8n,
			sandbox,
			control: new SandboxControl(sandbox.baseUrl),
			client,
			credential,
			userFolder,
			parseExecutionData: (text) => flatted.parse(text),
			async stop() {
				await bench.n8n.stop();
				await sandbox.close();
				if (!options.keep) rmSync(userFolder, { recursive: true, force: true });
			},
		};
		return bench;
	} catch (error) {
		await n8n?.stop();
		await sandbox.close();
		if (!options.keep) rmSync(userFolder, { recursive: true, force: true });
		throw error;
	}
}

/**
 * Stops n8n and starts it again on the same folder, database and port, with `settings` over
 * N8N_SETTINGS (instead of the first start's), and signs in again: `env.n8n` and `env.client` change.
 */
export async function restartN8n(
	env: BenchEnvironment,
	settings: Record<string, string> = {},
): Promise<void> {
	const { port, logFile } = env.n8n;
	await env.n8n.stop();
	env.n8n = await N8nProcess.start({
		installation: env.installation,
		userFolder: env.userFolder,
		logFile,
		port,
		env: { ...N8N_SETTINGS, ...settings },
	});
	env.client = new N8nClient(env.n8n.url, env.installation.line, env.installation.dir);
	await env.client.login();
	log(`n8n ${env.installation.version} started again (pid ${env.n8n.child.pid})`);
}

/** npm install of one more tarball into <userFolder>/.n8n/nodes, beside the package installPackage put there. */
function installAlso(userFolder: string, tarball: string): void {
	const result = spawnSync(
		'npm',
		[
			'install',
			'--ignore-scripts',
			'--no-audit',
			'--no-fund',
			'--legacy-peer-deps',
			'--no-package-lock',
			tarball,
		],
		{ cwd: join(userFolder, '.n8n', 'nodes'), encoding: 'utf8' },
	);
	if (result.status !== 0)
		throw new Error(`npm install ${tarball} failed:\n${result.stdout}\n${result.stderr}`);
}

/** n8n's version as its package says. */
export function n8nVersion(installation: Installation): string {
	return (
		JSON.parse(
			readFileSync(join(installation.dir, 'node_modules', 'n8n', 'package.json'), 'utf8'),
		) as { version: string }
	).version;
}
