/**
 * Which execution is waiting for which contact's answer (Message → Reply and Wait for Answer),
 * so that the trigger receiving that contact's next message resumes it.
 *
 * Places, each allowed to lose an entry: this process's memory (every workflow of the process,
 * gone on restart), and the trigger's workflow's static data, written by the waiting execution
 * when its copy carries the trigger's marker (TRIGGER_MARKER_KEY) and by the trigger itself when
 * Reply and Wait registers through it (REGISTRATION_HEADER; what works across n8n processes).
 * n8n saves static data whole per execution and per request, so writes at the same instant may
 * overwrite each other's entries. A lost or stale entry fails safe: the trigger finds nothing,
 * or its resume is refused, and the message starts a normal execution. The answer is never
 * lost; the waiting execution then times out.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IDataObject } from 'n8n-workflow';

import { computeSignature, verifySignature } from './signature';
import { isPlainObject } from './json';

export const STATIC_DATA_KEY = 'businessMessagingWaiting';
/**
 * Set by the Business Messaging Trigger in its workflow's global static data when the workflow is
 * activated. Its presence in an execution's copy of the static data means two things: the trigger
 * that will receive the answer reads this workflow's static data (an entry in another workflow's
 * is never read), and the copy was loaded from the database, so saving it keeps what is there.
 * n8n 2.x in queue mode runs a new execution on a worker with an EMPTY copy and, when a node
 * changed it, saves that copy whole: the trigger's sealed signing secret and catch-up watermark
 * were wiped (every event refused with 401) by the first Reply and Wait. Without the marker the
 * entry stays in this process's memory only.
 */
export const TRIGGER_MARKER_KEY = 'businessMessagingTrigger';

/** The trigger's side: marks its workflow's static data (only when missing, so nothing else is saved for it). */
export function markTriggerWorkflow(globalStaticData: IDataObject): void {
	if (globalStaticData[TRIGGER_MARKER_KEY] !== true) globalStaticData[TRIGGER_MARKER_KEY] = true;
}

/** The static data to register in: the execution's copy when it carries the trigger's marker, else none (memory only). */
export function persistableStaticData(globalStaticData: IDataObject | undefined): IDataObject | undefined {
	return globalStaticData?.[TRIGGER_MARKER_KEY] === true ? globalStaticData : undefined;
}
/** Entries kept in static data at most (oldest dropped): a bound on what every execution saves. */
const MAX_STATIC_ENTRIES = 200;
const MAX_MEMORY_ENTRIES = 10_000;

export interface WaitingEntry {
	resumeUrl: string;
	executionId: string;
	/** When the wait ends anyway (its time limit), ms since epoch. */
	expiresAtMs: number;
	/** Also start the trigger's own execution for the answer. */
	alsoStart: boolean;
	/** Proof that the resume request comes from a trigger that read this entry (resumeToken). */
	token: string;
}

const memory = new Map<string, WaitingEntry>();

/**
 * What the trigger sends with an answer so the waiting execution can tell it from a forged one.
 * n8n 1.x's resume URLs are /webhook-waiting/<execution id> with nothing secret in them (ids are
 * sequential), so anyone who can reach n8n could otherwise post an "answer". Derived from the
 * credential's API key (which the waiting node reads again to check it) and the execution id:
 * nothing to store in the execution, and it says nothing about the key.
 */
export function resumeToken(apiKey: string, executionId: string): string {
	return createHmac('sha256', apiKey).update(`business-messaging resume token v1|${executionId}`).digest('base64url');
}

/** Whether `candidate` is the resume token of this execution; constant time, false for anything but a string. */
export function isResumeToken(apiKey: string, executionId: string, candidate: unknown): boolean {
	if (typeof candidate !== 'string' || apiKey === '' || executionId === '') return false;
	const expected = Buffer.from(resumeToken(apiKey, executionId));
	const given = Buffer.from(candidate);
	return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Registration through the trigger: a worker of n8n's queue mode cannot keep a waiting entry
 * where a webhook processor finds it (see TRIGGER_MARKER_KEY), so Reply and Wait posts its
 * entries to the account's webhook (the trigger's own URL), and the trigger stores them in its
 * workflow's static data from a copy n8n has just loaded, as with any request it receives.
 * Signed with a key derived from the API key, so only a holder of the key can register; the
 * trigger takes them only for resume URLs of its own n8n.
 */
export const REGISTRATION_HEADER = 'x-business-messaging-wait';
const REGISTRATION_KEY_LABEL = 'business-messaging wait registration v1';

