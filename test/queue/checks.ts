/**
 * The checks of `npm run test:queue`, each against the running queue-mode topology
 * (test/queue/lib/topology.ts). Each prints its numbers and records PASS/FAIL; the service's
 * account has one webhook, so one trigger workflow is active at a time (ensureActive).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

import {
	CREDENTIAL_NAME,
	importExamples,
	mapExample,
	readExample,
	triggerName,
	type ExampleKey,
} from '../real-n8n/examples';
import type { SavedWorkflow, WorkflowJson } from '../real-n8n/n8n';
import { ACTION_TYPE, CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../support/constants';
import { errorText, log, sleep, waitFor } from '../real-n8n/util';
import { fireLoad, percentile, tamperedRequest, TAMPERS } from '../hardening/real-n8n/load';
import { loadWorkflow } from '../hardening/real-n8n/workflows';
import { inboundEnvelope } from '../support/fixtures';
import { signBody } from '../support/signature';
import {
	executionCount,
	executionIdsWithJob,
	executionStatuses,
	perEvent,
	perMessage,
	settle,
	storedExecutions,
	storedStaticData,
	type StoredExecution,
} from './lib/executions';
import type { Topology } from './lib/topology';

export interface CheckResult {
	name: string;
	ok: boolean;
	detail: string;
}

export interface QueueContext {
	topology: Topology;
	credential: { id: string; name: string };
	number: string;
	options: { events: number; concurrency: number; tamperedEvery: number; catchUpInterval: number };
	results: CheckResult[];
	/** Numbers for the summary file and docs/scaling.md, by check. */
	numbers: Record<string, unknown>;
	active?: { key: string; workflow: SavedWorkflow; trigger: string; url: string; secret: string };
}

