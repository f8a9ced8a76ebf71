/**
 * A message runs once, whatever brought it to the trigger's execute(): the live delivery, the
 * same delivery replayed to another webhook processor, or the catch-up recovering a message
 * whose delivery the service logged as failed although n8n ran it (answered after the ~8 s).
 *
 * The record is n8n's own deduplication store (the one its Remove Duplicates node uses), open to
 * execute() as `helpers.checkProcessedAndRecord`: in n8n's database, shared by main, workers and
 * webhook processors, kept across restarts. In 2.41.1 (n8n/dist/deduplication/deduplication-helper.js,
 * `DeduplicationHelper.checkProcessedAndRecord` → `handleHashedItems`) it is a read-modify-write of
 * ONE row per workflow and node holding the md5 of every recorded value, with no transaction or
 * lock: two calls at once each write the row they read, and the later one erases what the other
 * added; two first calls both insert, and the second fails on the primary key. Hence:
 * - within a process, calls are made one at a time, and the calls waiting meanwhile are made as one
 *   (group commit: fewer writes, fewer races, less CPU); between two calls a process pauses a few
 *   times as long as the last call took ({@link callGapMs}), so that it is inside a read-modify-write
 *   a small part of the time: every call writes the row, and another process's call that read it
 *   before erases what this one wrote;
 * - a key this execution took is checked again a second later: one that comes back "new" had been
 *   erased by another process's write, and that check records it again, to be checked again later
 *   ({@link VERIFY_AFTER_MS}, jittered so that two processes do not fall in step). A key found in
 *   the row a second or more after it was written stays (every later write keeps what it read), so
 *   its checks end there; each further check multiplies the chance that a key is still missing by
 *   that small part. Measured in queue mode under forced overload, before the pause and these
 *   checks (two, at 1 s and 10 s): 27 of 821 messages answered too late ran twice;
 * - a failed call (the double insert) is retried once;
 * - the row keeps the newest {@link RUN_ONCE_MAX_ENTRIES} keys: that many messages is the window.
 * What it still cannot guarantee: two executions of the same message that read the row at the
 * same moment in two processes both find it new (docs/reliability.md).
 */
import {
	sleep,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
} from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';

/** How many keys n8n's row keeps (oldest dropped first): about 27 bytes each in the row's JSON. */
export const RUN_ONCE_MAX_ENTRIES = 10_000;
/**
 * When a key this process took is checked again (after the call that took it), as long as the
 * checks find it erased: often at first, then until after the catch-up's copy of a message answered
 * too late comes (its interval, 60 s by default, plus the settling time of the delivery).
 */
export const VERIFY_AFTER_MS = [
	1_000, 3_000, 6_000, 10_000, 15_000, 25_000, 40_000, 60_000, 90_000, 120_000,
];
/** The pause between two calls of one process: this many times the last call's duration, within bounds. */
export const CALL_GAP = { factor: 3, minMs: 20, maxMs: 1_000 };

/** How long a process waits after a call of `lastCallMs` before its next one. */
export function callGapMs(lastCallMs: number, gap = CALL_GAP): number {
	return Math.min(gap.maxMs, Math.max(gap.minMs, gap.factor * lastCallMs));
}

/** The modes in which a message may arrive twice: the webhook's and the catch-up's executions. */
const MODES = new Set(['webhook', 'trigger']);

/** Only live deliveries and recovered messages; a test event ('manual') or a retry runs again. */
export function runOnceApplies(mode: string): boolean {
	return MODES.has(mode);
}

/**
 * What makes two items the same message: the platform id of an inbound message or an echo; the
 * service's id and the status of a status event (the same status of the same message twice says
 * nothing new; a later status of it does). Undefined: nothing to key on, the item passes.
 */
export function runOnceKey(json: IDataObject): string | undefined {
	const data = isPlainObject(json.data) ? json.data : undefined;
	if (!data) return undefined;
	const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
	if (json.event === 'message.inbound' || json.event === 'message.echo') {
		const id = text(data.wa_message_id);
		return id && `m:${id}`;
	}
	if (json.event === 'message.status') {
		const id = text(data.id) ?? text(data.wa_message_id);
		const status = text(data.status);
		return id && status && `s:${id}:${status}`;
	}
	return undefined;
}

export interface StoreAnswer {
	new: Array<string | number>;
	processed: Array<string | number>;
}
/** One call of n8n's store with these values (recorded if new). */
export type StoreCall = (values: string[]) => Promise<StoreAnswer>;

export interface Submission {
	keys: string[];
	/** A check of keys this process already took (they stay its own); otherwise a first claim. */
	verify: boolean;
}

/**
 * Which keys each submission of one combined call owns, given the keys the store found new. A key
 * is given once: to a verification (it already owned it), else to the first claim the store found
 * it new for; a second claim of the same key in the batch, or one the store knew, owns nothing.
 */
