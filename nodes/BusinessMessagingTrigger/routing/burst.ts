/** Combine: a burst, cut from stored messages alone, runs in its newest message's execution. */
import {
	sleep,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
} from 'n8n-workflow';

import { isPlainObject, shortened } from '../../shared/json';
import { LIST_SHAPES, readPages } from '../../shared/pagination';
import { recordCreatedAt, withCanonicalFields } from '../../shared/storedRecord';
import { byAge } from '../../shared/watermark';
import type { CombineSettings } from '../options';
import { RECEIVED_AT_FIELD, RESUMED_FIELD } from './route';

/** After quiet: time to store and list a message stamped in it, and for a processor's clock lag. */
export const STORE_GRACE_MS = 1_000;
/** A contact who has not paused for this many pages of messages is cut where the read stops. */
const MAX_PAGES = 10;
const OPERATION = "Trigger → Combine a Contact's Messages";
const HISTORY_PATH = '/v1/messages/inbound';

export interface StoredMessage {
	id: string;
	atMs: number;
	record: IDataObject;
}

export type BurstDecision =
	| { kind: 'emit'; burst: StoredMessage[] }
	/** A newer message of the same burst emits it. */
	| { kind: 'later' }
	| { kind: 'missing' };

/** Pure: bursts, oldest first; one rule for execute()'s stored and trigger()'s held messages. */
export function cutBursts<M extends { atMs: number; record?: IDataObject }>(
	messages: M[],
	settings: CombineSettings,
): M[][] {
	const bursts: M[][] = [];
	let current: M[] = [];
	const sorted = [...messages].sort(
		(a, b) => a.atMs - b.atMs || (a.record && b.record ? byAge(a.record, b.record) : 0),
	);
	for (const message of sorted) {
		const previous = current[current.length - 1];
		if (
			previous &&
			(message.atMs - previous.atMs >= settings.quietMs ||
				message.atMs - current[0].atMs >= settings.longestMs)
		) {
			bursts.push(current);
			current = [];
		}
		current.push(message);
	}
	if (current.length > 0) bursts.push(current);
	return bursts;
}

/** Pure: the burst `id` ends, or 'later'. `upToId`: the burst so far (a test event never waits). */
export function decideBurst(
	messages: StoredMessage[],
	id: string,
	settings: CombineSettings,
	upToId = false,
): BurstDecision {
	const burst = cutBursts(messages, settings).find((one) => one.some((m) => m.id === id));
	if (!burst) return { kind: 'missing' };
	const index = burst.findIndex((message) => message.id === id);
	if (upToId) return { kind: 'emit', burst: burst.slice(0, index + 1) };
	return index === burst.length - 1 ? { kind: 'emit', burst } : { kind: 'later' };
}

/** Pure: what an agent reads as its prompt; a message without text shows its type. */
export function joinedText(records: IDataObject[]): string {
	return records
		.map((record) =>
			typeof record.text === 'string' && record.text.trim() !== ''
				? record.text
				: `[${String(record.type ?? 'message')}]`,
		)
		.join('\n');
}

export function burstItem(
	newest: INodeExecutionData,
	records: IDataObject[],
	problem?: string,
): INodeExecutionData {
	const data = isPlainObject(newest.json.data) ? newest.json.data : {};
	return {
		...newest,
		json: {
			...newest.json,
			contact: data.from,
			number: data.number,
			text: joinedText(records),
			messages: records,
			...(problem !== undefined && { combine_problem: problem }),
		},
	};
}

/** Pure: the wait left before the deciding read: quiet + grace after `received_at`, or all. */
export function quietWaitMs(receivedAt: unknown, settings: CombineSettings, nowMs: number): number {
	const full = settings.quietMs + STORE_GRACE_MS;
	const atMs = typeof receivedAt === 'string' ? Date.parse(receivedAt) : Number.NaN;
	if (!Number.isFinite(atMs)) return full;
	return Math.min(full, Math.max(0, atMs + full - nowMs));
}

type Combinable = { contact: string; number: string; id: string };

export const conversationKey = (message: Combinable) => `${message.number}\n${message.contact}`;

/** An inbound message that runs the agent; answers to a wait and hand-over items pass as they are. */
export function combinable(json: IDataObject): Combinable | undefined {
	const data = isPlainObject(json.data) ? json.data : undefined;
	if (json.event !== 'message.inbound' || !data || json[RESUMED_FIELD] !== undefined) return;
	if (isPlainObject(json.hand_over) && json.hand_over.active === true) return;
	const [contact, number, id] = [data.from, data.number, data.wa_message_id];
	if (typeof contact !== 'string' || typeof number !== 'string' || typeof id !== 'string') return;
	return { contact, number, id };
}

