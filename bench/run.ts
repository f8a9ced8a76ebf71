/**
 * `npm run bench`: what the trigger and the action node cost, against what users would use
 * instead, measured side by side in one run. Prints a table with the machine and writes
 * bench/results/latest.json (and latest.md, the table as in the README).
 *
 *   npm run bench [-- --only 1,2,3,4,5,queue,run-once-row,combine,combine-quiet,answers-on-time,answers-profile,catch-up-idle] [--quick] [--skip-build] [--keep]
 *   (part 2 only: BENCH_INSTANCES=default,lazy BENCH_REPS=5 BENCH_CONCURRENCIES=1,8 for a focused run;
 *    BENCH_VARIANTS=minimal,ours-auto narrows the workflows; BENCH_INSTANCES=default,before with
 *    BENCH_BEFORE=<commit> runs that build beside this one, each against its own minimal trigger;
 *    BENCH_LINES=1 runs every instance on n8n 1.123.81)
 *
 *   1     the trigger's receive path in-process vs HMAC + timingSafeEqual + JSON.parse (Node 20 and 24)
 *   2     signed events through three n8n 2.41.1 (default, lazy isolate acquire, legacy engine): our
 *         trigger (v2 Automatic, v2 Manual, v1) vs a minimal community trigger (the floor), n8n's Webhook
 *         node and Webhook → Crypto → IF; concurrency 1, 8, 32; CPU and expression isolates per event
 *   3     1,000 Get Status items: our node vs the HTTP Request node with our credential
 *   4     a 200 MiB media file: peak RSS of n8n for Media → Download, the trigger's Download Media, HTTP Request
 *   5     exactly once under real traffic, in one n8n (default settings): conversation bursts of N contacts
 *         (greet → question → answer) in conversations/s with every answer resumed, against the auto-reply
 *         example's events/s for as many messages; the trigger's CPU per event with the run-once check
 *         against a build of it without (packed by the bench, never shipped)
 *   queue benchmark 2 through n8n in queue mode behind haproxy, 1 then 2 webhook processors + workers
 *   run-once-row  the run-once check at steady state (issue 32), one n8n per line (2.41.1, 1.123.81):
 *         a trigger whose deduplication row is full (after 20,000 messages) beside one whose row is
 *         empty, interleaved; events/s, time to 2xx, bytes written to the store per event.
 *         Not in the default set (about 30 minutes); results also in bench/results/run-once-row-<time>.*
 *         (BENCH_LINES=1 one line; BENCH_ROW_FILL=sql the row written into the database, 2 minutes a
 *         line; BENCH_ROW_EVENTS=1000 events per run)
 *   combine  Combine a Contact's Messages on vs off (issue 33), side by side in one n8n 2.41.1: 50 contacts
 *         × 3 messages at once into the auto-reply example (Reply "got: <text>"); executions and service
 *         list reads per message, replies, and for "on" the time from a burst's last message to its item
 *         against the quiet period (5 s). Not in the default set (about 4 minutes); results also in
 *         bench/results/combine-<time>.*
 *   combine-quiet  Combine before against after a change (BENCH_BEFORE, `main` by default, packed from a
 *         git worktree of it), both lines, two n8n per line side by side: 50 contacts × 3 messages at once,
 *         last message → item p50/p95, after/before, n8n's intake of the last message, a contact alone.
 *         Not in the default set (about 15 minutes); results also in bench/results/combine-quiet-<time>.*
 *   answers-on-time  Reply and Wait's answers under a burst, before (BENCH_BEFORE, `main` by default, packed
 *         from a git worktree of it) against after, one n8n 2.41.1 per build side by side: 50 contacts greet
 *         at once into the conversation example, then all answer at once; the share of answer deliveries
 *         answered 2xx within the service's 8 s, delivery → 2xx and answer → confirmation p50/p95, resumed /
 *         asked twice / lost, executions and expression isolates each answer costs, where the time goes
 *         (n8n's database), and n8n's own Wait node resumed under the same burst as an anchor.
 *         Not in the default set (about 12 minutes); results also in bench/results/answers-on-time-<time>.*
 *   catch-up-idle  An idle trigger with Recover Missed Messages (Catch-Up Interval 10 s), before
 *         (BENCH_BEFORE, `main` by default) against after, one n8n 2.41.1 each, side by side over the same
 *         windows: expression isolates, n8n's CPU and service requests per catch-up run. Not in the default
 *         set (about 9 minutes); results also in bench/results/catch-up-idle-<time>.*
 *   answers-profile  A diagnostic for answers-on-time, this checkout only: one n8n 2.41.1 with its inspector,
 *         one burst of 50 answers, the V8 CPU profile of n8n's main thread over the answer phase (self time by
 *         package, top functions) and n8n's CPU by thread. Not in the default set (about 3 minutes); results
 *         in bench/results/answers-profile-<time>.* (BENCH_N8N_ENV=KEY=VALUE,... more n8n settings)
 *
 * Benchmarks, not tests: nothing in `npm test` depends on them. Part 5 takes about 7 minutes on 2 cores.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { RUN_ONCE_MAX_ENTRIES } from '../nodes/BusinessMessagingTrigger/routing/runOnce';
import { installationAt, installN8n, REPO_ROOT, type Line } from '../test/real-n8n/n8n';
import { errorText, log } from '../test/real-n8n/util';
import { runActionBench, type ActionResult } from './action';
import { DEFAULT_IDLE_OPTIONS, catchUpIdleTable, runCatchUpIdleBench } from './catchUpIdle';
import {
	DEFAULT_COMBINE_OPTIONS,
	QUICK_COMBINE_OPTIONS,
	runCombineBench,
	type CombineResult,
	type Latency,
} from './combine';
import { DEFAULT_QUIET_OPTIONS, packCommit, quietTable, runQuietBench } from './combineQuiet';
import { answersTable, DEFAULT_ANSWERS_OPTIONS, runAnswersBench } from './answersOnTime';
import { answersProfileText, runAnswersProfile } from './answersProfile';
import {
	DEFAULT_CONVERSATION_OPTIONS,
	packWithoutRunOnce,
	QUICK_CONVERSATION_OPTIONS,
	RUN_ONCE_LABELS,
	runConversationBench,
	type ConversationsResult,
} from './conversations';
import type { InProcessResult } from './inprocess';
import { buildAndPack, n8nVersion, startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { describeMachine, machineLines, type Machine } from './lib/machine';
import { fixed, quantile, ratioText, type Spread } from './lib/stats';
import { runMediaBench, type MediaKind, type MediaResult } from './media';
import {
	INSTANCES,
	packMinimalTrigger,
	runWebhookBench,
	DEFAULT_WEBHOOK_OPTIONS,
	VARIANTS,
	type Instance,
	type Variant,
	type WebhookOptions,
	type WebhookResult,
	webhookBenchLine,
} from './webhooks';
import { runQueueBench, stopQueueBench, type QueueBenchResult } from './queue';
import {
	DEFAULT_RUN_ONCE_ROW_OPTIONS,
	QUICK_RUN_ONCE_ROW_OPTIONS,
	RUN_ONCE_ROW_MIN_RATIO,
	RUN_ONCE_ROW_VARIANTS,
	runRunOnceRowBench,
	type RunOnceRowOptions,
	type RunOnceRowResult,
} from './runOnceRow';
import type {
	WebhookOptions as QueueWebhookOptions,
	WebhookResult as QueueWebhookResult,
} from './queue-webhooks';

const RESULTS = join(REPO_ROOT, 'bench', 'results');

export const GOALS = {
	inprocessMaxRatio: 1.3,
	/** Our trigger v2 (either registration) against the minimal community trigger, default settings. */
	webhookMinRatioToFloor: 0.95,
	/** Our trigger v2 against n8n's Webhook node with N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true. */
	webhookMinRatioLazy: 0.9,
	/** "Far below the service's 8 s timeout": a quarter of it. */
	webhookMaxP99Ms: 2000,
	actionMinRatio: 1.0,
	/** "Well under the file size": a streamed download grows by buffers, a buffered one by >= the file. */
	mediaMaxGrowthRatio: 0.25,
	/** Run-once with a full deduplication row against an empty one, events/s. */
	runOnceRowMinRatio: RUN_ONCE_ROW_MIN_RATIO,
};

