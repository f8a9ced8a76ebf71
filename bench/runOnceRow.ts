/**
 * Benchmark "run-once-row" (issue 32): the run-once check (routing/runOnce.ts) at steady state, with
 * n8n's deduplication row full beside an empty one, in ONE n8n per line (2.41.1 on Node 24 with its
 * default settings, then 1.123.81 on Node 20, which the driver runs with the legacy expression engine).
 *
 * Two accounts (two sandboxes, each its own key and credential), one active workflow on each: Trigger
 * (Manual registration, message.inbound, no catch-up) → No Operation. Before the measure, the "full"
 * workflow takes `fill.events` distinct signed events (20,000 by default: its row then holds the newest
 * RUN_ONCE_MAX_ENTRIES keys, as after that many messages); they go through n8n with the legacy
 * expression engine, 4 to 5 times faster, and n8n is started again with the settings measured. The
 * "empty" workflow has no row before its first event. Then the same signed events to both, alternately
 * (full, empty, then empty, full, ...), `concurrency` at a time. Per run:
 *  - events/s: events / time from the first request until n8n stored every execution (the store call
 *    is in the execution, after the 2xx); answered/s and p50 / p99 time to 2xx beside it;
 *  - writes to the store: n8n's processed_data row writes (INSERT or UPDATE) and the bytes of the
 *    values written, counted by SQLite triggers this benchmark adds to n8n's database (a counter row
 *    per workflow, updated in each write's own transaction, so one more page per write for both);
 *  - what n8n wrote in all: the n8n process's write() bytes (/proc/<pid>/io wchar: database, WAL, log
 *    and sockets), bytes it sent to the disk (write_bytes), and database + WAL file growth;
 *  - n8n's CPU (/proc), the row's keys and length after.
 * Each run ends 2 s after the last execution was stored: runOnce checks a key again about 1 s after
 * taking it (VERIFY_AFTER_MS), one more write of the row, counted with its run.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { RUN_ONCE_MAX_ENTRIES } from '../nodes/BusinessMessagingTrigger/routing/runOnce';
import { LINES, type Line } from '../test/real-n8n/n8n';
import { launchSandbox, type Sandbox } from '../test/real-n8n/sandbox';
import { log, sleep } from '../test/real-n8n/util';
import { CREDENTIAL_TYPE, TRIGGER_TYPE } from '../test/support/constants';
import { SIGNING_SECRET } from '../test/support/fixtures';
import { fillRow, type RunOnceTarget } from './conversations';
import { restartN8n, startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { awaitExecutionCount, executionCount, node } from './lib/n8n';
import { fixed, quantile, spread, type Spread } from './lib/stats';
import { cpuMs, fire, signedEvents } from './webhooks';

/** The goal: the full row's events/s at least this share of the empty row's. */
export const RUN_ONCE_ROW_MIN_RATIO = 0.9;

export interface RunOnceRowOptions {
	lines: Line[];
	/** 'events': signed events through n8n; 'sql': the row written into n8n's SQLite (quick runs). */
	fill: { mode: 'events' | 'sql'; events: number; concurrency: number };
	events: number;
	concurrency: number;
	reps: number;
}

export const DEFAULT_RUN_ONCE_ROW_OPTIONS: RunOnceRowOptions = {
	lines: [2, 1],
	fill: { mode: 'events', events: 20_000, concurrency: 16 },
	events: 200,
	concurrency: 8,
	reps: 4,
};

export const QUICK_RUN_ONCE_ROW_OPTIONS: RunOnceRowOptions = {
	lines: [2, 1],
	fill: { mode: 'sql', events: RUN_ONCE_MAX_ENTRIES, concurrency: 16 },
	events: 60,
	concurrency: 8,
	reps: 1,
};

export const RUN_ONCE_ROW_VARIANTS = ['full', 'empty'] as const;
const VARIANTS = RUN_ONCE_ROW_VARIANTS;
type Variant = (typeof VARIANTS)[number];
const WARM_UP_EVENTS = 20;
const FILL_CHUNK = 2_000;
const AFTER_RUN_MS = 2_000;

