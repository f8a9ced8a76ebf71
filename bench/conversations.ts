/**
 * Benchmark 5: what "exactly once under real traffic" costs, in ONE n8n 2.41.1 (default settings,
 * one process), side by side.
 *
 * (a) Conversations: bursts of N contacts through the conversation example (examples/conversation.json)
 *     against the sandbox, as test/e2e/checks/conversationBurst.ts drives them: every contact writes
 *     at once and is asked its order number (the execution waits); once every question went out and
 *     the executions wait, every contact answers at once and must be confirmed by ITS OWN execution.
 *     Per N: conversations/s (N / time from the first greeting to the last confirmation, both as the
 *     sandbox stamped them), and resumed / asked twice / lost. The figure is the highest rate at which
 *     all resumed. Beside each N, the plain auto-reply example (examples/auto-reply.json, on a second
 *     sandbox, so both workflows stay active with Automatic registration) takes the same number of
 *     inbound messages (2N, all at once): events/s = 2N / time from the first message to the last reply.
 *     The ratio compares inbound messages per second (a conversation is two of them).
 * (b) CPU per event of the trigger with the run-once check (routing/runOnce.ts) against without: a
 *     second build of the package whose trigger execute() returns its items without runOnce, packed
 *     by this benchmark under another name (n8n-nodes-business-messaging-no-run-once, credential type
 *     businessMessagingNoRunOnceApi) and installed beside the real one, never shipped. Three workflows,
 *     Trigger (Manual registration) → No Operation, take the same signed events in interleaved rounds:
 *     with run-once (its store row holds the few keys the bench sent), with run-once and a full row
 *     (RUN_ONCE_MAX_ENTRIES keys written into n8n's SQLite database before its first event: a workflow
 *     that ran that many messages; every call then reads and rewrites it whole), and without.
 *     CPU of the n8n process from /proc: during the run (first request until the executions are
 *     stored), and including the 11 s after it in which runOnce re-checks its keys (1 s and 10 s
 *     later; n8n's idle CPU over those 11 s is in it too, for every variant alike).
 */
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';

import {
	RUN_ONCE_MAX_ENTRIES,
	VERIFY_AFTER_MS,
} from '../nodes/BusinessMessagingTrigger/routing/runOnce';
import { CREDENTIAL_NAME, mapExample, readExample } from '../test/real-n8n/examples';
import { REPO_ROOT } from '../test/real-n8n/n8n';
import { launchSandbox, type Sandbox } from '../test/real-n8n/sandbox';
import { log, sleep } from '../test/real-n8n/util';
import { CREDENTIAL_TYPE, TRIGGER_TYPE } from '../test/support/constants';
import { SIGNING_SECRET } from '../test/support/fixtures';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { awaitExecutionCount, createManualCredential, executionCount, node } from './lib/n8n';
import { median, spread, type Spread } from './lib/stats';
import { cpuMs, fire, signedEvents } from './webhooks';

const QUESTION = /order number\?/;
const CONFIRMATION = /looking up order (\S+)/;
const AUTO_REPLY = /we got your message/;

export const NO_RUN_ONCE_PACKAGE = 'n8n-nodes-business-messaging-no-run-once';
export const NO_RUN_ONCE_CREDENTIAL = 'businessMessagingNoRunOnceApi';
/** runOnce re-checks a key 1 s and 10 s after taking it (VERIFY_AFTER_MS): wait past the last. */
const RECHECK_WINDOW_MS = Math.max(...VERIFY_AFTER_MS) + 1_000;
const WARM_UP_EVENTS = 20;

export interface ConversationOptions {
	contacts: number[];
	runOnce: { events: number; concurrency: number; reps: number };
}

export const DEFAULT_CONVERSATION_OPTIONS: ConversationOptions = {
	contacts: [10, 25, 50, 100],
	runOnce: { events: 120, concurrency: 8, reps: 3 },
};

