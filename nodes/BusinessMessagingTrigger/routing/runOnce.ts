/** Run once through n8n's deduplication store; why so guarded: docs/reliability.md, "Run once". */
import {
	sleep,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
} from 'n8n-workflow';

import { nodeKeyOf } from '../../shared/credentialKeys';
import { isPlainObject } from '../../shared/json';
import { serviceLine } from '../../shared/redact';

/** How many keys n8n's row keeps (oldest dropped first). */
export const RUN_ONCE_MAX_ENTRIES = 10_000;
/** When a taken key is checked again while found erased: until the catch-up's copy would come. */
export const VERIFY_AFTER_MS = [
	1_000, 3_000, 6_000, 10_000, 15_000, 25_000, 40_000, 60_000, 90_000, 120_000,
];
/** Pause between two calls of a process: the last call's duration times `factor`, bounded. */
export const CALL_GAP = { factor: 3, minMs: 20, maxMs: 1_000 };

export function callGapMs(lastCallMs: number, gap = CALL_GAP): number {
	return Math.min(gap.maxMs, Math.max(gap.minMs, gap.factor * lastCallMs));
}

/** A delivery's and the catch-up's executions; a test event ('manual') or a retry runs again. */
export const RUN_ONCE_MODES: ReadonlySet<string> = new Set(['webhook', 'trigger']);

/** An inbound message or echo by platform id; a status by id and status. Undefined: it passes. */
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
export type StoreCall = (values: string[]) => Promise<StoreAnswer>;

export interface Submission {
	keys: string[];
	/** A check of keys this process already took (they stay its own); otherwise a first claim. */
	verify: boolean;
}

/** Which keys each submission of one call owns: a verification's, else the first claim's. */
export function distribute(batch: Submission[], foundNew: ReadonlySet<string>): Array<Set<string>> {
	const given = new Set<string>();
	for (const submission of batch)
		if (submission.verify) for (const key of submission.keys) given.add(key);
	return batch.map((submission) => {
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
					// Jittered, so that two processes' calls drift apart instead of falling in step.
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
/** Drops what another execution ran. No key or store (n8n < 1.70), or a failing one: all pass. */
export async function runOnce(
	this: IExecuteFunctions,
	outputs: INodeExecutionData[][],
	verifyAfterMs: number[] = VERIFY_AFTER_MS,
): Promise<INodeExecutionData[][]> {
	const check = this.helpers.checkProcessedAndRecord as
		IExecuteFunctions['helpers']['checkProcessedAndRecord'] | undefined;
	if (!RUN_ONCE_MODES.has(this.getMode()) || typeof check !== 'function') return outputs;
	const keyed = outputs.map((items) => items.map((item) => runOnceKey(item.json)));
	const keys = [...new Set(keyed.flat().filter((key): key is string => key !== undefined))];
	if (keys.length === 0) return outputs;

	const call: StoreCall = async (values) =>
		await check.call(this.helpers, values, 'node', {
			mode: 'entries',
			maxEntries: RUN_ONCE_MAX_ENTRIES,
		});
	const rowId = nodeKeyOf.call(this);
	const row = rows.get(rowId) ?? new GroupCommit();
	rows.set(rowId, row);
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
		// In the background: these only repair the record for later copies.
		const claimedAtMs = Date.now();
		void (async () => {
			let unsure = mine;
			for (const ms of verifyAfterMs) {
				if (unsure.length === 0) return;
				const at = claimedAtMs + ms * (0.75 + Math.random() / 2);
				await sleep(Math.max(0, at - Date.now()));
				const checked = unsure;
				unsure = await row
					.submit(call, checked, true)
					.then((restored) => checked.filter((key) => restored.has(key)))
					.catch(() => checked);
			}
		})();
	}
	if (mine.length === keys.length) return outputs;
	const dropped = keys.filter((key) => !owned.has(key));
	this.logger.debug(
		`Business Messaging Trigger: already run, not run again: ${serviceLine(dropped.join(', '), { max: 2000 })}`,
		{ executionId: this.getExecutionId() },
	);
	return outputs.map((items, output) =>
		items.filter((_, index) => {
			const key = keyed[output][index];
			return key === undefined || owned.has(key);
		}),
	);
}
