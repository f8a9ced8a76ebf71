/**
 * Benchmark "answers-on-time": whether n8n answers the service within its 8 s for the answers of a
 * burst of conversations, before against after a change, side by side in one run. "before" is a
 * build of another commit (BENCH_BEFORE, `main` by default; packed from a `git worktree` of it, as
 * combine-quiet does), "after" the package this run packed. One n8n 2.41.1 process per build (both
 * up for the whole run), each with its own sandbox and the conversation example
 * (examples/conversation.json, Automatic registration, as shipped). Runs alternate before, after,
 * after, before. Per run:
 *  - `contacts` contacts write at once ("hello") and are asked their order number; once every
 *    question went out and every execution waits (and none runs), all of them answer at once;
 *  - from the sandbox: the share of the answer deliveries the service got a 2xx for within its
 *    timeout, each delivery's time to its answer, each answer → its confirmation, and resumed /
 *    asked twice / lost (as benchmark 5 counts them);
 *  - from n8n's database (SQLite, read with the sqlite3 client): the executions of the workflow the
 *    answer phase created, by mode (`webhook`: the trigger's own execution per answer; `trigger`:
 *    the catch-up's), until the catch-up has run over every answer the service logged failed;
 *  - where the time goes, on one clock from the burst's first delivery: when each waiting execution
 *    ran again (its Reply and Wait node's second run), when n8n stored, started and finished the
 *    trigger's execution per answer (its execute(): the run-once check), the 2xx, the confirmation.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { loadavg } from 'node:os';

import { REPO_ROOT } from '../test/real-n8n/n8n';
import type { Sandbox, SandboxState } from '../test/real-n8n/sandbox';
import { log, sleep } from '../test/real-n8n/util';
import type { RunData } from './combine';
import { packCommit, type Build } from './combineQuiet';
import { activateExample } from './conversations';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { quantile } from './lib/stats';
import { runWaitAnchor, type WaitAnchorRun } from './waitAnchor';
import { cpuMs, isolatesAcquired } from './webhooks';

const QUESTION = /order number\?/;
const CONFIRMATION = /looking up order (\S+)/;
/** The example's Reply and Wait node: its second run is the execution taking the answer. */
const ASK_NODE = 'Ask for the order number';
const TRIGGER_NODE = 'On inbound message';
/** The catch-up considers a message once it is this old (catchUp/recoveries.ts SETTLE_MS) … */
const CATCH_UP_SETTLE_MS = 15_000;
/** … and runs every Catch-Up Interval (the example keeps the default, 60 s). */
const CATCH_UP_INTERVAL_MS = 60_000;

export interface AnswersOptions {
	contacts: number;
	/** Runs of each build (alternating). */
	reps: number;
	/** Contacts of the warm-up conversation per build (not reported). */
	warmUp: number;
}

export const DEFAULT_ANSWERS_OPTIONS: AnswersOptions = { contacts: 50, reps: 2, warmUp: 3 };

/** Milliseconds from the burst's first answer delivery, for each event of that kind. */
export interface Timeline {
	/** The service starts posting each answer. */
	delivery_start: number[];
	/**
	 * The trigger's webhook() is running for an answer: its While a Person Answers read of the echo
	 * history reaches the sandbox (GET /v1/messages/inbound; the catch-up's reads, which follow its
	 * GET /v1/console/webhook, left out). Not per answer: the sandbox logs no query.
	 */
	webhook_running: number[];
	/** The waiting execution runs again (its Reply and Wait node's second run starts). */
	resumed: number[];
	/** n8n stores the trigger's own execution for an answer (webhook mode): it then answers the service. */
	trigger_execution_stored: number[];
	/** That execution starts running. */
	trigger_execution_started: number[];
	/** Its trigger node's execute() (the run-once check) ends. */
	run_once_done: number[];
	/** That execution ends. */
	trigger_execution_ended: number[];
	/** The service gets n8n's 2xx (delivered answers only). */
	ok_2xx: number[];
	/** The sandbox stores the confirmation message. */
	confirmation: number[];
}