export const QUICK_CONVERSATION_OPTIONS: ConversationOptions = {
	contacts: [10, 25],
	runOnce: { events: 40, concurrency: 8, reps: 1 },
};

export interface ConversationBurst {
	contacts: number;
	/** First greeting to the last question (sandbox stamps). */
	greet_s: number;
	/** First answer to the last confirmation (sandbox stamps). */
	answer_s: number;
	/** First greeting to the last confirmation: what conversations/s divides by. */
	total_s: number;
	conversations_per_s: number;
	/** 2 inbound messages per conversation. */
	messages_per_s: number;
	resumed: number;
	twice: number;
	lost: number;
	all_resumed: boolean;
	/** Webhook deliveries the service counted as failed (no 2xx within its timeout), greetings + answers. */
	deliveries_failed: number;
	cpu_ms_per_message: number;
	load_average_1m: number;
	example?: string;
}

export interface AutoReplyBurst {
	messages: number;
	seconds: number;
	events_per_s: number;
	replied_once: number;
	replied_twice: number;
	not_replied: number;
	deliveries_failed: number;
	cpu_ms_per_message: number;
	load_average_1m: number;
}

export const RUN_ONCE_VARIANTS = ['with', 'with-full', 'without'] as const;
export type RunOnceVariant = (typeof RUN_ONCE_VARIANTS)[number];
export const RUN_ONCE_LABELS: Record<RunOnceVariant, string> = {
	with: 'with run-once',
	'with-full': `with run-once, row full (${RUN_ONCE_MAX_ENTRIES.toLocaleString('en')} keys)`,
	without: 'without run-once (bypassed build)',
};

export interface RunOnceVsWithout {
	/** CPU per event over the run without's, per repetition. */
	ratio: Spread;
	ratio_with_rechecks: Spread;
	/** CPU ms per event minus the run without's, per repetition: the store's cost. */
	store_ms_per_event: Spread;
	store_ms_per_event_with_rechecks: Spread;
}

export interface RunOnceRun {
	variant: RunOnceVariant;
	rep: number;
	events: number;
	ok_2xx: number;
	executions_recorded: number;
	events_per_s: number;
	cpu_ms_per_event: number;
	cpu_ms_per_event_with_rechecks: number;
	/** n8n's CPU per second in the re-check window after the run (its idle level, plus the re-checks). */
	after_cpu_ms_per_s: number;
	load_average_1m: number;
}

export interface ConversationsResult {
	sizes: Array<{
		contacts: number;
		conversation: ConversationBurst;
		auto_reply: AutoReplyBurst;
		/** Conversation inbound messages/s over the auto-reply's events/s. */
		ratio: number;
	}>;
	/** The highest conversations/s among the bursts in which every answer resumed its own execution. */
	best: { contacts: number; conversations_per_s: number; messages_per_s: number } | null;
	run_once: {
		concurrency: number;
		events_per_run: number;
		reps: number;
		runs: RunOnceRun[];
		full_row_skipped?: string;
		variants: Array<{
			variant: RunOnceVariant;
			label: string;
			/** Keys in the store's row at the end (its size drives the cost of every call). */
			keys_in_row: number;
			events_per_s: number;
			cpu_ms_per_event: Spread;
			with_rechecks: Spread;
			vs_without?: RunOnceVsWithout;
		}>;
	};
}

/**
 * The package as built (dist/) under another name, its trigger's execute() returning its items
 * without the run-once check: the "without" of (b). Built into outDir by the benchmark, never shipped.
 */
