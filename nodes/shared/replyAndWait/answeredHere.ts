/**
 * One record per answer taken (answerLater.ts), under one static-data key: owed (the wait and the
 * event) until resumed or run, then answered for a day, so the catch-up's copy runs nothing.
 */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from '../json';
import { ReplayGuard } from '../replayGuard';
import { isWaitingEntry, type WaitingEntry } from './entry';

export const ANSWERS_KEY = 'businessMessagingAnswers';
/** Answers owed at once per workflow at most: beyond, an answer is resumed before n8n answers. */
export const MAX_OWED = 100;
/** As long as a catch-up may still bring the message (it reads back at most a day after a restart). */
export const ANSWERED_KEEP_MS = 24 * 3_600_000;
/** Answered records in static data at most (the oldest left out): every save carries them. */
const MAX_STATIC_ANSWERED = 500;
const MAX_MEMORY_ANSWERED = 10_000;

/** An answer the service was told about before its wait was resumed. */
export interface OwedAnswer {
	key: string;
	entry: WaitingEntry;
	answer: IDataObject;
	/** HMAC under the trigger's resume key: anyone's code can write static data. */
	mac: string;
	/** The trigger node (id) that took it: only it posts it again after a restart. */
	node: string;
}

/** Owed, or answered until (ms since epoch). */
type AnswerRecord = OwedAnswer | number;

/** Per trigger workflow, this process's records: answered (in expiry order), and owed. */
const answered = new Map<string, Map<string, number>>();
const owed = new Map<string, Map<string, OwedAnswer>>();

/** Answers given up here (forgetAnswer), a day each: a copy saved before does not bring one back. */
const givenUp = new ReplayGuard(MAX_MEMORY_ANSWERED);
const givenUpKey = (home: string, id: string) => `${home}|${id}`;
const isGivenUp = (home: string | undefined, id: string, nowMs: number) =>
	home !== undefined && givenUp.has(givenUpKey(home, id), nowMs);

/** A stored end: live, and no further ahead than an id is kept (a far-future one is a forgery). */
const isLive = (untilMs: unknown, nowMs: number): untilMs is number =>
	typeof untilMs === 'number' && untilMs > nowMs && untilMs <= nowMs + ANSWERED_KEEP_MS + 60_000;

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

const isRecord = (value: unknown, nowMs: number): value is AnswerRecord =>
	isOwedAnswer(value) || isLive(value, nowMs);

function storedAnswers(staticData: IDataObject | undefined, nowMs: number) {
	const stored = staticData?.[ANSWERS_KEY];
	if (!isPlainObject(stored)) return {};
	return Object.fromEntries(
		Object.entries(stored).filter(([, record]) => isRecord(record, nowMs)),
	) as Record<string, AnswerRecord>;
}

export function storedOwed(staticData: IDataObject | undefined): Record<string, OwedAnswer> {
	return Object.fromEntries(
		Object.entries(storedAnswers(staticData, Date.now())).filter(([, r]) => typeof r !== 'number'),
	) as Record<string, OwedAnswer>;
}

/** Whether the answer `messageId` was taken without an execution: owed or ran, here or in this copy. */
export function wasAnswered(
	staticData: IDataObject | undefined,
	home: string | undefined,
	messageId: string,
	nowMs = Date.now(),
): boolean {
	const ranUntil = home === undefined ? undefined : answered.get(home)?.get(messageId);
	if (home !== undefined && (owed.get(home)?.has(messageId) || (ranUntil ?? 0) > nowMs))
		return true;
	// One lookup: this runs for every inbound message, so the copy's records are not all checked.
	const stored = staticData?.[ANSWERS_KEY];
	return (
		isPlainObject(stored) &&
		Object.prototype.hasOwnProperty.call(stored, messageId) &&
		isRecord(stored[messageId], nowMs)
	);
}

/** The service was told about `messageId`; its wait is resumed now (or it runs). */
export function recordOwed(home: string, messageId: string, answer: OwedAnswer): void {
	givenUp.drop(givenUpKey(home, messageId));
	let answers = owed.get(home);
	if (!answers) owed.set(home, (answers = new Map()));
	answers.set(messageId, answer);
}

export function owedCount(home: string): number {
	return owed.get(home)?.size ?? 0;
}

/** The trigger stopped before the owed answer was resumed: its next start takes it (from the saved copy). */
export function releaseOwed(home: string, messageId: string): void {
	owed.get(home)?.delete(messageId);
}

/** Resumed or run (or given up, said): answered for a day, newest last. */
export function settleOwed(home: string, messageId: string, nowMs = Date.now()): void {
	owed.get(home)?.delete(messageId);
	givenUp.drop(givenUpKey(home, messageId));
	let ids = answered.get(home);
	if (!ids) answered.set(home, (ids = new Map()));
	if (ids.size >= MAX_MEMORY_ANSWERED)
		for (const [id, untilMs] of ids)
			if (untilMs <= nowMs || ids.size >= MAX_MEMORY_ANSWERED) ids.delete(id);
	ids.delete(messageId);
	ids.set(messageId, nowMs + ANSWERED_KEEP_MS);
}

/** Not run after all: neither owed nor answered, so a copy of it (the catch-up's) runs. */
export function forgetAnswer(staticData: IDataObject, home: string, messageId: string): void {
	answered.get(home)?.delete(messageId);
	owed.get(home)?.delete(messageId);
	givenUp.keep(givenUpKey(home, messageId), Date.now() + ANSWERED_KEEP_MS, Date.now());
	const stored = staticData[ANSWERS_KEY];
	if (!isPlainObject(stored) || !(messageId in stored)) return;
	const rest = { ...stored };
	delete rest[messageId];
	staticData[ANSWERS_KEY] = rest;
}

/** Writes into this copy every live record it should hold (an answered one over an owed one); assigned only on a change. */
export function keepAnsweredCurrent(
	staticData: IDataObject,
	home: string | undefined,
	nowMs = Date.now(),
	/** The running trigger's copy: what an older copy may lack. */
	base?: IDataObject,
): void {
	const merged: Record<string, AnswerRecord> = {};
	const put = (id: string, record: AnswerRecord) => {
		const had = merged[id];
		if (typeof had !== 'number' || (typeof record === 'number' && record > had))
			merged[id] = record;
	};
	for (const copy of [base, staticData])
		for (const [id, record] of Object.entries(storedAnswers(copy, nowMs)))
			if (!isGivenUp(home, id, nowMs)) put(id, record);
	// In expiry order (settleOwed moves an id to the end): a busy day's ids are not sorted per event.
	const recorded = (home !== undefined && answered.get(home)) || new Map<string, number>();
	let older = recorded.size - MAX_STATIC_ANSWERED;
	for (const [id, untilMs] of recorded) if (older-- <= 0 && untilMs > nowMs) put(id, untilMs);
	for (const [id, answer] of (home !== undefined && owed.get(home)) || []) merged[id] = answer;
	// Owed records are never cut (MAX_OWED bounds what is added); answered ones, the oldest first.
	const records = Object.entries(merged);
	const ends = records.filter((one): one is [string, number] => typeof one[1] === 'number');
	const bounded = Object.fromEntries([
		...ends.sort((a, b) => a[1] - b[1]).slice(-MAX_STATIC_ANSWERED),
		...records.filter(([, record]) => typeof record !== 'number'),
	]);
	const stored = staticData[ANSWERS_KEY];
	if (records.length === 0) {
		if (stored !== undefined) delete staticData[ANSWERS_KEY];
	} else if (JSON.stringify(bounded) !== JSON.stringify(stored))
		staticData[ANSWERS_KEY] = bounded as unknown as IDataObject;
}
