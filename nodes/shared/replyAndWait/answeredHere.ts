/**
 * Answers whose wait is being resumed (answerLater.ts), in the static data n8n saves: **owed** (wait
 * and event) until resumed or run, then **answered** (its id, a day: the catch-up's copy runs
 * nothing). Every copy brought up to date carries both.
 */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from '../json';
import { isWaitingEntry, type WaitingEntry } from './entry';

export const ANSWERED_KEY = 'businessMessagingAnswered';
export const OWED_KEY = 'businessMessagingOwed';
/** Answers owed at once per workflow at most: beyond, an answer is resumed before n8n answers (forTrigger.ts). */
export const MAX_OWED = 100;
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

/** Answers given up here (forgetAnswer), a day each: a copy saved before does not bring one back. */
const givenUp = new Map<string, number>();
const givenUpKey = (home: string, id: string) => `${home}|${id}`;
const isGivenUp = (home: string | undefined, id: string, nowMs: number) =>
	home !== undefined && (givenUp.get(givenUpKey(home, id)) ?? 0) > nowMs;

/** This process took the answer `messageId` for workflow `home` without an execution. */
export function recordAnswered(home: string, messageId: string, nowMs = Date.now()): void {
	givenUp.delete(givenUpKey(home, messageId));
	let ids = memory.get(home);
	if (!ids) memory.set(home, (ids = new Map()));
	if (ids.size >= MAX_MEMORY_ANSWERED)
		for (const [id, untilMs] of ids)
			if (untilMs <= nowMs || ids.size >= MAX_MEMORY_ANSWERED) ids.delete(id);
	ids.delete(messageId);
	ids.set(messageId, nowMs + ANSWERED_KEEP_MS);
}

/** Whether the answer `messageId` ran without an execution (this process, or a saved copy). */
export function wasRecorded(
	staticData: IDataObject | undefined,
	home: string | undefined,
	messageId: string,
	nowMs = Date.now(),
): boolean {
	const inMemory = home === undefined ? undefined : memory.get(home)?.get(messageId);
	if (inMemory !== undefined && inMemory > nowMs) return true;
	return isLive(storedAnswered(staticData)[messageId], nowMs);
}

/** A stored id's end: live, and no further ahead than an id is kept (a far-future one is anyone's forgery). */
const isLive = (untilMs: unknown, nowMs: number): untilMs is number =>
	typeof untilMs === 'number' && untilMs > nowMs && untilMs <= nowMs + ANSWERED_KEEP_MS + 60_000;

/** Whether the answer `messageId` was taken without an execution: ran, or owed (answerLater.ts). */
export function wasAnswered(
	staticData: IDataObject | undefined,
	home: string | undefined,
	messageId: string,
	nowMs = Date.now(),
): boolean {
	if (wasRecorded(staticData, home, messageId, nowMs)) return true;
	return (home !== undefined && isOwedHere(home, messageId)) || messageId in storedOwed(staticData);
}

/** An answer the service was told about before its wait was resumed: the wait, and the event to post. */
export interface OwedAnswer {
	key: string;
	entry: WaitingEntry;
	answer: IDataObject;
	/** HMAC of the three under the trigger's resume key (answerLater.ts): anyone's code can write static data. */
	mac: string;
	/** The trigger node that took it (its id): only that trigger posts it again after a restart. */
	node: string;
}

/** Per workflow: the answers whose resume (or run) is under way in this process. */
const owed = new Map<string, Map<string, OwedAnswer>>();

function isOwedAnswer(value: unknown): value is OwedAnswer {
	return (
		isPlainObject(value) &&
		typeof value.key === 'string' &&
		isWaitingEntry(value.entry) &&
		isPlainObject(value.answer) &&
		typeof value.mac === 'string' &&
		typeof value.node === 'string'
	);
}

/** The owed answers a copy of the static data holds (message id → answer), well-formed ones only. */
export function storedOwed(staticData: IDataObject | undefined): Record<string, OwedAnswer> {
	const stored = staticData?.[OWED_KEY];
	if (!isPlainObject(stored)) return {};
	return Object.fromEntries(
		Object.entries(stored).filter(([, value]) => isOwedAnswer(value)),
	) as Record<string, OwedAnswer>;
}

/** This process told the service about `messageId` and resumes its wait now (or runs it). */
export function recordOwed(home: string, messageId: string, answer: OwedAnswer): void {
	givenUp.delete(givenUpKey(home, messageId));
	let answers = owed.get(home);
	if (!answers) owed.set(home, (answers = new Map()));
	answers.set(messageId, answer);
}

