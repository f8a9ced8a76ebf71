/** Reply and Wait's waiting entries: register, find, forget (docs/conversations.md, "Where the waiting entry lives"). */
import type { IDataObject, ITriggerFunctions } from 'n8n-workflow';

import { nodeKeyOf } from '../credentialKeys';
import { isPlainObject } from '../json';
import { ReplayGuard } from '../replayGuard';
import { byAge } from '../watermark';
import { keepAnsweredCurrent } from './answeredHere';
import { isWaitingEntry, type WaitingEntry } from './entry';

export const STATIC_DATA_KEY = 'businessMessagingWaiting';
/** Set by the trigger on activation: a copy carrying it was loaded from the database (safe to save). */
export const TRIGGER_MARKER_KEY = 'businessMessagingTrigger';

/** The trigger's side: marks its workflow's static data (only when missing, so nothing else is saved for it). */
export function markTriggerWorkflow(globalStaticData: IDataObject): void {
	if (globalStaticData[TRIGGER_MARKER_KEY] !== true) globalStaticData[TRIGGER_MARKER_KEY] = true;
}

/** Per trigger node (nodeKeyOf), the context of its trigger() when it runs here (regular mode's main). */
const triggersHere = new Map<string, ITriggerFunctions>();

/** The trigger's side, while trigger() runs: registers its context; returns what forgets it. */
export function triggerRunsHere(context: ITriggerFunctions): () => void {
	const nodeKey = nodeKeyOf.call(context);
	triggersHere.set(nodeKey, context);
	return () => {
		if (triggersHere.get(nodeKey) === context) triggersHere.delete(nodeKey);
	};
}

/** The running trigger of that node key, if trigger() runs here. */
export function triggerNodeRunningHere(nodeKey: string): ITriggerFunctions | undefined {
	return triggersHere.get(nodeKey);
}

/** A Business Messaging Trigger of workflow `workflowId` whose trigger() runs here, if any. */
export function triggerOfWorkflow(workflowId: string | undefined): ITriggerFunctions | undefined {
	if (workflowId === undefined) return undefined;
	for (const [nodeKey, context] of triggersHere)
		if (nodeKey.startsWith(`${workflowId}:`)) return context;
	return undefined;
}

/** The copy of `home`'s static data its trigger() here holds: a copy n8n loaded from an older snapshot may lack what it has. */
function triggerCopyOf(home: string | undefined, staticData: IDataObject): IDataObject | undefined {
	const copy = triggerOfWorkflow(home)?.getWorkflowStaticData('global') as IDataObject | undefined;
	return copy === staticData ? undefined : copy;
}

/** The static data to register in: the execution's copy when it carries the trigger's marker, else none (memory only). */
export function persistableStaticData(
	globalStaticData: IDataObject | undefined,
): IDataObject | undefined {
	return globalStaticData?.[TRIGGER_MARKER_KEY] === true ? globalStaticData : undefined;
}
/** Entries kept in static data at most (oldest dropped): a bound on what every execution saves. */
const MAX_STATIC_ENTRIES = 200;
/** Live waits of one account (and entries of each other memory map) kept in this process at most. */
const MAX_MEMORY_ENTRIES = 10_000;
/** Why registerWaiting kept a wait nowhere, as logs and a refused registration say it. */
export const NO_ROOM = `this process's list of waits has no room for this account (at most ${MAX_MEMORY_ENTRIES} live waits per account)`;

/** How old a registration may be when taken; an answered entry stays forgotten at least this long. */
export const REGISTRATION_MAX_AGE_MS = 60_000;

/** Per account (entry.account), its waits in this process by wait key: no account fills another's list. */
const memory = new Map<string, Map<string, WaitingEntry>>();
/** The same waits by home: bringing a copy up to date reads its own workflow's waits only. */
const byHome = new Map<string, Map<WaitingEntry, { key: string; sinceMs: number }>>();

/** Puts the wait in its account's list (in place of the key's previous one) and in its home's index. */
function putWait(
	waits: Map<string, WaitingEntry>,
	key: string,
	entry: WaitingEntry,
	nowMs: number,
) {
	dropWait(waits, key);
	waits.set(key, entry);
	if (entry.home === undefined) return;
	if (!byHome.has(entry.home)) byHome.set(entry.home, new Map());
	byHome.get(entry.home)!.set(entry, { key, sinceMs: nowMs });
}