export function packWithoutRunOnce(outDir: string): string {
	const dir = join(outDir, 'no-run-once');
	rmSync(dir, { recursive: true, force: true });
	mkdirSync(dir, { recursive: true });
	cpSync(join(REPO_ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
	const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Record<
		string,
		unknown
	>;
	delete pkg.scripts;
	delete pkg.devDependencies;
	writeFileSync(
		join(dir, 'package.json'),
		JSON.stringify({ ...pkg, name: NO_RUN_ONCE_PACKAGE, private: true }, null, 2),
	);
	const triggerFile = join(
		dir,
		'dist',
		'nodes',
		'BusinessMessagingTrigger',
		'BusinessMessagingTrigger.node.js',
	);
	const trigger = readFileSync(triggerFile, 'utf8');
	const call = /return await \(?(?:0, )?runOnce_1\.runOnce\)?\.call\(this, items\);/;
	if (!call.test(trigger))
		throw new Error(
			`${triggerFile}: the runOnce call in execute() was not found; update the bench`,
		);
	writeFileSync(triggerFile, trigger.replace(call, 'return items;'));
	// Two packages cannot define the same credential type: this one gets its own name.
	const rename = (path: string) => {
		for (const entry of readdirSync(path, { withFileTypes: true })) {
			const file = join(path, entry.name);
			if (entry.isDirectory()) rename(file);
			else if (entry.name.endsWith('.js')) {
				const text = readFileSync(file, 'utf8');
				const renamed = text.replace(
					/(['"])businessMessagingApi\1/g,
					`$1${NO_RUN_ONCE_CREDENTIAL}$1`,
				);
				if (renamed !== text) writeFileSync(file, renamed);
			}
		}
	};
	rename(join(dir, 'dist'));
	for (const file of readdirSync(outDir))
		if (file.startsWith(NO_RUN_ONCE_PACKAGE)) rmSync(join(outDir, file));
	const pack = spawnSync('npm', ['pack', '--silent', '--pack-destination', outDir], {
		cwd: dir,
		encoding: 'utf8',
	});
	const name = pack.stdout.trim().split('\n').pop() ?? '';
	if (pack.status !== 0 || !name.endsWith('.tgz'))
		throw new Error(`npm pack of the no-run-once variant failed:\n${pack.stdout}\n${pack.stderr}`);
	return join(outDir, name);
}

const stamp = (created: string) => Date.parse(created);

/** What the sandbox sent to each contact, with its stamp; and when each contact's messages came in. */
function sandboxView(sandbox: Sandbox) {
	const state = sandbox.state();
	const sent = new Map<string, Array<{ text: string; at: number }>>();
	for (const m of state.messages)
		sent.set(m.to, [...(sent.get(m.to) ?? []), { text: m.text, at: stamp(m.created_at) }]);
	const received = new Map<string, number[]>();
	for (const r of state.inbound as Array<{ from: string; created_at: string; direction: string }>)
		if (r.direction === 'in')
			received.set(r.from, [...(received.get(r.from) ?? []), stamp(r.created_at)]);
	return { sent, received };
}

async function until<T>(
	what: string,
	probe: () => Promise<T | undefined> | T | undefined,
	timeoutMs: number,
	intervalMs = 250,
): Promise<T | undefined> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (value !== undefined) return value;
		if (Date.now() > deadline) {
			log(`  (gave up waiting for ${what} after ${timeoutMs / 1000} s)`);
			return undefined;
		}
		await sleep(intervalMs);
	}
}

/**
 * Waits until every message has its outcome, takes n8n's CPU and the load at that moment, and
 * classifies again 3 s later: a second question, confirmation or reply would come within seconds.
 * The stamps come from the sandbox: polling only decides when to stop (and costs a copy of its state).
 */
async function settle<T>(
	pid: number,
	what: string,
	classify: () => T,
	done: (outcome: T) => boolean,
): Promise<{ outcome: T; cpuAfter: number; load: number }> {
	await until(what, () => (done(classify()) ? true : undefined), 180_000, 1000);
	const cpuAfter = cpuMs(pid);
	const load = Math.round(loadavg()[0] * 100) / 100;
	await sleep(3000);
	return { outcome: classify(), cpuAfter, load };
}

interface Scene {
	env: BenchEnvironment;
	pid: number;
	conversation: { workflowId: string; sandbox: Sandbox };
	autoReply: { workflowId: string; sandbox: Sandbox };
}

async function write(sandbox: Sandbox, from: string, text: string) {
	const response = await fetch(`${sandbox.baseUrl}/_sandbox/inbound`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({
			from,
			contact_name: 'Ada',
			number: sandbox.numbers[0].phone_number_id,
			text,
		}),
		signal: AbortSignal.timeout(60_000),
	});
	if (!response.ok)
		throw new Error(`sandbox inbound -> ${response.status}: ${await response.text()}`);
	return ((await response.json()) as { delivery: { delivered: boolean } }).delivery;
}

async function waitingCount(env: BenchEnvironment, workflowId: string): Promise<number> {
	return await executionCount(env.client, workflowId, ['waiting']);
}

async function conversationBurst(
	scene: Scene,
	contacts: string[],
	prefix: string,
): Promise<ConversationBurst> {
	const { env, pid } = scene;
	const { sandbox, workflowId } = scene.conversation;
	const n = contacts.length;
	const waitingBefore = await waitingCount(env, workflowId);
	const cpuBefore = cpuMs(pid);
	const greetings = await Promise.all(contacts.map(async (c) => await write(sandbox, c, 'hello')));
	await until(
		`the question to all ${n} contacts`,
		() => {
			const { sent } = sandboxView(sandbox);
			return contacts.every((c) => (sent.get(c) ?? []).some((m) => QUESTION.test(m.text)))
				? true
				: undefined;
		},
		180_000,
	);
	await until(
		`${n} more waiting executions`,
		async () => ((await waitingCount(env, workflowId)) - waitingBefore >= n ? true : undefined),
		60_000,
		300,
	);
	const answers = await Promise.all(
		contacts.map(async (c, i) => await write(sandbox, c, `${prefix}-${i}`)),
	);
	const classify = () => {
		const { sent, received } = sandboxView(sandbox);
		const o = { resumed: 0, twice: 0, pending: 0, example: '', firstIn: Infinity, lastQuestion: 0 };
		let firstAnswer = Infinity;
		let lastConfirmation = 0;
		contacts.forEach((c, i) => {
			const texts = sent.get(c) ?? [];
			const inbound = received.get(c) ?? [];
			o.firstIn = Math.min(o.firstIn, inbound[0] ?? Infinity);
			if (inbound[1] !== undefined) firstAnswer = Math.min(firstAnswer, inbound[1]);
			const questions = texts.filter((m) => QUESTION.test(m.text));
			const confirmations = texts.filter(
				(m) => CONFIRMATION.exec(m.text)?.[1] === `${prefix}-${i}`,
			);
			if (questions[0]) o.lastQuestion = Math.max(o.lastQuestion, questions[0].at);
			if (questions.length > 1 || confirmations.length > 1) {
				o.twice++;
				o.example ||= `${c} was sent: ${texts.map((m) => m.text.slice(0, 40)).join(' | ')}`;
			} else if (confirmations.length === 1) {
				o.resumed++;
				lastConfirmation = Math.max(lastConfirmation, confirmations[0].at);
			} else o.pending++;
		});
		return { ...o, firstAnswer, lastConfirmation };
	};
	const {
		outcome: o,
		cpuAfter,
		load,
	} = await settle(
		pid,
		`an outcome for every answer of ${prefix}`,
		classify,
		(outcome) => outcome.pending === 0,
	);
	const totalS = (o.lastConfirmation - o.firstIn) / 1000;
	const allResumed = o.resumed === n && o.twice === 0 && o.pending === 0;
	return {
		contacts: n,
		greet_s: (o.lastQuestion - o.firstIn) / 1000,
		answer_s: (o.lastConfirmation - o.firstAnswer) / 1000,
		total_s: totalS,
		conversations_per_s: n / totalS,
		messages_per_s: (2 * n) / totalS,
		resumed: o.resumed,
		twice: o.twice,
		lost: o.pending,
		all_resumed: allResumed,
		deliveries_failed: [...greetings, ...answers].filter((d) => !d.delivered).length,
		cpu_ms_per_message: (cpuAfter - cpuBefore) / (2 * n),
		load_average_1m: load,
		...(o.example ? { example: o.example } : {}),
	};
}

async function autoReplyBurst(scene: Scene, contacts: string[]): Promise<AutoReplyBurst> {
	const { pid } = scene;
	const { sandbox } = scene.autoReply;
	const n = contacts.length;
	const cpuBefore = cpuMs(pid);
	const deliveries = await Promise.all(contacts.map(async (c) => await write(sandbox, c, 'hello')));
	const classify = () => {
		const { sent, received } = sandboxView(sandbox);
		const o = { once: 0, twice: 0, none: 0, firstIn: Infinity, lastReply: 0 };
		for (const c of contacts) {
			o.firstIn = Math.min(o.firstIn, (received.get(c) ?? [])[0] ?? Infinity);
			const replies = (sent.get(c) ?? []).filter((m) => AUTO_REPLY.test(m.text));
			if (replies.length > 1) o.twice++;
			else if (replies.length === 1) {
				o.once++;
				o.lastReply = Math.max(o.lastReply, replies[0].at);
			} else o.none++;
		}
		return o;
	};
	const {
		outcome: o,
		cpuAfter,
		load,
	} = await settle(pid, `a reply to all ${n} messages`, classify, (outcome) => outcome.none === 0);
	const seconds = (o.lastReply - o.firstIn) / 1000;
	return {
		messages: n,
		seconds,
		events_per_s: n / seconds,
		replied_once: o.once,
		replied_twice: o.twice,
		not_replied: o.none,
		deliveries_failed: deliveries.filter((d) => !d.delivered).length,
		cpu_ms_per_message: (cpuAfter - cpuBefore) / n,
		load_average_1m: load,
	};
}

/** Creates the example workflow on this sandbox's credential and activates it (its webhook registered). */
export async function activateExample(
	env: BenchEnvironment,
	key: 'conversation' | 'autoReply',
	credentialId: string,
	sandbox: Sandbox,
): Promise<string> {
	const example = readExample(key);
	const workflow = await env.client.createWorkflow({
		...mapExample(example, { [CREDENTIAL_NAME]: credentialId }, {}),
		name: `bench: ${example.name}`,
	});
	const outcome = await env.client.activateAndSettle(workflow.id);
	if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
	if (!sandbox.state().webhook.configured)
		throw new Error(`"${workflow.name}" did not register its webhook with its sandbox`);
	return workflow.id;
}

export interface RunOnceTarget {
	url: string;
	workflowId: string;
	/** The trigger node's id: its row in n8n's store is (workflowId, "n:" + node id). */
	nodeId: string;
}

async function setUpRunOnce(
	env: BenchEnvironment,
	sandbox: Sandbox,
): Promise<Record<RunOnceVariant, RunOnceTarget>> {
	const { client } = env;
	const ours = await createManualCredential(client, sandbox);
	const theirs = await client.createCredential(
		'Business Messaging (bench, no run-once)',
		NO_RUN_ONCE_CREDENTIAL,
		{ apiKey: sandbox.keys.all, baseUrl: sandbox.baseUrl, webhookSecret: SIGNING_SECRET },
	);
	const types = {
		with: { trigger: TRIGGER_TYPE, credential: CREDENTIAL_TYPE, ref: ours },
		'with-full': { trigger: TRIGGER_TYPE, credential: CREDENTIAL_TYPE, ref: ours },
		without: {
			trigger: `${NO_RUN_ONCE_PACKAGE}.businessMessagingTrigger`,
			credential: NO_RUN_ONCE_CREDENTIAL,
			ref: theirs,
		},
	};
	const targets = {} as Record<RunOnceVariant, RunOnceTarget>;
	for (const variant of RUN_ONCE_VARIANTS) {
		const webhookId = randomUUID();
		const trigger = node(
			'Trigger',
			types[variant].trigger,
			2,
			{ registration: 'manual', events: ['message.inbound'], options: {} },
			0,
			{
				webhookId,
				credentials: {
					[types[variant].credential]: { id: types[variant].ref.id, name: types[variant].ref.name },
				},
			},
		);
		const workflow = await client.createWorkflow({
			name: `bench: trigger (${RUN_ONCE_LABELS[variant]}) → No Operation`,
			nodes: [trigger, node('Done', 'n8n-nodes-base.noOp', 1, {}, 220)],
			connections: { Trigger: { main: [[{ node: 'Done', type: 'main', index: 0 }]] } },
		} as never);
		const outcome = await client.activateAndSettle(workflow.id);
		if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
		targets[variant] = {
			url: `${env.n8n.url}/webhook/${webhookId}/webhook`,
			workflowId: workflow.id,
			nodeId: String(workflow.nodes.find((n) => n.name === 'Trigger')?.id ?? trigger.id),
		};
	}
	return targets;
}

/**
 * The row of n8n's store a workflow that ran RUN_ONCE_MAX_ENTRIES messages has: that many md5
 * hashes (base64, as n8n writes them), written into n8n's SQLite database before the workflow's first
 * event. From then on every call reads, parses, extends, trims and writes about 250 KB.
 */
export function fillRow(env: BenchEnvironment, target: RunOnceTarget): void {
	const database = join(env.userFolder, '.n8n', 'database.sqlite');
	const data = Array.from({ length: RUN_ONCE_MAX_ENTRIES }, () =>
		createHash('md5').update(`m:wamid.prefill-${randomUUID()}`).digest('base64'),
	);
	const value = JSON.stringify({ mode: 'entries', data }).replace(/'/g, "''");
	const sql = `.timeout 30000\nINSERT INTO processed_data (workflowId, context, value) VALUES ('${target.workflowId}', 'n:${target.nodeId}', '${value}');\nSELECT length(value) FROM processed_data WHERE workflowId = '${target.workflowId}';\n`;
	const result = spawnSync('sqlite3', [database], { input: sql, encoding: 'utf8' });
	if (result.status !== 0 || !/^\d+$/m.test(result.stdout))
		throw new Error(
			`sqlite3 ${database}: ${result.stderr || result.stdout || result.error?.message}`,
		);
}

async function runOnceRun(
	env: BenchEnvironment,
	sandbox: Sandbox,
	pid: number,
	target: RunOnceTarget,
	variant: RunOnceVariant,
	rep: number,
	events: number,
	concurrency: number,
): Promise<RunOnceRun> {
	const number = sandbox.numbers[0].phone_number_id;
	const before = await executionCount(env.client, target.workflowId);
	const cpuBefore = cpuMs(pid);
	const fired = await fire(target.url, signedEvents(events, SIGNING_SECRET, number), concurrency);
	const recorded =
		(await awaitExecutionCount(env.client, target.workflowId, before + fired.ok)) - before;
	const cpuDuring = cpuMs(pid);
	const doneAt = Date.now();
	await sleep(RECHECK_WINDOW_MS);
	const cpuAfter = cpuMs(pid);
	const afterS = (Date.now() - doneAt) / 1000;
	return {
		variant,
		rep,
		events,
		ok_2xx: fired.ok,
		executions_recorded: recorded,
		events_per_s: (events / fired.wallMs) * 1000,
		cpu_ms_per_event: (cpuDuring - cpuBefore) / events,
		cpu_ms_per_event_with_rechecks: (cpuAfter - cpuBefore) / events,
		after_cpu_ms_per_s: (cpuAfter - cpuDuring) / afterS,
		load_average_1m: Math.round(loadavg()[0] * 100) / 100,
	};
}

export async function runConversationBench(
	setup: { tarball: string; noRunOnceTarball: string; outDir: string; keep?: boolean },
	options: ConversationOptions = DEFAULT_CONVERSATION_OPTIONS,
): Promise<ConversationsResult> {
	const env = await startBenchEnvironment({
		tarball: setup.tarball,
		extraTarballs: [setup.noRunOnceTarball],
		outDir: setup.outDir,
		keep: setup.keep,
		logName: 'n8n-conversations.log',
	});
	// The auto-reply and the run-once pair each on a sandbox of their own: a trigger's catch-up reads
	// its account's message log, and would recover into its workflow the deliveries another one missed.
	const autoReplySandbox = await launchSandbox();
	const runOnceSandbox = await launchSandbox();
	try {
		const pid = env.n8n.child.pid as number;
		const autoReplyCredential = await env.client.createCredential(
			'Business Messaging (bench, auto-reply sandbox)',
			CREDENTIAL_TYPE,
			{ apiKey: autoReplySandbox.keys.all, baseUrl: autoReplySandbox.baseUrl, webhookSecret: '' },
		);
		const scene: Scene = {
			env,
			pid,
			conversation: {
				workflowId: await activateExample(env, 'conversation', env.credential.id, env.sandbox),
				sandbox: env.sandbox,
			},
			autoReply: {
				workflowId: await activateExample(
					env,
					'autoReply',
					autoReplyCredential.id,
					autoReplySandbox,
				),
				sandbox: autoReplySandbox,
			},
		};
		const targets = await setUpRunOnce(env, runOnceSandbox);
		let variants: readonly RunOnceVariant[] = RUN_ONCE_VARIANTS;
		let fullSkipped: string | undefined;
		try {
			fillRow(env, targets['with-full']);
		} catch (error) {
			fullSkipped = `the full row could not be written: ${(error as Error).message}`;
			log(`  ${fullSkipped}; measuring without it`);
			variants = variants.filter((v) => v !== 'with-full');
		}
		log(
			'  conversation and auto-reply examples active, and the run-once workflows (three sandboxes)',
		);

		let group = 0;
		const contactsOf = (count: number) => {
			group++;
			return Array.from(
				{ length: count },
				(_, i) => `+336${String(10 + group).padStart(2, '0')}${String(100_000 + i).slice(1)}`,
			);
		};
		// Warm-up, not reported: a few of each.
		await conversationBurst(scene, contactsOf(5), 'W');
		await autoReplyBurst(scene, contactsOf(10));
		for (const variant of variants)
			await runOnceRun(
				env,
				runOnceSandbox,
				pid,
				targets[variant],
				variant,
				0,
				WARM_UP_EVENTS,
				options.runOnce.concurrency,
			);

		const sizes: ConversationsResult['sizes'] = [];
		for (const [index, n] of options.contacts.entries()) {
			let conversation: ConversationBurst | undefined;
			let autoReply: AutoReplyBurst | undefined;
			const conversationFirst = index % 2 === 0;
			for (const step of conversationFirst ? [0, 1] : [1, 0]) {
				if (step === 0) conversation = await conversationBurst(scene, contactsOf(n), `C${n}`);
				else autoReply = await autoReplyBurst(scene, contactsOf(2 * n));
			}
			const c = conversation as ConversationBurst;
			const a = autoReply as AutoReplyBurst;
			log(
				`  N=${n}: ${c.conversations_per_s.toFixed(2)} conversations/s (${c.total_s.toFixed(1)} s; greet ${c.greet_s.toFixed(1)} s, answer ${c.answer_s.toFixed(1)} s), ${c.resumed}/${n} resumed, ${c.twice} asked twice, ${c.lost} lost, ${c.deliveries_failed} deliveries failed; auto-reply ${2 * n} messages: ${a.events_per_s.toFixed(2)} events/s (${a.seconds.toFixed(1)} s), ${a.replied_once} replied once, ${a.replied_twice} twice, ${a.not_replied} not; load ${c.load_average_1m}`,
			);
			sizes.push({
				contacts: n,
				conversation: c,
				auto_reply: a,
				ratio: c.messages_per_s / a.events_per_s,
			});
		}
		const resumedAll = sizes.filter((s) => s.conversation.all_resumed);
		const top = resumedAll.sort(
			(x, y) => y.conversation.conversations_per_s - x.conversation.conversations_per_s,
		)[0];
		const best = top
			? {
					contacts: top.contacts,
					conversations_per_s: top.conversation.conversations_per_s,
					messages_per_s: top.conversation.messages_per_s,
				}
			: null;

		const runs: RunOnceRun[] = [];
		const { events, concurrency, reps } = options.runOnce;
		const rotate = <T>(list: readonly T[], by: number) =>
			list.map((_, i) => list[(i + by) % list.length]);
		for (let rep = 1; rep <= reps; rep++) {
			for (const variant of rotate(variants, rep - 1)) {
				const run = await runOnceRun(
					env,
					runOnceSandbox,
					pid,
					targets[variant],
					variant,
					rep,
					events,
					concurrency,
				);
				log(
					`  ${RUN_ONCE_LABELS[variant].padEnd(34)} rep ${rep}: ${run.events_per_s.toFixed(1)} ev/s, cpu ${run.cpu_ms_per_event.toFixed(2)} ms/ev (${run.cpu_ms_per_event_with_rechecks.toFixed(2)} with re-checks, ${run.after_cpu_ms_per_s.toFixed(1)} ms/s in the 11 s after), 2xx ${run.ok_2xx}/${events}, executions ${run.executions_recorded}, load ${run.load_average_1m}`,
				);
				runs.push(run);
			}
		}
		const of = (variant: RunOnceVariant) => runs.filter((r) => r.variant === variant);
		const perRep = (variant: RunOnceVariant, f: (w: RunOnceRun, o: RunOnceRun) => number) =>
			spread(
				of(variant).map((w) => {
					const o = of('without').find((r) => r.rep === w.rep);
					return o ? f(w, o) : Number.NaN;
				}),
			);
		const keysInRow = {
			with: WARM_UP_EVENTS + events * reps,
			'with-full': RUN_ONCE_MAX_ENTRIES,
			without: 0,
		};
		return {
			sizes,
			best,
			run_once: {
				concurrency,
				events_per_run: events,
				reps,
				runs,
				...(fullSkipped ? { full_row_skipped: fullSkipped } : {}),
				variants: variants.map((variant) => ({
					variant,
					label: RUN_ONCE_LABELS[variant],
					keys_in_row: keysInRow[variant],
					events_per_s: median(of(variant).map((r) => r.events_per_s)),
					cpu_ms_per_event: spread(of(variant).map((r) => r.cpu_ms_per_event)),
					with_rechecks: spread(of(variant).map((r) => r.cpu_ms_per_event_with_rechecks)),
					...(variant === 'without'
						? {}
						: {
								vs_without: {
									ratio: perRep(variant, (w, o) => w.cpu_ms_per_event / o.cpu_ms_per_event),
									ratio_with_rechecks: perRep(
										variant,
										(w, o) => w.cpu_ms_per_event_with_rechecks / o.cpu_ms_per_event_with_rechecks,
									),
									store_ms_per_event: perRep(
										variant,
										(w, o) => w.cpu_ms_per_event - o.cpu_ms_per_event,
									),
									store_ms_per_event_with_rechecks: perRep(
										variant,
										(w, o) => w.cpu_ms_per_event_with_rechecks - o.cpu_ms_per_event_with_rechecks,
									),
								},
							}),
				})),
			},
		};
	} finally {
		await env.stop();
		await autoReplySandbox.close();
		await runOnceSandbox.close();
	}
}
