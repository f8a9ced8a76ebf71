/**
 * Answers that resumed a wait and started no execution of the trigger's workflow (regular mode,
 * where the trigger's catch-up runs in the process that took the answer). Such a request starts
 * no execution, so n8n saves what it wrote in the static data (docs/n8n-internals.md): the
 * answer's id kept there tells the catch-up, after a restart too, that the answer ran, in place
 * of an execution recorded in n8n's deduplication store. Every copy of the static data this
 * process brings up to date (keepWaitingEntriesCurrent) carries every id it recorded, so a save
 * from an older copy does not drop one.
 */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from '../json';

export const ANSWERED_KEY = 'businessMessagingAnswered';
/** As long as a catch-up may still bring the message (it reads back at most a day after a restart). */
export const ANSWERED_KEEP_MS = 24 * 3_600_000;
/** Ids kept in static data at most (oldest dropped): a bound on what every save carries. */
const MAX_STATIC_ANSWERED = 500;
const MAX_MEMORY_ANSWERED = 10_000;

/** Per workflow (the trigger's): message id → until when it is kept. */
const memory = new Map<string, Map<string, number>>();

function storedAnswered(staticData: IDataObject | undefined): IDataObject {
	const stored = staticData?.[ANSWERED_KEY];
	return isPlainObject(stored) ? stored : {};
}

/** This process took the answer `messageId` for workflow `home` without an execution. */
export function recordAnswered(home: string, messageId: string, nowMs = Date.now()): void {
	let ids = memory.get(home);
	if (!ids) memory.set(home, (ids = new Map()));
	if (ids.size >= MAX_MEMORY_ANSWERED)
		for (const [id, untilMs] of ids)
			if (untilMs <= nowMs || ids.size >= MAX_MEMORY_ANSWERED) ids.delete(id);
	ids.delete(messageId);
	ids.set(messageId, nowMs + ANSWERED_KEEP_MS);
}

/** Whether the answer `messageId` already ran without an execution (this process, or a saved copy). */
export function wasAnswered(
	staticData: IDataObject | undefined,
	home: string | undefined,
	messageId: string,
	nowMs = Date.now(),
): boolean {
	const inMemory = home === undefined ? undefined : memory.get(home)?.get(messageId);
	if (inMemory !== undefined && inMemory > nowMs) return true;
	const stored = storedAnswered(staticData)[messageId];
	return typeof stored === 'number' && stored > nowMs;
}

/**
 * Writes into this copy of workflow `home`'s static data every id it should hold: the live ones
 * it holds and those this process recorded. Assigned only when something changed.
 */
export function keepAnsweredCurrent(
	staticData: IDataObject,
	home: string | undefined,
	nowMs = Date.now(),
): void {
	const stored = storedAnswered(staticData);
	const merged: Record<string, number> = {};
	for (const [id, untilMs] of Object.entries(stored))
		if (typeof untilMs === 'number' && untilMs > nowMs) merged[id] = untilMs;
	for (const [id, untilMs] of (home !== undefined && memory.get(home)) || [])
		if (untilMs > nowMs) merged[id] = Math.max(untilMs, merged[id] ?? 0);
	const bounded = Object.fromEntries(
		Object.entries(merged)
			.sort((a, b) => a[1] - b[1])
			.slice(-MAX_STATIC_ANSWERED),
	);
	const had = staticData[ANSWERED_KEY] !== undefined;
	if (Object.keys(bounded).length === 0) {
		if (had) delete staticData[ANSWERED_KEY];
		return;
	}
	if (JSON.stringify(bounded) !== JSON.stringify(stored)) staticData[ANSWERED_KEY] = bounded;
}