/** Takes the key's wait out of its account's list and its home's index. */
function dropWait(waits: Map<string, WaitingEntry> | undefined, key: string): void {
	const entry = waits?.get(key);
	if (!waits || !entry) return;
	waits.delete(key);
	const home = entry.home === undefined ? undefined : byHome.get(entry.home);
	home?.delete(entry);
	if (home?.size === 0) byHome.delete(entry.home!);
}

/** This process's entries under `key`: of `account`, or of every account. */
function inMemory(key: string, account: string | undefined): Array<WaitingEntry | undefined> {
	if (account !== undefined) return [memory.get(account)?.get(key)];
	return [...memory.values()].map((waits) => waits.get(key));
}

/** The contact on the number; number '*' when the reply left from the key's only number. */
export function waitingKey(contact: string, number: string | undefined): string {
	return `${number && number.trim() !== '' ? number.trim() : '*'}|${contact.trim()}`;
}

/** The keys an answer from `contact` on `number` may answer: that number's wait, then the any-number one. */
export function answerKeys(contact: string, number: string | undefined): string[] {
	return [waitingKey(contact, number), waitingKey(contact, undefined)];
}

function staticEntries(staticData: IDataObject | undefined): IDataObject | undefined {
	const entries = staticData?.[STATIC_DATA_KEY];
	return isPlainObject(entries) ? entries : undefined;
}

function storedEntry(stored: IDataObject | undefined, key: string): WaitingEntry | undefined {
	const entry = stored?.[key];
	return isWaitingEntry(entry) ? entry : undefined;
}

/** Waits answered or refused here, until they would have ended: an older copy's save must not bring one back. */
const forgotten = new ReplayGuard(MAX_MEMORY_ENTRIES);
const forgottenKey = (key: string, entry: { executionId: string; node: string }) =>
	`${key}|${entry.executionId}|${entry.node}`;
export function isForgotten(key: string, entry: { executionId: string; node: string }): boolean {
	return forgotten.has(forgottenKey(key, entry), Date.now());
}
const isLive = (key: string, entry: WaitingEntry, nowMs: number) =>
	entry.expiresAtMs > nowMs && !isForgotten(key, entry);

/** Keeps the wait here and in `staticData`; false when kept in neither (both full of live waits: never evicted). */
export function registerWaiting(
	staticData: IDataObject | undefined,
	key: string,
	entry: WaitingEntry,
	nowMs = Date.now(),
): boolean {
	if (!memory.has(entry.account)) memory.set(entry.account, new Map());
	const waits = memory.get(entry.account)!;
	if (waits.size >= MAX_MEMORY_ENTRIES)
		for (const [other, wait] of waits) if (wait.expiresAtMs <= nowMs) dropWait(waits, other);
	// The same execution waiting again at the same node (a loop) is a new wait.
	forgotten.drop(forgottenKey(key, entry));
	const kept = waits.size < MAX_MEMORY_ENTRIES || waits.has(key);
	if (kept) putWait(waits, key, entry, nowMs);
	if (staticData) keepWaitingEntriesCurrent(staticData, entry.home, nowMs, [key, entry]);
	return kept || storedEntry(staticEntries(staticData), key)?.executionId === entry.executionId;
}

/** A copy loaded this long after the entry was registered here must hold it unless another save dropped it. */
const DROPPED_AFTER_MS = 15_000;

/**
 * Writes into this copy every live entry it should hold (its own, and this process's for `home`, minus
 * the answered): n8n saves each copy whole. Assigned only on a change, so a current copy is not saved again.
 */