export function distribute(batch: Submission[], foundNew: ReadonlySet<string>): Array<Set<string>> {
	const given = new Set<string>();
	for (const submission of batch)
		if (submission.verify) for (const key of submission.keys) given.add(key);
	return batch.map((submission) => {
		// A check: the keys the store did not have (erased, now recorded again).
		if (submission.verify) return new Set(submission.keys.filter((key) => foundNew.has(key)));
		const owned = new Set<string>();
		for (const key of submission.keys) {
			if (!foundNew.has(key) || given.has(key)) continue;
			given.add(key);
			owned.add(key);
		}
		return owned;
	});
}

interface Pending extends Submission {
	call: StoreCall;
	resolve: (owned: Set<string>) => void;
	reject: (error: unknown) => void;
}

/** One store row (workflow and node): its calls one at a time, those waiting made as one. */
export class GroupCommit {
	private pending: Pending[] = [];
	private running = false;
	/** When the next call may start (ms since the epoch). */
	private nextCallAtMs = 0;

	constructor(private readonly gap = CALL_GAP) {}

	submit(call: StoreCall, keys: string[], verify: boolean): Promise<Set<string>> {
		return new Promise((resolve, reject) => {
			this.pending.push({ call, keys, verify, resolve, reject });
			if (!this.running) void this.drain();
		});
	}

	private async drain(): Promise<void> {
		this.running = true;
		try {
			while (this.pending.length > 0) {
				const wait = this.nextCallAtMs - Date.now();
				if (wait > 0) await sleep(wait);
				const batch = this.pending.splice(0);
				const startedAtMs = Date.now();
				const keys = [...new Set(batch.flatMap((p) => p.keys))];
				let answer: StoreAnswer;
				try {
					answer = await batch[0].call(keys).catch(async () => await batch[0].call(keys));
				} catch (error) {
					for (const p of batch) p.reject(error);
					continue;
				} finally {
					// Jittered too, so that two processes' calls drift apart instead of falling in step.
					const gapMs = callGapMs(Date.now() - startedAtMs, this.gap) * (0.5 + Math.random());
					this.nextCallAtMs = Date.now() + gapMs;
				}
				const owned = distribute(batch, new Set(answer.new.map(String)));
				batch.forEach((p, index) => p.resolve(owned[index]));
			}
		} finally {
			this.running = false;
		}
	}
}

const rows = new Map<string, GroupCommit>();
/**
 * execute()'s items without those already run: each item's key is claimed in n8n's store; an item
 * whose key another execution took is dropped (logged at debug). Items without a key, modes other
 * than webhook and trigger, an n8n without the store (before 1.70), and a store that fails pass as
 * they are: a message may then run twice, never not at all.
 */
export async function runOnce(
	this: IExecuteFunctions,
	outputs: INodeExecutionData[][],
	verifyAfterMs: number[] = VERIFY_AFTER_MS,
): Promise<INodeExecutionData[][]> {
	const mode = this.getMode();
	const check = this.helpers.checkProcessedAndRecord as
		IExecuteFunctions['helpers']['checkProcessedAndRecord'] | undefined;
	if (!runOnceApplies(mode) || typeof check !== 'function') return outputs;
	const keyed = outputs.map((items) => items.map((item) => runOnceKey(item.json)));
	const keys = [...new Set(keyed.flat().filter((key): key is string => key !== undefined))];
	if (keys.length === 0) return outputs;

	const call: StoreCall = async (values) =>
		await check.call(this.helpers, values, 'node', {
			mode: 'entries',
			maxEntries: RUN_ONCE_MAX_ENTRIES,
		});
	const rowId = `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
	let row = rows.get(rowId);
	if (!row) rows.set(rowId, (row = new GroupCommit()));
	let owned: Set<string>;
	try {
		owned = await row.submit(call, keys, false);
	} catch (error) {
		this.logger.warn(
			`Business Messaging Trigger: n8n's deduplication store failed, the event runs without the run-once check: ${(error as Error).message}`,
		);
		return outputs;
	}
	const mine = keys.filter((key) => owned.has(key));
	if (mine.length > 0) {
		// In the background: the execution goes on; these only repair the record for later copies.
		const claimedAtMs = Date.now();
		void (async () => {
			let unsure = mine;
			for (const ms of verifyAfterMs) {
				if (unsure.length === 0) return;
				// Jittered: two processes that claimed together must not check (and write) together again.
				const at = claimedAtMs + ms * (0.75 + Math.random() / 2);
				await sleep(Math.max(0, at - Date.now()));
				const checked = unsure;
				unsure = await (row as GroupCommit)
					.submit(call, checked, true)
					.then((restored) => checked.filter((key) => restored.has(key)))
					.catch(() => checked);
			}
		})();
	}
	if (mine.length === keys.length) return outputs;
	const dropped = keys.filter((key) => !owned.has(key));
	this.logger.debug(
		`Business Messaging Trigger: already run, not run again: ${dropped.join(', ')}`,
		{ executionId: this.getExecutionId() },
	);
	return outputs.map((items, output) =>
		items.filter((_, index) => {
			const key = keyed[output][index];
			return key === undefined || owned.has(key);
		}),
	);
}