export function record(ctx: QueueContext, name: string, ok: boolean, detail: string): void {
	ctx.results.push({ name, ok, detail });
	log(`  ${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
}

const DELIVERY_TIMEOUT_MS = 8000;

// ---- helpers ----------------------------------------------------------------------------------

/** Activates `build()` as the one trigger workflow (deactivating the one before); waits for the registration. */
async function ensureActive(
	ctx: QueueContext,
	key: string,
	build: () => WorkflowJson,
): Promise<NonNullable<QueueContext['active']>> {
	if (ctx.active?.key === key) return ctx.active;
	const { client, sandbox } = ctx.topology;
	if (ctx.active) {
		await client.deactivate(ctx.active.workflow.id);
		await waitFor(
			'the sandbox webhook to be removed',
			() => !sandbox.state().webhook.configured,
			30_000,
		);
		ctx.active = undefined;
	}
	const json = build();
	const workflow = await client.createWorkflow(json);
	const outcome = await client.activateAndSettle(workflow.id);
	if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
	const trigger = triggerName(workflow);
	const webhookId = workflow.nodes.find((n) => n.name === trigger)?.webhookId;
	const url = `${ctx.topology.url}/webhook/${String(webhookId)}/webhook`;
	await waitFor(
		`the sandbox webhook to point at ${url}`,
		() => sandbox.state().webhook.url === url,
		30_000,
	);
	const secret = sandbox.state().webhook.secret ?? '';
	// Webhook processors read the sealed secret from the workflow's static data in Postgres, which
	// main saves once every trigger of the workflow has started: events the service sends before
	// that get 401 (and are recovered by the catch-up). Wait for it, and say how long it took.
	const registered = Date.now();
	await waitFor(
		'main to save the sealed secret in static data',
		() => storedStaticData(ctx.topology, workflow.id).includes('sealedSecret'),
		30_000,
		50,
	);
	ctx.active = { key, workflow, trigger, url, secret };
	log(
		`  active: "${workflow.name}" (${workflow.id}), registered ${url}; static data saved ${Date.now() - registered} ms after the service had the webhook`,
	);
	return ctx.active;
}

const credentialRef = (ctx: QueueContext) => ({
	[CREDENTIAL_TYPE]: { id: ctx.credential.id, name: ctx.credential.name },
});

function loadWorkflowFor(ctx: QueueContext, catchUpInterval?: number): WorkflowJson {
	const workflow = loadWorkflow(ctx.credential);
	if (catchUpInterval !== undefined) {
		const trigger = workflow.nodes.find((n) => n.name === TRIGGER_NAME);
		if (trigger)
			trigger.parameters = { ...trigger.parameters, catchUp: true, options: { catchUpInterval } };
	}
	return workflow;
}

function autoReplyWorkflow(ctx: QueueContext): WorkflowJson {
	return mapExample(readExample('autoReply'), { [CREDENTIAL_NAME]: ctx.credential.id }, {});
}

/** Trigger → Reply → Wait 4 s: an execution that is still running a while after its reply went out. */
function replyThenWaitWorkflow(ctx: QueueContext): WorkflowJson {
	const node = (
		name: string,
		type: string,
		typeVersion: number,
		parameters: Record<string, unknown>,
		x: number,
		extra: Record<string, unknown> = {},
	) => ({
		id: randomUUID(),
		name,
		type,
		typeVersion,
		position: [x, 0],
		parameters,
		...extra,
	});
	return {
		name: 'Queue: reply, then wait 4 s',
		nodes: [
			node(
				'Trigger',
				TRIGGER_TYPE,
				1,
				{ registration: 'automatic', events: ['message.inbound'], options: {} },
				0,
				{
					webhookId: randomUUID(),
					credentials: credentialRef(ctx),
				},
			),
			node(
				'Reply',
				ACTION_TYPE,
				1,
				{
					resource: 'message',
					operation: 'reply',
					to: '={{ $json.data.from }}',
					from: '={{ $json.data.number }}',
					text: '=Thanks {{ $json.data.contact_name }}',
				},
				260,
				{
					credentials: credentialRef(ctx),
				},
			),
			node(
				'Wait',
				'n8n-nodes-base.wait',
				1.1,
				{ resume: 'timeInterval', amount: 4, unit: 'seconds' },
				520,
				{ webhookId: randomUUID() },
			),
		],
		connections: {
			Trigger: { main: [[{ node: 'Reply', type: 'main', index: 0 }]] },
			Reply: { main: [[{ node: 'Wait', type: 'main', index: 0 }]] },
		},
		settings: { executionOrder: 'v1' },
	};
}

async function post(
	url: string,
	body: string,
	headers: Record<string, string>,
): Promise<{ status: number | null; text: string }> {
	try {
		const response = await fetch(url, {
			method: 'POST',
			headers,
			body,
			signal: AbortSignal.timeout(30_000),
		});
		return { status: response.status, text: await response.text() };
	} catch (error) {
		return { status: null, text: errorText(error) };
	}
}

function signedInbound(
	ctx: QueueContext,
	secret: string,
	waId: string,
	extra: Record<string, unknown> = {},
) {
	const body = JSON.stringify(
		inboundEnvelope({
			from: '+15557651234',
			contact_name: 'Direct',
			number: ctx.number,
			wa_message_id: waId,
			text: 'direct',
			...extra,
		}),
	);
	return {
		body,
		headers: { 'content-type': 'application/json', 'x-service-signature': signBody(body, secret) },
	};
}

/** The trigger's URL on one webhook processor, bypassing the balancer. */
function processorUrl(
	ctx: QueueContext,
	index: number,
	active: NonNullable<QueueContext['active']>,
): string {
	const role = ctx.topology.webhooks[index];
	if (!role) throw new Error(`webhook processor ${index + 1} is not running`);
	return active.url.replace(ctx.topology.url, `http://127.0.0.1:${role.port}`);
}

/**
 * For each message run more than once: its executions in order, with mode, whether the trigger
 * marked it recovered, and when a worker started and stopped each (relative to the first start).
 * Overlapping copies point at two reads of n8n's deduplication row at once; copies far apart at a
 * record another process's write erased (routing/runOnce.ts).
 */
function duplicateTimelines(executions: StoredExecution[], counts: Map<string, number>): string[] {
	const lines: string[] = [];
	for (const [waId, n] of counts) {
		if (n < 2) continue;
		const copies = executions.filter((e) => e.waIds.includes(waId));
		const t0 = Math.min(...copies.map((e) => e.startedAtMs ?? Infinity));
		const at = (ms?: number) => (ms === undefined ? '?' : `${((ms - t0) / 1000).toFixed(2)} s`);
		lines.push(
			`${waId}: ${copies
				.map(
					(e) =>
						`#${e.id} ${e.mode}${e.recovered[e.waIds.indexOf(waId)] ? ' recovered' : ''} ${at(e.startedAtMs)}→${at(e.stoppedAtMs)}`,
				)
				.join(', ')}`,
		);
	}
	return lines;
}

/** Requests each webhook processor took, from haproxy's statistics. */
async function balancerCounts(ctx: QueueContext): Promise<Record<string, number>> {
	const csv = await ctx.topology.balancer.command('show stat');
	const counts: Record<string, number> = {};
	const header = csv.split('\n')[0].replace(/^# /, '').split(',');
	const stot = header.indexOf('stot');
	for (const line of csv.split('\n').slice(1)) {
		const cells = line.split(',');
		if (cells[0] === 'webhook_processors' && /^w\d+$/.test(cells[1]))
			counts[cells[1]] = Number(cells[stot]);
	}
	return counts;
}

function diff(
	after: Record<string, number>,
	before: Record<string, number>,
): Record<string, number> {
	return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
}

/** One inbound message of a stream, as the service saw its delivery. */
interface SentInbound {
	waId?: string;
	delivered: boolean;
	status: number | null;
	reason: string | null;
	/** When the sandbox had the delivery's outcome (ms since the epoch). */
	at: number;
	/** When the message was sent to the sandbox, before its delivery began (ms since the epoch). */
	began: number;
}

/** Failure reasons, counted. */
function reasons(list: Array<{ reason: string | null; status?: number | null }>) {
	const out: Record<string, number> = {};
	for (const f of list) {
		const reason =
			f.reason ?? (f.status === null || f.status === undefined ? '?' : String(f.status));
		out[reason] = (out[reason] ?? 0) + 1;
	}
	return out;
}

/**
 * `count` inbound messages through the sandbox, which delivers each to the account's webhook
 * (through haproxy), `concurrency` senders at a time, each pausing `pauseMs` after each message.
 * `midway.act` runs once `midway.after` messages have their outcome, beside the stream (the
 * stream does not wait for it; the result does).
 */
async function streamInbound(
	ctx: QueueContext,
	options: {
		count: number;
		concurrency: number;
		pauseMs?: number;
		message: (i: number) => { from: string; contact_name: string; text: string };
		midway?: { after: number; act: (after: number, t0: number) => void | Promise<void> };
	},
): Promise<{
	sent: SentInbound[];
	t0: number;
	end: number;
	midwayAt: number;
	midwayAfter: number;
}> {
	const { control } = ctx.topology;
	const sent: SentInbound[] = [];
	let next = 0;
	let midwayAt = 0;
	let midwayAfter = 0;
	const t0 = Date.now();
	const { midway } = options;
	const beside = midway
		? (async () => {
				while (sent.length < midway.after) await sleep(20);
				midwayAt = Date.now();
				midwayAfter = sent.length;
				await midway.act(midwayAfter, t0);
			})()
		: Promise.resolve();
	await Promise.all(
		Array.from({ length: options.concurrency }, async () => {
			for (;;) {
				const i = next++;
				if (i >= options.count) return;
				const began = Date.now();
				try {
					const out = await control.inbound({ ...options.message(i), number: ctx.number });
					sent.push({
						waId: out.record.wa_message_id,
						delivered: out.delivery.delivered,
						status: out.delivery.status,
						reason: out.delivery.reason,
						at: Date.now(),
						began,
					});
				} catch (error) {
					sent.push({
						delivered: false,
						status: null,
						reason: errorText(error),
						at: Date.now(),
						began,
					});
				}
				if (options.pauseMs) await sleep(options.pauseMs);
			}
		}),
	);
	const end = Date.now();
	await beside;
	return { sent, t0, end, midwayAt, midwayAfter };
}

// ---- 1. activation and verification on the webhook processors -------------------------------

export async function checkActivation(ctx: QueueContext): Promise<void> {
	log(
		'== 1. activation on main registers the balancer URL; each webhook processor verifies events',
	);
	const active = await ensureActive(ctx, 'load', () => loadWorkflowFor(ctx));
	const state = ctx.topology.sandbox.state();
	const expected = `${ctx.topology.url}/webhook/`;
	record(
		ctx,
		'activation: main registered the webhook at the balancer URL',
		state.webhook.url === active.url &&
			active.url.startsWith(expected) &&
			Boolean(state.webhook.secret),
		`sandbox webhook ${state.webhook.url}`,
	);

	const before = storedExecutions(ctx.topology, active.workflow.id, active.trigger).length;
	const genuine: Array<{ processor: number; waId: string; status: number | null; text: string }> =
		[];
	const tampered: Array<{
		processor: number;
		tamper: string;
		waId: string;
		status: number | null;
	}> = [];
	for (let p = 0; p < ctx.topology.webhooks.length; p++) {
		if (!ctx.topology.webhooks[p]) continue;
		const url = processorUrl(ctx, p, active);
		const waId = `wamid.DIRECT-W${p + 1}-${randomUUID()}`;
		const request = signedInbound(ctx, active.secret, waId);
		genuine.push({ processor: p + 1, waId, ...(await post(url, request.body, request.headers)) });
		for (const [k, tamper] of TAMPERS.entries()) {
			const i = 9000 + p * 100 + k;
			const bad = tamperedRequest(i, tamper, active.secret, ctx.number);
			tampered.push({
				processor: p + 1,
				tamper,
				waId: `wamid.TAMPERED-${i}`,
				status: (await post(url, bad.body, bad.headers)).status,
			});
		}
	}
	// Main does not take production webhooks in this layout (N8N_DISABLE_PRODUCTION_MAIN_PROCESS).
	const mainRequest = signedInbound(ctx, active.secret, `wamid.MAIN-${randomUUID()}`);
	const onMain = await post(
		active.url.replace(ctx.topology.url, ctx.topology.main.process.url),
		mainRequest.body,
		mainRequest.headers,
	);

	const accepted = genuine.filter((g) => g.status === 200).length + (onMain.status === 200 ? 1 : 0);
	await settle(ctx.topology, active.workflow.id, before + accepted, 60_000);
	const executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger);
	const counts = perMessage(executions);
	ctx.numbers.activation = {
		webhookUrl: state.webhook.url,
		genuine,
		tampered: tampered.map((t) => `w${t.processor} ${t.tamper}: ${t.status}`),
		mainDirect: onMain.status,
	};
	record(
		ctx,
		'activation: each webhook processor accepts a correctly signed event (200 {"received":true}), executed once',
		genuine.length === ctx.topology.webhooks.filter(Boolean).length &&
			genuine.every(
				(g) =>
					g.status === 200 &&
					g.text.replace(/\s/g, '') === '{"received":true}' &&
					counts.get(g.waId) === 1,
			),
		genuine
			.map(
				(g) =>
					`w${g.processor}: ${g.status} ${g.text.slice(0, 40)}, executions ${counts.get(g.waId) ?? 0}`,
			)
			.join('; '),
	);
	const tamperedExecuted = tampered.filter((t) => counts.has(t.waId)).length;
	record(
		ctx,
		'activation: each webhook processor refuses tampered events (401), no execution',
		tampered.every((t) => t.status === 401) && tamperedExecuted === 0,
		`${tampered.length} tampered (${TAMPERS.length} kinds × ${genuine.length} processors): statuses ${[...new Set(tampered.map((t) => t.status))].join(', ')}; executed ${tamperedExecuted}`,
	);
	log(
		`  main, posted directly: ${onMain.status} (production webhooks are off on main in this layout)`,
	);
}

// ---- 2. 5,000 signed events through the balancer --------------------------------------------

export async function checkLoad(ctx: QueueContext): Promise<void> {
	const { events, concurrency, tamperedEvery } = ctx.options;
	log(
		`== 2. load: ${events} signed events at concurrency ${concurrency} through the balancer, 1 tampered in ${tamperedEvery}`,
	);
	const active = await ensureActive(ctx, 'load', () => loadWorkflowFor(ctx));
	const before = new Set(
		storedExecutions(ctx.topology, active.workflow.id, active.trigger).map((e) => e.id),
	);
	const balancerBefore = await balancerCounts(ctx);
	const run = await fireLoad({
		control: ctx.topology.control,
		url: active.url,
		secret: active.secret,
		number: ctx.number,
		events,
		concurrency,
		tamperedEvery,
	});
	const balancerAfter = diff(await balancerCounts(ctx), balancerBefore);
	const genuine = run.outcomes.filter((o) => o.kind === 'genuine');
	const tampered = run.outcomes.filter((o) => o.kind === 'tampered');
	const accepted = genuine.filter((o) => o.status !== null && o.status >= 200 && o.status < 300);
	const inTime = accepted.filter((o) => o.ms <= DELIVERY_TIMEOUT_MS);
	const times = accepted.map((o) => o.ms).sort((a, b) => a - b);
	log(
		`  sent ${run.outcomes.length} in ${run.sendSeconds.toFixed(1)} s (${(run.outcomes.length / run.sendSeconds).toFixed(1)} requests/s); waiting for the executions`,
	);
	const settleStart = Date.now();
	await settle(ctx.topology, active.workflow.id, before.size + accepted.length, 300_000);
	const drainSeconds = (Date.now() - settleStart) / 1000;
	// Events the service counts as not delivered are the catch-up's (default on, every 60 s): give it
	// its interval + 30 s to emit them, then count.
	const genuineIds = genuine.map((o) => o.waId).filter((id): id is string => Boolean(id));
	let executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger).filter(
		(e) => !before.has(e.id),
	);
	if (accepted.length < genuine.length) {
		const deadline = Date.now() + 90_000;
		log(`  ${genuine.length - accepted.length} not accepted: up to 90 s for the catch-up`);
		// All of them: a message n8n ran after the sender gave up has its execution already, and the
		// catch-up's copy of it (the one that ran twice before routing/runOnce.ts) comes later.
		while (Date.now() < deadline) {
			await sleep(3000);
			executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger).filter(
				(e) => !before.has(e.id),
			);
		}
		await settle(ctx.topology, active.workflow.id, 0, 60_000, 5000);
		executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger).filter(
			(e) => !before.has(e.id),
		);
	}
	const counts = perMessage(executions);
	// Executions whose trigger passed nothing on: a copy of a message already run (routing/runOnce.ts).
	const ranNothing = executions.filter((e) => e.waIds.length === 0).length;
	const acceptedIds = new Set(accepted.map((o) => o.waId as string));
	const recoveredIds = new Set(executions.flatMap((e) => e.waIds.filter((_, i) => e.recovered[i])));
	const lost = genuineIds.filter((id) => !counts.has(id)).length;
	const acceptedNotOnce = [...acceptedIds].filter((id) => counts.get(id) !== 1).length;
	const duplicated = [...counts.values()].filter((n) => n > 1).length;
	const twice = duplicateTimelines(executions, counts);
	for (const line of twice.slice(0, 10)) log(`  run twice: ${line}`);
	const notAcceptedIds = genuineIds.filter((id) => !acceptedIds.has(id));
	const notAcceptedRunAnyway = notAcceptedIds.filter((id) =>
		executions.some((e) => e.waIds.some((w, i) => w === id && !e.recovered[i])),
	).length;
	const genuineSet = new Set(genuineIds);
	const unexpected = [...counts.keys()].filter((id) => !genuineSet.has(id)).length;
	const statuses: Record<string, number> = {};
	for (const e of executions) statuses[e.status] = (statuses[e.status] ?? 0) + 1;
	const tamperedStatuses: Record<string, number> = {};
	for (const o of tampered)
		tamperedStatuses[String(o.status)] = (tamperedStatuses[String(o.status)] ?? 0) + 1;
	const tamperedExecuted = tampered.filter((o) => counts.has(o.waId as string)).length;
	const failed: Record<string, number> = {};
	for (const o of genuine.filter((g) => !accepted.includes(g)))
		failed[o.reason ?? String(o.status)] = (failed[o.reason ?? String(o.status)] ?? 0) + 1;
	ctx.numbers.load = {
		events,
		concurrency,
		sent: { genuine: genuine.length, tampered: tampered.length },
		accepted: accepted.length,
		within8s: inTime.length,
		answerMs: {
			p50: percentile(times, 50),
			p90: percentile(times, 90),
			p99: percentile(times, 99),
			max: times[times.length - 1],
		},
		eventsPerSecond: run.outcomes.length / run.sendSeconds,
		sendSeconds: run.sendSeconds,
		drainSeconds,
		executions: executions.length,
		statuses,
		lost,
		acceptedNotExactlyOnce: acceptedNotOnce,
		duplicated,
		duplicatedTimelines: twice,
		ranNothing,
		notAccepted: notAcceptedIds.length,
		notAcceptedReasons: failed,
		notAcceptedRunAnyway,
		recovered: recoveredIds.size,
		unexpected,
		tamperedStatuses,
		tamperedExecuted,
		requestsPerProcessor: balancerAfter,
		loadavg: { before: run.loadavgBefore, after: run.loadavgAfter },
	};
	log(
		`  requests per webhook processor (haproxy): ${JSON.stringify(balancerAfter)}; load average ${run.loadavgAfter.map((v) => v.toFixed(2)).join(' ')}`,
	);
	log(
		`  not accepted ${notAcceptedIds.length} ${JSON.stringify(failed)}: run anyway by n8n after the sender gave up ${notAcceptedRunAnyway}, recovered by the catch-up ${recoveredIds.size}`,
	);
	record(
		ctx,
		'load: every genuine event answered 2xx within 8 s',
		inTime.length === genuine.length,
		`${inTime.length}/${genuine.length} (p50 ${percentile(times, 50)} ms, p99 ${percentile(times, 99)} ms, max ${times[times.length - 1]} ms)${Object.keys(failed).length ? `; not accepted: ${JSON.stringify(failed)}` : ''}`,
	);
	record(
		ctx,
		'load: every message run exactly once (0 lost, 0 run twice)',
		acceptedNotOnce === 0 &&
			lost === 0 &&
			duplicated === 0 &&
			unexpected === 0 &&
			executions.length - ranNothing === counts.size,
		`accepted ${accepted.length}, executions ${executions.length} ${JSON.stringify(statuses)} (recovered ${recoveredIds.size}; copies that ran nothing ${ranNothing}), lost ${lost}, accepted but not run exactly once ${acceptedNotOnce}, run twice ${duplicated}, unexpected ${unexpected}`,
	);
	record(
		ctx,
		'load: every tampered event refused, none executed',
		tampered.every((o) => o.status === 401) && tamperedExecuted === 0,
		`${tampered.length} tampered: ${JSON.stringify(tamperedStatuses)}; executed ${tamperedExecuted}`,
	);
}

// ---- 3. the auto-reply example ---------------------------------------------------------------

export async function checkAutoReply(
	ctx: QueueContext,
	count = 200,
	concurrency = 8,
): Promise<void> {
	log(`== 3. the auto-reply example answers each of ${count} inbound messages exactly once`);
	const active = await ensureActive(ctx, 'autoReply', () => autoReplyWorkflow(ctx));
	const { control, sandbox } = ctx.topology;
	const repliesBefore = sandbox.state().messages.length;
	const sent: Array<{ from: string; waId?: string; delivered: boolean }> = [];
	let next = 0;
	const run = Math.floor(Math.random() * 1e6);
	await Promise.all(
		Array.from({ length: concurrency }, async () => {
			for (;;) {
				const i = next++;
				if (i >= count) return;
				const from = `+1666${String(run).padStart(6, '0')}${String(i).padStart(4, '0')}`.slice(
					0,
					16,
				);
				try {
					const out = await control.inbound({
						from,
						contact_name: `Queue ${i}`,
						number: ctx.number,
						text: `auto-reply ${i}`,
					});
					sent.push({ from, waId: out.record.wa_message_id, delivered: out.delivery.delivered });
				} catch {
					sent.push({ from, delivered: false });
				}
			}
		}),
	);
	const delivered = sent.filter((s) => s.delivered).length;
	await settle(ctx.topology, active.workflow.id, delivered, 120_000);
	// Replies are sent by the workers as they run: wait until they stop coming.
	let last = -1;
	await waitFor(
		'the replies to stop coming',
		() => {
			const now = sandbox.state().messages.length;
			const stable = now === last;
			last = now;
			return stable;
		},
		60_000,
		2000,
	);
	const replies = sandbox.state().messages.slice(repliesBefore);
	const perRecipient = new Map<string, number>();
	for (const reply of replies) perRecipient.set(reply.to, (perRecipient.get(reply.to) ?? 0) + 1);
	const histogram: Record<string, number> = {};
	for (const s of sent) {
		const n = perRecipient.get(s.from) ?? 0;
		histogram[`${n} repl${n === 1 ? 'y' : 'ies'}`] =
			(histogram[`${n} repl${n === 1 ? 'y' : 'ies'}`] ?? 0) + 1;
	}
	const statuses = executionStatuses(ctx.topology, active.workflow.id);
	ctx.numbers.autoReply = {
		inbound: count,
		delivered,
		replies: replies.length,
		histogram,
		executions: statuses,
	};
	record(
		ctx,
		'auto-reply: every inbound message answered exactly once',
		delivered === count &&
			sent.every((s) => perRecipient.get(s.from) === 1) &&
			replies.length === count,
		`${count} inbound, ${delivered} delivered 2xx, ${replies.length} replies (${JSON.stringify(histogram)}); executions ${JSON.stringify(statuses)}`,
	);
}

// ---- 4. the same delivery to both webhook processors ----------------------------------------

export async function checkSameDelivery(ctx: QueueContext): Promise<void> {
	log('== 4. the same signed delivery posted to both webhook processors (bypassing the balancer)');
	const active = await ensureActive(ctx, 'load', () => loadWorkflowFor(ctx));
	const urls = [processorUrl(ctx, 0, active), processorUrl(ctx, 1, active)];
	const cases: Array<{
		label: string;
		waId: string;
		statuses: Array<number | null>;
		bodies: string[];
	}> = [];
	const run = async (label: string, targets: string[], together: boolean) => {
		const waId = `wamid.SAME-${randomUUID()}`;
		const request = signedInbound(ctx, active.secret, waId);
		const answers = together
			? await Promise.all(targets.map((url) => post(url, request.body, request.headers)))
			: await targets.reduce<Promise<Array<{ status: number | null; text: string }>>>(
					async (acc, url, index) => {
						const before = await acc;
						// A replay comes after the copy before it ran (3 s): copies whose executions start at the same
						// moment on two workers may both run, the limit docs/reliability.md states ("together" below).
						if (index > 0) await sleep(3000);
						return [...before, await post(url, request.body, request.headers)];
					},
					Promise.resolve([]),
				);
		cases.push({
			label,
			waId,
			statuses: answers.map((a) => a.status),
			bodies: answers.map((a) => a.text.replace(/\s/g, '').slice(0, 80)),
		});
	};
	await run('twice to processor 1, one after the other', [urls[0], urls[0]], false);
	await run('to processor 1, then to processor 2', [urls[0], urls[1]], false);
	await run('to both at the same moment', [urls[0], urls[1]], true);
	await run(
		'three times through the balancer (round robin)',
		[active.url, active.url, active.url],
		false,
	);
	const bySignature = active.url.replace(ctx.topology.url, ctx.topology.balancer.bySignatureUrl);
	await run(
		'three times through a balancer that hashes the signature header',
		[bySignature, bySignature, bySignature],
		false,
	);
	await sleep(2000);
	await settle(ctx.topology, active.workflow.id, 0, 30_000);
	const counts = perMessage(storedExecutions(ctx.topology, active.workflow.id, active.trigger));
	const measured = cases.map((c) => ({ ...c, executions: counts.get(c.waId) ?? 0 }));
	ctx.numbers.sameDelivery = measured;
	for (const m of measured)
		log(
			`  ${m.label}: answers ${m.statuses.join(', ')} (${m.bodies.join(' | ')}); executions ${m.executions}`,
		);
	const sameProcess = measured[0];
	record(
		ctx,
		'same delivery: a replay to the same webhook processor is acknowledged and not executed again',
		sameProcess.executions === 1 && sameProcess.statuses.every((s) => s === 200),
		`${sameProcess.executions} execution(s)`,
	);
	// Across processes the replay guard (process memory) cannot see the other copy; the trigger's
	// execute() on the workers finds it in n8n's deduplication store (routing/runOnce.ts). Copies
	// run at the same moment on two workers may both read the store before either writes: measured.
	const [oneThenOther, together, roundRobin] = measured.slice(1);
	record(
		ctx,
		'same delivery replayed to another webhook processor runs once',
		[oneThenOther, roundRobin].every((m) => m.executions === 1),
		[oneThenOther, roundRobin].map((m) => `${m.label}: ${m.executions}`).join('; '),
	);
	record(
		ctx,
		'same delivery to both processors at the same moment: measured',
		together.executions >= 1 && together.executions <= together.statuses.length,
		`${together.label}: ${together.executions}`,
	);
	const hashed = measured[measured.length - 1];
	record(
		ctx,
		'same delivery: a balancer routing by the signature header runs it once',
		hashed.executions === 1,
		`${hashed.executions} execution(s) of 3 copies`,
	);
}

// ---- 5. a webhook processor killed mid-stream -----------------------------------------------

export async function checkKillWebhook(
	ctx: QueueContext,
	count = 80,
	concurrency = 4,
): Promise<void> {
	const interval = ctx.options.catchUpInterval;
	log(
		`== 5. a webhook processor killed (SIGKILL) mid-stream of ${count} inbound messages; catch-up interval ${interval} s`,
	);
	const active = await ensureActive(ctx, 'stream', () => {
		const workflow = loadWorkflowFor(ctx, interval);
		workflow.name = 'Queue: stream (trigger with catch-up → no-op)';
		return workflow;
	});
	const victim = ctx.topology.webhooks[0];
	if (!victim) throw new Error('webhook processor 1 is not running');
	const stream = await streamInbound(ctx, {
		count,
		concurrency,
		pauseMs: 150,
		message: (i) => ({
			from: `+1777${String(1000000 + i)}`,
			contact_name: `Stream ${i}`,
			text: `stream ${i}`,
		}),
		midway: {
			after: count / 4,
			act: (after, t0) => {
				ctx.topology.kill(victim);
				log(
					`  SIGKILL to webhook processor 1 (pid ${victim.process.child.pid}) after ${after} messages, ${((Date.now() - t0) / 1000).toFixed(1)} s into the stream`,
				);
			},
		},
	});
	const { sent, t0 } = stream;
	const killedAt = stream.midwayAt - t0;
	ctx.topology.webhooks[0] = undefined;
	const streamEnd = stream.end;
	const failed = sent.filter((s) => !s.delivered);
	const reasons: Record<string, number> = {};
	for (const f of failed)
		reasons[f.reason ?? String(f.status)] = (reasons[f.reason ?? String(f.status)] ?? 0) + 1;
	log(
		`  stream of ${count} done in ${((streamEnd - t0) / 1000).toFixed(1)} s: ${count - failed.length} delivered 2xx, ${failed.length} failed ${JSON.stringify(reasons)}`,
	);

	// Up to catchUpInterval + 30 s for the catch-up to emit what was not delivered.
	const ids = sent.map((s) => s.waId).filter((id): id is string => Boolean(id));
	const deadline = streamEnd + (interval + 30) * 1000;
	let executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger);
	for (;;) {
		const counts = perMessage(executions);
		if (ids.every((id) => counts.has(id)) || Date.now() > deadline) break;
		await sleep(2000);
		executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger);
	}
	await settle(ctx.topology, active.workflow.id, 0, 30_000, 5000);
	executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger);
	const counts = perMessage(executions);
	const missing = ids.filter((id) => !counts.has(id));
	const twice = ids.filter((id) => (counts.get(id) ?? 0) > 1);
	const failedIds = new Set(failed.map((f) => f.waId));
	const recoveredIds = new Set(executions.flatMap((e) => e.waIds.filter((_, i) => e.recovered[i])));
	const lostWithoutCatchUp = failed.filter((f) => f.waId && (counts.get(f.waId) ?? 0) === 0).length;
	const executedDespiteFailure = failed.filter(
		(f) =>
			f.waId &&
			executions.some(
				(e) =>
					e.waIds.includes(f.waId as string) && !e.recovered[e.waIds.indexOf(f.waId as string)],
			),
	).length;
	const recoveredWrongly = [...recoveredIds].filter((id) => !failedIds.has(id)).length;
	ctx.numbers.killWebhook = {
		messages: count,
		killedAfterMs: killedAt,
		deliveredOk: count - failed.length,
		deliveryFailed: failed.length,
		failureReasons: reasons,
		executedDespiteFailedDelivery: executedDespiteFailure,
		recovered: recoveredIds.size,
		recoveredThoughDelivered: recoveredWrongly,
		missing: missing.length,
		executedTwice: twice.length,
		waitedSeconds: (Date.now() - streamEnd) / 1000,
	};
	log(
		`  deliveries failed ${failed.length} (of which executed anyway: ${executedDespiteFailure}); recovered by catch-up ${recoveredIds.size}; never executed ${missing.length}; executed twice ${twice.length}`,
	);
	record(
		ctx,
		'kill webhook processor: every message executed exactly once (recovered ones marked recovered: true)',
		missing.length === 0 &&
			twice.length === 0 &&
			recoveredWrongly === 0 &&
			[...failedIds].every((id) => !id || (counts.get(id) ?? 0) === 1),
		`${count} messages, ${failed.length} deliveries failed at the kill; ${lostWithoutCatchUp} of them never executed, ${recoveredIds.size} recovered (${recoveredWrongly} of them had been delivered), ${missing.length} never executed in all, ${twice.length} executed twice (waited ${Math.round((Date.now() - streamEnd) / 1000)} s, catch-up interval ${interval} s)`,
	);
}

// ---- 6. a worker killed mid-run --------------------------------------------------------------

export async function checkKillWorker(
	ctx: QueueContext,
	count = 60,
	concurrency = 4,
): Promise<void> {
	log(
		`== 6. a worker killed (SIGKILL) while running executions (trigger → Reply → Wait 4 s), ${count} inbound messages`,
	);
	const active = await ensureActive(ctx, 'replyWait', () => replyThenWaitWorkflow(ctx));
	const { control, sandbox } = ctx.topology;
	const victim = ctx.topology.workers[0];
	if (!victim) throw new Error('worker 1 is not running');
	const repliesBefore = sandbox.state().messages.length;
	const sent: Array<{ from: string; waId?: string; delivered: boolean }> = [];
	let next = 0;
	let killedAt = 0;
	let runningAtKill: Record<string, number> = {};
	const killer = (async () => {
		while (sent.length < count / 2) await sleep(20);
		runningAtKill = executionStatuses(ctx.topology, active.workflow.id);
		ctx.topology.kill(victim);
		killedAt = Date.now();
		log(
			`  SIGKILL to worker 1 (pid ${victim.process.child.pid}) after ${sent.length} messages; executions then: ${JSON.stringify(runningAtKill)}`,
		);
	})();
	await Promise.all(
		Array.from({ length: concurrency }, async () => {
			for (;;) {
				const i = next++;
				if (i >= count) return;
				const from = `+1888${String(1000000 + i)}`;
				try {
					const out = await control.inbound({
						from,
						contact_name: `Worker ${i}`,
						number: ctx.number,
						text: `worker ${i}`,
					});
					sent.push({ from, waId: out.record.wa_message_id, delivered: out.delivery.delivered });
				} catch {
					sent.push({ from, delivered: false });
				}
				await sleep(200);
			}
		}),
	);
	await killer;
	ctx.topology.workers[0] = undefined;
	// n8n's side: the killed worker's jobs keep their lock until it expires (QUEUE_WORKER_LOCK_DURATION),
	// Bull's stalled check then fails them (n8n sets maxStalledCount 0: never run again); main's
	// queue recovery (every 180 min by default) would mark any left running crashed.
	const timeline: Array<{ s: number; statuses: Record<string, number> }> = [];
	const deadline = killedAt + 150_000;
	let firstFailedS: number | undefined;
	for (;;) {
		const statuses = executionStatuses(ctx.topology, active.workflow.id);
		const s = Math.round((Date.now() - killedAt) / 1000);
		if (
			!timeline.length ||
			JSON.stringify(timeline[timeline.length - 1].statuses) !== JSON.stringify(statuses)
		)
			timeline.push({ s, statuses });
		if ((statuses.crashed || statuses.error) && firstFailedS === undefined) firstFailedS = s;
		const busy = (statuses.new ?? 0) + (statuses.running ?? 0);
		if (busy === 0 && Date.now() - killedAt > 30_000) break;
		if (Date.now() > deadline) break;
		await sleep(2000);
	}
	const executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger);
	const counts = perMessage(executions);
	const replies = sandbox.state().messages.slice(repliesBefore);
	const perRecipient = new Map<string, number>();
	for (const reply of replies) perRecipient.set(reply.to, (perRecipient.get(reply.to) ?? 0) + 1);
	const repliesHistogram: Record<string, number> = {};
	for (const s of sent) {
		const n = perRecipient.get(s.from) ?? 0;
		repliesHistogram[String(n)] = (repliesHistogram[String(n)] ?? 0) + 1;
	}
	const statuses: Record<string, number> = {};
	for (const e of executions) statuses[e.status] = (statuses[e.status] ?? 0) + 1;
	const executionsPerMessage: Record<string, number> = {};
	for (const s of sent) {
		const n = s.waId ? (counts.get(s.waId) ?? 0) : 0;
		executionsPerMessage[String(n)] = (executionsPerMessage[String(n)] ?? 0) + 1;
	}
	const failedExecutions = executions.filter((e) => e.status !== 'success');
	const replied = (e: { waIds: string[] }) =>
		e.waIds.some((id) => {
			const s = sent.find((x) => x.waId === id);
			return s !== undefined && (perRecipient.get(s.from) ?? 0) > 0;
		});
	const failedAfterReply = failedExecutions.filter(replied).length;
	// n8n replaces a stalled job's execution data with its error: which message it carried is then unknown.
	const failedWithoutItems = failedExecutions.filter((e) => e.waIds.length === 0).length;
	const errors: Record<string, number> = {};
	for (const e of failedExecutions)
		errors[e.error ?? '(no message)'] = (errors[e.error ?? '(no message)'] ?? 0) + 1;
	ctx.numbers.killWorker = {
		messages: count,
		delivered: sent.filter((s) => s.delivered).length,
		statusesAtKill: runningAtKill,
		timelineAfterKill: timeline,
		firstFailedAfterS: firstFailedS,
		executions: statuses,
		failedExecutionErrors: errors,
		failedAfterTheirReply: failedAfterReply,
		failedWithoutTheirItems: failedWithoutItems,
		executionsPerMessage,
		repliesPerMessage: repliesHistogram,
	};
	log(
		`  after the kill: ${timeline.map((t) => `${t.s} s ${JSON.stringify(t.statuses)}`).join(' → ')}`,
	);
	log(
		`  executions per message ${JSON.stringify(executionsPerMessage)}; replies per message ${JSON.stringify(repliesHistogram)}; failed executions ${failedExecutions.length} (${failedAfterReply} known to have replied first, ${failedWithoutItems} whose stored data no longer names their message): ${JSON.stringify(errors)}`,
	);
	// Measured and written down, not a property of our nodes: the check holds when n8n settled every
	// execution (none left running) and nothing ran twice.
	record(
		ctx,
		"kill worker: measured what n8n does with the killed worker's executions",
		sent.every((s) => s.delivered) && (statuses.running ?? 0) === 0 && (statuses.new ?? 0) === 0,
		`${count} inbound (${sent.filter((s) => s.delivered).length} delivered 2xx); executions ${JSON.stringify(statuses)}; per message ${JSON.stringify(executionsPerMessage)}; replies per message ${JSON.stringify(repliesHistogram)}; first marked failed ${firstFailedS ?? '-'} s after the kill`,
	);
}

// ---- Download Media on a webhook processor, the file read on a worker ------------------------

/** Trigger with Download Media → Extract From File (text): the worker reads the file the processor stored. */
function mediaWorkflow(ctx: QueueContext): WorkflowJson {
	const trigger = {
		id: randomUUID(),
		name: 'Trigger',
		type: TRIGGER_TYPE,
		typeVersion: 1,
		position: [0, 0],
		webhookId: randomUUID(),
		credentials: credentialRef(ctx),
		parameters: {
			registration: 'automatic',
			events: ['message.inbound'],
			options: { downloadMedia: true },
		},
	};
	const extract = {
		id: randomUUID(),
		name: 'Read file',
		type: 'n8n-nodes-base.extractFromFile',
		typeVersion: 1.1,
		position: [260, 0],
		parameters: {
			operation: 'text',
			binaryPropertyName: 'data',
			destinationKey: 'file_text',
			options: {},
		},
	};
	return {
		name: 'Queue: Download Media → Extract From File',
		nodes: [trigger, extract],
		connections: { Trigger: { main: [[{ node: 'Read file', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}

export async function checkMedia(ctx: QueueContext, count = 10): Promise<void> {
	log(
		`== media: Download Media runs on the webhook processor, the file is read on a worker (${count} inbound files)`,
	);
	const active = await ensureActive(ctx, 'media', () => mediaWorkflow(ctx));
	const sent: Array<{ waId: string; content: string; delivered: boolean }> = [];
	for (let i = 0; i < count; i++) {
		const content = `queue-mode media ${i} ${randomUUID()}`;
		const out = await ctx.topology.control.call<{
			record: { wa_message_id: string };
			delivery: { delivered: boolean };
		}>('POST', '/inbound', {
			from: '+15559990000',
			contact_name: `Media ${i}`,
			number: ctx.number,
			media: {
				mime: 'text/plain',
				data_base64: Buffer.from(content).toString('base64'),
				filename: `note-${i}.txt`,
			},
		});
		sent.push({ waId: out.record.wa_message_id, content, delivered: out.delivery.delivered });
	}
	await settle(ctx.topology, active.workflow.id, count, 120_000);
	const executions = storedExecutions(ctx.topology, active.workflow.id, active.trigger);
	const outcomes: string[] = [];
	let matched = 0;
	for (const s of sent) {
		const execution = executions.find((e) => e.waIds.includes(s.waId));
		if (!execution) {
			outcomes.push('no execution');
			continue;
		}
		const output = await ctx.topology.client.executionOutput(execution.id);
		const item = output.nodes['Read file']?.[0] as { file_text?: string } | undefined;
		const download = (
			output.nodes.Trigger?.[0] as
				{ media_download?: { downloaded?: boolean; reason?: string } } | undefined
		)?.media_download;
		if (
			output.status === 'success' &&
			item?.file_text === s.content &&
			download?.downloaded === true
		)
			matched++;
		else
			outcomes.push(
				`${output.status}: trigger ${JSON.stringify(download)}, read ${JSON.stringify(item?.file_text ?? (output.error as { message?: string } | undefined)?.message)}`.slice(
					0,
					400,
				),
			);
	}
	ctx.numbers.media = {
		files: count,
		delivered: sent.filter((s) => s.delivered).length,
		readOnWorker: matched,
		problems: outcomes,
	};
	record(
		ctx,
		'media: every file downloaded by a webhook processor is read intact by a worker',
		matched === count,
		`${matched}/${count} files read back byte for byte${outcomes.length ? `; ${outcomes.slice(0, 3).join(' | ')}` : ''}`,
	);
}

const ASK = 'Ask for the order number';
const QUESTION = /order number\?/;
const CONFIRMATION = /looking up order (\S+)/;

/** The example conversation (examples/conversation.json): 2 min to answer, 15 s when the first message says "never". */
function conversationWorkflow(ctx: QueueContext): WorkflowJson {
	const example = readExample('conversation');
	const ask = example.nodes.find((n) => n.name === ASK);
	if (!ask) throw new Error(`examples/conversation.json has no "${ASK}" node`);
	ask.parameters = {
		...ask.parameters,
		waitAmount: '={{ $json.data.text.includes("never") ? 0.25 : 2 }}',
		waitUnit: 'minutes',
	};
	return {
		...mapExample(example, { [CREDENTIAL_NAME]: ctx.credential.id }, {}),
		name: 'Queue: conversation (Reply and Wait for Answer)',
	};
}

/**
 * Reply and Wait for Answer in queue mode (issue 15). The question is sent and the execution put
 * to wait on a worker, which n8n gives an empty copy of the workflow's static data (saved whole
 * if changed: the first version wiped the trigger's sealed secret there, every event after it got
 * 401). So Reply and Wait posts its waiting entry to the account's webhook; the trigger on a
 * webhook processor keeps it in static data; the answer, on any processor, resumes the execution.
 * Contacts who write one at a time (each must resume), contacts who write at the same moment
 * (their registrations are saved by concurrent requests, which n8n saves whole: a lost entry
 * must fail safe, the answer starting a normal execution), and one who never answers.
 */
export async function checkConversation(
	ctx: QueueContext,
	oneByOne = 6,
	together = Number(process.env.QUEUE_CONVERSATION_TOGETHER ?? 30),
): Promise<void> {
	log(
		`== conversation: Reply and Wait for Answer across processes (${oneByOne} contacts one at a time, ${together} at once, 1 never answers)`,
	);
	const active = await ensureActive(ctx, 'conversation', () => conversationWorkflow(ctx));
	const { control, client } = ctx.topology;
	const write = async (from: string, text: string) => {
		const sent = await control.inbound({ from, contact_name: 'Ada', number: ctx.number, text });
		if (!sent.delivery.delivered)
			throw new Error(
				`the sandbox could not deliver ${from}'s message: ${JSON.stringify(sent.delivery)}`,
			);
	};
	const texts = async (contact: string) =>
		(await control.state()).messages.filter((m) => m.to === contact).map((m) => m.text);
	const questionsTo = async (contact: string) =>
		(await texts(contact)).filter((t) => QUESTION.test(t)).length;
	const contact = (group: number, i: number) => `+3361${group}${String(100_000 + i).slice(1)}`;
	const started = Date.now();

	const silent = contact(9, 0);
	await write(silent, 'I will never answer');
	await waitFor(
		`the question to ${silent}`,
		async () => (await questionsTo(silent)) === 1,
		30_000,
		250,
	);

	const first = Array.from({ length: oneByOne }, (_, i) => contact(1, i));
	for (const c of first) {
		await write(c, 'hello');
		await waitFor(`the question to ${c}`, async () => (await questionsTo(c)) === 1, 30_000, 250);
	}
	const second = Array.from({ length: together }, (_, i) => contact(2, i));
	await Promise.all(second.map(async (c) => await write(c, 'hello')));
	await waitFor(
		`the question to ${together} contacts`,
		async () => {
			for (const c of second) if ((await questionsTo(c)) !== 1) return false;
			return true;
		},
		60_000,
		500,
	).catch(async (error: unknown) => {
		// Say who was not asked and what n8n did with the executions (a `crashed` one that no
		// worker started is n8n's queue recovery racing the enqueue: docs/scaling.md).
		const notAsked: string[] = [];
		for (const c of second) if ((await questionsTo(c)) !== 1) notAsked.push(c);
		const statuses = JSON.stringify(executionStatuses(ctx.topology, active.workflow.id));
		throw new Error(
			`${(error as Error).message}: not asked ${notAsked.length} (${notAsked.slice(0, 5).join(', ')}); executions ${statuses}`,
		);
	});
	// Every asking execution saves its static data when it goes to wait: let the last ones land.
	await sleep(3000);
	const waiting = (await client.executions(active.workflow.id)).filter(
		(e) => e.status === 'waiting',
	).length;

	const outcome = async (c: string, answer: string) => {
		const sent = await texts(c);
		const confirmed = sent.filter((t) => CONFIRMATION.exec(t)?.[1]?.startsWith(answer)).length;
		const askedAgain = sent.filter((t) => QUESTION.test(t)).length - 1;
		return { confirmed, askedAgain };
	};
	const answerAll = async (contacts: string[], prefix: string) => {
		await Promise.all(contacts.map(async (c, i) => await write(c, `${prefix}-${i}`)));
		await waitFor(
			`an outcome for every answer of ${prefix}`,
			async () => {
				const all = await Promise.all(
					contacts.map(async (c, i) => await outcome(c, `${prefix}-${i}`)),
				);
				return all.every((o) => o.confirmed + o.askedAgain >= 1) || undefined;
			},
			90_000,
			1000,
		).catch(() => undefined);
		// Late second outcomes (an answer both resumed and started anew) show up here.
		await sleep(3000);
		const final = await Promise.all(
			contacts.map(async (c, i) => await outcome(c, `${prefix}-${i}`)),
		);
		return {
			resumed: final.filter((o) => o.confirmed === 1 && o.askedAgain === 0).length,
			failedSafe: final.filter((o) => o.confirmed === 0 && o.askedAgain === 1).length,
			twice: final.filter((o) => o.confirmed + o.askedAgain > 1).length,
		};
	};
	const a = await answerAll(first, 'A');
	const b = await answerAll(second, 'B');

	// n8n's wait tracker (on main) looks for due executions once a minute and hands them to a worker.
	const silentDone = await waitFor(
		"the silent contact's execution to time out",
		async () => {
			for (const e of await client.executions(active.workflow.id)) {
				if (e.status !== 'success') continue;
				const output = await client.executionOutput(e.id);
				const timedOut = output.nodes['No answer in time']?.[0] as
					{ timed_out?: boolean; data?: { from?: string } } | undefined;
				if (timedOut?.timed_out === true)
					return { id: e.id, seconds: (Date.now() - started) / 1000 };
			}
			return undefined;
		},
		150_000,
		5000,
	).catch(() => undefined);
	const statuses = executionStatuses(ctx.topology, active.workflow.id);
	ctx.numbers.conversation = {
		oneByOne: { contacts: oneByOne, ...a },
		together: { contacts: together, ...b },
		waitingBeforeAnswers: waiting,
		silent: silentDone ?? null,
		statuses,
	};
	const registration = storedStaticData(ctx.topology, active.workflow.id);
	const all = {
		resumed: a.resumed + b.resumed,
		failedSafe: a.failedSafe + b.failedSafe,
		twice: a.twice + b.twice,
		contacts: oneByOne + together,
	};
	record(
		ctx,
		'conversation: contacts who write one at a time are each answered in the same execution (asked on a worker, registered through the trigger on a webhook processor, resumed by the answer)',
		a.resumed === oneByOne,
		`${a.resumed}/${oneByOne} resumed, ${a.failedSafe} as a new execution instead`,
	);
	record(
		ctx,
		`conversation: ${all.contacts} contacts asked on workers and answering through webhook processors: every message delivered (no 401), every answer resumed its own execution (none started a new one), never lost, never both`,
		all.resumed === all.contacts && all.twice === 0,
		`one at a time: ${a.resumed}/${oneByOne} resumed, ${a.failedSafe} as a new execution; at once: ${b.resumed}/${together} resumed, ${b.failedSafe} as a new execution; ${all.twice} both or twice, ${all.contacts - all.resumed - all.failedSafe - all.twice} lost; ${waiting} executions waiting before the answers`,
	);
	record(
		ctx,
		"conversation: the trigger's sealed signing secret is still in the workflow's static data after the workers' executions",
		registration.includes('sealedSecret'),
		registration.includes('sealedSecret')
			? 'present'
			: `static data now: ${registration.slice(0, 300)}`,
	);
	record(
		ctx,
		'conversation: a contact who never answers: the execution continues on Timed Out (wait tracker on main, run on a worker)',
		silentDone !== undefined,
		silentDone
			? `execution ${silentDone.id} timed out ${silentDone.seconds.toFixed(0)} s after the first message (limit 15 s; n8n checks once a minute)`
			: 'no timed-out execution within 150 s',
	);
}

