/** Catch-up: missed stored messages run once, oldest first (docs/reliability.md); leader main. */
import type { IDataObject, IRun, ITriggerFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { executionKey } from '../../shared/credentialKeys';
import { MESSAGE_EVENTS, readHistory, type MessageEvent } from '../../shared/history';
import type { NextPage } from '../../shared/pagination';
import { serviceLine } from '../../shared/redact';
import { byAge, isAfter, type Watermark } from '../../shared/watermark';
import { filterReason, type NodeSettings } from '../receiving/accept';
import { acceptedAnyHere, wasAcceptedHere } from '../receiving/acceptedHere';
import type { TriggerStaticData } from '../registration/signingSecrets';
import { routeEvent, stampedReceived } from '../routing/route';
import { UNNAMED_LOG_NOTICE, readWebhookLog, type WebhookAttempt } from './deliveryLog';
import { lateReason, type WebhookState } from './webhookWatch';
import {
	SETTLE_MS,
	decideRecoveries,
	recoveredItem,
	savedWatermarks,
	type CatchUpState,
	type Recovery,
	type Stored,
	type Unread,
	type Watermarks,
} from './recoveries';

export const LOG_PREFIX = 'Business Messaging Trigger (catch-up)';
/** How long a contact's next recovered message waits for the previous execution to end. */
const CONVERSATION_WAIT_MS = 30_000;
export const OPERATION = 'Trigger → Catch Up Missed Messages';

function conversationOf(recovery: Recovery): string {
	const { record } = recovery;
	return `${String(record.number ?? '')}:${String(recovery.event === 'message.echo' ? record.to : record.from)}`;
}

/** What one activation has decided and not yet put behind the saved watermark, kept across runs. */
interface Schedule {
	/** Per event: the watermark after everything decided (the next run starts here). */
	planned: Watermarks;
	/** Decided, not emitted yet, oldest first. */
	waiting: Recovery[];
	/** Emitted while an older one was waiting: saved (`emitted`) so a restart does not rerun it. */
	emittedAhead: Recovery[];
	/** Emitted in an earlier process beyond its saved watermark. */
	emittedBefore: Set<string>;
	chains: Map<string, Promise<void>>;
	/** Per event: where a bounded history read stopped, and what it read (kept until decided). */
	resume: Partial<Record<MessageEvent, { next: NextPage; records: IDataObject[] }>>;
}

const schedules = new WeakMap<CatchUpState, Schedule>();

function scheduleOf(state: CatchUpState): Schedule {
	const schedule = schedules.get(state) ?? {
		planned: { ...state.watermarks },
		waiting: [],
		emittedAhead: [],
		emittedBefore: new Set(state.emitted ?? []),
		chains: new Map(),
		resume: {},
	};
	schedules.set(state, schedule);
	return schedule;
}

/** What n8n may save: watermarks before every waiting recovery, and what was emitted beyond. */
function settle(state: CatchUpState, schedule: Schedule): void {
	state.watermarks = savedWatermarks(schedule.planned, schedule.waiting);
	schedule.emittedAhead = schedule.emittedAhead.filter((recovery) =>
		isAfter(recovery.record, state.watermarks[recovery.event] as Watermark),
	);
	const emitted = [
		...schedule.emittedAhead.map((recovery) => String(recovery.record.wa_message_id)),
		...schedule.emittedBefore,
	];
	if (emitted.length > 0) state.emitted = emitted;
	else delete state.emitted;
}

/** Received when stored (never after now): Combine does not wait a whole quiet period again. */
function recoveredAtMs(record: IDataObject): number {
	const storedMs = Date.parse(String(record.created_at));
	return Number.isNaN(storedMs) ? Date.now() : Math.min(storedMs, Date.now());
}

/** One execution per recovered message: a contact's in order, contacts side by side. */
function schedule(this: ITriggerFunctions, recoveries: Recovery[], run: CatchUpRun): void {
	const { state, persist, settings } = run;
	const plan = scheduleOf(state);
	const stamp = settings.options.combine !== undefined;
	/** Decided, not emitted: the saved watermark may pass it. */
	const passOver = (recovery: Recovery) => {
		plan.waiting = plan.waiting.filter((waiting) => waiting !== recovery);
		settle(state, plan);
		persist();
	};
	const runOne = async (recovery: Recovery) => {
		// A start window's message waits for a sign of who serves the URL, on a chain of its own.
		const { window } = recovery;
		while (window && window.servedHere === undefined && !run.isClosed()) {
			if (acceptedAnyHere(run.scope)) window.servedHere = true;
			else await sleep(1000);
		}
		// Closed: not emitted; the saved watermark stays before it.
		if (run.isClosed()) return;
		// Served elsewhere (queue mode's processors): it ran there.
		if (window?.servedHere === false) return passOver(recovery);
		const id = String(recovery.record.wa_message_id ?? recovery.record.id);
		try {
			const recovered = recoveredItem(recovery);
			const item = {
				...recovered,
				json: stampedReceived(recovered.json, stamp ? recoveredAtMs(recovery.record) : undefined),
			};
			const { layout, options } = settings;
			const routed = await routeEvent.call(this, item, recovery.event, layout, options.handOver);
			plan.waiting = plan.waiting.filter((waiting) => waiting !== recovery);
			plan.emittedAhead.push(recovery);
			settle(state, plan);
			// Before emit(): n8n saves the static data as it starts the execution.
			persist();
			if (routed.kind !== 'start') return;
			const done = this.helpers.createDeferredPromise<IRun>();
			try {
				// n8n 2.x refuses a second execution with this key (1.x ignores it): no rerun on restart.
				this.emit(routed.workflowData, undefined, done, executionKey(run.scope, id));
				await Promise.race([done.promise.catch(() => undefined), sleep(CONVERSATION_WAIT_MS)]);
			} finally {
				routed.afterEmit?.();
			}
		} catch (error) {
			// The message is passed over (named here), the conversation goes on.
			passOver(recovery);
			this.logger.error(
				`${LOG_PREFIX}: message ${serviceLine(id)} could not be recovered: ${(error as Error).message}`,
			);
		}
	};
	for (const recovery of recoveries) {
		// Its contact's later messages do not wait behind it for the sign (up to 30 s): they may run first.
		const key = `${recovery.window ? 'window:' : ''}${conversationOf(recovery)}`;
		const tail = (plan.chains.get(key) ?? Promise.resolve()).then(() => runOne(recovery));
		plan.chains.set(key, tail);
		void tail.then(() => {
			if (plan.chains.get(key) === tail) plan.chains.delete(key);
		});
	}
}

export interface CatchUpRun {
	/** The node's key in this process's per-node maps (nodeKeyOf), built once per activation. */
	scope: string;
	state: CatchUpState;
	settings: NodeSettings;
	isClosed: () => boolean;
	/** Copies the state into the static data n8n saves (with the next emit). */
	persist: () => void;
	/** The webhook watch's last finding ('ours' without the watch). */
	webhook: WebhookState;
	/** The webhook log was found not to name messages (said once, until it does again). */
	logUnnamed?: boolean;
	/** A start's window (start.ts): unaccepted messages in it are missed where `servedHere`. */
	recovery?: { fromMs: number; untilMs: number; done: () => void; servedHere?: boolean };
}

/**
 * How long a start window waits for a sign of who serves the URL before it takes this process: its
 * messages wait meanwhile; taken wrongly (queue mode, no delivery since), run-once drops the copies.
 */
const SERVED_EVIDENCE_MS = 30_000;

/**
 * Does this process serve the URL? Yes once its webhook() accepted a message; else no when a message
 * after the window was delivered (queue mode: a processor took it). Undefined: no sign yet.
 */
function servedHere(
	run: CatchUpRun,
	stored: Stored,
	attempts: Map<string, WebhookAttempt>,
	nowMs: number,
): boolean | undefined {
	const { recovery } = run;
	if (!recovery || recovery.servedHere !== undefined) return recovery?.servedHere;
	if (acceptedAnyHere(run.scope)) return (recovery.servedHere = true);
	let elsewhere = false;
	for (const { records } of stored)
		for (const record of records) {
			const atMs = Date.parse(String(record.created_at));
			const id = String(record.wa_message_id);
			if (atMs > recovery.untilMs && attempts.get(id)?.success === true) elsewhere = true;
		}
	if (elsewhere) return (recovery.servedHere = false);
	if (nowMs > recovery.untilMs + SERVED_EVIDENCE_MS) recovery.servedHere = true;
	return recovery.servedHere;
}

export const TAKEN_BEFORE_RESTART = 'answered by n8n around its restart, not seen run since';

/** After a start: taken unrun by the stopped process, or answered unseen by the starting one. */
function inStartWindow(run: CatchUpRun, record: IDataObject): boolean {
	const { recovery } = run;
	const atMs = Date.parse(String(record.created_at));
	return recovery !== undefined && atMs >= recovery.fromMs && atMs <= recovery.untilMs;
}

/** One catch-up run: read, decide, schedule, move the watermarks. Returns once scheduled. */
export async function catchUpOnce(this: ITriggerFunctions, run: CatchUpRun): Promise<number> {
	const { state, settings, persist } = run;
	const options = settings.options.catchUp;
	const events = MESSAGE_EVENTS.filter((event) => settings.events.includes(event));
	if (events.length === 0) return 0;
	const nowMs = Date.now();
	const plan = scheduleOf(state);

	// A backlog beyond the read bound: oldest part first, over several runs (same doc, "Without holes").
	const stored: Stored = [];
	const unread: Unread = {};
	let cut = false;
	for (const event of events) {
		const resume = plan.resume[event];
		const read = await readHistory
			.call(this, event, plan.planned[event], OPERATION, resume?.next)
			.catch((error: unknown) => {
				// A position the service no longer takes: start again from the newest.
				delete plan.resume[event];
				throw error;
			});
		if (!read.complete && read.next === undefined)
			this.logger.error(
				`${LOG_PREFIX}: the service's list of ${event} messages gives no way to its next page; missed messages older than the ${read.records.length} read are not recovered`,
			);
		if (!read.complete && read.next !== undefined) {
			plan.resume[event] = { next: read.next, records: read.records };
			cut = true;
			continue;
		}
		const records = [...(resume?.records ?? []), ...read.records];
		const newest = resume?.records[0];
		if (newest && (!unread.after || byAge(newest, unread.after) < 0)) unread.after = newest;
		stored.push({ event, records });
	}
	if (cut) {
		this.logger.warn(
			`${LOG_PREFIX}: more stored messages since the last run than one read takes; the oldest are read first, over the next runs`,
		);
		return 0;
	}
	// Emitted before a restart after the saved watermark: forgotten once the watermark passes them.
	for (const { event, records } of stored) {
		for (const record of records) {
			if (!plan.emittedBefore.delete(String(record.wa_message_id))) continue;
			const before = state.watermarks[event] as Watermark;
			if (isAfter(record, before)) plan.emittedAhead.push({ event, record, reason: null, before });
		}
	}
	if (!unread.after) plan.emittedBefore.clear();
	unread.emitted = new Set(plan.emittedAhead.map((r) => String(r.record.wa_message_id)));

	const keep = (record: IDataObject, event: MessageEvent) =>
		filterReason(event, record, settings) === undefined;
	const decide = (attempts: Map<string, WebhookAttempt>, max: number) =>
		decideRecoveries(stored, plan.planned, attempts, nowMs - SETTLE_MS, max, keep, unread);
	// The oldest message it may recover, were none delivered: the webhook log is read back to it.
	const [oldest] = decide(new Map(), 1).recover;
	let attempts = new Map<string, WebhookAttempt>();
	let noneMissed = false;
	if (oldest !== undefined) {
		const sinceMs = Date.parse(String(oldest.record.created_at)) - 1000;
		// Only deliveries to this trigger's own URL mean it received the message.
		const { webhookUrl } = this.getWorkflowStaticData('node') as TriggerStaticData;
		const ourUrl = typeof webhookUrl === 'string' ? webhookUrl : undefined;
		const log = await readWebhookLog.call(this, sinceMs, ourUrl, OPERATION);
		// Log names no message (CONTRACT L2): none recovered, all counted delivered (README, Limits).
		noneMissed = !log.identified;
		if (noneMissed && run.logUnnamed !== true)
			this.logger.error(`${LOG_PREFIX}: ${UNNAMED_LOG_NOTICE}`);
		run.logUnnamed = noneMissed;
		if (!noneMissed && !log.complete) {
			unread.logFromMs = log.reachedMs;
			this.logger.warn(
				`${LOG_PREFIX}: the webhook log could not be read back to the oldest missed message; older messages wait`,
			);
		}
		attempts = log.attempts;
	}
	// A message this process's webhook() accepted runs, even when n8n answered after the service gave up.
	const served = servedHere(run, stored, attempts, nowMs);
	for (const { event, records } of stored) {
		for (const record of records) {
			const id = String(record.wa_message_id);
			// Taken by this process: it runs here. Else, logged delivered in the window of a start: missed.
			const acceptedHere = wasAcceptedHere(run.scope, id, nowMs);
			const logged = noneMissed || attempts.get(id)?.success === true;
			const inWindow = !acceptedHere && logged && inStartWindow(run, record) && keep(record, event);
			// Who serves the URL not known yet: decided missed, emitted once it is known (schedule()).
			if (inWindow && served !== false)
				attempts.set(id, { success: false, reason: TAKEN_BEFORE_RESTART });
			else if (noneMissed || acceptedHere) attempts.set(id, { success: true, reason: null });
		}
	}
	const decision = decide(attempts, Math.max(options.maxRecovered - plan.waiting.length, 0));
	plan.planned = decision.watermarks;
	for (const { event, records } of stored) {
		if (
			plan.resume[event] &&
			records.every((record) => !isAfter(record, plan.planned[event] as Watermark))
		)
			delete plan.resume[event];
	}
	if (decision.left > 0) {
		this.logger.info(
			`${LOG_PREFIX}: recovered ${decision.recover.length}; ${decision.left} more missed message(s) wait for the next run (Max Recovered per Run is ${options.maxRecovered})`,
		);
	}
	for (const recovery of decision.recover) {
		const late = lateReason(run.webhook, Date.parse(String(recovery.record.created_at)));
		if (late) recovery.late = late;
		if (served === undefined && recovery.reason === TAKEN_BEFORE_RESTART)
			recovery.window = run.recovery;
	}
	plan.waiting.push(...decision.recover);
	settle(state, plan);
	// Everything stored up to this start decided and emitted: a crash from now on needs no window before it.
	const { recovery } = run;
	const passed = events.every((event) => {
		const watermark = state.watermarks[event];
		return !watermark || Date.parse(watermark.createdAt) > (recovery?.untilMs ?? 0);
	});
	const allDecided =
		decision.left === 0 && plan.waiting.length === 0 && unread.logFromMs === undefined;
	// Served elsewhere: the window does not apply. Known served here: until everything in it is decided.
	if (
		recovery &&
		(served === false ||
			(served && (passed || (nowMs - SETTLE_MS > recovery.untilMs && allDecided))))
	) {
		recovery.done();
		run.recovery = undefined;
		delete state.windowFromMs;
	}
	persist();
	schedule.call(this, decision.recover, run);
	if (decision.recover.length > 0) {
		this.logger.info(
			`${LOG_PREFIX}: recovering ${decision.recover.length} message(s) the workflow had not received`,
		);
	}
	return decision.recover.length;
}
