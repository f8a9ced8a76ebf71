/**
 * `npm run bench`: what the trigger and the action node cost, against what users would use
 * instead, measured side by side in one run. Prints a table with the machine and writes
 * bench/results/latest.json (and latest.md, the table as in the README).
 *
 *   npm run bench [-- --only 1,2,3,4,diag] [--quick] [--skip-build] [--keep]
 *
 *   1     the trigger's receive path in-process vs HMAC + timingSafeEqual + JSON.parse (Node 20 and 24)
 *   2     signed events through n8n 2.41.1: our trigger vs n8n's Webhook node, concurrency 1, 8, 32
 *   3     1,000 Get Status items: our node vs the HTTP Request node with our credential
 *   4     a 200 MiB media file: peak RSS of n8n for Media → Download, the trigger's Download Media, HTTP Request
 *   diag  benchmark 2 again in an n8n with N8N_EXPRESSION_ENGINE=legacy: what bounds benchmark 2
 *   queue benchmark 2 through n8n in queue mode behind haproxy, 1 then 2 webhook processors + workers
 *
 * Benchmarks, not tests: nothing in `npm test` depends on them. About 10 minutes on 2 cores.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { installationAt, installN8n, REPO_ROOT } from '../test/e2e/lib/n8n';
import { errorText, log } from '../test/e2e/lib/util';
import { runActionBench, type ActionResult } from './action';
import type { InProcessResult } from './inprocess';
import { buildAndPack, n8nVersion, startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { describeMachine, machineLines, type Machine } from './lib/machine';
import { fixed, ratioText } from './lib/stats';
import { runMediaBench, type MediaKind, type MediaResult } from './media';
import { runQueueBench, stopQueueBench, type QueueBenchResult } from './queue';
import { runWebhookBench, type WebhookOptions, type WebhookResult } from './webhooks';

const RESULTS = join(REPO_ROOT, 'bench', 'results');

export const GOALS = {
	inprocessMaxRatio: 1.3,
	webhookMinRatio: 0.95,
	/** "Far below the service's 8 s timeout": a quarter of it. */
	webhookMaxP99Ms: 2000,
	actionMinRatio: 1.0,
	/** "Well under the file size": a streamed download grows by buffers, a buffered one by >= the file. */
	mediaMaxGrowthRatio: 0.25,
};

interface Options {
	only: Set<string>;
	quick: boolean;
	skipBuild: boolean;
	keep: boolean;
}

function parseArgs(argv: string[]): Options {
	const options: Options = { only: new Set(['1', '2', '3', '4', 'diag', 'queue']), quick: false, skipBuild: false, keep: false };
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		if (flag === '--only') options.only = new Set((argv[++i] ?? '').split(',').map((s) => s.trim()));
		else if (flag === '--quick') options.quick = true;
		else if (flag === '--skip-build') options.skipBuild = true;
		else if (flag === '--keep') options.keep = true;
		else if (flag === '--help' || flag === '-h') {
			console.log('npm run bench [-- --only 1,2,3,4,diag,queue] [--quick] [--skip-build] [--keep]');
			process.exit(0);
		} else throw new Error(`Unknown argument ${flag}`);
	}
	return options;
}

export interface Results {
	machine: Machine;
	runtime_s: number;
	quick: boolean;
	goals: typeof GOALS;
	inprocess?: InProcessResult[];
	webhooks?: WebhookResult;
	webhooks_legacy_engine?: WebhookResult;
	action?: ActionResult;
	media?: MediaResult;
	queue?: QueueBenchResult;
	errors: string[];
	table: Row[];
}

export interface Row {
	benchmark: string;
	ours: string;
	baseline: string;
	ratio: string;
	goal: string;
	met: 'yes' | 'NO' | '-';
}

