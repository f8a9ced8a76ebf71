/**
 * Keys derived from the API key, cached per node (never the API key). A credential read costs
 * n8n 2.x an isolate: read again on a mismatch at most every 10 s, not for 10 s after a failure,
 * and, matching or not, once they are 5 minutes old (a changed API key takes over).
 */
import { createHmac } from 'node:crypto';
import type { IHookFunctions, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';

import { verifySignature } from './signature';
import { CREDENTIAL_TYPE } from './transport';

/** Reply and Wait registering its entries through the trigger. */
export const WAIT_REGISTRATION_LABEL = 'business-messaging wait registration v1';

/** The account id stored with waits (its first 32 hex digits), and the resume tokens' key. */
export const ACCOUNT_ID_LABEL = 'business-messaging account id v1';
export const RESUME_KEY_LABEL = 'business-messaging resume key v2';

export function deriveKey(apiKey: string, label: string): string {
	return createHmac('sha256', apiKey).update(label).digest('hex');
}

const LABELS = [WAIT_REGISTRATION_LABEL, RESUME_KEY_LABEL, ACCOUNT_ID_LABEL] as const;
export type KeyLabel = (typeof LABELS)[number];

type KeyRing = { keys: Record<KeyLabel, string>; readAtMs: number };

const REREAD_MS = 10_000;
/** A key read longer ago than this is read again before it is trusted: a changed API key takes over. */
const KEY_MAX_AGE_MS = 5 * 60_000;
const BOUND = 1000;
const rings = new Map<string, KeyRing>();
const unreadable = new Map<string, { reason: string; untilMs: number }>();

type Context = IWebhookFunctions | IHookFunctions | ITriggerFunctions;

async function readRing(this: Context, cacheKey: string): Promise<KeyRing | string> {
	const failed = unreadable.get(cacheKey);
	if (failed && failed.untilMs > Date.now()) return failed.reason;
	try {
		const apiKey = String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
		if (apiKey === '') return 'the credential has no API key';
		const keys = Object.fromEntries(LABELS.map((label) => [label, deriveKey(apiKey, label)]));
		const ring = { keys: keys as KeyRing['keys'], readAtMs: Date.now() };
		if (rings.size >= BOUND) rings.clear();
		rings.set(cacheKey, ring);
		return ring;
	} catch (error) {
		const reason = `the credential could not be read (${(error as Error).message})`;
		if (unreadable.size >= BOUND) unreadable.clear();
		unreadable.set(cacheKey, { reason, untilMs: Date.now() + REREAD_MS });
		return reason;
	}
}

/** The keys derived from this node's credential, read at most every few minutes, or why there are none. */
export async function derivedKeys(this: Context): Promise<Record<KeyLabel, string> | string> {
	const cacheKey = `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
	const cached = rings.get(cacheKey);
	if (cached && Date.now() - cached.readAtMs < KEY_MAX_AGE_MS) return cached.keys;
	const read = await readRing.call(this, cacheKey);
	return typeof read === 'string' ? read : read.keys;
}

const NOT_SIGNED = "not signed with this trigger's API key";

/** True when `signature` is the derived key's HMAC of `message`, or why not. Fails closed. */
export async function verifyWithDerivedKey(
	this: Context,
	label: KeyLabel,
	message: Buffer,
	signature: string | string[] | undefined,
): Promise<true | string> {
	const signedWith = (ring: KeyRing) => verifySignature(message, signature, ring.keys[label]).valid;
	const cacheKey = `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
	const cached = rings.get(cacheKey);
	const ageMs = cached ? Date.now() - cached.readAtMs : Infinity;
	if (cached && ageMs < KEY_MAX_AGE_MS && signedWith(cached)) return true;
	if (cached && ageMs < REREAD_MS) return NOT_SIGNED;
	const read = await readRing.call(this, cacheKey);
	if (typeof read === 'string') return read;
	return signedWith(read) ? true : NOT_SIGNED;
}