export interface AnswersRun {
	build: Build;
	rep: number;
	contacts: number;
	greetings: { on_time: number; last_question_s: number };
	on_time: number;
	share_on_time: number;
	failed_reasons: Record<string, number>;
	/** Per answer delivery: its duration when answered 2xx, Infinity when not (timed out or refused). */
	delivery_ms: number[];
	/** Per answer delivery: its duration as the sandbox logged it (a timed-out one: the timeout). */
	delivery_logged_ms: number[];
	/** Each answer (stored) → its confirmation (stored), both sandbox stamps. */
	to_confirmation_ms: number[];
	/** Per answer: its delivery's start → its waiting execution running again. */
	to_resumed_ms: number[];
	resumed: number;
	twice: number;
	lost: number;
	example?: string;
	/** Executions of the workflow created from the first answer until the catch-up ran over them. */
	executions: {
		created: number;
		per_answer: number;
		by_mode: Record<string, number>;
		/** Catch-up executions carrying one of this burst's answers (their deduplication key). */
		catch_up_answer_copies: number;
		/** The trigger's execute() (run-once check) in the `webhook` ones: ms, p50 / p95. */
		run_once_ms: number[];
		statuses: Record<string, number>;
		waited_for_catch_up: boolean;
	};
	timeline: Timeline;
	answer_phase_s: number;
	/** CPU of the n8n process (all threads) from the first answer until every outcome and no execution running. */
	n8n_cpu_ms_per_answer: number;
	/** That CPU over the wall time: 1.0 = one core busy all along. */
	n8n_cores_busy: number;
	/** Expression isolates n8n acquired per answer over the same span (its /metrics counter). */
	isolates_per_answer: number | null;
	load_average_1m: { start: number; end: number };
}

export interface AnswersBuildSummary {
	build: Build;
	commit: string;
	runs: number;
	answers: number;
	on_time: number;
	share_on_time: number;
	delivery_p50_ms: number;
	delivery_p95_ms: number;
	to_confirmation_p50_ms: number;
	to_confirmation_p95_ms: number;
	resumed: number;
	twice: number;
	lost: number;
	executions_per_answer: number;
	by_mode_per_answer: Record<string, number>;
	isolates_per_answer: number | null;
	load_average_1m: { min: number; max: number };
}

export interface AnswersResult {
	options: AnswersOptions;
	n8n: string;
	before_commit: string;
	after_commit: string;
	runs: AnswersRun[];
	builds: AnswersBuildSummary[];
	/** n8n's own Wait node resumed under the same burst, in the after build's n8n (waitAnchor.ts). */
	wait_anchor?: WaitAnchorRun;
	load_average: { start: number[]; end: number[] };
	runtime_s: number;
}

export interface Scene {
	build: Build;
	env: BenchEnvironment;
	workflowId: string;
	database: string;
}

/** Rows of a query on n8n's SQLite database (its WAL lets a reader in beside n8n). */
function sqlite<T>(database: string, query: string): T[] {
	const result = spawnSync('sqlite3', ['-json', database], {
		input: `.timeout 20000\n${query};\n`,
		encoding: 'utf8',
		maxBuffer: 512 * 2 ** 20,
	});
	if (result.status !== 0)
		throw new Error(`sqlite3 ${database}: ${result.stderr || result.error?.message}`);
	const text = result.stdout.trim();
	return text ? (JSON.parse(text) as T[]) : [];
}

/** n8n's SQLite datetimes ('YYYY-MM-DD HH:MM:SS.SSS', UTC) as epoch ms. */
function dbTime(value: unknown): number {
	if (typeof value !== 'string' || value === '') return Number.NaN;
	const iso = value.includes('T') ? value : `${value.replace(' ', 'T')}Z`;
	return Date.parse(/Z|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
}

interface ExecutionRow {
	id: number;
	mode: string;
	status: string;
	createdAt: string;
	startedAt: string | null;
	stoppedAt: string | null;
	deduplicationKey: string | null;
}

function executionsAfter(scene: Scene, afterId: number): ExecutionRow[] {
	return sqlite<ExecutionRow>(
		scene.database,
		`SELECT id, mode, status, createdAt, startedAt, stoppedAt, deduplicationKey FROM execution_entity WHERE workflowId = '${scene.workflowId}' AND id > ${afterId} ORDER BY id`,
	);
}

function lastId(scene: Scene): number {
	const [row] = sqlite<{ id: number | null }>(
		scene.database,
		`SELECT MAX(id) AS id FROM execution_entity WHERE workflowId = '${scene.workflowId}'`,
	);
	return Number(row?.id ?? 0);
}

function countWhere(scene: Scene, where: string): number {
	const [row] = sqlite<{ n: number }>(
		scene.database,
		`SELECT COUNT(*) AS n FROM execution_entity WHERE workflowId = '${scene.workflowId}' AND ${where}`,
	);
	return Number(row?.n ?? 0);
}

/** Each execution's run data (flatted, as n8n stores it), read from the database. */
function runDataOf(scene: Scene, ids: number[]): Map<number, RunData> {
	const out = new Map<number, RunData>();
	for (let i = 0; i < ids.length; i += 50) {
		const chunk = ids.slice(i, i + 50);
		const rows = sqlite<{ executionId: number; data: string }>(
			scene.database,
			`SELECT executionId, data FROM execution_data WHERE executionId IN (${chunk.join(',')})`,
		);
		for (const row of rows) {
			try {
				const data = scene.env.parseExecutionData(row.data) as {
					resultData?: { runData?: RunData };
				};
				out.set(Number(row.executionId), data.resultData?.runData ?? {});
			} catch {
				/* unreadable: left out */
			}
		}
	}
	return out;
}

async function until(
	what: string,
	probe: () => boolean | Promise<boolean>,
	timeoutMs: number,
	intervalMs = 500,
): Promise<boolean> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		if (await probe()) return true;
		if (Date.now() > deadline) {
			log(`  (gave up waiting for ${what} after ${timeoutMs / 1000} s)`);
			return false;
		}
		await sleep(intervalMs);
	}
}