export interface RowRun {
	variant: Variant;
	rep: number;
	events: number;
	ok_2xx: number;
	executions_recorded: number;
	events_per_s: number;
	answered_per_s: number;
	p50_ms: number;
	p99_ms: number;
	cpu_ms_per_event: number;
	store_writes_per_event: number;
	store_bytes_per_event: number;
	/** /proc/<pid>/io wchar and write_bytes of the n8n process, per event. */
	n8n_write_bytes_per_event: number;
	disk_write_bytes_per_event: number;
	db_growth_bytes_per_event: number;
	keys_after: number;
	row_bytes_after: number;
	load_average_1m: number;
}

export interface RowLineResult {
	line: Line;
	n8n: string;
	node: string;
	fill: { mode: 'events' | 'sql'; events: number; seconds: number; executions: number };
	runs: RowRun[];
	summary: Array<{ variant: Variant } & Record<Exclude<keyof RowRun, 'variant'>, Spread>>;
	/** Full over empty events/s, per repetition. */
	ratio: Spread;
	goal_met: boolean;
}

export interface RunOnceRowResult {
	options: RunOnceRowOptions;
	lines: RowLineResult[];
}

/** Runs SQL on n8n's database with the sqlite3 shell (n8n keeps it open: WAL, a busy timeout). */
function sqlite(env: BenchEnvironment, statements: string): string[][] {
	const database = join(env.userFolder, '.n8n', 'database.sqlite');
	const result = spawnSync('sqlite3', ['-separator', '|', database], {
		input: `.timeout 30000\n${statements}\n`,
		encoding: 'utf8',
	});
	if (result.status !== 0 || result.stderr)
		throw new Error(`sqlite3 ${database}: ${result.stderr || result.error?.message}`);
	return result.stdout.trim()
		? result.stdout
				.trim()
				.split('\n')
				.map((l) => l.split('|'))
		: [];
}

/** Counts every write of a processed_data row (its workflow, the value's length), in the write's transaction. */
function countStoreWrites(env: BenchEnvironment): void {
	const upsert = `INSERT INTO bench_store_writes VALUES (NEW.workflowId, 1, length(NEW.value)) ON CONFLICT(workflowId) DO UPDATE SET writes = writes + 1, bytes = bytes + excluded.bytes;`;
	sqlite(
		env,
		`CREATE TABLE bench_store_writes (workflowId TEXT PRIMARY KEY, writes INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TRIGGER bench_store_insert AFTER INSERT ON processed_data BEGIN ${upsert} END;
CREATE TRIGGER bench_store_update AFTER UPDATE ON processed_data BEGIN ${upsert} END;`,
	);
}

interface Probe {
	cpu: number;
	wchar: number;
	writeBytes: number;
	dbBytes: number;
	writes: number;
	bytes: number;
	keys: number;
	rowBytes: number;
}

function probe(env: BenchEnvironment, workflowId: string): Probe {
	const pid = env.n8n.child.pid as number;
	const io = readFileSync(`/proc/${pid}/io`, 'utf8');
	const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1] ?? NaN);
	const file = (suffix: string) => {
		try {
			return statSync(join(env.userFolder, '.n8n', `database.sqlite${suffix}`)).size;
		} catch {
			return 0;
		}
	};
	const id = workflowId.replace(/'/g, "''");
	const [[writes, bytes] = ['0', '0']] = sqlite(
		env,
		`SELECT writes, bytes FROM bench_store_writes WHERE workflowId = '${id}';`,
	);
	const [[keys, rowBytes] = ['0', '0']] = sqlite(
		env,
		`SELECT json_array_length(value, '$.data'), length(value) FROM processed_data WHERE workflowId = '${id}';`,
	);
	return {
		cpu: cpuMs(pid),
		wchar: field('wchar'),
		writeBytes: field('write_bytes'),
		dbBytes: file('') + file('-wal'),
		writes: Number(writes),
		bytes: Number(bytes),
		keys: Number(keys),
		rowBytes: Number(rowBytes),
	};
}

interface Target extends RunOnceTarget {
	variant: Variant;
	number: string;
}

