/**
 * Combine a Contact's Messages in regular mode: webhook() holds a combinable message here and
 * trigger()'s emit starts one execution per burst (docs/ai-agents.md, "How it works"). Held messages
 * ride on every copy of the node's static data n8n saves: a restart emits them again (run-once drops
 * any that ran). Elsewhere (queue mode's processors, a test event) each message starts an execution.
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
import { isPlainObject } from '../../shared/json';
import { keepWaitingEntriesCurrent } from '../../shared/replyAndWait/waitingEntries';
import type { CombineSettings } from '../options';
import { HELD_AGAIN_FIELD, STORE_GRACE_MS, combinable } from './burst';
import { RECEIVED_AT_FIELD } from './route';

/** In the trigger node's static data: messages held or emitted and not yet run. */
export const HELD_KEY = 'combineHeld';
/** Messages one trigger holds at most (held and running); beyond, a message starts its own execution. */
export const MAX_HELD = 500;
/** How long closing waits for an emitted burst's execution to end (n8n's graceful shutdown is 30 s). */
const CLOSE_WAIT_MS = 8_000;
/** After a start, when what a saved copy still held is taken up. */
const RESTORE_AFTER_MS = 1_000;

export interface HeldMessage {
	id: string;
	/** When the trigger received it (`received_at`), on this process's clock. */
	atMs: number;
	/** Its output, and how many the node has. */
	output: number;
	outputs: number;
	json: IDataObject;
}

/**
 * Pure: what to emit of one contact's held messages (oldest first) at `nowMs`: all of them once
 * the newest is a quiet period (and the grace) old; all but the newest once the oldest has waited
 * the Longest Wait (the newest may still grow its burst); else nothing yet, and when to look again.
 */
export function dueNow(
	held: HeldMessage[],
	settings: CombineSettings,
	nowMs: number,
): { emit: HeldMessage[]; nextAtMs?: number } {
	if (held.length === 0) return { emit: [] };
	const quietAtMs = held[held.length - 1].atMs + settings.quietMs + STORE_GRACE_MS;
	if (nowMs >= quietAtMs) return { emit: held };
	const longestAtMs = held[0].atMs + settings.longestMs + STORE_GRACE_MS;
	if (nowMs >= longestAtMs && held.length > 1) return { emit: held.slice(0, -1) };
	return { emit: [], nextAtMs: held.length > 1 ? Math.min(quietAtMs, longestAtMs) : quietAtMs };
}

/** Pure: the execution's input, each message on its output, oldest first. */
export function burstOutputs(held: HeldMessage[]): INodeExecutionData[][] {
	const outputs: INodeExecutionData[][] = Array.from(
		{ length: Math.max(1, ...held.map((m) => m.outputs)) },
		() => [],
	);
	for (const message of held) outputs[message.output]?.push({ json: message.json });
	return outputs;
}

/** Pure: the held messages a saved copy of the static data carries (anything else is passed over). */
export function savedHeld(staticData: IDataObject): HeldMessage[] {
	const saved = staticData[HELD_KEY];
	if (!Array.isArray(saved)) return [];
	return saved.filter(
		(m): m is HeldMessage =>
			isPlainObject(m) &&
			typeof m.id === 'string' &&
			typeof m.atMs === 'number' &&
			typeof m.output === 'number' &&
			typeof m.outputs === 'number' &&
			isPlainObject(m.json),
	);
}

interface Home {
	context: ITriggerFunctions;
	settings: CombineSettings;
	/** Per contact (number and contact): held messages, oldest first. */
	contacts: Map<string, HeldMessage[]>;
	/** Emitted, their execution not ended (kept in the static data until it has). */
	running: Map<string, HeldMessage>;
	/** Each contact's watch, while it holds messages; each emitted burst's end. */
	watches: Map<string, Promise<void>>;
	ends: Set<Promise<void>>;
	closing: boolean;
}

/** One per trigger node whose trigger() runs in this process (Combine on, production). */
const homes = new Map<string, Home>();

const heldCount = (home: Home) =>
	home.running.size + [...home.contacts.values()].reduce((sum, list) => sum + list.length, 0);

/** Writes every message this trigger holds or runs into a copy of the node's static data. */
function writeHeld(staticData: IDataObject, home: Home): void {
	const all = [...home.running.values(), ...[...home.contacts.values()].flat()].sort(
		(a, b) => a.atMs - b.atMs,
	);
	if (all.length > 0) staticData[HELD_KEY] = all;
	else if (staticData[HELD_KEY] !== undefined) delete staticData[HELD_KEY];
}

