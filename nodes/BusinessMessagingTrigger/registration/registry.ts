/**
 * The live triggers of this process (docs/several-workflows.md §4). trigger() runs only on the
 * leader main, so every active trigger's heartbeat runs in one process: a module-level map there
 * sees them all. The holder copies its account's members from here into its own static data
 * before each emit, so main's whole save of its activation-time copy writes the current members.
 * Also the URL each trigger's webhook methods last saw, which trigger() cannot ask n8n for.
 */
import type { IDataObject } from 'n8n-workflow';

export interface LiveTrigger {
	url: string;
	account: string;
	events: string[];
	workflowId: string;
	/** Writes a registration its webhook() made (a hand-off, §6) into main's activation-time copy of its static data. */
	adopt?: (answer: IDataObject) => void;
}

const live = new Map<string, LiveTrigger>();
const urls = new Map<string, string>();
/** URLs whose delete() has begun (deactivation), until they are activated again. */
const leaving = new Set<string>();
const BOUND = 10_000;
/** True in the process where trigger() runs (the leader main): there the registry is the truth. */
let runsTriggers = false;

/** Enters a trigger (key: workflow:node); returns what removes it. */
export function enterRegistry(key: string, entry: LiveTrigger): () => void {
	if (live.size >= BOUND) live.delete(live.keys().next().value as string);
	live.set(key, entry);
	runsTriggers = true;
	return () => {
		if (live.get(key) === entry) live.delete(key);
	};
}

/** The live triggers of `account` other than the one at `exceptUrl`. */
export function liveMembers(account: string, exceptUrl: string): LiveTrigger[] {
	return [...live.values()].filter((entry) => entry.account === account && entry.url !== exceptUrl);
}

/** Per trigger (workflow:node): its heartbeat, waiting to learn the URL (onNodeUrl). */
const urlListeners = new Map<string, () => void>();

/**
 * The webhook methods (checkExists/create) record the node's URL before they join or register.
 * A heartbeat waiting for it enters the registry in the same tick: so main's next save of the
 * holder's copy (its next emit) holds this member even when it comes right after the join a
 * processor saved, rather than up to a second later (docs/several-workflows.md §4, §13 T6).
 */
export function rememberNodeUrl(key: string, url: string): void {
	if (urls.size >= BOUND) urls.delete(urls.keys().next().value as string);
	urls.set(key, url);
	try {
		urlListeners.get(key)?.();
	} catch {
		// The heartbeat looks the URL up again each second anyway; activation must not fail here.
	}
}

/** Calls `listener` when the webhook methods record the URL of trigger `key`; returns what stops it. */
export function onNodeUrl(key: string, listener: () => void): () => void {
	if (urlListeners.size >= BOUND) urlListeners.delete(urlListeners.keys().next().value as string);
	urlListeners.set(key, listener);
	return () => {
		if (urlListeners.get(key) === listener) urlListeners.delete(key);
	};
}

export function nodeUrlOf(key: string): string | undefined {
	return urls.get(key);
}

/** Whether this process runs trigger() (the leader main): only there does the registry list every live trigger. */
export function runsTriggersHere(): boolean {
	return runsTriggers;
}

/** A trigger of this process is live at `url`: activated, its trigger() running, not being deactivated. */
export function isLiveHere(url: string): boolean {
	return !leaving.has(url) && [...live.values()].some((entry) => entry.url === url);
}

/**
 * Deactivation has begun for `url` (its delete() runs): n8n may route to it a moment longer
 * (1.x removes the route after delete()), so no hand-off may be offered to it or accepted by it.
 */
export function markLeaving(url: string): void {
	if (leaving.size >= BOUND) leaving.delete(leaving.values().next().value as string);
	leaving.add(url);
}

/** Activated again (checkExists/create ran for it). */
export function clearLeaving(url: string): void {
	leaving.delete(url);
}

export function isLeaving(url: string): boolean {
	return leaving.has(url);
}