async function setUpTargets(env: BenchEnvironment, second: Sandbox): Promise<Target[]> {
	const targets: Target[] = [];
	for (const [variant, sandbox] of [
		['full', env.sandbox],
		['empty', second],
	] as const) {
		const credential = await env.client.createCredential(
			`Business Messaging (bench, ${variant} row)`,
			CREDENTIAL_TYPE,
			{ apiKey: sandbox.keys.all, baseUrl: sandbox.baseUrl, webhookSecret: SIGNING_SECRET },
		);
		const webhookId = randomUUID();
		const trigger = node(
			'Trigger',
			TRIGGER_TYPE,
			2,
			{ registration: 'manual', events: ['message.inbound'], catchUp: false, options: {} },
			0,
			{
				webhookId,
				credentials: { [CREDENTIAL_TYPE]: { id: credential.id, name: credential.name } },
			},
		);
		const workflow = await env.client.createWorkflow({
			name: `bench run-once row: ${variant} row, trigger → No Operation`,
			nodes: [trigger, node('Done', 'n8n-nodes-base.noOp', 1, {}, 220)],
			connections: { Trigger: { main: [[{ node: 'Done', type: 'main', index: 0 }]] } },
			settings: { executionOrder: 'v1' },
		});
		const outcome = await env.client.activateAndSettle(workflow.id);
		if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
		targets.push({
			variant,
			url: `/webhook/${webhookId}/webhook`,
			workflowId: workflow.id,
			nodeId: String(workflow.nodes.find((n) => n.name === 'Trigger')?.id ?? trigger.id),
			number: sandbox.numbers[0].phone_number_id,
		});
	}
	return targets;
}

/** Sends `events` signed events and waits until n8n stored their executions. */
async function send(env: BenchEnvironment, target: Target, events: number, concurrency: number) {
	const before = await executionCount(env.client, target.workflowId);
	const t0 = Date.now();
	const fired = await fire(
		`${env.n8n.url}${target.url}`,
		signedEvents(events, SIGNING_SECRET, target.number),
		concurrency,
	);
	const count = await awaitExecutionCount(env.client, target.workflowId, before + events, 120_000);
	return { fired, recorded: count - before, ms: Date.now() - t0 };
}

/** The full workflow's row after `events` messages: sent through n8n, or written into its database. */
async function fill(env: BenchEnvironment, target: Target, options: RunOnceRowOptions) {
	const { mode, events, concurrency } = options.fill;
	const t0 = Date.now();
	let executions = 0;
	if (mode === 'sql') fillRow(env, target);
	else
		for (let sent = 0; sent < events; sent += FILL_CHUNK) {
			const chunk = Math.min(FILL_CHUNK, events - sent);
			const { fired, recorded } = await send(env, target, chunk, concurrency);
			executions += recorded;
			if (fired.ok !== chunk)
				throw new Error(`fill: ${fired.ok}/${chunk} 2xx (${fired.firstProblem})`);
			log(
				`  fill: ${sent + chunk}/${events} events, ${executions} executions, ${fixed((executions / (Date.now() - t0)) * 1000, 1)}/s`,
			);
		}
	return {
		mode,
		events: mode === 'sql' ? 0 : events,
		seconds: (Date.now() - t0) / 1000,
		executions,
	};
}

async function measure(
	env: BenchEnvironment,
	target: Target,
	rep: number,
	events: number,
	concurrency: number,
): Promise<RowRun> {
	const before = probe(env, target.workflowId);
	const { fired, recorded, ms } = await send(env, target, events, concurrency);
	await sleep(AFTER_RUN_MS);
	const after = probe(env, target.workflowId);
	const per = (key: keyof Probe) => (after[key] - before[key]) / events;
	const latencies = [...fired.latencies].sort((a, b) => a - b);
	return {
		variant: target.variant,
		rep,
		events,
		ok_2xx: fired.ok,
		executions_recorded: recorded,
		events_per_s: (events / ms) * 1000,
		answered_per_s: (events / fired.wallMs) * 1000,
		p50_ms: quantile(latencies, 0.5),
		p99_ms: quantile(latencies, 0.99),
		cpu_ms_per_event: per('cpu'),
		store_writes_per_event: per('writes'),
		store_bytes_per_event: per('bytes'),
		n8n_write_bytes_per_event: per('wchar'),
		disk_write_bytes_per_event: per('writeBytes'),
		db_growth_bytes_per_event: per('dbBytes'),
		keys_after: after.keys,
		row_bytes_after: after.rowBytes,
		load_average_1m: Math.round(loadavg()[0] * 100) / 100,
	};
}

