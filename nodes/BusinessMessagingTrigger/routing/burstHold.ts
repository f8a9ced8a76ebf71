/**
 * Combine, regular mode: webhook() holds a message in memory, trigger() emits one execution per burst.
 * Saved is one time before which all held ran: after a crash the catch-up recovers from it (docs/reliability.md).
 */
import type {
	IDataObject,
	INodeExecutionData,
	IRun,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { nodeKeyOf } from '../../shared/credentialKeys';
import { keepTriggerCopyCurrent } from '../../shared/replyAndWait/forTrigger';
import type { CombineSettings } from '../options';
import { STORE_GRACE_MS, combinable, conversationKey, cutBursts } from './burst';
import { RECEIVED_AT_FIELD } from './route';

/** In the trigger node's static data: every message held here that was received before it has run. */
export const HELD_SINCE_KEY = 'combineHeldSinceMs';
/** One contact's held messages at most: at the bound, the burst so far is emitted (never dropped). */
export const MAX_HELD_PER_CONTACT = 100;
/** Held and running messages at most: beyond, a contact with none held starts its own execution. */
export const MAX_HELD = 10_000;
/** How long closing waits for an emitted burst's execution to end (n8n's graceful shutdown is 30 s). */
const CLOSE_WAIT_MS = 8_000;

export interface HeldMessage {
	id: string;
	/** When the trigger received it (`received_at`), on this process's clock. */
	atMs: number;
	output: number;
	outputs: number;
	json: IDataObject;
}

/** Pure: the bursts that can grow no more (plus the grace); `nextAtMs`: when the last one is. */
export function dueNow(
	held: HeldMessage[],
	settings: CombineSettings,
	nowMs: number,
): { due: HeldMessage[][]; nextAtMs?: number } {
	const bursts = cutBursts(held, settings);
	const last = bursts[bursts.length - 1];
	if (!last) return { due: [] };
	const newest = last[last.length - 1].atMs;
	const closesAtMs = Math.min(newest + settings.quietMs, last[0].atMs + settings.longestMs);
	const dueAtMs = closesAtMs + STORE_GRACE_MS;
	if (nowMs >= dueAtMs) return { due: bursts };
	return { due: bursts.slice(0, -1), nextAtMs: dueAtMs };
}

export function burstOutputs(held: HeldMessage[]): INodeExecutionData[][] {
	const outputs: INodeExecutionData[][] = Array.from(
		{ length: Math.max(1, ...held.map((m) => m.outputs)) },
		() => [],
	);
	for (const message of held) outputs[message.output]?.push({ json: message.json });
	return outputs;
}

export function heldSince(nodeStaticData: IDataObject): number | undefined {
	const since = nodeStaticData[HELD_SINCE_KEY];
	return typeof since === 'number' && since > 0 ? since : undefined;
}

interface Home {
	context: ITriggerFunctions;
	settings: CombineSettings;
	/** Per contact (number and contact): held messages, oldest first. */
	contacts: Map<string, HeldMessage[]>;
	/** Emitted, their execution not ended. */
	running: Map<string, HeldMessage>;
	/** Each contact's watch, while it holds messages; each emitted burst's end. */
	watches: Map<string, Promise<void>>;
	ends: Set<Promise<void>>;
	/** What a crash before this start may have left (heldSince): kept until the catch-up passed it. */
	recovering?: number;
	closing: boolean;
}

/** One per trigger node whose trigger() runs in this process (Combine on, production). */
const homes = new Map<string, Home>();

const heldCount = (home: Home) =>
	home.running.size + [...home.contacts.values()].reduce((sum, list) => sum + list.length, 0);

/** The time this process may save: before every message it holds or runs, and what it recovers. */
function sinceMs(home: Home): number {
	let since = Math.min(Date.now(), home.recovering ?? Infinity);
	for (const message of home.running.values()) since = Math.min(since, message.atMs);
	for (const held of home.contacts.values()) since = Math.min(since, held[0]?.atMs ?? since);
	return since;
}

function emitBurst(home: Home, burst: HeldMessage[]): void {
	const { context } = home;
	for (const message of burst) home.running.set(message.id, message);
	// n8n saves trigger()'s copy as it emits, with Reply and Wait's waits as this process knows them.
	context.getWorkflowStaticData('node')[HELD_SINCE_KEY] = sinceMs(home);
	keepTriggerCopyCurrent.call(context);
	const done = context.helpers.createDeferredPromise<IRun>();
	context.emit(burstOutputs(burst), undefined, done);
	const end = done.promise.then(
		() => undefined,
		(error: unknown) =>
			// The saved time stays before it: a crash now recovers it; run-once drops it if it ran.
			context.logger.warn(
				`Business Messaging Trigger: the execution of a combined burst did not run (${(error as Error)?.message}); its ${burst.length} message(s) are recovered by the catch-up after a restart`,
			),
	);
	const tracked = end.finally(() => {
		for (const message of burst) home.running.delete(message.id);
		home.ends.delete(tracked);
	});
	home.ends.add(tracked);
}

/** Emits a contact's held messages as their bursts fall due; ends when the contact holds none. */
async function watch(home: Home, contact: string): Promise<void> {
	for (;;) {
		const held = home.contacts.get(contact) ?? [];
		const { due, nextAtMs } = dueNow(held, home.settings, Date.now());
		const emitted = due.flat().length;
		if (emitted > 0) {
			const left = held.slice(emitted);
			if (left.length > 0) home.contacts.set(contact, left);
			else home.contacts.delete(contact);
			for (const burst of due) emitBurst(home, burst);
		}
		if (!home.contacts.has(contact)) return;
		await sleep(Math.max(10, (nextAtMs ?? Date.now()) - Date.now()));
	}
}

function hold(home: Home, message: HeldMessage, contact: string): void {
	const held = home.contacts.get(contact) ?? [];
	if (held.some((one) => one.id === message.id)) return;
	if (held.length >= MAX_HELD_PER_CONTACT) emitBurst(home, held.splice(0));
	held.push(message);
	held.sort((a, b) => a.atMs - b.atMs);
	home.contacts.set(contact, held);
	if (home.watches.has(contact)) return;
	const watching = watch(home, contact).finally(() => home.watches.delete(contact));
	home.watches.set(contact, watching);
}

/** Whether this webhook request may hold a message for trigger() (past the Late Delivery Cutoff too). */
export function mayHoldHere(this: IWebhookFunctions): boolean {
	if (this.getMode() !== 'webhook') return false;
	const home = homes.get(nodeKeyOf.call(this));
	return home !== undefined && !home.closing;
}

/** Holds the request's one combinable message for trigger(); false: it starts its own execution. */
export function holdForBurst(
	this: IWebhookFunctions,
	workflowData: INodeExecutionData[][],
): boolean {
	const home = mayHoldHere.call(this) && homes.get(nodeKeyOf.call(this));
	if (!home) return false;
	const items = workflowData.flatMap((items, output) => items.map((item) => ({ item, output })));
	if (items.length !== 1) return false;
	const [{ item, output }] = items;
	const message = combinable(item.json);
	if (!message) return false;
	const contact = conversationKey(message);
	// A copy of a message running here already: nothing more to run (hold() drops a held one's).
	if (home.running.has(message.id)) return true;
	if (heldCount(home) >= MAX_HELD && !home.contacts.has(contact)) return false;
	const stamped = Date.parse(String(item.json[RECEIVED_AT_FIELD]));
	const atMs = Number.isFinite(stamped) ? stamped : Date.now();
	hold(
		home,
		{ id: message.id, atMs, output, outputs: workflowData.length, json: item.json },
		contact,
	);
	// n8n saves this request's copy before it answers the service: the time must not be after it.
	const saved = this.getWorkflowStaticData('node');
	const since = saved[HELD_SINCE_KEY];
	if (!(typeof since === 'number' && since <= atMs)) saved[HELD_SINCE_KEY] = sinceMs(home);
	return true;
}

/** trigger(): holds from now on; returns a crash's saved time, its done callback and the close. */
export function holdBurstsHere(
	this: ITriggerFunctions,
	/** Undefined: nothing is held (Combine or the catch-up off), and no saved time is kept. */
	settings: CombineSettings | undefined,
): { recoverSinceMs?: number; recovered: () => void; close: () => Promise<void> } | undefined {
	const key = nodeKeyOf.call(this);
	const saved = this.getWorkflowStaticData('node');
	if (!settings) {
		if (HELD_SINCE_KEY in saved) delete saved[HELD_SINCE_KEY];
		return undefined;
	}
	const before = homes.get(key);
	const home: Home = {
		context: this,
		settings,
		contacts: new Map(),
		running: new Map(),
		watches: new Map(),
		ends: new Set(),
		recovering: heldSince(saved),
		closing: false,
	};
	homes.set(key, home);
	// A new activation in this process takes over what the one before still held.
	for (const [contact, held] of before?.contacts ?? [])
		for (const message of held) hold(home, message, contact);
	before?.contacts.clear();
	return {
		recoverSinceMs: home.recovering,
		recovered: () => {
			home.recovering = undefined;
		},
		close: async () => {
			home.closing = true;
			if (homes.get(key) === home) homes.delete(key);
			await Promise.all(home.watches.values());
			await Promise.race([Promise.all(home.ends), sleep(CLOSE_WAIT_MS)]);
		},
	};
}