export async function activateConversation(
	env: BenchEnvironment,
	sandbox: Sandbox,
): Promise<string> {
	return await activateExample(env, 'conversation', env.credential.id, sandbox);
}

const stamp = (iso: string) => Date.parse(iso);

function sentTo(state: SandboxState): Map<string, Array<{ text: string; at: number }>> {
	const sent = new Map<string, Array<{ text: string; at: number }>>();
	for (const m of state.messages)
		sent.set(m.to, [...(sent.get(m.to) ?? []), { text: m.text, at: stamp(m.created_at) }]);
	return sent;
}

/** Every contact writes at once; returns once each was asked, its execution waits and none runs. */
async function greet(scene: Scene, contacts: string[]) {
	const { env } = scene;
	const number = env.sandbox.numbers[0].phone_number_id;
	const before = lastId(scene);
	const started = Date.now();
	const deliveries = await Promise.all(
		contacts.map(
			async (from) =>
				await env.control
					.inbound({ from, contact_name: 'Ada', number, text: 'hello' })
					.then((r) => r.delivery.delivered)
					.catch(() => false),
		),
	);
	let lastQuestion = 0;
	await until(
		`the question to all ${contacts.length} contacts`,
		() => {
			const sent = sentTo(env.sandbox.state());
			lastQuestion = 0;
			for (const c of contacts) {
				const question = (sent.get(c) ?? []).find((m) => QUESTION.test(m.text));
				if (!question) return false;
				lastQuestion = Math.max(lastQuestion, question.at);
			}
			return true;
		},
		180_000,
	);
	await until(
		`${contacts.length} waiting executions and none running`,
		() =>
			countWhere(scene, `id > ${before} AND status = 'waiting'`) >= contacts.length &&
			countWhere(scene, `status IN ('new', 'running')`) === 0,
		120_000,
	);
	return {
		on_time: deliveries.filter(Boolean).length,
		last_question_s: (lastQuestion - started) / 1000,
		waitingIds: executionsAfter(scene, before)
			.filter((e) => e.status === 'waiting')
			.map((e) => e.id),
	};
}

function emptyTimeline(): Timeline {
	return {
		delivery_start: [],
		webhook_running: [],
		resumed: [],
		trigger_execution_stored: [],
		trigger_execution_started: [],
		run_once_done: [],
		trigger_execution_ended: [],
		ok_2xx: [],
		confirmation: [],
	};
}

/** Called right before the first answer is posted, and once every answer has its outcome and no execution runs. */
export interface AnswerPhaseHooks {
	started?: () => Promise<void>;
	ended?: () => Promise<void>;
}