async function runLine(
	line: Line,
	setup: { tarball: string; outDir: string; keep?: boolean },
	options: RunOnceRowOptions,
): Promise<RowLineResult> {
	// The fill runs with the legacy engine (no isolate per event); the measure with the line's settings.
	const env = await startBenchEnvironment({
		...setup,
		line,
		env: { N8N_EXPRESSION_ENGINE: 'legacy' },
		logName: `n8n-run-once-row-${line}.log`,
	});
	const second = await launchSandbox();
	try {
		const targets = await setUpTargets(env, second);
		countStoreWrites(env);
		const filled = await fill(env, targets[0], options);
		await restartN8n(env);
		const full = probe(env, targets[0].workflowId);
		log(
			`  n8n ${env.installation.version}: full row ${full.keys} keys, ${full.rowBytes} bytes (fill: ${filled.mode}, ${filled.executions} executions in ${fixed(filled.seconds, 0)} s)`,
		);
		for (const target of targets)
			await measure(env, target, 0, WARM_UP_EVENTS, options.concurrency);
		const runs: RowRun[] = [];
		for (let rep = 1; rep <= options.reps; rep++) {
			for (const target of rep % 2 ? targets : [...targets].reverse()) {
				const run = await measure(env, target, rep, options.events, options.concurrency);
				runs.push(run);
				log(
					`  ${env.installation.version} ${run.variant} rep ${rep}: ${fixed(run.events_per_s, 1)} events/s stored (${fixed(run.answered_per_s, 1)} answered/s), p50/p99 ${fixed(run.p50_ms, 0)}/${fixed(run.p99_ms, 0)} ms, cpu ${fixed(run.cpu_ms_per_event, 1)} ms/event, store ${fixed(run.store_writes_per_event)} writes ${fixed(run.store_bytes_per_event / 1024, 1)} KB/event, n8n wrote ${fixed(run.n8n_write_bytes_per_event / 1024, 1)} KB/event, ${run.ok_2xx}/${run.executions_recorded}/${run.events}, row ${run.keys_after} keys, load ${run.load_average_1m}`,
				);
				await sleep(1000);
			}
		}
		const of = (variant: Variant) => runs.filter((r) => r.variant === variant);
		const keys = Object.keys(runs[0]).filter((k) => k !== 'variant') as Array<
			Exclude<keyof RowRun, 'variant'>
		>;
		const ratio = spread(
			of('full').map(
				(f) => f.events_per_s / (of('empty').find((e) => e.rep === f.rep)?.events_per_s ?? NaN),
			),
		);
		return {
			line,
			n8n: env.installation.version,
			node: spawnSync(env.installation.nodeBin, ['--version'], { encoding: 'utf8' }).stdout.trim(),
			fill: filled,
			runs,
			summary: VARIANTS.map((variant) => ({
				variant,
				...(Object.fromEntries(
					keys.map((k) => [k, spread(of(variant).map((r) => r[k]))]),
				) as Record<Exclude<keyof RowRun, 'variant'>, Spread>),
			})),
			ratio,
			goal_met: ratio.median >= RUN_ONCE_ROW_MIN_RATIO,
		};
	} finally {
		await env.stop();
		await second.close();
	}
}

export async function runRunOnceRowBench(
	setup: { tarball: string; outDir: string; keep?: boolean },
	options: RunOnceRowOptions = DEFAULT_RUN_ONCE_ROW_OPTIONS,
): Promise<RunOnceRowResult> {
	const lines: RowLineResult[] = [];
	for (const line of options.lines) {
		log(`R. n8n ${LINES[line].version}: run-once row full vs empty`);
		lines.push(await runLine(line, setup, options));
	}
	return { options, lines };
}