// ---- several workflows on one account (issue 26, docs/several-workflows.md §13 T5 and T2) -----

const SEVERAL: Array<{ key: ExampleKey; selects: 'message.inbound' | 'message.status' }> = [
	{ key: 'autoReply', selects: 'message.inbound' },
	{ key: 'syncToCrm', selects: 'message.inbound' },
	{ key: 'deliveryStatus', selects: 'message.status' },
];

interface SeveralWorkflow {
	key: ExampleKey;
	selects: string;
	workflow: SavedWorkflow;
	trigger: string;
	url: string;
}

/**
 * The three examples as new inactive workflows on one credential (new webhook ids: a forward an
 * earlier check's holder retries later never reaches them), each trigger with catch-up every
 * `interval` s. First: the trigger workflow a check before left active deactivated, no webhook
 * registered, both webhook processors running (a check before may have killed one).
 */
async function createSeveralWorkflows(
	ctx: QueueContext,
	prefix: string,
	interval: number,
): Promise<SeveralWorkflow[]> {
	const { topology } = ctx;
	const { client, sandbox } = topology;
	if (ctx.active) {
		await client.deactivate(ctx.active.workflow.id);
		ctx.active = undefined;
	}
	await waitFor('no webhook registered', () => !sandbox.state().webhook.configured, 30_000);
	for (let i = 0; i < topology.webhooks.length; i++)
		if (!topology.webhooks[i]) {
			log(`  restarting webhook processor ${i + 1}`);
			await topology.addWebhookProcessor(i);
		}

	const { credentialId, tables } = await importExamples(client, {
		apiKey: sandbox.keys.all,
		baseUrl: sandbox.baseUrl,
	});
	const workflows: SeveralWorkflow[] = [];
	for (const { key, selects } of SEVERAL) {
		const json = mapExample(readExample(key), { [CREDENTIAL_NAME]: credentialId }, tables);
		json.name = `${prefix}: ${json.name}`;
		const triggerNode = json.nodes.find((n) => n.name === triggerName(json));
		if (triggerNode)
			triggerNode.parameters = {
				...triggerNode.parameters,
				catchUp: true,
				options: {
					...((triggerNode.parameters?.options as Record<string, unknown> | undefined) ?? {}),
					catchUpInterval: interval,
				},
			};
		const workflow = await client.createWorkflow(json);
		const trigger = triggerName(workflow);
		const webhookId = workflow.nodes.find((n) => n.name === trigger)?.webhookId;
		workflows.push({
			key,
			selects,
			workflow,
			trigger,
			url: `${topology.url}/webhook/${String(webhookId)}/webhook`,
		});
	}
	return workflows;
}