export async function oneRun(
	scene: Scene,
	rep: number,
	contacts: string[],
	prefix: string,
	timeoutMs: number,
	hooks: AnswerPhaseHooks = {},
): Promise<AnswersRun> {
	const { env, build } = scene;
	const sandbox = env.sandbox;
	const number = sandbox.numbers[0].phone_number_id;
	const greeted = await greet(scene, contacts);
	await sleep(2000);

	// All answer at once.
	const mark = lastId(scene);
	const loadStart = loadavg()[0];
	const pid = env.n8n.child.pid as number;
	await hooks.started?.();
	const isolatesStart = await isolatesAcquired(env.n8n.url).catch(() => null);
	const cpuStart = cpuMs(pid);
	const answeredAt = Date.now();
	const posted = await Promise.all(
		contacts.map(
			async (from, i) =>
				await env.control
					.inbound({ from, contact_name: 'Ada', number, text: `${prefix}-${i}` })
					.then((r) => r.record.wa_message_id)
					.catch(() => undefined),
		),
	);
	const classify = () => {
		const sent = sentTo(sandbox.state());
		const o = { resumed: 0, twice: 0, pending: 0, example: '' };
		contacts.forEach((c, i) => {
			const texts = sent.get(c) ?? [];
			const questions = texts.filter((m) => QUESTION.test(m.text)).length;
			const confirmations = texts.filter(
				(m) => CONFIRMATION.exec(m.text)?.[1] === `${prefix}-${i}`,
			).length;
			if (questions > 1 || confirmations > 1) {
				o.twice++;
				o.example ||= `${c} was sent: ${texts.map((m) => m.text.slice(0, 40)).join(' | ')}`;
			} else if (confirmations === 1) o.resumed++;
			else o.pending++;
		});
		return o;
	};
	await until(`an outcome for every answer of ${prefix}`, () => classify().pending === 0, 180_000);
	await until(
		'no execution running',
		() => countWhere(scene, `status IN ('new', 'running')`) === 0,
		60_000,
		200,
	);
	const cpuUsed = cpuMs(pid) - cpuStart;
	const answerPhaseMs = Date.now() - answeredAt;
	const isolatesEnd = await isolatesAcquired(env.n8n.url).catch(() => null);
	await hooks.ended?.();
	// A second question or confirmation would come within seconds.
	await sleep(3000);
	const outcome = classify();
	const loadEnd = loadavg()[0];

	// The sandbox's view of each answer: stored, delivered (or not), confirmed.
	const state = sandbox.state();
	const ids = new Set(posted.filter((id): id is string => typeof id === 'string'));
	const inboundAt = new Map<string, { at: number; from: string; text: string }>();
	for (const r of state.inbound)
		if (r.direction === 'in' && ids.has(r.wa_message_id))
			inboundAt.set(r.wa_message_id, { at: stamp(r.created_at), from: r.from, text: r.text });
	const deliveries = state.deliveries.filter((d) => {
		if (d.event !== 'message.inbound' || !d.body || d.resend_of) return false;
		const body = JSON.parse(d.body) as { data?: { wa_message_id?: string } };
		return ids.has(String(body.data?.wa_message_id));
	});
	const firstStart = Math.min(
		...deliveries.map((d) => stamp(d.created_at) - Number(d.duration_ms ?? 0)),
	);
	const t0 = Number.isFinite(firstStart) ? firstStart : answeredAt;
	const timeline = emptyTimeline();
	const failedReasons: Record<string, number> = {};
	const deliveryMs: number[] = [];
	const deliveryLoggedMs: number[] = [];
	const deliveryStartOf = new Map<string, number>();
	for (const d of deliveries) {
		const body = JSON.parse(d.body as string) as { data: { from: string } };
		const end = stamp(d.created_at);
		const duration = Number(d.duration_ms ?? Number.NaN);
		deliveryStartOf.set(body.data.from, end - duration);
		timeline.delivery_start.push(end - duration - t0);
		deliveryLoggedMs.push(duration);
		const onTime = d.delivered && duration <= timeoutMs;
		deliveryMs.push(onTime ? duration : Number.POSITIVE_INFINITY);
		if (onTime) timeline.ok_2xx.push(end - t0);
		else {
			const reason = d.reason ?? `HTTP ${d.status}`;
			failedReasons[reason] = (failedReasons[reason] ?? 0) + 1;
		}
	}
	const onTime = deliveryMs.filter(Number.isFinite).length;
	// Until every outcome was in and no execution ran.
	const lastAnswerEnd = answeredAt + answerPhaseMs;
	const watches = state.requests
		.filter((r) => r.method === 'GET' && r.path === '/v1/console/webhook')
		.map((r) => stamp(r.at));
	for (const r of state.requests) {
		const at = stamp(r.at);
		if (r.method !== 'GET' || r.path !== '/v1/messages/inbound') continue;
		if (at < t0 || at > lastAnswerEnd) continue;
		if (watches.some((w) => at >= w && at - w < 2000)) continue;
		timeline.webhook_running.push(at - t0);
	}
	const sent = sentTo(state);
	const toConfirmation: number[] = [];
	contacts.forEach((c, i) => {
		const answer = [...inboundAt.values()].find((r) => r.from === c);
		const confirmation = (sent.get(c) ?? []).find(
			(m) => CONFIRMATION.exec(m.text)?.[1] === `${prefix}-${i}`,
		);
		if (answer && confirmation) {
			toConfirmation.push(confirmation.at - answer.at);
			timeline.confirmation.push(confirmation.at - t0);
		}
	});

	// The catch-up over the answers the service logged failed: its next run once they are settled.
	const failed = deliveries.length - onTime;
	let waitedForCatchUp = false;
	if (failed > 0) {
		waitedForCatchUp = true;
		const newestStored = Math.max(...[...inboundAt.values()].map((r) => r.at));
		const settledAt = newestStored + CATCH_UP_SETTLE_MS + 1000;
		await until(
			'a catch-up run over the answers',
			() =>
				sandbox
					.state()
					.requests.some(
						(r) => r.method === 'GET' && r.path.startsWith('/v1/logs') && stamp(r.at) >= settledAt,
					),
			CATCH_UP_INTERVAL_MS + CATCH_UP_SETTLE_MS + 20_000,
			1000,
		);
		await sleep(3000);
		await until(
			'the catch-up executions to end',
			() => countWhere(scene, `status IN ('new', 'running')`) === 0,
			60_000,
		);
	}

	// Executions created since the first answer, and where the time went.
	const created = executionsAfter(scene, mark);
	const byMode: Record<string, number> = {};
	const statuses: Record<string, number> = {};
	for (const e of created) {
		byMode[e.mode] = (byMode[e.mode] ?? 0) + 1;
		statuses[e.status] = (statuses[e.status] ?? 0) + 1;
	}
	const catchUpCopies = created.filter(
		(e) =>
			e.mode === 'trigger' &&
			[...ids].some((id) => String(e.deduplicationKey ?? '').endsWith(`:${id}`)),
	).length;
	const own = created.filter((e) => e.mode === 'webhook');
	const ownData = runDataOf(
		scene,
		own.map((e) => e.id),
	);
	const runOnceMs: number[] = [];
	for (const e of own) {
		timeline.trigger_execution_stored.push(dbTime(e.createdAt) - t0);
		if (e.startedAt) timeline.trigger_execution_started.push(dbTime(e.startedAt) - t0);
		if (e.stoppedAt) timeline.trigger_execution_ended.push(dbTime(e.stoppedAt) - t0);
		const run = ownData.get(e.id)?.[TRIGGER_NODE]?.[0];
		if (run?.startTime !== undefined) {
			timeline.run_once_done.push(run.startTime + (run.executionTime ?? 0) - t0);
			runOnceMs.push(run.executionTime ?? Number.NaN);
		}
	}
	const toResumed: number[] = [];
	const resumedData = runDataOf(scene, greeted.waitingIds);
	for (const runData of resumedData.values()) {
		// n8n replaces the waiting node's run with the resumed one, whose output is the answer.
		const again = (runData[ASK_NODE] ?? []).find((run) => {
			const data = run.data?.main?.[0]?.[0]?.json?.data as { text?: unknown } | undefined;
			return String(data?.text ?? '').startsWith(`${prefix}-`);
		});
		if (again?.startTime === undefined) continue;
		timeline.resumed.push(again.startTime - t0);
		const from = again.data?.main?.[0]?.[0]?.json?.data as { from?: string } | undefined;
		const start = deliveryStartOf.get(String(from?.from));
		if (start !== undefined) toResumed.push(again.startTime - start);
	}
	if (timeline.resumed.length === 0 && resumedData.size > 0) {
		const [sample] = resumedData.values();
		log(
			`  (no resumed run of "${ASK_NODE}" found; its runs: ${JSON.stringify((sample[ASK_NODE] ?? []).map((r) => ({ startTime: r.startTime, output: r.data?.main?.map((items) => items?.length ?? 0) })))})`,
		);
	}

	return {
		build,
		rep,
		contacts: contacts.length,
		greetings: { on_time: greeted.on_time, last_question_s: greeted.last_question_s },
		on_time: onTime,
		share_on_time: onTime / contacts.length,
		failed_reasons: failedReasons,
		delivery_ms: deliveryMs,
		delivery_logged_ms: deliveryLoggedMs,
		to_confirmation_ms: toConfirmation,
		to_resumed_ms: toResumed,
		resumed: outcome.resumed,
		twice: outcome.twice,
		lost: outcome.pending,
		...(outcome.example ? { example: outcome.example } : {}),
		executions: {
			created: created.length,
			per_answer: created.length / contacts.length,
			by_mode: byMode,
			catch_up_answer_copies: catchUpCopies,
			run_once_ms: runOnceMs,
			statuses,
			waited_for_catch_up: waitedForCatchUp,
		},
		timeline,
		answer_phase_s: answerPhaseMs / 1000,
		n8n_cpu_ms_per_answer: cpuUsed / contacts.length,
		n8n_cores_busy: cpuUsed / answerPhaseMs,
		isolates_per_answer:
			isolatesStart === null || isolatesEnd === null
				? null
				: (isolatesEnd - isolatesStart) / contacts.length,
		load_average_1m: {
			start: Math.round(loadStart * 100) / 100,
			end: Math.round(loadEnd * 100) / 100,
		},
	};
}

