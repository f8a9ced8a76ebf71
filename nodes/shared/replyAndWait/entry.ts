/** A waiting entry (execution E waits for contact C on number N) and its shape check: no imports of this folder. */
import { isPlainObject } from '../json';

export interface WaitingEntry {
	resumeUrl: string;
	executionId: string;
	/** When the wait ends anyway (its time limit), ms since epoch. */
	expiresAtMs: number;
	/** Also start the trigger's own execution for the answer. */
	alsoStart: boolean;
	/** The waiting node (its name): the resume token is made for it. */
	node: string;
	/** The wait's random id (resume.ts): a token answers this wait only. */
	waitId: string;
	/** Whose wait it is (accountId of the API key): only a trigger with the same key resumes it. */
	account: string;
	/** The workflow whose static data keeps the entry (the trigger's); none: this process's memory only. */
	home?: string;
	/** The inbound message the workflow answered when it asked: it (the catch-up may bring it again), or an older one, is never the answer. */
	askedAfter?: { id?: string; at?: string };
}

/** A waiting entry as stored (static data, a registration). */
export function isWaitingEntry(value: unknown): value is WaitingEntry {
	return (
		isPlainObject(value) &&
		typeof value.resumeUrl === 'string' &&
		typeof value.executionId === 'string' &&
		typeof value.expiresAtMs === 'number' &&
		typeof value.node === 'string' &&
		typeof value.account === 'string' &&
		typeof value.waitId === 'string' &&
		(value.askedAfter === undefined || isPlainObject(value.askedAfter))
	);
}