/**
 * Activates the workflows on main and waits for the account's one registration. With `first`,
 * that one is activated (and registers) before the others, which are then activated at the same
 * moment; without it, all three at once. `between` runs after the first one registered and before
 * the others are activated. Then up to 45 s for the members in the holder's static
 * data in Postgres: the joins are saved by the webhook processor that took them (n8n saves the
 * holder's static data before answering); the heartbeat joins again every 30 s.
 */
async function activateSeveral(
	ctx: QueueContext,
	workflows: SeveralWorkflow[],
	first?: ExampleKey,
	between?: (first: SeveralWorkflow) => Promise<void>,
) {
	const { client, sandbox } = ctx.topology;
	const requestsBefore = sandbox.state().requests.length;
	/** POST /v1/console/webhook since just before the activations. */
	const registrations = () =>
		sandbox
			.state()
			.requests.slice(requestsBefore)
			.filter((r) => r.method === 'POST' && r.path === '/v1/console/webhook').length;
	/** When each activation was answered and its publication settled (its checkExists, and so its join, done). */
	const activatedAt = new Map<ExampleKey, number>();
	const activate = async (list: SeveralWorkflow[]) => {
		const outcomes = await Promise.all(
			list.map(async (w) => {
				const outcome = await client.activateAndSettle(w.workflow.id);
				activatedAt.set(w.key, Date.now());
				return outcome;
			}),
		);
		return outcomes.flatMap((o, i) => (o.ok ? [] : [`${list[i].key}: ${o.message}`]));
	};
	const activationErrors: string[] = [];
	const firstOne = workflows.find((w) => w.key === first);
	if (firstOne) {
		activationErrors.push(...(await activate([firstOne])));
		await waitFor(
			`${firstOne.key}'s webhook registered`,
			() => sandbox.state().webhook.url === firstOne.url,
			30_000,
		);
		await between?.(firstOne);
	}
	activationErrors.push(...(await activate(workflows.filter((w) => w !== firstOne))));
	const holderUrl = await waitFor(
		'the webhook registered',
		() =>
			sandbox.state().webhook.configured ? (sandbox.state().webhook.url ?? undefined) : undefined,
		30_000,
	);
	const holder = workflows.find((w) => w.url === holderUrl);
	if (!holder) throw new Error(`the webhook ${holderUrl} is none of the three workflows`);
	const members = workflows.filter((w) => w !== holder);
	const joinedAt = Date.now();
	const stored = await waitFor(
		"the members in the holder's static data in Postgres",
		() => {
			const data = storedStaticData(ctx.topology, holder.workflow.id);
			return members.every((m) => data.includes(m.url)) ? data : undefined;
		},
		45_000,
		250,
	).catch(() => storedStaticData(ctx.topology, holder.workflow.id));
	const membersStored = members.filter((m) => stored.includes(m.url)).map((m) => m.key);
	const membersAfterMs = Date.now() - joinedAt;
	log(
		`  holder ${holder.key} (${holder.workflow.id}); members ${members.map((m) => m.key).join(', ')}; in the holder's static data: ${membersStored.join(', ') || 'none'} (${membersAfterMs} ms after the registration)`,
	);
	return {
		activationErrors,
		registrations,
		holder,
		members,
		membersStored,
		membersAfterMs,
		activatedAt,
	};
}