/** How many answers this process owes for workflow `home` now. */
export function owedCount(home: string): number {
	return owed.get(home)?.size ?? 0;
}

/** Whether this process is resuming (or running) the owed answer now. */
export function isOwedHere(home: string, messageId: string): boolean {
	return owed.get(home)?.has(messageId) === true;
}

/** The trigger stopped before the owed answer was resumed: its next start takes it (from the saved copy). */
export function releaseOwed(home: string, messageId: string): void {
	owed.get(home)?.delete(messageId);
}

/** The owed answer was resumed or run (or given up, said): recorded as answered from now on. */
export function settleOwed(home: string, messageId: string, nowMs = Date.now()): void {
	owed.get(home)?.delete(messageId);
	recordAnswered(home, messageId, nowMs);
}

/** The answer could not be run after all: neither owed nor answered here, so a copy of it (the catch-up's) runs. */
export function forgetAnswer(staticData: IDataObject, home: string, messageId: string): void {
	memory.get(home)?.delete(messageId);
	owed.get(home)?.delete(messageId);
	if (givenUp.size >= MAX_MEMORY_ANSWERED) givenUp.delete(givenUp.keys().next().value as string);
	givenUp.set(givenUpKey(home, messageId), Date.now() + ANSWERED_KEEP_MS);
	for (const key of [ANSWERED_KEY, OWED_KEY]) {
		const stored = staticData[key];
		if (!isPlainObject(stored) || !(messageId in stored)) continue;
		const rest = { ...stored };
		delete rest[messageId];
		staticData[key] = rest;
	}
}

/**
 * Writes into this copy of workflow `home`'s static data every id it should hold: the live ones
 * it holds and those this process recorded. Assigned only when something changed.
 */
export function keepAnsweredCurrent(
	staticData: IDataObject,
	home: string | undefined,
	nowMs = Date.now(),
	/** The running trigger's copy (waitingEntries.ts triggerCopyOf): what an older copy may lack. */
	base?: IDataObject,
): void {
	const stored = storedAnswered(staticData);
	const merged: Record<string, number> = {};
	for (const [id, untilMs] of Object.entries({ ...storedAnswered(base), ...stored }))
		if (isLive(untilMs, nowMs) && !isGivenUp(home, id, nowMs)) merged[id] = untilMs;
	// In expiry order (recordAnswered moves an id to the end): only the newest can be kept, so a
	// busy day's 10,000 ids are not sorted on every event.
	const recorded = (home !== undefined && memory.get(home)) || new Map<string, number>();
	let older = recorded.size - MAX_STATIC_ANSWERED;
	for (const [id, untilMs] of recorded)
		if (older-- <= 0 && untilMs > nowMs) merged[id] = Math.max(untilMs, merged[id] ?? 0);
	const bounded = Object.fromEntries(
		Object.entries(merged)
			.sort((a, b) => a[1] - b[1])
			.slice(-MAX_STATIC_ANSWERED),
	);
	const had = staticData[ANSWERED_KEY] !== undefined;
	if (Object.keys(bounded).length === 0) {
		if (had) delete staticData[ANSWERED_KEY];
	} else if (JSON.stringify(bounded) !== JSON.stringify(stored)) staticData[ANSWERED_KEY] = bounded;
	keepOwedCurrent(staticData, home, bounded, nowMs, base);
}

/** The owed answers a copy should hold: those it holds and this process's, minus the answered ones. */
function keepOwedCurrent(
	staticData: IDataObject,
	home: string | undefined,
	answered: Record<string, number>,
	nowMs: number,
	base?: IDataObject,
): void {
	const stored = staticData[OWED_KEY];
	const merged: Record<string, OwedAnswer> = {};
	for (const [id, answer] of Object.entries({ ...storedOwed(base), ...storedOwed(staticData) }))
		if (!(id in answered) && !isGivenUp(home, id, nowMs)) merged[id] = answer;
	for (const [id, answer] of (home !== undefined && owed.get(home)) || []) merged[id] = answer;
	// Never cut: an owed answer leaves only once resumed or run (MAX_OWED bounds what is added).
	if (Object.keys(merged).length === 0) {
		if (stored !== undefined) delete staticData[OWED_KEY];
	} else if (JSON.stringify(merged) !== JSON.stringify(stored))
		staticData[OWED_KEY] = merged as unknown as IDataObject;
}
