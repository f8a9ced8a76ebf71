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
const BOUND = 10_000;

/** Enters a trigger (key: workflow:node); returns what removes it. */
export function enterRegistry(key: string, entry: LiveTrigger): () => void {
	if (live.size >= BOUND) live.delete(live.keys().next().value as string);
	live.set(key, entry);
	return () => {
		if (live.get(key) === entry) live.delete(key);
	};
}

/** The live triggers of `account` other than the one at `exceptUrl`. */
export function liveMembers(account: string, exceptUrl: string): LiveTrigger[] {
	return [...live.values()].filter((entry) => entry.account === account && entry.url !== exceptUrl);
}

export function rememberNodeUrl(key: string, url: string): void {
	if (urls.size >= BOUND) urls.delete(urls.keys().next().value as string);
	urls.set(key, url);
}

export function nodeUrlOf(key: string): string | undefined {
	return urls.get(key);
}