/**
 * A `delivered` status for each message, `concurrency` at a time (each sender pausing `pauseMs`
 * after each); the key each has in executions, and when it was sent (`began`, ms since the epoch).
 */
async function sendStatuses(
	ctx: QueueContext,
	messages: Array<{ id: string }>,
	concurrency: number,
	pauseMs = 0,
): Promise<Array<{ key: string; delivered: boolean; reason: string | null; began: number }>> {
	const { control } = ctx.topology;
	const statusSent: Array<{
		key: string;
		delivered: boolean;
		reason: string | null;
		began: number;
	}> = [];
	let next = 0;
	await Promise.all(
		Array.from({ length: concurrency }, async () => {
			for (;;) {
				const i = next++;
				if (i >= messages.length) return;
				const key = `status:${messages[i].id}:delivered`;
				const began = Date.now();
				try {
					const out = await control.status(messages[i].id, 'delivered');
					statusSent.push({
						key,
						delivered: out.delivery.delivered,
						reason: out.delivery.reason,
						began,
					});
				} catch (error) {
					statusSent.push({ key, delivered: false, reason: errorText(error), began });
				}
				if (pauseMs) await sleep(pauseMs);
			}
		}),
	);
	return statusSent;
}

/** The workflow's executions stored since `before` (execution ids by workflow id). */
function executionsSince(
	topology: Topology,
	w: SeveralWorkflow,
	before: Map<string, Set<string>>,
): StoredExecution[] {
	return storedExecutions(topology, w.workflow.id, w.trigger).filter(
		(e) => !before.get(w.workflow.id)?.has(e.id),
	);
}

/** Whether each of `keys` is in one of the workflow's executions since `before`. */
function covers(
	topology: Topology,
	w: SeveralWorkflow,
	before: Map<string, Set<string>>,
	keys: string[],
): boolean {
	const counts = perEvent(executionsSince(topology, w, before));
	return keys.every((k) => counts.has(k));
}

/**
 * Each workflow's executions since `before` against the events it should have run (`expected`):
 * once, missing, twice, unselected, unexpected. A processor killed between storing an execution
 * (`new`) and queueing its job leaves one that no worker ever runs (main's queue recovery marks
 * it `crashed`): not a run. The service saw that delivery fail, so the catch-up runs the event
 * (docs/scaling.md, several workflows). Each missing inbound message is described by what the
 * service saw, when (against `ref`), and whether the other workflows selecting it ran it.
 * `mayRunOf`: events the workflow may run once or not at all (sent while it was joining: no
 * trigger can say whether the holder's copy had it yet); never twice, and not counted as expected.
 */
function countSeveral(
	topology: Topology,
	workflows: SeveralWorkflow[],
	before: Map<string, Set<string>>,
	expectedOf: (w: SeveralWorkflow) => string[],
	roleOf: (w: SeveralWorkflow) => string,
	sent: SentInbound[],
	ref: { at: number; label: string },
	mayRunOf: (w: SeveralWorkflow) => string[] = () => [],
) {
	const withJob = executionIdsWithJob(topology);
	return workflows.map((w) => {
		const stored = executionsSince(topology, w, before);
		const neverRun = stored.filter((e) => e.status === 'new' && !withJob.has(e.id));
		const executions = stored.filter((e) => !neverRun.includes(e));
		const counts = perEvent(executions);
		const expected = expectedOf(w);
		const expectedSet = new Set(expected);
		const may = [...new Set(mayRunOf(w))].filter((k) => !expectedSet.has(k));
		const maySet = new Set(may);
		const statuses: Record<string, number> = {};
		for (const e of stored) statuses[e.status] = (statuses[e.status] ?? 0) + 1;
		const recovered = new Set(executions.flatMap((e) => e.keys.filter((_, i) => e.recovered[i])));
		return {
			key: w.key,
			role: roleOf(w),
			selects: w.selects,
			expected: expected.length,
			once: expected.filter((k) => counts.get(k) === 1).length,
			missing: expected.filter((k) => !counts.has(k)).length,
			twice: expected.filter((k) => (counts.get(k) ?? 0) > 1).length,
			unselected: executions.filter((e) => e.events.some((event) => event !== w.selects)).length,
			unexpected: [...counts.keys()].filter((k) => !expectedSet.has(k) && !maySet.has(k)).length,
			mayCount: may.length,
			mayRan: may.filter((k) => counts.has(k)).length,
			mayTwice: may.filter((k) => (counts.get(k) ?? 0) > 1).length,
			ranNothing: executions.filter((e) => e.keys.length === 0).length,
			recovered: recovered.size,
			executions: executions.length,
			neverRun: neverRun.map((e) => `${e.id} (${e.keys.join(', ')})`),
			statuses,
			missingIds: expected
				.filter((k) => !counts.has(k))
				.slice(0, 5)
				.map((k) => {
					const s = sent.find((x) => x.waId === k);
					const others = workflows
						.filter((o) => o !== w && o.selects === w.selects)
						.map((o) => {
							const e = executionsSince(topology, o, before).find((x) => x.keys.includes(k));
							return `${o.key} ${e ? (e.recovered[e.keys.indexOf(k)] ? 'recovered' : 'live') : 'no'}`;
						});
					return s
						? `${k} (${s.delivered ? '2xx' : `failed: ${s.reason ?? s.status}`} ${((s.at - ref.at) / 1000).toFixed(2)} s from the ${ref.label}; ${others.join(', ')})`
						: k;
				}),
		};
	});
}

type SeveralCounts = ReturnType<typeof countSeveral>[number];

/** Holds when the workflow ran each event it should exactly once and nothing else. */
const exactlyOnce = (p: SeveralCounts) =>
	p.once === p.expected &&
	p.unselected === 0 &&
	p.unexpected === 0 &&
	p.mayTwice === 0 &&
	p.executions - p.ranNothing === p.expected + p.mayRan;

const countsLine = (p: SeveralCounts) =>
	`${p.key} (${p.role}): ${p.once}/${p.expected} once, ${p.missing} missing, ${p.twice} twice, ${p.unselected} unselected, ${p.recovered} recovered${p.neverRun.length ? `, ${p.neverRun.length} stored never run` : ''}${p.mayCount ? `; of ${p.mayCount} sent while it joined ${p.mayRan} ran, ${p.mayTwice} twice` : ''}`;

function logCounts(perWorkflow: SeveralCounts[]): void {
	for (const p of perWorkflow)
		log(
			`  ${p.key} (${p.role}, ${p.selects}): ${p.once}/${p.expected} once, ${p.missing} missing, ${p.twice} twice, ${p.unselected} unselected, ${p.unexpected} unexpected${p.mayCount ? `, of ${p.mayCount} sent while it joined ${p.mayRan} ran (${p.mayTwice} twice)` : ''}; recovered ${p.recovered}; executions ${JSON.stringify(p.statuses)}${p.neverRun.length ? `; stored but never run (no job: processor killed before queueing it): ${p.neverRun.join(', ')}` : ''}${p.missingIds.length ? `; missing e.g. ${p.missingIds.join(', ')}` : ''}`,
		);
}

/**
 * T5: the three examples (auto-reply, sync-inbound-to-crm, delivery-status) on one credential,
 * activated at the same moment on main; the account's one webhook is the holder's, and the holder
 * (on whichever webhook processor haproxy picks) forwards each event through the balancer to the
 * other two. A stream of inbound messages with webhook processor 1 killed (SIGKILL) a quarter of
 * the way in, then a status event for each auto-reply. Each workflow must run each event it
 * selects exactly once (live, or recovered by its own catch-up), and nothing it does not select.
 */