/** Runs bench/inprocess.ts in a fresh process of the given Node binary. */
function inProcess(nodeBin: string, quick: boolean): InProcessResult {
	const result = spawnSync(
		nodeBin,
		['-r', join(REPO_ROOT, 'node_modules', 'ts-node', 'register', 'transpile-only'), join(REPO_ROOT, 'bench', 'inprocess.ts'), '--json', ...(quick ? ['--rounds', '10'] : [])],
		{ cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, TS_NODE_PROJECT: join(REPO_ROOT, 'tsconfig.json') } },
	);
	if (result.status !== 0) throw new Error(`bench/inprocess.ts under ${nodeBin} failed:\n${result.stderr}`);
	return JSON.parse(result.stdout.trim().split('\n').pop() ?? '') as InProcessResult;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const met = (ok: boolean): Row['met'] => (ok ? 'yes' : 'NO');

export function tableRows(r: Results): Row[] {
	const rows: Row[] = [];
	for (const run of r.inprocess ?? []) {
		for (const s of run.sizes) {
			rows.push({
				benchmark: `1. Trigger per event in-process, ${s.label} body, Node ${run.node.replace(/^v/, '').split('.')[0]}`,
				ours: `${fixed(s.ours_ns / 1000, 1)} µs`,
				baseline: `${fixed(s.floor_ns / 1000, 1)} µs (HMAC + timingSafeEqual + JSON.parse)`,
				ratio: ratioText(s.ratio),
				goal: `≤ ${GOALS.inprocessMaxRatio}x`,
				met: met(s.ratio.median <= GOALS.inprocessMaxRatio),
			});
		}
	}
	const webhookRows = (w: WebhookResult, label: string, diagnostic: boolean) => {
		for (const c of w.summary) {
			rows.push({
				benchmark: `${label} events/s, concurrency ${c.concurrency} (${c.events_per_run} events × ${w.reps})`,
				ours: fixed(c.ours.events_per_s, 1),
				baseline: `${fixed(c.theirs.events_per_s, 1)} (Webhook node)`,
				ratio: ratioText(c.ratio),
				goal: diagnostic ? '(explains 2)' : `≥ ${GOALS.webhookMinRatio}x`,
				met: diagnostic ? '-' : met(c.ratio.median >= GOALS.webhookMinRatio),
			});
			if (diagnostic) continue;
			rows.push({
				benchmark: `${label} time to 2xx p50 / p99 (worst p99), concurrency ${c.concurrency}`,
				ours: `${fixed(c.ours.p50_ms, 0)} / ${fixed(c.ours.p99_ms, 0)} (${fixed(c.ours.p99_max_ms, 0)}) ms`,
				baseline: `${fixed(c.theirs.p50_ms, 0)} / ${fixed(c.theirs.p99_ms, 0)} (${fixed(c.theirs.p99_max_ms, 0)}) ms`,
				ratio: `${fixed(c.ours.p99_ms / c.theirs.p99_ms)}x (p99)`,
				goal: `p99 ≤ ${GOALS.webhookMaxP99Ms / 1000} s (timeout 8 s)`,
				met: met(c.ours.p99_max_ms <= GOALS.webhookMaxP99Ms),
			});
		}
		if (diagnostic) return;
		const t = w.totals;
		rows.push({
			benchmark: `${label} 2xx answers vs executions recorded (all runs)`,
			ours: `${t.ours.ok_2xx} / ${t.ours.executions_recorded}, lost ${t.ours.lost}`,
			baseline: `${t.theirs.ok_2xx} / ${t.theirs.executions_recorded}, lost ${t.theirs.lost}`,
			ratio: '-',
			goal: 'nothing lost',
			met: met(t.ours.lost === 0 && t.ours.non_2xx === 0 && t.ours.errors === 0 && t.ours.failed_executions === 0),
		});
	};
	if (r.webhooks) webhookRows(r.webhooks, '2.', false);
	if (r.webhooks_legacy_engine) webhookRows(r.webhooks_legacy_engine, '2b. N8N_EXPRESSION_ENGINE=legacy:', true);
	if (r.action) {
		rows.push({
			benchmark: `3. Get Status, ${r.action.items} items (× ${r.action.reps}), items/s`,
			ours: fixed(r.action.ours_items_per_s, 0),
			baseline: `${fixed(r.action.theirs_items_per_s, 0)} (HTTP Request node)`,
			ratio: ratioText(r.action.ratio),
			goal: `≥ ${GOALS.actionMinRatio}x`,
			met: met(r.action.ratio.median >= GOALS.actionMinRatio),
		});
	}
	if (r.queue) {
		for (const run of r.queue.runs) webhookRows(run.result, `Q. queue mode, ${run.processors} webhook processor(s) + ${run.workers} worker(s), through haproxy:`, false);
		for (const s of r.queue.scaling) {
			rows.push({
				benchmark: `Q. queue mode, events/s with 2 webhook processors + 2 workers over 1 + 1, concurrency ${s.concurrency}`,
				ours: ratioText(s.ours),
				baseline: `${ratioText(s.theirs)} (Webhook node)`,
				ratio: '-',
				goal: `(${r.queue.cores} cores)`,
				met: '-',
			});
		}
	}
	if (r.media) {
		const m = r.media;
		const label: Record<MediaKind, string> = { download: 'Media → Download', trigger: "Trigger's Download Media", http: 'HTTP Request' };
		for (const kind of ['download', 'trigger'] as const) {
			rows.push({
				benchmark: `4. Peak RSS growth, ${mib(m.size_bytes)} file, ${label[kind]} (× ${m.reps})`,
				ours: `+${mib(m.growth_bytes[kind])} (${fixed(m.growth_ratio[kind] * 100, 1)}% of file, worst ${fixed(m.growth_ratio_max[kind] * 100, 1)}%)`,
				baseline: `+${mib(m.growth_bytes.http)} (${fixed(m.growth_ratio.http * 100, 1)}%, HTTP Request)`,
				ratio: `${fixed(m.growth_bytes[kind] / Math.max(1, m.growth_bytes.http))}x`,
				goal: `< ${GOALS.mediaMaxGrowthRatio * 100}% of the file`,
				met: met(m.growth_ratio_max[kind] < GOALS.mediaMaxGrowthRatio),
			});
		}
	}
	return rows;
}