export interface WaitRegistration {
	key: string;
	entry: WaitingEntry;
}

/**
 * The registration is signed as the service signs its events (signature.ts: `sha256=<hex HMAC>`
 * of the raw body), with a key derived from the API key instead of the signing secret.
 */
function registrationKey(apiKey: string): string {
	return createHmac('sha256', apiKey).update(REGISTRATION_KEY_LABEL).digest('hex');
}

/** The signature header value for a registration body. */
export function signRegistration(apiKey: string, rawBody: string | Buffer): string {
	return `sha256=${computeSignature(Buffer.from(rawBody), registrationKey(apiKey))}`;
}

/** Whether the header signs these bytes with this API key (verifySignature: strict header, constant time). */
export function isRegistrationSignature(apiKey: string, rawBody: Buffer, header: string | string[] | undefined): boolean {
	return apiKey !== '' && verifySignature(rawBody, header, registrationKey(apiKey)).valid;
}

/**
 * The registrations in a verified body, keeping only well-formed entries whose resume URL is a
 * waiting-execution URL of `ownOrigin` (this n8n): the trigger later posts the contact's answer there.
 */
export function parseRegistrations(body: unknown, ownOrigin: string): WaitRegistration[] {
	const list = isPlainObject(body) && Array.isArray(body.business_messaging_wait) ? body.business_messaging_wait : [];
	return list.filter((item): item is WaitRegistration => {
		if (!isPlainObject(item) || typeof item.key !== 'string' || !isEntry(item.entry)) return false;
		try {
			const url = new URL(item.entry.resumeUrl);
			return url.origin === ownOrigin && /\/webhook-waiting\/[^/]+/.test(url.pathname);
		} catch {
			return false;
		}
	});
}

/** The contact on the number; number '*' when the reply left from the key's only number. */
export function waitingKey(contact: string, number: string | undefined): string {
	return `${number && number.trim() !== '' ? number.trim() : '*'}|${contact.trim()}`;
}

function isEntry(value: unknown): value is WaitingEntry {
	return (
		isPlainObject(value) &&
		typeof value.resumeUrl === 'string' &&
		typeof value.executionId === 'string' &&
		typeof value.expiresAtMs === 'number' &&
		typeof value.token === 'string'
	);
}

function staticEntries(staticData: IDataObject | undefined): IDataObject | undefined {
	if (!staticData) return undefined;
	const entries = staticData[STATIC_DATA_KEY];
	return isPlainObject(entries) ? entries : undefined;
}

export function registerWaiting(staticData: IDataObject | undefined, key: string, entry: WaitingEntry, nowMs = Date.now()): void {
	if (memory.size >= MAX_MEMORY_ENTRIES) {
		for (const [k, e] of memory) if (e.expiresAtMs <= nowMs) memory.delete(k);
		if (memory.size >= MAX_MEMORY_ENTRIES) memory.delete(memory.keys().next().value as string);
	}
	memory.set(key, entry);
	if (!staticData) return;
	const kept = Object.entries(staticEntries(staticData) ?? {}).filter(
		([k, e]) => k !== key && isEntry(e) && e.expiresAtMs > nowMs,
	);
	const entries = Object.fromEntries([...kept.slice(-(MAX_STATIC_ENTRIES - 1)), [key, { ...entry }]]);
	staticData[STATIC_DATA_KEY] = entries as IDataObject;
}

/** The live entry for one of the keys, memory first; undefined when none (or only expired ones). */
export function findWaiting(staticData: IDataObject | undefined, keys: string[], nowMs = Date.now()): { key: string; entry: WaitingEntry } | undefined {
	const stored = staticEntries(staticData);
	for (const key of keys) {
		const entry = memory.get(key) ?? (stored && isEntry(stored[key]) ? (stored[key] as unknown as WaitingEntry) : undefined);
		if (entry && entry.expiresAtMs > nowMs) return { key, entry };
	}
	return undefined;
}

/** Forgets the entry (answered, or refused), wherever it is, unless another execution took the key since. */
export function removeWaiting(staticData: IDataObject | undefined, key: string, executionId: string): void {
	if (memory.get(key)?.executionId === executionId) memory.delete(key);
	const stored = staticEntries(staticData);
	if (stored && isEntry(stored[key]) && (stored[key] as unknown as WaitingEntry).executionId === executionId) {
		const rest = { ...stored };
		delete rest[key];
		staticData![STATIC_DATA_KEY] = rest;
	}
}