function emitBurst(home: Home, burst: HeldMessage[]): void {
	const { context } = home;
	for (const message of burst) home.running.set(message.id, message);
	// n8n saves trigger()'s copy as it emits: it carries this burst until its execution has run,
	// and Reply and Wait's waits and answers as this process knows them (as the catch-up's emits do).
	writeHeld(context.getWorkflowStaticData('node'), home);
	keepWaitingEntriesCurrent(context.getWorkflowStaticData('global'), context.getWorkflow().id);
	const done = context.helpers.createDeferredPromise<IRun>();
	context.emit(burstOutputs(burst), undefined, done);
	const end = done.promise.then(
		() => {
			for (const message of burst) home.running.delete(message.id);
		},
		(error: unknown) =>
			// Kept in every copy saved from now on: the next start emits it again.
			context.logger.warn(
				`Business Messaging Trigger: the execution of a combined burst did not run (${(error as Error)?.message}); its ${burst.length} message(s) are emitted again when the trigger next starts`,
			),
	);
	home.ends.add(end);
	void end.finally(() => home.ends.delete(end));
}

/** Emits a contact's held messages as they fall due; ends when the contact holds none. */
async function watch(home: Home, contact: string): Promise<void> {
	for (;;) {
		const held = home.contacts.get(contact) ?? [];
		const { emit, nextAtMs } = dueNow(held, home.settings, Date.now());
		if (emit.length > 0) {
			const left = held.slice(emit.length);
			if (left.length > 0) home.contacts.set(contact, left);
			else home.contacts.delete(contact);
			emitBurst(home, emit);
		}
		if (nextAtMs === undefined && !home.contacts.has(contact)) return;
		await sleep(Math.max(10, (nextAtMs ?? Date.now()) - Date.now()));
	}
}

function hold(home: Home, message: HeldMessage, contact: string): void {
	const held = home.contacts.get(contact) ?? [];
	if (held.some((one) => one.id === message.id)) return;
	held.push(message);
	held.sort((a, b) => a.atMs - b.atMs);
	home.contacts.set(contact, held);
	if (home.watches.has(contact)) return;
	const watching = watch(home, contact).finally(() => home.watches.delete(contact));
	home.watches.set(contact, watching);
}

function contactOf(json: IDataObject): string | undefined {
	const message = combinable(json);
	return message && `${message.number}\n${message.contact}`;
}

/** Whether this webhook request may hold a message for trigger() (past the Late Delivery Cutoff too). */
export function mayHoldHere(this: IWebhookFunctions): boolean {
	if (this.getMode() !== 'webhook') return false;
	const home = homes.get(nodeKeyOf.call(this));
	return home !== undefined && !home.closing && heldCount(home) < MAX_HELD;
}

/**
 * webhook(), production: holds the request's one combinable message for trigger() to emit with
 * its burst, and writes what is held into the static data n8n saves after this request. False
 * (the message starts its own execution) where trigger() does not run here, or it holds MAX_HELD.
 */
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
	const contact = contactOf(item.json);
	if (!message || !contact) return false;
	// A copy of a message running here already: nothing more to run (hold() drops a held one's).
	if (home.running.has(message.id)) return true;
	const stamped = Date.parse(String(item.json[RECEIVED_AT_FIELD]));
	const atMs = Number.isFinite(stamped) ? stamped : Date.now();
	const outputs = workflowData.length;
	hold(home, { id: message.id, atMs, output, outputs, json: item.json }, contact);
	writeHeld(this.getWorkflowStaticData('node'), home);
	return true;
}

/**
 * trigger(), production, Combine on: this process holds the trigger's messages from now on, with
 * those a saved copy of the static data still carries (a restart). The returned close stops
 * holding, emits what is held once due, and waits a little for those executions.
 */
export function holdBurstsHere(
	this: ITriggerFunctions,
	settings: CombineSettings,
): () => Promise<void> {
	const key = nodeKeyOf.call(this);
	const home: Home = {
		context: this,
		settings,
		contacts: new Map(),
		running: new Map(),
		watches: new Map(),
		ends: new Set(),
		closing: false,
	};
	const before = homes.get(key);
	homes.set(key, home);
	// A new activation in this process takes over what the one before still held.
	const carried = before ? [...before.contacts.values()].flat() : [];
	if (before) before.contacts.clear();
	const known = new Set(carried.map((m) => m.id));
	const saved = savedHeld(this.getWorkflowStaticData('node')).filter((m) => !known.has(m.id));
	const take = (messages: HeldMessage[]) => {
		for (const message of messages) {
			const contact = contactOf(message.json);
			if (contact) hold(home, message, contact);
		}
	};
	take(carried);
	// What a restart left: emitted once the activation has settled (run-once drops what ran), marked
	// so that its execution also emits a burst whose newest message a racing save dropped (burst.ts).
	const again = saved.map((m) => ({ ...m, json: { ...m.json, [HELD_AGAIN_FIELD]: true } }));
	if (saved.length > 0) void sleep(RESTORE_AFTER_MS).then(() => !home.closing && take(again));
	return async () => {
		home.closing = true;
		if (homes.get(key) === home) homes.delete(key);
		await Promise.all(home.watches.values());
		await Promise.race([Promise.all(home.ends), sleep(CLOSE_WAIT_MS)]);
	};
}