const isolatesText = (n: number | null) => (n === null ? 'n/a' : n.toFixed(2));
const sec = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : '> 8 s');
const p = (values: number[], q: number) => quantile(values, q);
const pair = (values: number[]) => `${sec(p(values, 0.5))} / ${sec(p(values, 0.95))}`;

function summarize(runs: AnswersRun[], build: Build, commit: string): AnswersBuildSummary {
	const mine = runs.filter((r) => r.build === build);
	const answers = mine.reduce((n, r) => n + r.contacts, 0);
	const onTime = mine.reduce((n, r) => n + r.on_time, 0);
	const delivery = mine.flatMap((r) => r.delivery_ms);
	const confirmation = mine.flatMap((r) => r.to_confirmation_ms);
	const created = mine.reduce((n, r) => n + r.executions.created, 0);
	const byMode: Record<string, number> = {};
	for (const r of mine)
		for (const [mode, n] of Object.entries(r.executions.by_mode))
			byMode[mode] = (byMode[mode] ?? 0) + n / answers;
	const loads = mine.flatMap((r) => [r.load_average_1m.start, r.load_average_1m.end]);
	const isolates = mine.map((r) => r.isolates_per_answer);
	return {
		build,
		commit,
		runs: mine.length,
		answers,
		on_time: onTime,
		share_on_time: onTime / Math.max(1, answers),
		delivery_p50_ms: p(delivery, 0.5),
		delivery_p95_ms: p(delivery, 0.95),
		to_confirmation_p50_ms: p(confirmation, 0.5),
		to_confirmation_p95_ms: p(confirmation, 0.95),
		resumed: mine.reduce((n, r) => n + r.resumed, 0),
		twice: mine.reduce((n, r) => n + r.twice, 0),
		lost: mine.reduce((n, r) => n + r.lost, 0),
		executions_per_answer: created / Math.max(1, answers),
		by_mode_per_answer: byMode,
		isolates_per_answer: isolates.every((n): n is number => n !== null)
			? isolates.reduce((a, b) => a + b, 0) / Math.max(1, isolates.length)
			: null,
		load_average_1m: { min: Math.min(...loads), max: Math.max(...loads) },
	};
}

