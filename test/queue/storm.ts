/**
 * kill-storm (issue 49, goal 2, queue half; not in CI: minutes): n8n killed at any moment in queue
 * mode. Two accounts, two workflows active at once: the stream workflow of kill-webhook (trigger,
 * catch-up every 10 s → no-op) on the topology's sandbox, the conversation example (Reply and Wait
 * for Answer) on a second sandbox. While a steady stream of inbound messages and conversations
 * (greeting, then the answer once asked) go through the balancer, one role drawn from a seeded
 * PRNG (main, webhook processor 1/2, worker 1/2) gets SIGKILL every 15-25 s and is started again
 * (same user folder and port). Then the catch-up's time, then the count from Postgres and the
 * sandboxes. Allowed exception: what an execution n8n records crashed held (`crashed`, or a
 * killed worker's job failed by Bull's stalled check: `error`, "failed to be processed too many
 * times"). Never allowed: a message run twice, a conversation confirmed twice.
 *
 *   scripts/queue.sh --only kill-storm [--seed N]   (or STORM_SEED=N: the same schedule again)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { CREDENTIAL_NAME } from '../real-n8n/examples';
import { launchSandbox, SandboxControl } from '../real-n8n/sandbox';
import { errorText, log, sleep, waitFor } from '../real-n8n/util';
import { CREDENTIAL_TYPE } from '../support/constants';
import { prng } from '../crash/plan';
import { answerText, CONFIRMATION, greetingText, QUESTION, repliesByContact } from '../crash/tally';
import {
	conversationWorkflow,
	ensureActive,
	loadWorkflowFor,
	record,
	streamInbound,
	type QueueContext,
} from './checks';
import {
	executionStatuses,
	settle,
	storedExecutions,
	wasStarted,
	whereRan,
	type StoredExecution,
} from './lib/executions';
import type { N8nRole } from './lib/topology';

const INTERVAL_S = 10;
const MESSAGES = 400;
const CONTACTS = 200;
const CONCURRENCY = 4;
const CONVERSATIONS = 30;
const KILLS = 8;
const ROLES = ['main', 'webhook1', 'webhook2', 'worker1', 'worker2'] as const;
type RoleName = (typeof ROLES)[number];

/** n8n recorded the execution crashed: `crashed`, or a killed worker's job failed by Bull's stalled check. */
const STALLED = /failed to be processed too many times/;
const crashedByN8n = (e: StoredExecution) =>
	e.status === 'crashed' || (e.status === 'error' && STALLED.test(e.error ?? ''));

interface Talk {
	contact: string;
	greetAtMs: number;
	answerDelayMs: number;
	greeting?: string;
	greetingDelivery?: string;
	answer?: string;
	answerWaId?: string;
	answerDelivery?: string;
}

function seedOf(ctx: QueueContext): number {
	const given = ctx.options.seed ?? (process.env.STORM_SEED ? Number(process.env.STORM_SEED) : NaN);
	return Number.isFinite(given) ? given >>> 0 : Math.floor(Math.random() * 2 ** 32);
}