export function markdownTable(rows: Row[]): string {
	const header: Array<keyof Row> = ['benchmark', 'ours', 'baseline', 'ratio', 'goal', 'met'];
	const titles = ['benchmark', 'ours', 'baseline', 'ratio', 'goal', 'met?'];
	const escape = (s: string) => s.replace(/\|/g, '\\|');
	return [
		`| ${titles.join(' | ')} |`,
		`|${titles.map(() => '---').join('|')}|`,
		...rows.map((row) => `| ${header.map((key) => escape(row[key])).join(' | ')} |`),
	].join('\n');
}

async function main(): Promise<void> {
	const options = parseArgs(process.argv.slice(2));
	const started = Date.now();
	const machine = describeMachine();
	const results: Results = { machine, runtime_s: 0, quick: options.quick, goals: GOALS, errors: [], table: [] };
	mkdirSync(RESULTS, { recursive: true });
	const outDir = join(RESULTS, 'run.tmp');
	mkdirSync(outDir, { recursive: true });
	const needsN8n = ['2', '3', '4', 'diag', 'queue'].some((part) => options.only.has(part));

	let tarball = '';
	if (needsN8n) {
		log(options.skipBuild ? 'packing dist/ as it is' : 'building and packing the package');
		tarball = buildAndPack(outDir, options.skipBuild);
	}
	const installation = needsN8n || options.only.has('1') ? installN8n(2, join(outDir, 'install.log')) : undefined;
	if (installation) {
		machine.n8n_version = n8nVersion(installation);
		machine.n8n_node = spawnSync(installationAt(2, installation.dir).nodeBin, ['--version'], { encoding: 'utf8' }).stdout.trim().replace(/^v/, '');
	}

	if (options.only.has('1')) {
		log('1. trigger in-process vs the floor (system Node, then the Node that runs n8n 2.x)');
		results.inprocess = [inProcess(process.execPath, options.quick)];
		if (installation) results.inprocess.push(inProcess(installation.nodeBin, options.quick));
	}

	let env: BenchEnvironment | undefined;
	let stopping = false;
	const stopAll = async () => {
		if (stopping) return;
		stopping = true;
		await env?.stop();
		await stopQueueBench();
	};
	process.on('SIGINT', () => void stopAll().then(() => process.exit(130)));
	process.on('SIGTERM', () => void stopAll().then(() => process.exit(143)));

	const webhookOptions: WebhookOptions = options.quick
		? { concurrencies: [1, 8, 32], reps: 1, eventsFor: (c) => (c === 1 ? 50 : 100) }
		: { concurrencies: [1, 8, 32], reps: 3, eventsFor: (c) => (c === 1 ? 200 : c === 8 ? 300 : 450) };

	if (['2', '3', '4'].some((part) => options.only.has(part))) {
		env = await startBenchEnvironment({ tarball, outDir, keep: options.keep });
		try {
			if (options.only.has('2')) {
				log('2. signed events through n8n: Business Messaging Trigger vs Webhook node');
				results.webhooks = await runWebhookBench(env, webhookOptions);
			}
			if (options.only.has('3')) {
				log('3. Get Status × 1,000 items: Business Messaging vs HTTP Request');
				results.action = await runActionBench(env, { items: 1000, reps: options.quick ? 2 : 5 });
			}
			if (options.only.has('4')) {
				log('4. media memory: Media → Download, trigger Download Media, HTTP Request');
				results.media = await runMediaBench(env, { sizeBytes: (options.quick ? 50 : 200) * 2 ** 20, reps: options.quick ? 1 : 3 });
			}
		} catch (error) {
			results.errors.push(errorText(error));
			log(`FAILED: ${errorText(error)}\nn8n log tail:\n${env.n8n.logTail(30)}`);
		} finally {
			await env.stop();
			env = undefined;
		}
	}

	if (options.only.has('diag')) {
		log('2b. the same events in an n8n with N8N_EXPRESSION_ENGINE=legacy (no expression isolate per request)');
		env = await startBenchEnvironment({ tarball, outDir, keep: options.keep, env: { N8N_EXPRESSION_ENGINE: 'legacy' }, logName: 'n8n-legacy-engine.log' });
		try {
			results.webhooks_legacy_engine = await runWebhookBench(env, { ...webhookOptions, reps: options.quick ? 1 : 2 });
		} catch (error) {
			results.errors.push(`2b: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		} finally {
			await env.stop();
			env = undefined;
		}
	}

	if (options.only.has('queue') && installation) {
		log('Q. benchmark 2 through n8n in queue mode (Postgres, Redis, haproxy; 1 then 2 webhook processors + workers)');
		const queueOptions: WebhookOptions = options.quick
			? { concurrencies: [8, 32], reps: 1, eventsFor: () => 100 }
			: { concurrencies: [8, 32], reps: 2, eventsFor: (c) => (c === 8 ? 300 : 450) };
		try {
			results.queue = await runQueueBench({ installation, tarball, outDir, keep: options.keep, webhook: queueOptions });
		} catch (error) {
			results.errors.push(`queue: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	machine.load_average_end = loadavg().map((v) => Math.round(v * 100) / 100);
	results.runtime_s = Math.round((Date.now() - started) / 1000);
	results.table = tableRows(results);
	const table = markdownTable(results.table);
	const text = [
		table,
		'',
		...machineLines(machine),
		`Runtime ${Math.floor(results.runtime_s / 60)} min ${results.runtime_s % 60} s${options.quick ? ' (--quick: fewer events and repetitions, a 50 MiB file)' : ''}.`,
		...results.errors.map((e) => `ERROR: ${e}`),
	].join('\n');
	// Only a complete run replaces latest.*; a --quick or --only run goes to run.tmp/ (not committed).
	const complete = !options.quick && ['1', '2', '3', '4', 'diag'].every((part) => options.only.has(part));
	const base = complete ? join(RESULTS, 'latest') : join(outDir, 'partial');
	writeFileSync(`${base}.json`, `${JSON.stringify(results, null, 2)}\n`);
	writeFileSync(`${base}.md`, `${text}\n`);
	console.log(`\n${text}\n\nWritten to ${base}.json and ${base}.md`);
	process.exit(results.errors.length ? 1 : 0);
}

if (require.main === module) {
	main().catch((error) => {
		console.error(`npm run bench failed: ${errorText(error)}`);
		process.exit(1);
	});
}