export function runLine(r: AnswersRun): string {
	const modes = Object.entries(r.executions.by_mode)
		.map(([mode, n]) => `${n} ${mode}`)
		.join(' + ');
	return `${r.build} #${r.rep}: ${r.on_time}/${r.contacts} answers 2xx within 8 s (${(r.share_on_time * 100).toFixed(0)}%), delivery → 2xx p50/p95 ${pair(r.delivery_ms)}, answer → confirmation ${pair(r.to_confirmation_ms)}; ${r.resumed} resumed, ${r.twice} asked twice, ${r.lost} lost; ${r.executions.created} executions created (${modes || 'none'}; ${r.executions.catch_up_answer_copies} catch-up copies of answers), ${r.executions.per_answer.toFixed(2)} per answer; ${isolatesText(r.isolates_per_answer)} isolates per answer; greetings ${r.greetings.on_time}/${r.contacts} within 8 s; load ${r.load_average_1m.start.toFixed(1)} → ${r.load_average_1m.end.toFixed(1)}`;
}

export async function runAnswersBench(
	setup: { afterTarball: string; beforeRef: string; outDir: string; keep?: boolean },
	options: AnswersOptions = DEFAULT_ANSWERS_OPTIONS,
): Promise<AnswersResult> {
	const started = Date.now();
	const start = loadavg();
	// This checkout as packed (the tarball was built before this call), not HEAD at the end.
	const afterCommit = spawnSync('git', ['rev-parse', 'HEAD'], {
		cwd: REPO_ROOT,
		encoding: 'utf8',
	}).stdout.trim();
	const before = packCommit(setup.beforeRef, join(setup.outDir, 'before'));
	log(
		`answers-on-time: before = ${setup.beforeRef} (${before.commit.slice(0, 7)}), after = this checkout`,
	);
	const tarballs: Record<Build, string> = { before: before.tarball, after: setup.afterTarball };
	const scenes: Partial<Record<Build, Scene>> = {};
	const runs: AnswersRun[] = [];
	let waitAnchor: WaitAnchorRun | undefined;
	let n8n = '';
	try {
		for (const build of ['before', 'after'] as const) {
			const env = await startBenchEnvironment({
				tarball: tarballs[build],
				outDir: setup.outDir,
				keep: setup.keep,
				logName: `n8n-answers-on-time-${build}.log`,
				line: 2,
				// Its /metrics: expression isolates acquired per answer; BENCH_N8N_ENV: operator settings.
				env: { N8N_METRICS: 'true', ...operatorSettings() },
			});
			n8n = env.installation.version;
			const scene: Scene = {
				build,
				env,
				workflowId: '',
				database: join(env.userFolder, '.n8n', 'database.sqlite'),
			};
			scenes[build] = scene;
			scene.workflowId = await activateConversation(env, env.sandbox);
		}
		const contactsOf = (build: Build, rep: number, count: number) =>
			Array.from(
				{ length: count },
				(_, i) =>
					`+3369${build === 'before' ? 1 : 2}${String(rep).padStart(2, '0')}${String(10_000 + i).slice(1)}`,
			);
		for (const build of ['before', 'after'] as const) {
			const warm = await oneRun(scenes[build]!, 0, contactsOf(build, 0, options.warmUp), 'W', 8000);
			log(`  warm-up ${build}: ${warm.resumed}/${warm.contacts} resumed`);
		}
		for (let rep = 1; rep <= options.reps; rep++) {
			const order: Build[] = rep % 2 ? ['before', 'after'] : ['after', 'before'];
			for (const build of order) {
				const prefix = `${build === 'before' ? 'B' : 'A'}${rep}`;
				const run = await oneRun(
					scenes[build]!,
					rep,
					contactsOf(build, rep, options.contacts),
					prefix,
					8000,
				);
				runs.push(run);
				log(`  ${runLine(run)}`);
				log(`    ${timelineLine(run)}`);
			}
		}
		const after = scenes.after!;
		// Never at the cost of the runs above: a failure is logged and the anchor left out.
		waitAnchor = await runWaitAnchor(after.env, options.contacts, 8000, (workflowId, where) => {
			const [row] = sqlite<{ n: number }>(
				after.database,
				`SELECT COUNT(*) AS n FROM execution_entity WHERE workflowId = '${workflowId}' AND ${where}`,
			);
			return Number(row?.n ?? 0);
		}).catch((error: unknown) => {
			log(`  Wait node anchor failed: ${(error as Error).message}`);
			return undefined;
		});
	} finally {
		for (const scene of Object.values(scenes)) await scene?.env.stop();
	}

	return {
		options,
		n8n,
		before_commit: before.commit,
		after_commit: afterCommit,
		runs,
		builds: [summarize(runs, 'before', before.commit), summarize(runs, 'after', afterCommit)],
		...(waitAnchor && { wait_anchor: waitAnchor }),
		load_average: { start, end: loadavg() },
		runtime_s: Math.round((Date.now() - started) / 1000),
	};
}