export async function checkSeveralWorkflows(
	ctx: QueueContext,
	count = Number(process.env.QUEUE_SEVERAL_COUNT ?? 200),
	concurrency = 8,
): Promise<void> {
	const interval = ctx.options.catchUpInterval;
	log(
		`== several workflows (issue 26): 3 examples on one credential activated at once; ${count} inbound at concurrency ${concurrency} with webhook processor 1 killed mid-stream, then a status per reply; catch-up interval ${interval} s`,
	);
	const { topology } = ctx;
	const { sandbox } = topology;
	const workflows = await createSeveralWorkflows(ctx, 'Queue, several workflows', interval);
	const { activationErrors, registrations, holder, members, membersStored, membersAfterMs } =
		await activateSeveral(ctx, workflows);

	const before = new Map(
		workflows.map((w) => [
			w.workflow.id,
			new Set(storedExecutions(topology, w.workflow.id, w.trigger).map((e) => e.id)),
		]),
	);
	// The holder's member table in Postgres, read every second until the counts are taken: each change,
	// in seconds from here, so that a member a whole save of static data dropped shows in the log.
	const watchStart = Date.now();
	const since = (at: number) => ((at - watchStart) / 1000).toFixed(1);
	const tableChanges: string[] = [];
	let watching = true;
	const watchTable = (async () => {
		let last = '';
		while (watching) {
			const data = storedStaticData(topology, holder.workflow.id);
			const present =
				members
					.filter((m) => data.includes(m.url))
					.map((m) => m.key)
					.join(' + ') || 'none';
			if (present !== last) tableChanges.push(`${since(Date.now())} s ${present}`);
			last = present;
			await sleep(1000);
		}
	})().catch((error: unknown) => tableChanges.push(`stopped: ${errorText(error)}`));
	const balancerBefore = await balancerCounts(ctx);
	const victim = topology.webhooks[0];
	if (!victim) throw new Error('webhook processor 1 is not running');
	const run = String(Math.floor(Math.random() * 1e6)).padStart(6, '0');
	const contact = (i: number) => `+1999${run}${String(i).padStart(4, '0')}`;
	const stream = await streamInbound(ctx, {
		count,
		concurrency,
		message: (i) => ({
			from: contact(i),
			contact_name: `Several ${i}`,
			text: `several workflows ${i}`,
		}),
		midway: {
			after: count / 4,
			act: (after, t0) => {
				topology.kill(victim);
				log(
					`  SIGKILL to webhook processor 1 (pid ${victim.process.child.pid}) after ${after} messages, ${((Date.now() - t0) / 1000).toFixed(1)} s into the stream`,
				);
			},
		},
	});
	const { sent, midwayAt: killedAt, midwayAfter: killedAfter } = stream;
	topology.webhooks[0] = undefined;
	const streamEnd = stream.end;
	const failedInbound = sent.filter((s) => !s.delivered);
	const inboundIds = sent.map((s) => s.waId).filter((id): id is string => Boolean(id));
	log(
		`  ${count} inbound in ${((streamEnd - stream.t0) / 1000).toFixed(1)} s: ${count - failedInbound.length} delivered 2xx, ${failedInbound.length} failed`,
	);

	const inboundWorkflows = workflows.filter((w) => w.selects === 'message.inbound');
	const statusWorkflows = workflows.filter((w) => w.selects === 'message.status');
	// A status for each reply the auto-reply sent to this stream's contacts by now, sent while the
	// catch-up recovers what failed at the kill (every `interval` s: up to interval + 30 s for every
	// inbound message to reach both inbound workflows).
	const inboundCovered = waitFor(
		'every inbound message in both inbound workflows',
		() => inboundWorkflows.every((w) => covers(topology, w, before, inboundIds)) || undefined,
		(interval + 30) * 1000,
		2000,
	).catch(() => undefined);
	const contacts = new Set(Array.from({ length: count }, (_, i) => contact(i)));
	const replies = sandbox.state().messages.filter((m) => contacts.has(m.to));
	const statusSent = await sendStatuses(ctx, replies, concurrency);
	const statusesEnd = Date.now();
	await inboundCovered;
	const statusKeys = statusSent.filter((s) => s.delivered).map((s) => s.key);
	await waitFor(
		'every delivered status in the status workflow',
		() => statusWorkflows.every((w) => covers(topology, w, before, statusKeys)) || undefined,
		60_000,
		2000,
	).catch(() => undefined);
	// Late copies (a retried forward, a recovery) would show up in these seconds.
	await sleep(5000);
	for (const w of workflows) await settle(topology, w.workflow.id, 0, 60_000, 3000);
	log(
		`  statuses sent ${((statusesEnd - streamEnd) / 1000).toFixed(0)} s after the stream, all counted ${((Date.now() - streamEnd) / 1000).toFixed(0)} s after it`,
	);
	watching = false;
	await watchTable;
	log(
		`  members in the holder's static data in Postgres: ${tableChanges.join(', ')} (kill at ${since(killedAt)} s, statuses ${since(streamEnd)} to ${since(statusesEnd)} s)`,
	);
	const balancerAfter = diff(await balancerCounts(ctx), balancerBefore);
	const registered = registrations();

	const perWorkflow = countSeveral(
		topology,
		workflows,
		before,
		(w) => (w.selects === 'message.inbound' ? inboundIds : statusKeys),
		(w) => (w === holder ? 'holder' : 'member'),
		sent,
		{ at: killedAt, label: 'kill' },
	);
	const failedStatus = statusSent.filter((s) => !s.delivered);
	ctx.numbers.severalWorkflows = {
		holder: holder.key,
		activationErrors,
		registrations: registered,
		membersStored,
		membersStoredAfterMs: membersAfterMs,
		memberTableChanges: tableChanges,
		inbound: {
			sent: count,
			delivered: count - failedInbound.length,
			failed: reasons(failedInbound),
		},
		killedAfterMessages: killedAfter,
		statuses: {
			replies: replies.length,
			sent: statusSent.length,
			delivered: statusKeys.length,
			failed: reasons(failedStatus),
		},
		requestsPerProcessor: balancerAfter,
		perWorkflow,
	};
	logCounts(perWorkflow);
	log(
		`  requests per webhook processor (haproxy, stream + statuses + forwards): ${JSON.stringify(balancerAfter)}; statuses: ${statusKeys.length}/${replies.length} delivered ${JSON.stringify(reasons(failedStatus))}`,
	);

	record(
		ctx,
		"several workflows: three triggers on one credential activated at once: 0 activation errors, exactly one POST /v1/console/webhook, the two members in the holder's static data in Postgres",
		activationErrors.length === 0 && registered === 1 && membersStored.length === members.length,
		`activation errors ${activationErrors.length}${activationErrors.length ? ` (${activationErrors.join(' | ')})` : ''}; POST /v1/console/webhook ${registered}; holder ${holder.key}; members stored ${membersStored.length}/${members.length} (${membersAfterMs} ms)`,
	);
	record(
		ctx,
		'several workflows: each workflow ran each event it selects exactly once (live, or recovered by its catch-up) and none it does not, with a webhook processor killed mid-stream',
		killedAfter > 0 && replies.length > 0 && perWorkflow.every(exactlyOnce),
		`${count} inbound (${failedInbound.length} failed at the kill after ${killedAfter}), ${statusKeys.length} statuses delivered of ${replies.length} replies; ${perWorkflow.map(countsLine).join('; ')}`,
	);

	await deactivateSeveral(ctx, members, holder);
}

/** Members first: the holder's delete() would hand the webhook to a member being deactivated. */
async function deactivateSeveral(
	ctx: QueueContext,
	members: SeveralWorkflow[],
	holder: SeveralWorkflow,
): Promise<void> {
	const { client, sandbox } = ctx.topology;
	for (const w of [...members, holder])
		await client
			.deactivate(w.workflow.id)
			.catch((error: unknown) => log(`  deactivating ${w.key}: ${errorText(error)}`));
	await waitFor('the webhook removed', () => !sandbox.state().webhook.configured, 30_000).catch(
		() => log(`  the webhook is still ${sandbox.state().webhook.url} after deactivating all three`),
	);
}

/**
 * Which example holds the webhook in the hand-off check: the CRM-like one. Deactivating the
 * auto-reply would stop the replies whose statuses the status-only workflow counts; deactivating
 * the status-only one would leave nothing to count statuses; the CRM-like one leaves one workflow
 * of each kind running, and has inbound messages to recover when it is published again.
 */
const HAND_OFF_HOLDER: ExampleKey = 'syncToCrm';

/**
 * T2 in queue mode (docs/several-workflows.md §6, §13): the three examples as in T5, the CRM-like
 * one activated first so that it holds the webhook, the other two then at once (they join it). A
 * stream of inbound messages through haproxy and, a quarter of the way in, the holder deactivated
 * through main's REST API: main's delete() hands the webhook off to a live member, which registers
 * its own URL from a webhook processor (one POST /v1/console/webhook, no DELETE). Deliveries in
 * the window fail, and each remaining workflow's catch-up recovers them. Each remaining workflow
 * selecting inbound must run each message once; each status sent after the hand-off must reach the
 * status-only workflow once. Then the old holder, published again, joins the new holder (the
 * webhook stays) and recovers, once, what it missed while unpublished (§7, membership gaps).
 */
export async function checkSeveralWorkflowsHandOff(
	ctx: QueueContext,
	count = Number(process.env.QUEUE_HANDOFF_COUNT ?? 120),
	concurrency = 4,
): Promise<void> {
	const interval = ctx.options.catchUpInterval;
	log(
		`== several workflows, hand-off (issue 26, T2): 3 examples on one credential, ${HAND_OFF_HOLDER} holding the webhook; ${count} inbound at concurrency ${concurrency}, the holder deactivated through main's REST API after ${count / 4}, then a status per reply, then the old holder published again; catch-up interval ${interval} s`,
	);
	const { topology } = ctx;
	const { client, sandbox } = topology;
	const workflows = await createSeveralWorkflows(ctx, 'Queue, hand-off', interval);
	let leaveLast: SeveralWorkflow | undefined;
	try {
		const activation = await activateSeveral(ctx, workflows, HAND_OFF_HOLDER);
		const { holder, activationErrors } = activation;
		leaveLast = holder;
		if (holder.key !== HAND_OFF_HOLDER)
			throw new Error(
				`${HAND_OFF_HOLDER} was activated first, but ${holder.key} holds the webhook`,
			);
		const remaining = workflows.filter((w) => w !== holder);
		const registeredBefore = activation.registrations();
		const before = new Map(
			workflows.map((w) => [
				w.workflow.id,
				new Set(storedExecutions(topology, w.workflow.id, w.trigger).map((e) => e.id)),
			]),
		);
		const state0 = sandbox.state();
		const requestsBefore = state0.requests.length;
		const deliveriesBefore = state0.deliveries.length;
		const webhookChanges = (from: number) =>
			sandbox
				.state()
				.requests.slice(from)
				.filter((r) => r.path === '/v1/console/webhook' && r.method !== 'GET')
				.map((r) => `${r.method} ${r.status ?? '-'}`);

		const run = String(Math.floor(Math.random() * 1e6)).padStart(6, '0');
		const contact = (i: number) => `+1998${run}${String(i).padStart(4, '0')}`;
		let deactivatedInMs = 0;
		let deactivationError = '';
		const stream = await streamInbound(ctx, {
			count,
			concurrency,
			pauseMs: 50,
			message: (i) => ({ from: contact(i), contact_name: `Hand-off ${i}`, text: `hand-off ${i}` }),
			midway: {
				after: count / 4,
				act: async (after, t0) => {
					log(
						`  deactivating the holder ${holder.key} through main's REST API after ${after} messages, ${((Date.now() - t0) / 1000).toFixed(1)} s into the stream`,
					);
					const t = Date.now();
					await client
						.deactivate(holder.workflow.id)
						.catch((error: unknown) => (deactivationError = errorText(error)));
					deactivatedInMs = Date.now() - t;
				},
			},
		});
		const { sent } = stream;
		const failedInbound = sent.filter((s) => !s.delivered);
		const inboundIds = sent.map((s) => s.waId).filter((id): id is string => Boolean(id));
		log(
			`  ${count} inbound in ${((stream.end - stream.t0) / 1000).toFixed(1)} s: ${count - failedInbound.length} delivered 2xx, ${failedInbound.length} failed ${JSON.stringify(reasons(failedInbound))}; deactivation answered in ${deactivatedInMs} ms${deactivationError ? ` (${deactivationError})` : ''}`,
		);
		const newUrl = await waitFor(
			"the webhook at a remaining workflow's URL",
			() => {
				const url = sandbox.state().webhook.url;
				return remaining.some((w) => w.url === url) ? url : undefined;
			},
			30_000,
		).catch(() => sandbox.state().webhook.url);
		const newHolder = remaining.find((w) => w.url === newUrl);
		leaveLast = newHolder;

		// Every `interval` s each remaining trigger's catch-up recovers what failed in the window (it
		// leaves a delivery 15 s to settle first).
		const inboundRemaining = remaining.filter((w) => w.selects === 'message.inbound');
		const statusRemaining = remaining.filter((w) => w.selects === 'message.status');
		await waitFor(
			'every inbound message in each remaining inbound workflow',
			() => inboundRemaining.every((w) => covers(topology, w, before, inboundIds)) || undefined,
			(interval + 45) * 1000,
			2000,
		).catch(() => undefined);
		for (const w of remaining) await settle(topology, w.workflow.id, 0, 60_000, 3000);
		const coveredAfterS = (Date.now() - stream.end) / 1000;

		// A status for each reply the auto-reply sent to this stream's contacts: all after the hand-off.
		const contacts = new Set(Array.from({ length: count }, (_, i) => contact(i)));
		const replies = sandbox.state().messages.filter((m) => contacts.has(m.to));
		const statusSent = await sendStatuses(ctx, replies, concurrency);
		const statusKeys = statusSent.filter((s) => s.delivered).map((s) => s.key);
		const failedStatus = statusSent.filter((s) => !s.delivered);
		await waitFor(
			'every delivered status in the status workflow',
			() => statusRemaining.every((w) => covers(topology, w, before, statusKeys)) || undefined,
			60_000,
			2000,
		).catch(() => undefined);
		// Late copies (a retried forward, a recovery) would show up in these seconds.
		await sleep(5000);
		for (const w of remaining) await settle(topology, w.workflow.id, 0, 60_000, 3000);

		const changes = webhookChanges(requestsBefore);
		// The window: from the last delivery the old holder's URL took to the first the new one took.
		const deliveries = sandbox.state().deliveries.slice(deliveriesBefore);
		const at = (d: { created_at: string }) => Date.parse(d.created_at);
		const lastOld = deliveries.filter((d) => d.url === holder.url && d.delivered).pop();
		const firstNew = deliveries.find((d) => d.url === newUrl && d.delivered);
		const windowMs = lastOld && firstNew ? at(firstNew) - at(lastOld) : null;
		const failedDeliveries = deliveries.filter((d) => !d.delivered);
		const firstFailed = failedDeliveries[0];
		// From the first failure (n8n 2.x removes the old URL's route before delete() hands off) to
		// the first delivery the new URL took: the time the service's deliveries were failing.
		const failingMs = firstFailed && firstNew ? at(firstNew) - at(firstFailed) : null;
		const whereTo = (url: string | null) =>
			url === holder.url ? 'old URL' : url === newUrl ? 'new URL' : String(url);
		const failedBy = reasons(
			failedDeliveries.map((d) => ({
				reason: `${d.event} to the ${whereTo(d.url)}: ${d.reason ?? d.status}`,
			})),
		);
		const failedOffsets = lastOld ? failedDeliveries.map((d) => at(d) - at(lastOld)) : [];
		// A delivery's time is when its outcome was known: a 2xx from the holder (which waits for its
		// members' first answers) takes longer than a 404. When each began, against the last 2xx's start:
		const began = (d: { created_at: string; duration_ms: number | null }) =>
			at(d) - (d.duration_ms ?? 0);
		const failedBeganOffsets = lastOld
			? failedDeliveries.map((d) => began(d) - began(lastOld))
			: [];
		// Once the new URL took a delivery, none should fail (a 401 there would be a lost secret).
		const failedAfterNew = firstNew
			? failedDeliveries.filter((d) => at(d) > at(firstNew)).length
			: 0;
		// main's delete() logs how long the hand-off request took (to the new holder's answer).
		const handOffLine = readFileSync(topology.main.process.logFile, 'utf8')
			.split('\n')
			.filter((line) => line.includes(`handed the account's webhook off to ${newUrl} in`))
			.pop();
		const handOffRequestMs = handOffLine ? Number(/ in (\d+) ms/.exec(handOffLine)?.[1]) : null;
		log(
			`  webhook now ${newHolder ? `${newHolder.key}'s URL` : `${newUrl} (no remaining workflow's)`}; webhook changes since the stream began: ${changes.join(', ') || 'none'}; hand-off request ${handOffRequestMs ?? '?'} ms (main's log); window ${windowMs ?? '?'} ms from the last delivery to the old URL (${lastOld?.created_at ?? '-'}) to the first to the new (${firstNew?.created_at ?? '-'}), deliveries failing for ${failingMs ?? '-'} ms; failed deliveries ${failedDeliveries.length} ${JSON.stringify(failedBy)}${failedOffsets.length ? `, ${Math.min(...failedOffsets)} to ${Math.max(...failedOffsets)} ms from the last delivery to the old URL` : ''}; the last 2xx at the old URL took ${lastOld?.duration_ms ?? '?'} ms${failedBeganOffsets.length ? `, the failed ones began ${Math.min(...failedBeganOffsets)} to ${Math.max(...failedBeganOffsets)} ms after it began` : ''}; failed after the first delivery to the new URL ${failedAfterNew}`,
		);

		const perWorkflow = countSeveral(
			topology,
			remaining,
			before,
			(w) => (w.selects === 'message.inbound' ? inboundIds : statusKeys),
			(w) => (w === newHolder ? 'new holder' : 'member'),
			sent,
			{ at: stream.midwayAt, label: 'deactivation' },
		);
		logCounts(perWorkflow);
		log(
			`  every inbound message in the remaining inbound workflow(s) ${coveredAfterS.toFixed(0)} s after the stream; statuses: ${statusKeys.length}/${replies.length} delivered ${JSON.stringify(reasons(failedStatus))}`,
		);
		const inboundCounts = perWorkflow.filter((p) => p.selects === 'message.inbound');
		const statusCounts = perWorkflow.filter((p) => p.selects === 'message.status');

		record(
			ctx,
			"several workflows, hand-off: the holder deactivated through main's REST API mid-stream hands the webhook to a remaining workflow (one POST /v1/console/webhook before, then the new holder's one POST, no DELETE; 0 activation errors)",
			activationErrors.length === 0 &&
				registeredBefore === 1 &&
				!deactivationError &&
				newHolder !== undefined &&
				changes.length === 1 &&
				changes[0].startsWith('POST'),
			`activation errors ${activationErrors.length}${activationErrors.length ? ` (${activationErrors.join(' | ')})` : ''}; POST before the stream ${registeredBefore}; deactivation ${deactivationError || `answered in ${deactivatedInMs} ms`}; webhook changes since: ${changes.join(', ') || 'none'}; webhook now ${newHolder?.key ?? newUrl}; hand-off request ${handOffRequestMs ?? '?'} ms; window ${windowMs ?? '?'} ms, deliveries failing for ${failingMs ?? '-'} ms, ${failedDeliveries.length} failed`,
		);
		record(
			ctx,
			'several workflows, hand-off: each remaining workflow selecting inbound ran each message exactly once (live, or recovered by its catch-up)',
			stream.midwayAfter > 0 && inboundCounts.length > 0 && inboundCounts.every(exactlyOnce),
			`${count} inbound (${failedInbound.length} failed), holder deactivated after ${stream.midwayAfter}; ${inboundCounts.map(countsLine).join('; ')}`,
		);
		record(
			ctx,
			'several workflows, hand-off: each status sent after the hand-off delivered and run once by the status-only workflow',
			replies.length > 0 &&
				failedStatus.length === 0 &&
				statusCounts.length > 0 &&
				statusCounts.every(exactlyOnce),
			`${replies.length} replies, ${statusKeys.length} statuses delivered ${JSON.stringify(reasons(failedStatus))}; ${statusCounts.map(countsLine).join('; ')}`,
		);

		// Published again (§6, §7): it joins the new holder (no webhook change) and its catch-up
		// recovers, once, what the others got while it was unpublished.
		const requestsAgain = sandbox.state().requests.length;
		const again = await client.activateAndSettle(holder.workflow.id);
		const againAt = Date.now();
		await waitFor(
			`every inbound message in ${holder.key} after it came back`,
			() => covers(topology, holder, before, inboundIds) || undefined,
			(interval + 60) * 1000,
			2000,
		).catch(() => undefined);
		const backAfterS = (Date.now() - againAt) / 1000;
		await sleep(8000);
		await settle(topology, holder.workflow.id, 0, 60_000, 3000);
		const [back] = countSeveral(
			topology,
			[holder],
			before,
			() => inboundIds,
			() => 'published again',
			sent,
			{ at: stream.midwayAt, label: 'deactivation' },
		);
		const changesAgain = webhookChanges(requestsAgain);
		const webhookNow = sandbox.state().webhook.url;
		logCounts([back]);
		ctx.numbers.severalWorkflowsHandOff = {
			holder: holder.key,
			newHolder: newHolder?.key ?? newUrl,
			activationErrors,
			registrationsBefore: registeredBefore,
			inbound: {
				sent: count,
				delivered: count - failedInbound.length,
				failed: reasons(failedInbound),
			},
			deactivatedAfterMessages: stream.midwayAfter,
			deactivationMs: deactivatedInMs,
			webhookChanges: changes,
			handOffRequestMs,
			windowMs,
			failingMs,
			failedDeliveries: {
				count: failedDeliveries.length,
				by: failedBy,
				msFromLastOld: failedOffsets,
				beganMsFromLastOldBegan: failedBeganOffsets,
				lastOldDurationMs: lastOld?.duration_ms ?? null,
			},
			statuses: {
				replies: replies.length,
				delivered: statusKeys.length,
				failed: reasons(failedStatus),
			},
			coveredAfterS,
			perWorkflow,
			publishedAgain: {
				ok: again.ok,
				webhookChanges: changesAgain,
				webhookStayed: webhookNow === newUrl,
				coveredAfterS: backAfterS,
				counts: back,
			},
		};
		record(
			ctx,
			'several workflows, hand-off: the old holder published again joins the new holder (the webhook stays) and recovers what it missed, each message once',
			again.ok && changesAgain.length === 0 && webhookNow === newUrl && exactlyOnce(back),
			`${again.ok ? 'published' : `not published: ${again.message}`}; webhook changes ${changesAgain.join(', ') || 'none'}, webhook ${webhookNow === newUrl ? 'stayed' : `now ${webhookNow}`}; ${countsLine(back)} (all in ${backAfterS.toFixed(0)} s), ${back.ranNothing} copies that ran nothing`,
		);
	} finally {
		const last = leaveLast ?? workflows[0];
		await deactivateSeveral(
			ctx,
			workflows.filter((w) => w !== last),
			last,
		);
	}
}