/** The stored messages back to where `message`'s chain starts, newest first; filtered here too. */
async function readStored(
	this: IExecuteFunctions,
	message: Combinable,
	settings: CombineSettings,
): Promise<StoredMessage[]> {
	const found: StoredMessage[] = [];
	let chainStartMs: number | undefined;
	let problem: string | undefined;
	await readPages.call(
		this,
		HISTORY_PATH,
		{ contact: message.contact, number: message.number, limit: 100 },
		{ operation: OPERATION, scope: 'messages:read' },
		(page, body) => {
			if (!page) {
				problem = `the answer of GET ${HISTORY_PATH} is not a list this node reads (${LIST_SHAPES}): ${shortened(body)}`;
				return false;
			}
			for (const entry of page.entries) {
				if (!isPlainObject(entry)) continue;
				const createdAt = recordCreatedAt(entry);
				if (createdAt === undefined) {
					problem = `a stored message has no readable time (created_at or created), so bursts cannot be cut: ${shortened(entry)}`;
					return false;
				}
				const atMs = Date.parse(createdAt);
				// Older than a quiet period before the chain: no message of this burst is further back.
				if (chainStartMs !== undefined && atMs <= chainStartMs - settings.quietMs) return false;
				if (entry.from !== message.contact || entry.number !== message.number) continue;
				if (entry.direction !== undefined && entry.direction !== 'in') continue;
				if (typeof entry.wa_message_id !== 'string') continue;
				found.push({ id: entry.wa_message_id, atMs, record: withCanonicalFields(entry) });
				if (entry.wa_message_id === message.id || chainStartMs !== undefined) chainStartMs = atMs;
			}
			return true;
		},
		{ maxPages: MAX_PAGES },
	);
	if (problem !== undefined) throw new Error(problem);
	return found;
}

/** Each combinable message replaced by its burst or by nothing; a failed read emits it alone. */
export async function combineBursts(
	this: IExecuteFunctions,
	outputs: INodeExecutionData[][],
	settings: CombineSettings | undefined,
): Promise<INodeExecutionData[][]> {
	if (!settings || !outputs.some((items) => items.some((item) => combinable(item.json)))) {
		return outputs;
	}
	const testEvent = this.getMode() === 'manual';
	const readOnce = async (message: Combinable) =>
		decideBurst(await readStored.call(this, message, settings), message.id, settings, testEvent);
	// One deciding read per contact and execution (a burst held by trigger() comes as one execution
	// with all its messages, burstHold.ts): a message the first read listed is decided from it.
	const reads = new Map<string, Promise<StoredMessage[]>>();
	const decide = async (message: Combinable): Promise<BurstDecision> => {
		const key = conversationKey(message);
		const earlier = reads.get(key);
		if (earlier) {
			const listed = await earlier.catch(() => undefined);
			if (listed?.some((one) => one.id === message.id))
				return decideBurst(listed, message.id, settings, testEvent);
		}
		const read = readStored.call(this, message, settings);
		if (!earlier) reads.set(key, read);
		return decideBurst(await read, message.id, settings, testEvent);
	};
	const combineOne = async (item: INodeExecutionData): Promise<INodeExecutionData[]> => {
		const message = combinable(item.json);
		if (!message) return [item];
		const alone = (problem: string) => [burstItem(item, [item.json.data as IDataObject], problem)];
		let decision: BurstDecision;
		// A test event emits the burst so far at once; a read after the quiet period decides at once.
		const waitMs = testEvent ? 0 : quietWaitMs(item.json[RECEIVED_AT_FIELD], settings, Date.now());
		try {
			if (waitMs > 0) {
				const waited = sleep(waitMs);
				// A newer message of its burst is listed already: that one emits it, no need to wait here.
				if ((await readOnce(message).catch(() => undefined))?.kind === 'later') return [];
				await waited;
			}
			decision = await decide(message);
		} catch (error) {
			return alone(`the contact's messages could not be read: ${(error as Error).message}`);
		}
		if (decision.kind === 'later') return [];
		if (decision.kind === 'missing') return alone('the message is not in the stored list');
		const records = decision.burst.map((one) => one.record);
		return [burstItem(item, records)];
	};
	return await Promise.all(
		outputs.map(async (items) => (await Promise.all(items.map(combineOne))).flat()),
	);
}