const TIMELINE_LABELS: Array<[keyof Timeline, string]> = [
	['webhook_running', "trigger's webhook() running (its hand-over read)"],
	['resumed', 'waiting execution runs again'],
	['trigger_execution_stored', "trigger's execution stored"],
	['trigger_execution_started', '… started'],
	['run_once_done', '… run-once done'],
	['trigger_execution_ended', '… ended'],
	['ok_2xx', '2xx to the service'],
	['confirmation', 'confirmation sent'],
];

export function timelineLine(r: AnswersRun): string {
	return `from the first answer delivery, p50 / p95 (n): ${TIMELINE_LABELS.map(([key, label]) => `${label} ${pair(r.timeline[key])} (${r.timeline[key].length})`).join('; ')}; delivery start → its execution resumed ${pair(r.to_resumed_ms)}; run-once in the trigger's execution ${pair(r.executions.run_once_ms)}; n8n CPU ${r.n8n_cpu_ms_per_answer.toFixed(0)} ms per answer, ${r.n8n_cores_busy.toFixed(2)} cores busy over ${r.answer_phase_s.toFixed(1)} s`;
}

/** n8n's own Wait node under the same burst, and the ratio of p50s (issue 43: goal ≤ 1.5x). */
function anchorLines(result: AnswersResult): string[] {
	const anchor = result.wait_anchor;
	if (!anchor) return [];
	const ours = result.builds.find((b) => b.build === 'after');
	const resumedP50 = quantile(
		result.runs.filter((r) => r.build === 'after').flatMap((r) => r.to_resumed_ms),
		0.5,
	);
	const rawRatio =
		Number.isFinite(resumedP50) && Number.isFinite(anchor.raw_p50_ms) && anchor.raw_p50_ms > 0
			? `${(resumedP50 / anchor.raw_p50_ms).toFixed(2)}x`
			: 'n/a';
	const ratio = (ms: number | undefined) =>
		ms !== undefined && Number.isFinite(ms) && anchor.p50_ms > 0
			? `${(ms / anchor.p50_ms).toFixed(2)}x`
			: 'n/a';
	return [
		'',
		`Anchor, in the after build's n8n after its runs: n8n's own Wait node (Resume: On Webhook Call), ${anchor.count} executions resumed at once by posting to their resume URLs: ${anchor.on_time} / ${anchor.count} 2xx within 8 s, resume → 2xx p50 / p95 ${sec(anchor.p50_ms)} / ${sec(anchor.p95_ms)}, ${isolatesText(anchor.isolates_per_resume)} expression isolates per resume. Answer delivery → 2xx p50, after / anchor: ${ratio(ours?.delivery_p50_ms)}. However long: an answer's delivery start → its execution resumed p50 ${(resumedP50 / 1000).toFixed(1)} s against the anchor's resume → 2xx p50 ${((anchor.raw_p50_ms ?? Number.NaN) / 1000).toFixed(1)} s: ${rawRatio}. Isolates per answer after / per resume: ${ours?.isolates_per_answer != null && anchor.isolates_per_resume ? (ours.isolates_per_answer / anchor.isolates_per_resume).toFixed(2) : 'n/a'}x.`,
	];
}