// ---- several workflows: main's save of the holder's copy right after a join (T6) --------------

/** The heal check's catch-up interval: the node's minimum, so that the holder recovers soon. */
const HEAL_INTERVAL_S = 10;
/** A save main makes at most this long after a member's join was seen in Postgres is "right after" it. */
const RIGHT_AFTER_MS = 3000;
/** docs/several-workflows.md §13 T6: the member still in the holder's table, or back within this long. */
const HEAL_LIMIT_MS = 30_000;
const HEAL_HOLDER: ExampleKey = 'syncToCrm';

interface TableSample {
	at: number;
	/** The members (keys) the holder's table in Postgres holds. */
	present: string[];
	/** The holder trigger's catch-up state as stored: only main writes it (on each emit). */
	catchUp: string;
}

/**
 * The holder's static data in Postgres every `everyMs` until stopped: which members its table
 * holds, and its trigger's catch-up state. Only main changes that state (before each emit, from
 * its activation-time copy; a processor saving the copy it loaded writes back a state already
 * stored), so a state not seen before is a save main made (saves between two reads show as one).
 */
function watchHolderTable(
	topology: Topology,
	holder: SeveralWorkflow,
	members: SeveralWorkflow[],
	everyMs = 250,
) {
	const samples: TableSample[] = [];
	let watching = true;
	const done = (async () => {
		while (watching) {
			try {
				const text = storedStaticData(topology, holder.workflow.id);
				let catchUp = '';
				try {
					const parsed = JSON.parse(text) as Record<string, { catchUp?: unknown } | undefined>;
					catchUp = JSON.stringify(parsed[`node:${holder.trigger}`]?.catchUp ?? null);
				} catch {
					catchUp = '';
				}
				samples.push({
					at: Date.now(),
					present: members.filter((m) => text.includes(m.url)).map((m) => m.key),
					catchUp,
				});
			} catch (error) {
				log(`  reading the holder's static data failed: ${errorText(error)}`);
			}
			await sleep(everyMs);
		}
	})();
	return {
		samples,
		stop: async () => {
			watching = false;
			await done;
		},
		/** The samples whose catch-up state had not been seen before: saves main made. */
		mainSaves: () => {
			const seen = new Set<string>();
			return samples.filter((sample, i) => {
				const fresh = !seen.has(sample.catchUp);
				seen.add(sample.catchUp);
				return i > 0 && fresh && sample.catchUp !== '';
			});
		},
	};
}

/** One member's history in the holder's table: first seen, then each time it was missing. */
function memberHistory(
	samples: TableSample[],
	mainSaves: TableSample[],
	key: string,
	from: number,
	/** When its activation settled: its join (answered once a processor saved it) was stored by then. */
	activatedAt: number | undefined,
) {
	const firstIndex = samples.findIndex((s) => s.present.includes(key));
	const first = samples[firstIndex];
	const joinSeenAt = first?.at;
	// Who wrote the table where it first showed: a save that changed the catch-up state is main's
	// (its registry put the member in: §4); one that kept it, a processor's (the join itself).
	const firstSeenIn =
		firstIndex < 0
			? null
			: firstIndex > 0 && samples[firstIndex - 1].catchUp === first.catchUp
				? 'a processor'
				: 'main';
	const absences: Array<{ from: number; to?: number }> = [];
	if (joinSeenAt !== undefined)
		for (const s of samples.filter((x) => x.at > joinSeenAt)) {
			const open = absences[absences.length - 1];
			const here = s.present.includes(key);
			if (!here && (!open || open.to !== undefined)) absences.push({ from: s.at });
			else if (here && open && open.to === undefined) open.to = s.at;
		}
	const savesAfter = joinSeenAt === undefined ? [] : mainSaves.filter((s) => s.at > joinSeenAt);
	const afterActivation =
		activatedAt === undefined ? undefined : mainSaves.find((s) => s.at > activatedAt);
	const firstSave = savesAfter[0];
	const last = samples[samples.length - 1];
	const rel = (at: number) => Number(((at - from) / 1000).toFixed(2));
	return {
		key,
		joinSeenS: joinSeenAt === undefined ? null : rel(joinSeenAt),
		activatedS: activatedAt === undefined ? null : rel(activatedAt),
		firstMainSaveAfterActivationMs:
			afterActivation && activatedAt !== undefined ? afterActivation.at - activatedAt : null,
		inFirstMainSaveAfterActivation: afterActivation ? afterActivation.present.includes(key) : null,
		joinSeenAt,
		firstSeenIn,
		firstMainSaveAfterMs: firstSave && joinSeenAt !== undefined ? firstSave.at - joinSeenAt : null,
		inFirstMainSave: firstSave ? firstSave.present.includes(key) : null,
		mainSavesWithin: savesAfter.filter(
			(s) => joinSeenAt !== undefined && s.at - joinSeenAt <= RIGHT_AFTER_MS,
		).length,
		mainSavesAfter: savesAfter.length,
		mainSavesWithout: savesAfter.filter((s) => !s.present.includes(key)).length,
		absences: absences.map((a) => ({
			fromS: rel(a.from),
			toS: a.to === undefined ? null : rel(a.to),
			ms: a.to === undefined ? null : a.to - a.from,
		})),
		presentAtEnd: last?.present.includes(key) ?? false,
	};
}

/**
 * T6 in queue mode (docs/several-workflows.md §1, §4, §13): main saves the holder's static data
 * whole, from the copy it loaded at activation, on each emit of the holder's trigger; a member's
 * join is saved by the webhook processor that took it. Constructed for real: the CRM-like example
 * activated alone holds the webhook (catch-up every 10 s); `failing` inbound messages from one
 * contact fail for it (haproxy has no processor in rotation: 503); once its catch-up, on main,
 * starts emitting them (one after another: one contact), the other two are activated at once:
 * their joins go through haproxy to a processor, which saves them into the holder's static data,
 * while main goes on saving its copy at each emit. The member table is read from Postgres every
 * 250 ms. Meanwhile `count` inbound messages and a status for each of `statuses` replies are
 * sent. Each member must stay in the table or be back within 30 s (the heartbeat), and run every
 * event it selects that was sent after its join was seen in Postgres exactly once (live or
 * recovered); the holder every inbound message once (the failed ones recovered).
 */