interface Options {
	only: Set<string>;
	quick: boolean;
	skipBuild: boolean;
	keep: boolean;
}

function parseArgs(argv: string[]): Options {
	const options: Options = {
		only: new Set(['1', '2', '3', '4', '5', 'queue']),
		quick: false,
		skipBuild: false,
		keep: false,
	};
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		if (flag === '--only')
			options.only = new Set((argv[++i] ?? '').split(',').map((s) => s.trim()));
		else if (flag === '--quick') options.quick = true;
		else if (flag === '--skip-build') options.skipBuild = true;
		else if (flag === '--keep') options.keep = true;
		else if (flag === '--help' || flag === '-h') {
			console.log(
				'npm run bench [-- --only 1,2,3,4,5,queue,run-once-row,combine,combine-quiet,answers-on-time,answers-profile,catch-up-idle] [--quick] [--skip-build] [--keep]',
			);
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
	action?: ActionResult;
	media?: MediaResult;
	conversations?: ConversationsResult;
	queue?: QueueBenchResult;
	runOnceRow?: RunOnceRowResult;
	combine?: CombineResult;
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
		[
			'-r',
			join(REPO_ROOT, 'node_modules', 'ts-node', 'register', 'transpile-only'),
			join(REPO_ROOT, 'bench', 'inprocess.ts'),
			'--json',
			...(quick ? ['--rounds', '10'] : []),
		],
		{
			cwd: REPO_ROOT,
			encoding: 'utf8',
			env: { ...process.env, TS_NODE_PROJECT: join(REPO_ROOT, 'tsconfig.json') },
		},
	);
	if (result.status !== 0)
		throw new Error(`bench/inprocess.ts under ${nodeBin} failed:\n${result.stderr}`);
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
	if (r.webhooks) webhookGoalRows(r.webhooks, rows);
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
	if (r.conversations) conversationRows(r.conversations, rows);
	if (r.runOnceRow) runOnceRowRows(r.runOnceRow, rows);
	if (r.combine) combineRows(r.combine, rows);
	if (r.queue) {
		const queueRows = (w: QueueWebhookResult, label: string, diagnostic: boolean) => {
			for (const c of w.summary) {
				rows.push({
					benchmark: `${label} events/s, concurrency ${c.concurrency} (${c.events_per_run} events × ${w.reps})`,
					ours: fixed(c.ours.events_per_s, 1),
					baseline: `${fixed(c.theirs.events_per_s, 1)} (Webhook node)`,
					ratio: ratioText(c.ratio),
					goal: '(queue mode: no goal)',
					met: '-',
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
				met: met(
					t.ours.lost === 0 &&
						t.ours.non_2xx === 0 &&
						t.ours.errors === 0 &&
						t.ours.failed_executions === 0,
				),
			});
		};
		for (const run of r.queue.runs)
			queueRows(
				run.result,
				`Q. queue mode, ${run.processors} webhook processor(s) + ${run.workers} worker(s), through haproxy:`,
				false,
			);
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
		const label: Record<MediaKind, string> = {
			download: 'Media → Download',
			trigger: "Trigger's Download Media",
			http: 'HTTP Request',
		};
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

const kb = (bytes: number) => `${fixed(bytes / 1024, 1)} KB`;

/** The benchmark as rows of the main table; every run in runOnceRowTable(). */
function runOnceRowRows(r: RunOnceRowResult, rows: Row[]): void {
	const o = r.options;
	for (const l of r.lines) {
		const [full, empty] = RUN_ONCE_ROW_VARIANTS.map((v) => l.summary.find((s) => s.variant === v));
		if (!full || !empty) continue;
		const label = `R. n8n ${l.n8n} (Node ${l.node.replace(/^v/, '').split('.')[0]}), run-once row full (${RUN_ONCE_MAX_ENTRIES.toLocaleString('en')} keys, after ${l.fill.mode === 'events' ? `${l.fill.events.toLocaleString('en')} messages` : 'a row written into the database'}) vs empty (${o.events} events × ${o.reps}, concurrency ${o.concurrency})`;
		const sent = (s: typeof full) => s.events.median * s.events.n;
		rows.push(
			{
				benchmark: `${label}: events/s, until every execution was stored`,
				ours: `${fixed(full.events_per_s.median, 1)} (${fixed(full.answered_per_s.median, 1)} answered/s)`,
				baseline: `${fixed(empty.events_per_s.median, 1)} (${fixed(empty.answered_per_s.median, 1)} answered/s), empty row`,
				ratio: ratioText(l.ratio),
				goal: `≥ ${RUN_ONCE_ROW_MIN_RATIO}x`,
				met: l.goal_met ? 'yes' : 'NO',
			},
			{
				benchmark: `${label}: time to 2xx p50 / p99 ms`,
				ours: `${fixed(full.p50_ms.median, 0)} / ${fixed(full.p99_ms.median, 0)}`,
				baseline: `${fixed(empty.p50_ms.median, 0)} / ${fixed(empty.p99_ms.median, 0)}`,
				ratio: `${fixed(full.p99_ms.median / empty.p99_ms.median)}x (p99)`,
				goal: '(no goal)',
				met: '-',
			},
			{
				benchmark: `${label}: bytes written to the store per event (row writes per event)`,
				ours: `${kb(full.store_bytes_per_event.median)} (${fixed(full.store_writes_per_event.median)})`,
				baseline: `${kb(empty.store_bytes_per_event.median)} (${fixed(empty.store_writes_per_event.median)})`,
				ratio: `${fixed(full.store_bytes_per_event.median / empty.store_bytes_per_event.median, 0)}x`,
				goal: '(the cost: no goal)',
				met: '-',
			},
			{
				benchmark: `${label}: n8n's write() bytes per event (database, WAL, log, sockets); CPU ms/event`,
				ours: `${kb(full.n8n_write_bytes_per_event.median)}; ${fixed(full.cpu_ms_per_event.median, 1)}`,
				baseline: `${kb(empty.n8n_write_bytes_per_event.median)}; ${fixed(empty.cpu_ms_per_event.median, 1)}`,
				ratio: `${fixed(full.n8n_write_bytes_per_event.median / empty.n8n_write_bytes_per_event.median)}x`,
				goal: '(the cost: no goal)',
				met: '-',
			},
			{
				benchmark: `${label}: 2xx and executions stored, all runs`,
				ours: `${full.ok_2xx.median * full.ok_2xx.n} / ${full.executions_recorded.median * full.executions_recorded.n} of ${sent(full)}`,
				baseline: `${empty.ok_2xx.median * empty.ok_2xx.n} / ${empty.executions_recorded.median * empty.executions_recorded.n} of ${sent(empty)}`,
				ratio: '-',
				goal: 'every event answered and run once',
				met: l.runs.every((x) => x.ok_2xx === x.events && x.executions_recorded === x.events)
					? 'yes'
					: 'NO',
			},
		);
	}
}

const seconds = (ms: number) => `${fixed(ms / 1000, 1)} s`;
const latencyCell = (l: Latency) =>
	`${seconds(l.p50_ms)} / ${seconds(l.p95_ms)} / ${seconds(l.max_ms)} (${l.n})`;

/** Combine a Contact's Messages on vs off as rows of the main table; every run in combineTable(). */
function combineRows(c: CombineResult, rows: Row[]): void {
	const o = c.options;
	const s = c.summary;
	const label = `C. Combine a Contact's Messages on vs off, ${o.contacts} contacts × ${o.perContact} messages at once (× ${o.reps}), Quiet Period ${o.quietS} s`;
	rows.push(
		{
			benchmark: `${label}: executions per message`,
			ours: fixed(s.on.executions_per_message),
			baseline: `${fixed(s.off.executions_per_message)} (off)`,
			ratio: `${fixed(s.ratio.executions_per_message)}x`,
			goal: '(the cost: no goal)',
			met: '-',
		},
		{
			benchmark: `${label}: GET /v1/messages/inbound per message (the catch-up's reads, every ${o.catchUpIntervalS} s, in both)`,
			ours: fixed(s.on.reads_per_message),
			baseline: `${fixed(s.off.reads_per_message)} (off)`,
			ratio: `${fixed(s.ratio.reads_per_message, 1)}x`,
			goal: '(the cost: no goal)',
			met: '-',
		},
		{
			benchmark: `${label}: replies per run (one per burst on, one per message off)`,
			ours: fixed(s.on.replies, 0),
			baseline: `${fixed(s.off.replies, 0)} (off)`,
			ratio: `${fixed(s.ratio.replies)}x`,
			goal: 'none lost, none twice, in order',
			met: met(s.all_clean),
		},
		{
			benchmark: `${label}: a burst's last message → its item, p50 / p95 / max (bursts)`,
			ours: latencyCell(s.to_item),
			baseline: `${latencyCell(s.off_to_reply)} (off: each message → its reply)`,
			ratio: `${fixed(s.to_item.p50_ms / (o.quietS * 1000))}x the quiet period (p50)`,
			goal: `quiet period + < 2 s (${o.quietS + 2} s)`,
			met: met(s.to_item.max_ms < (o.quietS + 2) * 1000),
		},
		{
			benchmark: `${label}: a burst's last message → its execution's trigger starting (n8n's intake), p50 / p95 / max`,
			ours: latencyCell(s.to_start),
			baseline: '-',
			ratio: '-',
			goal: '(where the time goes)',
			met: '-',
		},
		{
			benchmark: `${label}: a burst's last message → its reply, p50 / p95 / max`,
			ours: latencyCell(s.to_reply),
			baseline: '-',
			ratio: '-',
			goal: '(beside the item)',
			met: '-',
		},
	);
}

/** Every run of the combine benchmark. */
export function combineTable(c: CombineResult): string {
	const head = [
		'variant',
		'rep',
		'messages (2xx)',
		'executions (with an item)',
		'per message',
		'list reads',
		'per message',
		'replies',
		'in replies / lost / twice / out of order',
		'→ execute() p50 / p95 / max',
		'→ item p50 / p95 / max',
		'→ reply p50 / p95 / max',
		'all replied',
		'load avg (1 min)',
	];
	const quantiles = (values: number[]) =>
		values.length
			? `${seconds(quantile(values, 0.5))} / ${seconds(quantile(values, 0.95))} / ${seconds(Math.max(...values))}`
			: '-';
	return [
		...tableHead(head),
		...c.runs.map(
			(r) =>
				`| ${[
					r.variant,
					String(r.rep),
					`${r.messages} (${r.delivered_2xx})`,
					`${r.executions} (${r.executions_with_an_item})`,
					fixed(r.executions_per_message),
					String(r.inbound_reads),
					fixed(r.reads_per_message),
					String(r.replies),
					`${r.in_replies} / ${r.lost} / ${r.twice} / ${r.out_of_order}`,
					quantiles(r.to_start_ms),
					quantiles(r.to_item_ms),
					quantiles(r.to_reply_ms),
					`${fixed(r.all_replied_s, 1)} s`,
					fixed(r.load_average_1m, 1),
				].join(' | ')} |`,
		),
	].join('\n');
}

/** Every run, both lines. */
export function runOnceRowTable(r: RunOnceRowResult): string {
	const head = [
		'n8n',
		'row',
		'rep',
		'events/s (stored)',
		'answered/s',
		'p50 / p99 ms',
		'CPU ms/event',
		'store writes/event',
		'store KB/event',
		'n8n write() KB/event',
		'disk KB/event',
		'DB + WAL growth KB/event',
		'keys / row KB after',
		'2xx / executions',
		'load avg (1 min)',
	];
	const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
	for (const l of r.lines) {
		lines.splice(
			lines.length,
			0,
			...l.runs.map(
				(x) =>
					`| ${[
						l.n8n,
						x.variant,
						String(x.rep),
						fixed(x.events_per_s, 1),
						fixed(x.answered_per_s, 1),
						`${fixed(x.p50_ms, 0)} / ${fixed(x.p99_ms, 0)}`,
						fixed(x.cpu_ms_per_event, 1),
						fixed(x.store_writes_per_event),
						fixed(x.store_bytes_per_event / 1024, 1),
						fixed(x.n8n_write_bytes_per_event / 1024, 1),
						fixed(x.disk_write_bytes_per_event / 1024, 1),
						fixed(x.db_growth_bytes_per_event / 1024, 1),
						`${x.keys_after} / ${fixed(x.row_bytes_after / 1024, 0)}`,
						`${x.ok_2xx} / ${x.executions_recorded}`,
						fixed(x.load_average_1m, 1),
					].join(' | ')} |`,
			),
		);
	}
	return lines.join('\n');
}

/** Part run-once-row's options: --quick, then BENCH_LINES=2,1, BENCH_ROW_FILL=events|sql, BENCH_ROW_EVENTS. */
function runOnceRowOptions(quick: boolean): RunOnceRowOptions {
	const base = quick ? QUICK_RUN_ONCE_ROW_OPTIONS : DEFAULT_RUN_ONCE_ROW_OPTIONS;
	const lines = (process.env.BENCH_LINES ?? '')
		.split(',')
		.map(Number)
		.filter((line): line is Line => line === 1 || line === 2);
	const mode = process.env.BENCH_ROW_FILL;
	return {
		...base,
		lines: lines.length ? lines : base.lines,
		events: Number(process.env.BENCH_ROW_EVENTS) || base.events,
		fill: mode === 'sql' || mode === 'events' ? { ...base.fill, mode } : base.fill,
	};
}

/** Benchmark 5 as rows of the main table; per burst in conversationsTable(). */
function conversationRows(c: ConversationsResult, rows: Row[]): void {
	for (const s of c.sizes) {
		const v = s.conversation;
		rows.push({
			benchmark: `5. Conversations, ${s.contacts} contacts at once (greet → question → answer), conversations/s`,
			ours: `${fixed(v.conversations_per_s)} (${fixed(v.messages_per_s, 1)} messages/s); ${v.resumed}/${s.contacts} resumed, ${v.twice} asked twice, ${v.lost} lost`,
			baseline: `${fixed(s.auto_reply.events_per_s, 1)} events/s (auto-reply example, ${s.auto_reply.messages} messages at once)`,
			ratio: `${fixed(s.ratio)}x (messages/s)`,
			goal: 'every answer resumes its own execution',
			met: met(v.all_resumed),
		});
	}
	rows.push({
		benchmark: '5. Highest conversations/s at which every answer resumed',
		ours: c.best
			? `${fixed(c.best.conversations_per_s)} (${c.best.contacts} contacts at once)`
			: 'none: no burst resumed all',
		baseline: '-',
		ratio: '-',
		goal: '(the figure)',
		met: '-',
	});
	const o = c.run_once;
	const without = o.variants.find((v) => v.variant === 'without');
	const range = (x: Spread) => `${fixed(x.median)} (${fixed(x.min)}–${fixed(x.max)})`;
	for (const v of o.variants) {
		if (!v.vs_without || !without) continue;
		rows.push({
			benchmark: `5. Trigger → No Operation, CPU ms/event ${v.label}${v.variant === 'with' ? ` (${v.keys_in_row} keys in its row)` : ''} vs without (${o.events_per_run} events × ${o.reps}, concurrency ${o.concurrency})`,
			ours: range(v.cpu_ms_per_event),
			baseline: `${range(without.cpu_ms_per_event)} (the same build, runOnce bypassed)`,
			ratio: ratioText(v.vs_without.ratio),
			goal: '(the cost: no goal)',
			met: '-',
		});
		rows.push({
			benchmark: `5. …the same including the re-checks 1 s and 10 s later (n8n's idle CPU in them too)`,
			ours: range(v.with_rechecks),
			baseline: range(without.with_rechecks),
			ratio: ratioText(v.vs_without.ratio_with_rechecks),
			goal: '(the cost: no goal)',
			met: '-',
		});
		rows.push({
			benchmark: `5. The deduplication store's cost, CPU ms/event (${v.label} − without)`,
			ours: `${range(v.vs_without.store_ms_per_event)}; ${fixed(v.vs_without.store_ms_per_event_with_rechecks.median)} with the re-checks`,
			baseline: '-',
			ratio: '-',
			goal: '(the cost: no goal)',
			met: '-',
		});
	}
}

/** Benchmark 5 in full: each burst, both workflows. */
export function conversationsTable(c: ConversationsResult): string {
	const titles = [
		'N contacts',
		'conversations/s',
		'greet / answer / total s',
		'resumed / twice / lost',
		'deliveries failed',
		'CPU ms/message',
		'auto-reply: messages',
		'events/s',
		'replied once / twice / not',
		'CPU ms/message',
		'ratio (messages/s)',
		'load avg (1 min)',
	];
	const lines = tableHead(titles);
	for (const s of c.sizes) {
		const v = s.conversation;
		const a = s.auto_reply;
		lines.push(
			`| ${[
				String(s.contacts),
				fixed(v.conversations_per_s),
				`${fixed(v.greet_s, 1)} / ${fixed(v.answer_s, 1)} / ${fixed(v.total_s, 1)}`,
				`${v.resumed} / ${v.twice} / ${v.lost}`,
				String(v.deliveries_failed),
				fixed(v.cpu_ms_per_message, 1),
				String(a.messages),
				fixed(a.events_per_s, 1),
				`${a.replied_once} / ${a.replied_twice} / ${a.not_replied}`,
				fixed(a.cpu_ms_per_message, 1),
				`${fixed(s.ratio)}x`,
				`${fixed(v.load_average_1m, 1)}, ${fixed(a.load_average_1m, 1)}`,
			].join(' | ')} |`,
		);
	}
	const o = c.run_once;
	lines.push(
		'',
		`Run-once (Trigger, Manual registration → No Operation; ${o.events_per_run} signed events per run, concurrency ${o.concurrency}, interleaved)${o.full_row_skipped ? `; ${o.full_row_skipped}` : ''}:`,
		'',
		'| variant | rep | events/s | CPU ms/event | with re-checks | CPU ms/s in the 11 s after | 2xx / executions | load avg (1 min) |',
		'|---|---|---|---|---|---|---|---|',
		...o.runs.map(
			(r) =>
				`| ${RUN_ONCE_LABELS[r.variant]} | ${r.rep} | ${fixed(r.events_per_s, 1)} | ${fixed(r.cpu_ms_per_event)} | ${fixed(r.cpu_ms_per_event_with_rechecks)} | ${fixed(r.after_cpu_ms_per_s, 1)} | ${r.ok_2xx} / ${r.executions_recorded} | ${fixed(r.load_average_1m, 1)} |`,
		),
	);
	return lines.join('\n');
}

const find = (w: WebhookResult, instance: Instance, variant: Variant, concurrency: number) =>
	w.summary.find(
		(s) => s.instance === instance && s.variant === variant && s.concurrency === concurrency,
	);

/** Benchmark 2's goals as rows of the main table; the whole story is in webhookTable(). */
function webhookGoalRows(w: WebhookResult, rows: Row[]): void {
	const concurrencies = [...new Set(w.summary.map((s) => s.concurrency))];
	for (const variant of ['ours-auto', 'ours-manual'] as const) {
		for (const c of concurrencies) {
			const mine = find(w, 'default', variant, c);
			const floor = find(w, 'default', 'minimal', c);
			if (!mine || !floor) continue;
			rows.push({
				benchmark: `2. default settings: ${VARIANTS[variant]}, events/s, concurrency ${c}`,
				ours: fixed(mine.events_per_s, 1),
				baseline: `${fixed(floor.events_per_s, 1)} (minimal community trigger)`,
				ratio: ratioText(mine.vs_floor),
				goal: `≥ ${GOALS.webhookMinRatioToFloor}x`,
				met: met(mine.vs_floor.median >= GOALS.webhookMinRatioToFloor),
			});
		}
	}
	for (const variant of ['ours-auto', 'ours-manual'] as const) {
		for (const c of concurrencies) {
			const mine = find(w, 'lazy', variant, c);
			const theirs = find(w, 'lazy', 'webhook', c);
			if (!mine || !theirs) continue;
			rows.push({
				benchmark: `2. lazy isolate acquire: ${VARIANTS[variant]}, events/s, concurrency ${c}`,
				ours: fixed(mine.events_per_s, 1),
				baseline: `${fixed(theirs.events_per_s, 1)} (Webhook node)`,
				ratio: ratioText(mine.vs_webhook),
				goal: `≥ ${GOALS.webhookMinRatioLazy}x`,
				met: met(mine.vs_webhook.median >= GOALS.webhookMinRatioLazy),
			});
		}
	}
	for (const c of concurrencies) {
		const mine = find(w, 'default', 'ours-auto', c);
		const theirs = find(w, 'default', 'webhook', c);
		if (!mine || !theirs) continue;
		rows.push({
			benchmark: `2. default settings: ${VARIANTS['ours-auto']}, time to 2xx p50 / p99, concurrency ${c}`,
			ours: `${fixed(mine.p50_ms, 0)} / ${fixed(mine.p99_ms, 0)} ms`,
			baseline: `${fixed(theirs.p50_ms, 0)} / ${fixed(theirs.p99_ms, 0)} ms (Webhook node)`,
			ratio: `${fixed(mine.p99_ms / theirs.p99_ms)}x (p99)`,
			goal: `p99 ≤ ${GOALS.webhookMaxP99Ms / 1000} s (timeout 8 s)`,
			met: met(mine.p99_ms <= GOALS.webhookMaxP99Ms),
		});
	}
	// BENCH_INSTANCES=default,before (issue 43, goal 5): the default event, each build against its minimal trigger.
	for (const c of concurrencies) {
		const after = find(w, 'default', 'ours-auto', c);
		const before = find(w, 'before', 'ours-auto', c);
		if (!after || !before) continue;
		rows.push({
			benchmark: `2. the default event, this build against BENCH_BEFORE's, each / its minimal trigger, concurrency ${c}`,
			ours: `${ratioText(after.vs_floor)} (${fixed(after.events_per_s, 2)} events/s)`,
			baseline: `${ratioText(before.vs_floor)} (${fixed(before.events_per_s, 2)} events/s, before)`,
			ratio: `${fixed(after.vs_floor.median / before.vs_floor.median)}x`,
			goal: '≥ 0.95x the minimal trigger',
			met: met(after.vs_floor.median >= 0.95),
		});
	}
	type Totals = WebhookResult['totals'];
	const sum = (
		list: Totals,
		key: 'ok_2xx' | 'executions_recorded' | 'lost' | 'events' | 'failed_executions',
	) => list.reduce((total, t) => total + t[key], 0);
	const ours = w.totals.filter((t) => t.variant.startsWith('ours'));
	const others = w.totals.filter((t) => !t.variant.startsWith('ours'));
	rows.push({
		benchmark: '2. 2xx answers = executions recorded (all runs, all instances)',
		ours: `${sum(ours, 'ok_2xx')} / ${sum(ours, 'executions_recorded')} of ${sum(ours, 'events')} sent, lost ${sum(ours, 'lost')}`,
		baseline: `${sum(others, 'ok_2xx')} / ${sum(others, 'executions_recorded')} of ${sum(others, 'events')}, lost ${sum(others, 'lost')} (the other three)`,
		ratio: '-',
		goal: 'nothing lost',
		met: met(
			sum(ours, 'lost') === 0 &&
				sum(ours, 'ok_2xx') === sum(ours, 'events') &&
				sum(ours, 'failed_executions') === 0,
		),
	});
}

/** Benchmark 2 in full: every instance, variant and concurrency. */
export function webhookTable(w: WebhookResult): string {
	const titles = [
		'n8n settings',
		'variant (ends in No Operation)',
		'c',
		'events/s',
		'vs floor',
		'vs Webhook node',
		'CPU ms/event',
		'isolates/event',
		'p50 / p99 ms',
		'2xx = executions',
		'load avg (1 min)',
	];
	const lines = tableHead(titles);
	for (const s of w.summary) {
		const runs = w.runs.filter(
			(r) =>
				r.instance === s.instance && r.variant === s.variant && r.concurrency === s.concurrency,
		);
		const ok = runs.every((r) => r.ok_2xx === r.events && r.executions_recorded === r.ok_2xx);
		const cells = [
			INSTANCES[s.instance].label,
			VARIANTS[s.variant],
			String(s.concurrency),
			fixed(s.events_per_s, 1),
			s.variant === 'minimal' ? '1' : ratioText(s.vs_floor),
			s.variant === 'webhook' ? '1' : ratioText(s.vs_webhook),
			`${fixed(s.cpu_ms_per_event.median, 1)} (${fixed(s.cpu_ms_per_event.min, 1)}–${fixed(s.cpu_ms_per_event.max, 1)})`,
			s.isolates_per_event === null ? '0 (none)' : fixed(s.isolates_per_event, 2),
			`${fixed(s.p50_ms, 0)} / ${fixed(s.p99_ms, 0)}`,
			ok ? 'yes' : `NO (${runs.map((r) => `${r.ok_2xx}/${r.executions_recorded}`).join(', ')})`,
			`${fixed(s.load_average_1m.min, 1)}–${fixed(s.load_average_1m.max, 1)}`,
		];
		lines.push(`| ${cells.join(' | ')} |`);
	}
	return lines.join('\n');
}

/** A markdown table's title line and rule. */
/** Writes a dated pair of result files, bench/results/<name>-<date>.json and .md; returns their path without extension. */
function writeDatedResult(name: string, date: string, data: unknown, text: string): string {
	const dated = join(RESULTS, `${name}-${date.slice(0, 16).replace(':', '')}`);
	writeFileSync(`${dated}.json`, `${JSON.stringify(data, null, 2)}\n`);
	writeFileSync(`${dated}.md`, `${text}\n`);
	return dated;
}

function tableHead(titles: string[]): string[] {
	return [`| ${titles.join(' | ')} |`, `|${titles.map(() => '---').join('|')}|`];
}

export function markdownTable(rows: Row[]): string {
	const header: Array<keyof Row> = ['benchmark', 'ours', 'baseline', 'ratio', 'goal', 'met'];
	const titles = ['benchmark', 'ours', 'baseline', 'ratio', 'goal', 'met?'];
	const escape = (s: string) => s.replace(/\|/g, '\\|');
	return [
		...tableHead(titles),
		...rows.map((row) => `| ${header.map((key) => escape(row[key])).join(' | ')} |`),
	].join('\n');
}

async function main(): Promise<void> {
	const options = parseArgs(process.argv.slice(2));
	const started = Date.now();
	const machine = describeMachine();
	const results: Results = {
		machine,
		runtime_s: 0,
		quick: options.quick,
		goals: GOALS,
		errors: [],
		table: [],
	};
	mkdirSync(RESULTS, { recursive: true });
	const outDir = join(RESULTS, 'run.tmp');
	mkdirSync(outDir, { recursive: true });
	const needsN8n = [
		'2',
		'3',
		'4',
		'5',
		'queue',
		'run-once-row',
		'combine',
		'combine-quiet',
		'answers-on-time',
		'answers-profile',
		'catch-up-idle',
	].some((part) => options.only.has(part));

	let tarball = '';
	if (needsN8n) {
		log(options.skipBuild ? 'packing dist/ as it is' : 'building and packing the package');
		tarball = buildAndPack(outDir, options.skipBuild);
	}
	// Part 2 alone with BENCH_LINES=1 runs n8n 1.123.81: the machine line names that one.
	const machineLine = options.only.size === 1 && options.only.has('2') ? webhookBenchLine() : 2;
	const installation =
		needsN8n || options.only.has('1')
			? installN8n(machineLine, join(outDir, 'install.log'))
			: undefined;
	if (installation) {
		machine.n8n_version = n8nVersion(installation);
		machine.n8n_node = spawnSync(
			installationAt(machineLine, installation.dir).nodeBin,
			['--version'],
			{
				encoding: 'utf8',
			},
		)
			.stdout.trim()
			.replace(/^v/, '');
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

	const chosenConcurrencies = (process.env.BENCH_CONCURRENCIES ?? '')
		.split(',')
		.map(Number)
		.filter((c) => c > 0);
	const webhookOptions: WebhookOptions = options.quick
		? {
				concurrencies: [1, 8, 32],
				reps: 1,
				eventsFor: (instance, c) => (instance === 'default' ? 1 : 2) * (c === 1 ? 20 : 40),
			}
		: {
				...DEFAULT_WEBHOOK_OPTIONS,
				// BENCH_REPS=5 BENCH_CONCURRENCIES=1,8: more repetitions of fewer settings (a focused run).
				reps: Number(process.env.BENCH_REPS) || DEFAULT_WEBHOOK_OPTIONS.reps,
				concurrencies: chosenConcurrencies.length
					? chosenConcurrencies
					: DEFAULT_WEBHOOK_OPTIONS.concurrencies,
			};

	if (options.only.has('2')) {
		log(
			`2. signed events through n8n side by side (${process.env.BENCH_INSTANCES || 'default,lazy,legacy'}; ${process.env.BENCH_VARIANTS || 'six workflows'} each), interleaved rounds`,
		);
		try {
			// BENCH_INSTANCES=default,before BENCH_BEFORE=<commit>: that build beside this one (issue 43, goal 5).
			const wantsBefore = (process.env.BENCH_INSTANCES ?? '').split(',').includes('before');
			const beforeTarball = wantsBefore
				? packCommit(process.env.BENCH_BEFORE ?? 'main', join(outDir, 'before')).tarball
				: undefined;
			results.webhooks = await runWebhookBench(
				{
					tarball,
					minimalTarball: packMinimalTrigger(outDir),
					outDir,
					keep: options.keep,
					beforeTarball,
				},
				webhookOptions,
			);
		} catch (error) {
			results.errors.push(`2: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (['3', '4'].some((part) => options.only.has(part))) {
		env = await startBenchEnvironment({ tarball, outDir, keep: options.keep });
		try {
			if (options.only.has('3')) {
				log('3. Get Status × 1,000 items: Business Messaging vs HTTP Request');
				results.action = await runActionBench(env, { items: 1000, reps: options.quick ? 2 : 5 });
			}
			if (options.only.has('4')) {
				log('4. media memory: Media → Download, trigger Download Media, HTTP Request');
				results.media = await runMediaBench(env, {
					sizeBytes: (options.quick ? 50 : 200) * 2 ** 20,
					reps: options.quick ? 1 : 3,
				});
			}
		} catch (error) {
			results.errors.push(errorText(error));
			log(`FAILED: ${errorText(error)}\nn8n log tail:\n${env.n8n.logTail(30)}`);
		} finally {
			await env.stop();
			env = undefined;
		}
	}

	if (options.only.has('5')) {
		log(
			'5. exactly once under real traffic: conversation bursts vs the auto-reply, and the trigger with the run-once check vs without (one n8n)',
		);
		try {
			results.conversations = await runConversationBench(
				{
					tarball,
					noRunOnceTarball: packWithoutRunOnce(outDir),
					outDir,
					keep: options.keep,
				},
				options.quick ? QUICK_CONVERSATION_OPTIONS : DEFAULT_CONVERSATION_OPTIONS,
			);
		} catch (error) {
			results.errors.push(`5: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (options.only.has('run-once-row')) {
		log(
			'R. run-once at steady state (issue 32): a full deduplication row beside an empty one, n8n 2.41.1 then 1.123.81',
		);
		try {
			results.runOnceRow = await runRunOnceRowBench(
				{ tarball, outDir, keep: options.keep },
				runOnceRowOptions(options.quick),
			);
		} catch (error) {
			results.errors.push(`run-once-row: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (options.only.has('combine')) {
		log(
			"C. Combine a Contact's Messages on vs off (issue 33): the same bursts into two auto-reply workflows of one n8n",
		);
		try {
			results.combine = await runCombineBench(
				{ tarball, outDir, keep: options.keep },
				options.quick ? QUICK_COMBINE_OPTIONS : DEFAULT_COMBINE_OPTIONS,
			);
		} catch (error) {
			results.errors.push(`combine: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (options.only.has('combine-quiet')) {
		log("Q'. Combine a Contact's Messages before against after, both lines, side by side");
		try {
			const quiet = await runQuietBench(
				{ afterTarball: tarball, beforeRef: process.env.BENCH_BEFORE ?? 'main', outDir },
				{
					...DEFAULT_QUIET_OPTIONS,
					...(options.quick && { reps: 1 }),
					...(process.env.BENCH_LINES && {
						lines: process.env.BENCH_LINES.split(',').map(Number) as Line[],
					}),
					// BENCH_COMBINE_LIMIT=none: n8n's defaults; BENCH_N8N_ENV=KEY=value,KEY=value.
					...(process.env.BENCH_COMBINE_LIMIT && {
						concurrencyLimit:
							process.env.BENCH_COMBINE_LIMIT === 'none'
								? undefined
								: Number(process.env.BENCH_COMBINE_LIMIT),
					}),
					...(process.env.BENCH_N8N_ENV && {
						n8nEnv: Object.fromEntries(
							process.env.BENCH_N8N_ENV.split(',').map((pair) => pair.split('=', 2)),
						),
					}),
				},
			);
			const table = quietTable(quiet);
			console.log(`\n${table}\n`);
			const dated = writeDatedResult('combine-quiet', machine.date, quiet, table);
			log(`combine-quiet: ${dated}.md`);
		} catch (error) {
			results.errors.push(`combine-quiet: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (options.only.has('catch-up-idle')) {
		log('I. An idle trigger with the catch-up, before against after, one n8n 2.41.1 each');
		try {
			const idle = await runCatchUpIdleBench(
				{ afterTarball: tarball, beforeRef: process.env.BENCH_BEFORE ?? 'main', outDir },
				options.quick ? { reps: 1, windowS: 40 } : DEFAULT_IDLE_OPTIONS,
			);
			const table = [catchUpIdleTable(idle), '', ...machineLines(machine)].join('\n');
			console.log(`\n${table}\n`);
			const dated = writeDatedResult('catch-up-idle', machine.date, { machine, ...idle }, table);
			log(`catch-up-idle: ${dated}.md`);
		} catch (error) {
			results.errors.push(`catch-up-idle: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (options.only.has('answers-on-time')) {
		log("A. Reply and Wait's answers under a burst, before against after, one n8n 2.41.1 each");
		try {
			const answers = await runAnswersBench(
				{
					afterTarball: tarball,
					beforeRef: process.env.BENCH_BEFORE ?? 'main',
					outDir,
					keep: options.keep,
				},
				options.quick ? { contacts: 10, reps: 1, warmUp: 2 } : DEFAULT_ANSWERS_OPTIONS,
			);
			const table = [answersTable(answers), '', ...machineLines(machine)].join('\n');
			console.log(`\n${table}\n`);
			if (!options.quick) {
				const dated = writeDatedResult(
					'answers-on-time',
					machine.date,
					{ machine, ...answers },
					table,
				);
				log(`answers-on-time: ${dated}.md`);
			}
		} catch (error) {
			results.errors.push(`answers-on-time: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (options.only.has('answers-profile')) {
		log(
			"A'. where n8n's CPU goes while it takes a burst of answers (this checkout, a CPU profile)",
		);
		try {
			const profile = await runAnswersProfile({
				tarball,
				outDir,
				keep: options.keep,
				contacts: options.quick ? 10 : DEFAULT_ANSWERS_OPTIONS.contacts,
				settings: Object.fromEntries(
					(process.env.BENCH_N8N_ENV ?? '')
						.split(',')
						.filter((pair) => pair.includes('='))
						.map((pair) => [
							pair.slice(0, pair.indexOf('=')).trim(),
							pair.slice(pair.indexOf('=') + 1),
						]),
				),
			});
			const text = [answersProfileText(profile), '', ...machineLines(machine)].join('\n');
			console.log(`\n${text}\n`);
			if (!options.quick) {
				const dated = writeDatedResult(
					'answers-profile',
					machine.date,
					{ machine, ...profile },
					text,
				);
				log(`answers-profile: ${dated}.md`);
			}
		} catch (error) {
			results.errors.push(`answers-profile: ${errorText(error)}`);
			log(`FAILED: ${errorText(error)}`);
		}
	}

	if (options.only.has('queue') && installation) {
		log(
			'Q. benchmark 2 through n8n in queue mode (Postgres, Redis, haproxy; 1 then 2 webhook processors + workers)',
		);
		const queueOptions: QueueWebhookOptions = options.quick
			? { concurrencies: [8, 32], reps: 1, eventsFor: () => 100 }
			: { concurrencies: [8, 32], reps: 2, eventsFor: (c) => (c === 8 ? 300 : 450) };
		try {
			results.queue = await runQueueBench({
				installation,
				tarball,
				outDir,
				keep: options.keep,
				webhook: queueOptions,
			});
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
		...(results.webhooks
			? [
					'Benchmark 2 in full (median of the repetitions, min–max; floor = the minimal community trigger):',
					'',
					webhookTable(results.webhooks),
					'',
				]
			: []),
		...(results.conversations
			? [
					'Benchmark 5 in full (one n8n, default settings; stamps from the sandbox):',
					'',
					conversationsTable(results.conversations),
					'',
				]
			: []),
		...(results.runOnceRow
			? [
					'Benchmark "run-once-row" in full (one n8n per line; store = processed_data writes counted by SQLite triggers; n8n write() = /proc/<pid>/io wchar):',
					'',
					runOnceRowTable(results.runOnceRow),
					'',
				]
			: []),
		...(results.combine
			? [
					`Benchmark "combine" in full (one n8n ${results.combine.n8n}; → item: the trigger's emission in the execution, → reply: the sandbox's stamp; on: from a burst's last message, off: from each message):`,
					'',
					combineTable(results.combine),
					'',
				]
			: []),
		...machineLines(machine),
		`Runtime ${Math.floor(results.runtime_s / 60)} min ${results.runtime_s % 60} s${options.quick ? ' (--quick: fewer events and repetitions, a 50 MiB file)' : ''}.`,
		...results.errors.map((e) => `ERROR: ${e}`),
	].join('\n');
	// Only a complete run replaces latest.*; a --quick or --only run goes to run.tmp/ (not committed).
	const complete = !options.quick && ['1', '2', '3', '4'].every((part) => options.only.has(part));
	const base = complete ? join(RESULTS, 'latest') : join(outDir, 'partial');
	writeFileSync(`${base}.json`, `${JSON.stringify(results, null, 2)}\n`);
	writeFileSync(`${base}.md`, `${text}\n`);
	if (results.runOnceRow && !options.quick) {
		const dated = writeDatedResult('run-once-row', machine.date, results, text);
		console.log(`Also written to ${dated}.json and ${dated}.md`);
	}
	if (results.combine && !options.quick) {
		const dated = writeDatedResult('combine', machine.date, results, text);
		console.log(`Also written to ${dated}.json and ${dated}.md`);
	}
	console.log(`\n${text}\n\nWritten to ${base}.json and ${base}.md`);
	process.exit(results.errors.length ? 1 : 0);
}

if (require.main === module) {
	main().catch((error) => {
		console.error(`npm run bench failed: ${errorText(error)}`);
		process.exit(1);
	});
}