export async function checkKillStorm(ctx: QueueContext): Promise<void> {
	const seed = seedOf(ctx);
	const random = prng(seed);
	const between = (lo: number, hi: number) => lo + (hi - lo) * random();
	// The schedule, drawn once: every role once, then any; 15-25 s apart from a first kill at 10-15 s.
	const roles: RoleName[] = [...ROLES];
	while (roles.length < KILLS) roles.push(ROLES[Math.floor(random() * ROLES.length)]);
	for (let i = roles.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[roles[i], roles[j]] = [roles[j], roles[i]];
	}
	const killAtMs: number[] = [];
	for (let i = 0; i < KILLS; i++)
		killAtMs.push((i ? killAtMs[i - 1] + between(15, 25) * 1000 : between(10, 15) * 1000) | 0);
	const streamMs = killAtMs[KILLS - 1] + 10_000;
	const talks: Talk[] = Array.from({ length: CONVERSATIONS }, (_, i) => ({
		contact: `+33620000${100 + i}`,
		greetAtMs: between(5_000, streamMs - 30_000) | 0,
		answerDelayMs: between(500, 4_000) | 0,
	}));
	log(
		`== kill-storm: seed ${seed} (again: --seed ${seed} or STORM_SEED=${seed}); ${MESSAGES} inbound from ${CONTACTS} contacts over ${(streamMs / 1000).toFixed(0)} s and ${CONVERSATIONS} conversations; SIGKILL ${roles.map((r, i) => `${r}@${(killAtMs[i] / 1000).toFixed(1)}s`).join(', ')}; catch-up every ${INTERVAL_S} s`,
	);

	const { topology } = ctx;
	// n8n's logs from here on (the folder may hold earlier runs'; execution ids start again at 1).
	const logDir = topology.options.outDir;
	const logFiles = readdirSync(logDir).filter((f) => /^n8n-.*\.log$/.test(f));
	const logFrom = new Map(logFiles.map((f) => [f, statSync(join(logDir, f)).size]));
	const streamCtx = { ...ctx, options: { ...ctx.options, catchUpInterval: INTERVAL_S } };
	const stream = await ensureActive(ctx, 'storm-stream', () => {
		const workflow = loadWorkflowFor(streamCtx, INTERVAL_S);
		workflow.name = 'Queue storm: stream (trigger with catch-up → no-op)';
		return workflow;
	});
	// The second account: its own sandbox, credential and conversation workflow.
	const talkSandbox = await launchSandbox(0, 0, topology.options.webhookTimeoutMs);
	const talkControl = new SandboxControl(talkSandbox.baseUrl);
	const talkNumber = talkSandbox.numbers[0].phone_number_id;
	const talkCtx: QueueContext = {
		...streamCtx,
		active: undefined,
		credential: await topology.client.createCredential(
			`${CREDENTIAL_NAME} (storm)`,
			CREDENTIAL_TYPE,
			{ apiKey: talkSandbox.keys.all, baseUrl: talkSandbox.baseUrl, webhookSecret: '' },
		),
	};
	const talk = await ensureActive(
		talkCtx,
		'storm-conversation',
		() => conversationWorkflow(talkCtx),
		talkSandbox,
	);

	// Before and after each kill: the items of executions not finished (a stalled job's stored data
	// is replaced by its error, which then no longer names the message it held).
	const held = new Map<string, string[]>();
	const remember = () => {
		let inFlight = 0;
		for (const [w, trigger] of [
			[stream.workflow.id, stream.trigger],
			[talk.workflow.id, talk.trigger],
		])
			for (const e of storedExecutions(topology, w, trigger, ['new', 'running'])) {
				inFlight++;
				if (e.waIds.length) held.set(e.id, e.waIds);
			}
		return inFlight;
	};
	const roleOf = (name: RoleName): N8nRole | undefined =>
		name === 'main'
			? topology.main
			: name.startsWith('webhook')
				? topology.webhooks[Number(name.slice(-1)) - 1]
				: topology.workers[Number(name.slice(-1)) - 1];

	const t0 = Date.now();
	const at = (ms: number) => sleep(Math.max(0, t0 + ms - Date.now()));
	const kills: Array<{ role: RoleName; atS: number; downS: number; inFlight: number }> = [];
	let killFailed: unknown;
	const killer = (async () => {
		for (let i = 0; i < KILLS; i++) {
			await at(killAtMs[i]);
			const role = roleOf(roles[i]);
			if (!role) throw new Error(`${roles[i]} is not running`);
			const inFlight = remember();
			const killedAt = Date.now();
			topology.kill(role);
			log(
				`  SIGKILL ${roles[i]} (pid ${role.process.child.pid}) ${((killedAt - t0) / 1000).toFixed(1)} s in, ${inFlight} executions new or running`,
			);
			await sleep(1000);
			remember();
			await topology.restart(role);
			const downS = (Date.now() - killedAt) / 1000;
			kills.push({ role: roles[i], atS: (killedAt - t0) / 1000, downS, inFlight });
			log(`  ${roles[i]} back after ${downS.toFixed(1)} s`);
		}
	})().catch((error: unknown) => (killFailed = error));

	let replies = { at: 0, to: new Map<string, string[]>() };
	const repliesTo = (contact: string) => {
		if (Date.now() - replies.at > 400)
			replies = { at: Date.now(), to: repliesByContact(talkSandbox.state()) };
		return replies.to.get(contact) ?? [];
	};
	const write = async (contact: string, text: string) => {
		try {
			const out = await talkControl.inbound({
				from: contact,
				contact_name: 'Ada',
				number: talkNumber,
				text,
			});
			const { delivered, status, reason } = out.delivery;
			return {
				waId: out.record.wa_message_id,
				delivery: delivered ? 'ok' : (reason ?? String(status)),
			};
		} catch (error) {
			return { waId: undefined, delivery: `not sent: ${errorText(error)}` };
		}
	};
	const conversations = Promise.all(
		talks.map(async (c) => {
			await at(c.greetAtMs);
			const greeting = await write(c.contact, greetingText(c.contact));
			[c.greeting, c.greetingDelivery] = [greeting.waId, greeting.delivery];
			const asked = await waitFor(
				`the question to ${c.contact}`,
				() => repliesTo(c.contact).some((t) => QUESTION.test(t)),
				90_000,
				500,
			).catch(() => false);
			if (!asked) return;
			await sleep(c.answerDelayMs);
			c.answer = answerText(c.contact);
			const answer = await write(c.contact, c.answer);
			[c.answerWaId, c.answerDelivery] = [answer.waId, answer.delivery];
		}),
	);
	const sent = await streamInbound(ctx, {
		count: MESSAGES,
		concurrency: CONCURRENCY,
		pauseMs: Math.max(0, (streamMs * CONCURRENCY) / MESSAGES - 150),
		message: (i) => ({
			from: `+1666${String(1_000_000 + (i % CONTACTS))}`,
			contact_name: `Storm ${i % CONTACTS}`,
			text: `storm ${i}`,
		}),
	});
	await Promise.all([killer, conversations]);
	if (killFailed) throw killFailed;
	const trafficEnd = Date.now();
	const failed = sent.sent.filter((s) => !s.delivered).length;
	log(
		`  traffic done in ${((trafficEnd - t0) / 1000).toFixed(0)} s (stream ${((sent.end - t0) / 1000).toFixed(0)} s, ${failed} of ${MESSAGES} deliveries failed); waiting out the catch-up (${INTERVAL_S + 30} s) and the executions to settle`,
	);

	// The catch-up's whole time (a copy of a delivery that failed may come late: waiting only until
	// everything ran could miss it), then every execution settled.
	const ids = sent.sent.map((s) => s.waId).filter((id): id is string => Boolean(id));
	const answered = talks.filter((c) => c.answer);
	const read = (w: typeof stream) =>
		storedExecutions(topology, w.workflow.id, w.trigger).map((e) =>
			e.waIds.length || !held.has(e.id) ? e : { ...e, waIds: held.get(e.id) as string[] },
		);
	await at(trafficEnd - t0 + (INTERVAL_S + 30) * 1000);
	await settle(topology, stream.workflow.id, 0, 45_000, 5000);
	await settle(topology, talk.workflow.id, 0, 30_000, 5000);
	const streamRuns = read(stream);
	const talkRuns = read(talk);

	// Stream: per message, the executions holding it that a worker started.
	const started = streamRuns.filter(wasStarted);
	const runs = (id: string) => started.filter((e) => e.waIds.includes(id)).length;
	const holders = (id: string, list: StoredExecution[]) => list.filter((e) => e.waIds.includes(id));
	const never = ids.filter((id) => runs(id) === 0);
	const twice = ids.filter((id) => runs(id) > 1);
	const neverCrashed = never.filter((id) => holders(id, streamRuns).some(crashedByN8n));
	const neverNotStarted = never.filter(
		(id) => !neverCrashed.includes(id) && holders(id, streamRuns).length > 0,
	);
	const recovered = new Set(streamRuns.flatMap((e) => e.waIds.filter((_, i) => e.recovered[i])));

	// Executions stored and never started: their message run by another, or named in a log line.
	const logs = logFiles
		.map((f) => readFileSync(join(logDir, f)).subarray(logFrom.get(f)).toString('utf8'))
		.join('\n');
	const notStarted = [...streamRuns, ...talkRuns].filter((e) => !wasStarted(e));
	const ranElsewhere = (e: StoredExecution) =>
		e.waIds.length > 0 &&
		e.waIds.every((id) =>
			[...streamRuns, ...talkRuns].some((o) => o !== e && wasStarted(o) && o.waIds.includes(id)),
		);
	const namedInLog = (e: StoredExecution) =>
		new RegExp(`execution[^0-9\\n]{0,24}${e.id}(?!\\d)`, 'i').test(logs);
	const silent = notStarted.filter((e) => !ranElsewhere(e) && !namedInLog(e));

	// Conversations: asked, confirmed (the contact's own answer), and the executions holding them.
	const keys = ['askedOnce', 'askedTwice', 'askedNever', 'confirmedOnce', 'confirmedTwice'];
	const count = Object.fromEntries([...keys, 'confirmedNever'].map((k) => [k, 0]));
	const talkProblems: string[] = [];
	let talkExcused = 0;
	for (const c of talks) {
		const texts = repliesTo(c.contact);
		const asked = texts.filter((t) => QUESTION.test(t)).length;
		const confirmations = texts.map((t) => CONFIRMATION.exec(t)?.[1]).filter(Boolean);
		const confirmed = confirmations.filter((o) => o === c.answer).length;
		count[asked === 0 ? 'askedNever' : asked === 1 ? 'askedOnce' : 'askedTwice']++;
		count[
			confirmed === 0 ? 'confirmedNever' : confirmed === 1 ? 'confirmedOnce' : 'confirmedTwice'
		]++;
		if (asked === 1 && confirmed === 1 && confirmations.length === 1) continue;
		const its = talkRuns.filter((e) =>
			e.waIds.some((id) => id === c.greeting || id === c.answerWaId),
		);
		// Never excused: two confirmations, or asked again after the confirmation (the answer ran twice).
		const doubled = confirmations.length > 1 || (confirmed === 1 && asked > 1);
		const excused = !doubled && its.some(crashedByN8n);
		if (excused) talkExcused++;
		talkProblems.push(
			`    ${c.contact}: asked ${asked}, confirmed ${confirmed}${excused ? ' (excused: crashed)' : ''}; greeting ${c.greeting} ${c.greetingDelivery ?? 'not sent'}, answer ${c.answerWaId ?? '-'} ${c.answerDelivery ?? (c.answer ? 'pending' : 'not sent')}; executions ${its.map((e) => `#${e.id} ${e.status} ${e.mode}${wasStarted(e) ? '' : ' never started'}`).join('; ') || 'none'}`,
		);
	}

	const killsPerRole = Object.fromEntries(
		ROLES.map((r) => [r, kills.filter((k) => k.role === r).length]),
	);
	const figures = {
		seed,
		kills: kills.map((k) => ({ ...k, atS: +k.atS.toFixed(1), downS: +k.downS.toFixed(1) })),
		killsPerRole,
		stream: {
			messages: MESSAGES,
			sent: ids.length,
			deliveryFailed: failed,
			once: ids.length - never.length - twice.length,
			never: never.length,
			neverExcusedCrashed: neverCrashed.length,
			neverOnlyNeverStarted: neverNotStarted.length,
			neverNoExecution: never.length - neverCrashed.length - neverNotStarted.length,
			twice: twice.length,
			twiceOneCopyCrashed: twice.filter((id) => holders(id, started).some(crashedByN8n)).length,
			recoveredByCatchUp: recovered.size,
			executions: executionStatuses(topology, stream.workflow.id),
		},
		neverStartedExecutions: {
			total: notStarted.length,
			crashed: notStarted.filter(crashedByN8n).length,
			messageRanElsewhere: notStarted.filter(ranElsewhere).length,
			namedInLog: notStarted.filter(namedInLog).length,
			silent: silent.map((e) => `#${e.id} ${e.status} ${e.mode}`),
		},
		conversations: {
			count: CONVERSATIONS,
			answered: answered.length,
			...count,
			notClean: talkProblems.length,
			excusedCrashed: talkExcused,
			executions: executionStatuses(topology, talk.workflow.id),
		},
		trafficS: (trafficEnd - t0) / 1000,
		durationS: (Date.now() - t0) / 1000,
	};
	ctx.numbers.killStorm = figures;
	log(
		`  stream: ${figures.stream.once} once, ${never.length} never (${neverCrashed.length} held by a crashed execution, ${neverNotStarted.length} by executions never started only, ${figures.stream.neverNoExecution} by none), ${twice.length} twice; ${recovered.size} recovered by the catch-up; executions ${JSON.stringify(figures.stream.executions)}`,
	);
	log(
		`  executions never started: ${notStarted.length} (${figures.neverStartedExecutions.crashed} crashed, message run by another ${figures.neverStartedExecutions.messageRanElsewhere}, named in a log ${figures.neverStartedExecutions.namedInLog}, silent ${silent.length})`,
	);
	log(
		`  conversations: asked once/twice/never ${count.askedOnce}/${count.askedTwice}/${count.askedNever}, confirmed once/twice/never ${count.confirmedOnce}/${count.confirmedTwice}/${count.confirmedNever}; ${talkProblems.length} not clean, ${talkExcused} of them excused (crashed); executions ${JSON.stringify(figures.conversations.executions)}`,
	);
	for (const line of whereRan([...never, ...twice], streamRuns)) log(line);
	for (const line of talkProblems) log(line);
	for (const e of silent)
		log(
			`    silent: execution #${e.id} ${e.status} never started, holds ${e.waIds.join(', ') || 'nothing known'}`,
		);

	await topology.client
		.deactivate(talk.workflow.id)
		.catch((error) => log(`  deactivating: ${errorText(error)}`));
	await talkSandbox.close();
	record(
		ctx,
		`kill-storm (seed ${seed}): ${kills.length} SIGKILLs (main, processors, workers) under traffic: no message run twice, no conversation confirmed twice, every message not run once and every conversation not clean held by an execution n8n recorded crashed`,
		twice.length === 0 &&
			count.confirmedTwice === 0 &&
			never.length === neverCrashed.length &&
			talkProblems.length === talkExcused &&
			kills.length >= KILLS &&
			ROLES.every((r) => killsPerRole[r] > 0),
		`stream ${figures.stream.once}/${never.length}/${twice.length} once/never/twice (of the never: ${neverCrashed.length} held by a crashed execution), conversations asked ${count.askedOnce}/${count.askedTwice}/${count.askedNever}, confirmed ${count.confirmedOnce}/${count.confirmedTwice}/${count.confirmedNever} once/twice/never (${talkExcused} of ${talkProblems.length} not clean excused); never started ${notStarted.length} (silent ${silent.length}); kills ${JSON.stringify(killsPerRole)}`,
	);
}