export async function checkSeveralWorkflowsHeal(
	ctx: QueueContext,
	failing = Number(process.env.QUEUE_HEAL_FAILING ?? 40),
	count = Number(process.env.QUEUE_HEAL_COUNT ?? 60),
	statuses = Number(process.env.QUEUE_HEAL_STATUSES ?? 30),
	concurrency = 4,
): Promise<void> {
	log(
		`== several workflows, heal (issue 26, T6): ${HEAL_HOLDER} alone holds the webhook; ${failing} inbound from one contact fail for it (haproxy without processors), its catch-up (every ${HEAL_INTERVAL_S} s) emits them from main one by one, and meanwhile the other two join through a processor; ${count} inbound at concurrency ${concurrency} and ${statuses} statuses beside; the member table read from Postgres every 250 ms`,
	);
	const { topology } = ctx;
	const { sandbox, balancer } = topology;
	const workflows = await createSeveralWorkflows(ctx, 'Queue, heal', HEAL_INTERVAL_S);
	const holderOne = workflows.find((w) => w.key === HEAL_HOLDER);
	if (!holderOne) throw new Error(`no ${HEAL_HOLDER} workflow`);
	const members = workflows.filter((w) => w !== holderOne);
	const before = new Map(
		workflows.map((w) => [
			w.workflow.id,
			new Set(storedExecutions(topology, w.workflow.id, w.trigger).map((e) => e.id)),
		]),
	);
	const run = String(Math.floor(Math.random() * 1e6)).padStart(6, '0');
	const failingContact = `+1996${run}0000`;
	const contact = (i: number) => `+1996${run}${String(i + 1).padStart(4, '0')}`;
	const servers = topology.webhooks.map((_, i) => `w${i + 1}`);
	let watcher: ReturnType<typeof watchHolderTable> | undefined;
	let failedPhase: SentInbound[] = [];
	let replies: Array<{ id: string }> = [];
	let failedAt = 0;
	let chainAt = 0;
	let activateAt = 0;
	let streaming:
		| Promise<[Awaited<ReturnType<typeof streamInbound>>, Awaited<ReturnType<typeof sendStatuses>>]>
		| undefined;
	try {
		const activation = await activateSeveral(ctx, workflows, HEAL_HOLDER, async (holder) => {
			await waitFor(
				"main to save the holder's sealed secret",
				() => storedStaticData(topology, holder.workflow.id).includes('sealedSecret'),
				30_000,
				50,
			);
			watcher = watchHolderTable(topology, holder, members);
			// No processor in rotation: haproxy answers the service 503, a failure in its log.
			for (const server of servers) await balancer.setServer(server, false);
			try {
				failedPhase = (
					await streamInbound(ctx, {
						count: failing,
						concurrency: 1,
						message: (i) => ({
							from: failingContact,
							contact_name: 'Heal',
							text: `heal, failing ${i}`,
						}),
					})
				).sent;
			} finally {
				for (const server of servers) await balancer.setServer(server, true);
			}
			failedAt = Date.now();
			// Replies to that contact through the API (they send no event): the statuses sent below are theirs.
			for (let i = 0; i < statuses; i++) {
				const response = await fetch(`${sandbox.baseUrl}/v1/messages/reply`, {
					method: 'POST',
					headers: {
						authorization: `Bearer ${sandbox.keys.all}`,
						'content-type': 'application/json',
					},
					body: JSON.stringify({ to: failingContact, text: `heal ${i}`, from: ctx.number }),
					signal: AbortSignal.timeout(30_000),
				});
				if (!response.ok)
					throw new Error(`reply ${i}: ${response.status} ${await response.text()}`);
				replies.push((await response.json()) as { id: string });
			}
			log(
				`  ${failedPhase.filter((s) => !s.delivered).length}/${failing} inbound failed for the holder alone ${JSON.stringify(reasons(failedPhase.filter((s) => !s.delivered)))}; ${replies.length} replies sent; waiting for its catch-up to emit them (they settle 15 s first)`,
			);
			// The first recovered execution: main's catch-up has begun emitting (and saving its copy).
			await waitFor(
				"the holder's catch-up to emit the first failed message",
				() => executionCount(topology, holder.workflow.id) > 0 || undefined,
				(15 + HEAL_INTERVAL_S + 30) * 1000,
				200,
			);
			chainAt = Date.now();
			activateAt = chainAt;
			log(
				`  the holder's catch-up emits (first recovered execution ${((chainAt - failedAt) / 1000).toFixed(1)} s after the failures); activating the two members now, inbound and statuses beside`,
			);
			streaming = Promise.all([
				streamInbound(ctx, {
					count,
					concurrency,
					pauseMs: 100,
					message: (i) => ({ from: contact(i), contact_name: `Heal ${i}`, text: `heal ${i}` }),
				}),
				sendStatuses(ctx, replies, 1, 200),
			]);
		});
		const { holder, activationErrors, registrations, membersStored, membersAfterMs, activatedAt } =
			activation;
		if (holder !== holderOne)
			throw new Error(`${HEAL_HOLDER} was activated first, but ${holder.key} holds the webhook`);
		if (!streaming || !watcher) throw new Error('the heal phase did not start');
		const [stream, statusSent] = await streaming;
		const streamEnd = Date.now();
		const { sent } = stream;
		const failedInbound = sent.filter((s) => !s.delivered);
		log(
			`  ${count} inbound in ${((stream.end - stream.t0) / 1000).toFixed(1)} s: ${count - failedInbound.length} delivered 2xx, ${failedInbound.length} failed ${JSON.stringify(reasons(failedInbound))}; statuses ${statusSent.filter((s) => s.delivered).length}/${statusSent.length} delivered ${JSON.stringify(reasons(statusSent.filter((s) => !s.delivered)))}; members in the holder's static data at once: ${membersStored.join(', ') || 'none'} (${membersAfterMs} ms after the activations settled)`,
		);

		// What each workflow must run (exactly once) and what it may run (at most once): a member,
		// what was sent after its join was seen in Postgres; what was sent before, it may have or not.
		const joinSeen = new Map(
			members.map((m) => [m.key, watcher?.samples.find((s) => s.present.includes(m.key))?.at]),
		);
		const failedIds = failedPhase.map((s) => s.waId).filter((id): id is string => Boolean(id));
		const inboundIds = sent.map((s) => s.waId).filter((id): id is string => Boolean(id));
		const afterJoin = (w: SeveralWorkflow, began: number) => {
			const at = joinSeen.get(w.key);
			return at === undefined || began >= at;
		};
		const mustOf = (w: SeveralWorkflow): string[] => {
			if (w === holder) return [...failedIds, ...inboundIds];
			if (w.selects === 'message.inbound')
				return sent.filter((s) => s.waId && afterJoin(w, s.began)).map((s) => s.waId as string);
			return statusSent.filter((s) => s.delivered && afterJoin(w, s.began)).map((s) => s.key);
		};
		const mayOf = (w: SeveralWorkflow): string[] => {
			if (w === holder) return [];
			if (w.selects === 'message.inbound')
				return sent.filter((s) => s.waId && !afterJoin(w, s.began)).map((s) => s.waId as string);
			// A status the service could not deliver is not recoverable: nobody must run it.
			return statusSent.filter((s) => !s.delivered || !afterJoin(w, s.began)).map((s) => s.key);
		};
		await waitFor(
			'every event in each workflow that must run it',
			() => workflows.every((w) => covers(topology, w, before, mustOf(w))) || undefined,
			(HEAL_INTERVAL_S + 45) * 1000,
			2000,
		).catch(() => undefined);
		// Late copies (a retried forward, a recovery) would show up in these seconds.
		await sleep(5000);
		for (const w of workflows) await settle(topology, w.workflow.id, 0, 60_000, 3000);
		await watcher.stop();
		const coveredAfterS = (Date.now() - streamEnd) / 1000;

		const saves = watcher.mainSaves();
		const histories = members.map((m) =>
			memberHistory(watcher?.samples ?? [], saves, m.key, activateAt, activatedAt.get(m.key)),
		);
		const recoveredByHolder = storedExecutions(topology, holder.workflow.id, holder.trigger).filter(
			(e) => e.recovered.some(Boolean),
		);
		const starts = recoveredByHolder
			.map((e) => e.startedAtMs)
			.filter((ms): ms is number => ms !== undefined);
		const rel = (at: number) => ((at - activateAt) / 1000).toFixed(1);
		const savesDuring = saves.filter((s) => s.at >= chainAt);
		log(
			`  the holder's catch-up: ${recoveredByHolder.length} recovered executions${starts.length ? `, started ${rel(Math.min(...starts))} to ${rel(Math.max(...starts))} s from the members' activation` : ''}; saves of the holder's copy by main seen in Postgres from the first emit on: ${savesDuring.length} (at ${savesDuring
				.map(
					(s) =>
						`${rel(s.at)}${
							s.present.length < members.length
								? ` without ${members
										.filter((m) => !s.present.includes(m.key))
										.map((m) => m.key)
										.join('+')}`
								: ''
						}`,
				)
				.join(', ')} s)`,
		);
		for (const h of histories)
			log(
				`  ${h.key}: activation settled ${h.activatedS ?? '?'} s after it began (its join saved by a processor by then), first save by main after that ${h.firstMainSaveAfterActivationMs ?? '-'} ms later (member ${h.inFirstMainSaveAfterActivation ? 'in it' : 'NOT in it'}); join seen in Postgres ${h.joinSeenS ?? 'never'} s (first in a save by ${h.firstSeenIn ?? '-'}); first save by main after it ${h.firstMainSaveAfterMs ?? '-'} ms later (member ${h.inFirstMainSave ? 'in it' : 'NOT in it'}), ${h.mainSavesWithin} within ${RIGHT_AFTER_MS} ms, ${h.mainSavesAfter} in all, ${h.mainSavesWithout} without it; absent from the table ${h.absences.length ? h.absences.map((a) => `${a.fromS} to ${a.toS ?? 'the end'} s (${a.ms ?? '-'} ms)`).join(', ') : 'never'}; at the end ${h.presentAtEnd ? 'there' : 'MISSING'}`,
			);

		const perWorkflow = countSeveral(
			topology,
			workflows,
			before,
			mustOf,
			(w) => (w === holder ? 'holder' : 'member'),
			[...failedPhase, ...sent],
			{ at: activateAt, label: "members' activation" },
			mayOf,
		);
		logCounts(perWorkflow);
		log(`  every event counted ${coveredAfterS.toFixed(0)} s after the stream`);

		const failedAll = failedPhase.filter((s) => !s.delivered).length === failing;
		const rightAfter = histories.every(
			(h) =>
				h.firstMainSaveAfterActivationMs !== null &&
				h.firstMainSaveAfterActivationMs <= RIGHT_AFTER_MS,
		);
		const healed = histories.every(
			(h) =>
				h.joinSeenAt !== undefined &&
				h.presentAtEnd &&
				h.absences.every((a) => a.ms !== null && a.ms <= HEAL_LIMIT_MS),
		);
		ctx.numbers.severalWorkflowsHeal = {
			holder: holder.key,
			activationErrors,
			registrations: registrations(),
			failing: { sent: failing, failed: reasons(failedPhase.filter((s) => !s.delivered)) },
			firstRecoveredAfterFailuresS: (chainAt - failedAt) / 1000,
			recoveredByHolder: recoveredByHolder.length,
			mainSavesFromFirstEmit: savesDuring.map((s) => ({
				s: Number(rel(s.at)),
				members: s.present,
			})),
			members: histories.map(({ joinSeenAt: _at, ...h }) => h),
			inbound: {
				sent: count,
				delivered: count - failedInbound.length,
				failed: reasons(failedInbound),
			},
			statuses: {
				sent: statusSent.length,
				delivered: statusSent.filter((s) => s.delivered).length,
				failed: reasons(statusSent.filter((s) => !s.delivered)),
			},
			coveredAfterS,
			perWorkflow,
		};
		const historyLine = histories
			.map(
				(h) =>
					`${h.key}: activation settled ${h.activatedS ?? '?'} s, first save by main ${h.firstMainSaveAfterActivationMs ?? '-'} ms after (${h.inFirstMainSaveAfterActivation ? 'with' : 'without'} it); join seen ${h.joinSeenS ?? 'never'} s, first save by main ${h.firstMainSaveAfterMs ?? '-'} ms after (${h.inFirstMainSave ? 'with' : 'without'} it); absent ${h.absences.length ? h.absences.map((a) => `${a.fromS}–${a.toS ?? 'end'} s`).join(', ') : 'never'}`,
			)
			.join('; ');
		record(
			ctx,
			`several workflows, heal: constructed: ${failing} inbound failed for the holder alone, its catch-up emitted them from main, and main saved the holder's copy within ${RIGHT_AFTER_MS} ms after each member's activation settled (its join saved by a webhook processor by then) (0 activation errors, one POST /v1/console/webhook)`,
			failedAll &&
				recoveredByHolder.length > 0 &&
				rightAfter &&
				activationErrors.length === 0 &&
				registrations() === 1,
			`${failedPhase.filter((s) => !s.delivered).length}/${failing} failed; ${recoveredByHolder.length} recovered by the holder; activation errors ${activationErrors.length}${activationErrors.length ? ` (${activationErrors.join(' | ')})` : ''}; POST /v1/console/webhook ${registrations()}; ${historyLine}${rightAfter ? '' : `; main's save did not land within ${RIGHT_AFTER_MS} ms after every join: T6 not constructed this run`}`,
		);
		record(
			ctx,
			"several workflows, heal: each member still in the holder's static data in Postgres after main's saves, or back within 30 s, and there at the end",
			healed,
			historyLine,
		);
		record(
			ctx,
			'several workflows, heal: each workflow ran each event it selects exactly once: the holder every inbound message (the failed ones recovered), each member every event sent after its join was seen in Postgres (0 lost)',
			perWorkflow.every(exactlyOnce),
			`${failing} failed for the holder, ${count} inbound (${failedInbound.length} failed), ${statusSent.filter((s) => s.delivered).length} statuses delivered; ${perWorkflow.map(countsLine).join('; ')}`,
		);
	} finally {
		await watcher?.stop();
		await deactivateSeveral(ctx, members, holderOne);
	}
}

export const CHECKS: Record<string, (ctx: QueueContext) => Promise<void>> = {
	activation: checkActivation,
	load: checkLoad,
	'same-delivery': checkSameDelivery,
	'auto-reply': checkAutoReply,
	conversation: checkConversation,
	media: checkMedia,
	'kill-worker': checkKillWorker,
	'kill-webhook': checkKillWebhook,
	'several-workflows': checkSeveralWorkflows,
	'several-workflows-hand-off': checkSeveralWorkflowsHandOff,
	'several-workflows-heal': checkSeveralWorkflowsHeal,
};