/** The result as Markdown: per build, per run, and where the time goes per run. */
/** BENCH_N8N_ENV=KEY=value,KEY=value: n8n settings for both builds (issue 43 goal 3). */
function operatorSettings(): Record<string, string> {
	const pairs = (process.env.BENCH_N8N_ENV ?? '').split(',').filter((pair) => pair.includes('='));
	return Object.fromEntries(pairs.map((pair) => pair.split('=', 2) as [string, string]));
}

export function answersTable(result: AnswersResult): string {
	const o = result.options;
	const commitOf = (build: Build) =>
		(build === 'before' ? result.before_commit : result.after_commit).slice(0, 7);
	const modes = (byMode: Record<string, number>) =>
		Object.entries(byMode)
			.map(([mode, n]) => `${n.toFixed(2)} ${mode}`)
			.join(' + ') || '0';
	const loadText = (l: { start: number; end: number }) =>
		`${l.start.toFixed(1)} → ${l.end.toFixed(1)}`;
	const lines = [
		`n8n ${result.n8n}${Object.entries(operatorSettings())
			.map(([key, value]) => `, ${key}=${value}`)
			.join(
				'',
			)}, one process per build, each with its own sandbox; the conversation example (Automatic registration); ${o.contacts} contacts greet at once, then all answer at once once every execution waits; ${o.reps} runs of each build, alternating; load average ${result.load_average.start.map((v) => v.toFixed(1)).join(' ')} at start, ${result.load_average.end.map((v) => v.toFixed(1)).join(' ')} at end; ${Math.round(result.runtime_s / 60)} min`,
		'',
		'| build | answers 2xx within 8 s | answer delivery → 2xx p50 / p95 | answer → confirmation p50 / p95 | resumed / asked twice / lost | new executions per answer (by mode) | expression isolates per answer | load avg (1 min) |',
		'|---|---|---|---|---|---|---|---|',
		...result.builds.map(
			(b) =>
				`| ${b.build} (${b.commit.slice(0, 7)}) | ${b.on_time} / ${b.answers} (${(b.share_on_time * 100).toFixed(0)}%) | ${sec(b.delivery_p50_ms)} / ${sec(b.delivery_p95_ms)} | ${sec(b.to_confirmation_p50_ms)} / ${sec(b.to_confirmation_p95_ms)} | ${b.resumed} / ${b.twice} / ${b.lost} | ${b.executions_per_answer.toFixed(2)} (${modes(b.by_mode_per_answer)}) | ${isolatesText(b.isolates_per_answer)} | ${b.load_average_1m.min.toFixed(1)}–${b.load_average_1m.max.toFixed(1)} |`,
		),
		...anchorLines(result),
		'',
		'Per run (in the order run):',
		'',
		'| run | answers 2xx within 8 s | delivery → 2xx p50 / p95 | answer → confirmation p50 / p95 | resumed / twice / lost | executions created (by mode; catch-up copies of answers) | per answer | greetings within 8 s | load avg (1 min) |',
		'|---|---|---|---|---|---|---|---|---|',
		...result.runs.map(
			(r) =>
				`| ${r.build} (${commitOf(r.build)}) #${r.rep} | ${r.on_time} / ${r.contacts} | ${pair(r.delivery_ms)} | ${pair(r.to_confirmation_ms)} | ${r.resumed} / ${r.twice} / ${r.lost} | ${r.executions.created} (${modes(r.executions.by_mode)}; ${r.executions.catch_up_answer_copies}) | ${r.executions.per_answer.toFixed(2)} | ${r.greetings.on_time} / ${r.contacts} | ${loadText(r.load_average_1m)} |`,
		),
		'',
		"Where the time goes, per run: seconds from the burst's first answer delivery, p50 / p95 (n). Trigger's execution: the one n8n starts for each answer that resumed a wait (record-only, its execute() records the message in the run-once store and drops it); n8n answers the service once it is stored.",
		'',
		`| run | delivery → its execution resumed | ${TIMELINE_LABELS.map(([, label]) => label).join(' | ')} | run-once in it (ms) | n8n CPU per answer (cores busy) |`,
		`|---|---|${TIMELINE_LABELS.map(() => '---').join('|')}|---|---|`,
		...result.runs.map(
			(r) =>
				`| ${r.build} #${r.rep} | ${pair(r.to_resumed_ms)} | ${TIMELINE_LABELS.map(([key]) => `${pair(r.timeline[key])} (${r.timeline[key].length})`).join(' | ')} | ${p(r.executions.run_once_ms, 0.5).toFixed(0)} / ${p(r.executions.run_once_ms, 0.95).toFixed(0)} | ${r.n8n_cpu_ms_per_answer.toFixed(0)} ms (${r.n8n_cores_busy.toFixed(2)}) |`,
		),
	];
	return lines.join('\n');
}