export function keepWaitingEntriesCurrent(
	staticData: IDataObject,
	home: string | undefined,
	nowMs = Date.now(),
	/** An entry to keep there whatever its home (the one being registered). */
	added?: [string, WaitingEntry],
): { restored: number } {
	const stored = staticEntries(staticData) ?? {};
	const base = triggerCopyOf(home, staticData);
	const merged: Record<string, WaitingEntry> = {};
	for (const [key, entry] of Object.entries({ ...staticEntries(base), ...stored }))
		if (isWaitingEntry(entry) && isLive(key, entry, nowMs)) merged[key] = entry;
	// Registered here a while ago and missing from this copy: another process saved over them (said by the caller).
	let restored = 0;
	const mayHaveBeenCut = Object.keys(stored).length >= MAX_STATIC_ENTRIES;
	for (const [entry, { key, sinceMs }] of (home !== undefined && byHome.get(home)) || []) {
		const waits = memory.get(entry.account);
		// Ended waits leave memory here: the walk is as long as the live waits.
		if (entry.expiresAtMs <= nowMs && waits?.get(key) === entry) dropWait(waits, key);
		if (!isLive(key, entry, nowMs)) continue;
		if (!(key in stored) && !mayHaveBeenCut && nowMs - sinceMs > DROPPED_AFTER_MS) restored++;
		merged[key] = { ...entry };
	}
	// A key kept already keeps its place (the bound keeps the first ones).
	if (added && added[1].expiresAtMs > nowMs) merged[added[0]] = { ...added[1] };
	// Live waits already kept stay: past the bound, the newest (a flood's) are left out.
	const bounded = Object.fromEntries(Object.entries(merged).slice(0, MAX_STATIC_ENTRIES));
	if (JSON.stringify(bounded) !== JSON.stringify(stored))
		staticData[STATIC_DATA_KEY] = bounded as unknown as IDataObject;
	if (home !== undefined) keepAnsweredCurrent(staticData, home, nowMs, base);
	return { restored };
}

/** The live entry of this account for one of the keys, memory first; undefined when none (or only expired ones). */
export function findWaiting(
	staticData: IDataObject | undefined,
	keys: string[],
	/** undefined: of any account (a first look, before the trigger reads its key). */
	account: string | undefined,
	nowMs = Date.now(),
	/** Whether the message may answer this wait (answersAfterAsking); any without. */
	mayAnswer: (entry: WaitingEntry) => boolean = () => true,
	/** Whether an entry read from static data (anyone's code may write there) may be used. */
	storedInBounds: (entry: WaitingEntry) => boolean = () => true,
): { key: string; entry: WaitingEntry } | undefined {
	const stored = staticEntries(staticData);
	for (const key of keys) {
		const fromStatic = storedEntry(stored, key);
		const entry = [
			...inMemory(key, account),
			fromStatic && storedInBounds(fromStatic) && fromStatic,
		]
			.filter((one): one is WaitingEntry => !!one && [undefined, one.account].includes(account))
			.find((one) => isLive(key, one, nowMs) && mayAnswer(one));
		if (entry) return { key, entry };
	}
	return undefined;
}

/** Pure: a message may answer a wait unless it is the one the workflow answered when it asked, or older. */
export function answersAfterAsking(
	message: { id?: unknown; at?: unknown },
	entry: Pick<WaitingEntry, 'askedAfter'>,
): boolean {
	const asked = entry.askedAfter;
	if (!asked) return true;
	if (typeof message.id === 'string' && message.id !== '' && message.id === asked.id) return false;
	if (typeof message.at !== 'string' || typeof asked.at !== 'string') return true;
	if (Number.isNaN(Date.parse(message.at)) || Number.isNaN(Date.parse(asked.at))) return true;
	return byAge({ created_at: message.at, id: '' }, { created_at: asked.at, id: '' }) > 0;
}

/** Forgets the entry (answered, or refused), wherever it is, unless another execution took the key since. */
export function removeWaiting(
	staticData: IDataObject | undefined,
	key: string,
	executionId: string,
	nowMs = Date.now(),
): void {
	const entry = inMemory(key, undefined).find((one) => one?.executionId === executionId);
	if (entry) dropWait(memory.get(entry.account), key);
	if (entry && memory.get(entry.account)?.size === 0) memory.delete(entry.account);
	const stored = staticEntries(staticData);
	const inStatic = storedEntry(stored, key);
	const node = entry ? entry.node : inStatic?.node;
	const until = Math.max(
		entry?.expiresAtMs ?? 0,
		inStatic?.executionId === executionId ? inStatic.expiresAtMs : 0,
		nowMs + REGISTRATION_MAX_AGE_MS,
	);
	if (node !== undefined) forgotten.keep(forgottenKey(key, { executionId, node }), until, nowMs);
	if (stored && inStatic?.executionId === executionId) {
		const rest = { ...stored };
		delete rest[key];
		staticData![STATIC_DATA_KEY] = rest;
	}
}
