/**
 * The trigger's credential cache per node, in memory. A read costs n8n 2.x an isolate: one per node
 * per 5 minutes, none for 10 s after a failure, again on a mismatch (10 s apart) or failed request.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type {
	ICredentialDataDecryptedObject,
	IHookFunctions,
	IPollFunctions,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { openSecret } from './seal';
import { verifySignature } from './signature';
import { CREDENTIAL_TYPE } from './credentialRules';

/** Reply and Wait registering its entries through the trigger. */
export const WAIT_REGISTRATION_LABEL = 'business-messaging wait registration v1';

/** The account id stored with waits (its first 32 hex digits), and the resume tokens' key. */
export const ACCOUNT_ID_LABEL = 'business-messaging account id v1';
export const RESUME_KEY_LABEL = 'business-messaging resume key v2';

export function deriveKey(apiKey: string, label: string): string {
	return createHmac('sha256', apiKey).update(label).digest('hex');
}

/** An identifier of the API key, safe to store: a trigger resumes only its own key's waits. */
export const accountIdOf = (derivedKey: string) => derivedKey.slice(0, 32);
export const accountId = (apiKey: string) => accountIdOf(deriveKey(apiKey, ACCOUNT_ID_LABEL));

const LABELS = [WAIT_REGISTRATION_LABEL, RESUME_KEY_LABEL, ACCOUNT_ID_LABEL] as const;
export type KeyLabel = (typeof LABELS)[number];

export interface CredentialRead {
	/** The credential as n8n gave it: what the trigger's requests to the service are sent with. */
	credentials: ICredentialDataDecryptedObject;
	/** Undefined: the credential has no API key. */
	keys?: Record<KeyLabel, string>;
	/** The Webhook Signing Secret (Manual registration), trimmed; '' when unset. */
	webhookSecret: string;
	/** The sealed secret asked for at this read, opened with its API key (undefined: it does not open). */
	sealed?: { value: string; secret: string | undefined };
	readAtMs: number;
}

const REREAD_MS = 10_000;
/** A read older than this is read again before it is trusted: a changed API key takes over. */
const MAX_AGE_MS = 5 * 60_000;
const BOUND = 1000;
const reads = new Map<string, CredentialRead>();
const unreadable = new Map<string, { reason: string; untilMs: number }>();

type Context = IWebhookFunctions | IHookFunctions | ITriggerFunctions | IPollFunctions;

/** The node's key in every per-node map of this process: its workflow and node ids. */
export function nodeKeyOf(this: Pick<Context, 'getWorkflow' | 'getNode'>): string {
	return `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
}

/** This process's start: a key of an earlier process never blocks an emit of this one. */
const PROCESS_START = randomBytes(6).toString('base64url');

/**
 * The key n8n 2.x starts one execution per (1.x ignores it): the catch-up's and an answer's emit
 * share it. Per process: after a crash, an execution n8n stored and never started (crashed) would
 * otherwise block the message for good; the trigger's run-once check drops a copy of one that ran.
 */
export function executionKey(nodeKey: string, messageId: string): string {
	return `business-messaging:${PROCESS_START}:${nodeKey}:${messageId}`;
}

/** After an activation or a failed request (the credential may have changed): read it afresh. */
export function forgetCredentialRead(this: Context): void {
	reads.delete(nodeKeyOf.call(this));
	unreadable.delete(nodeKeyOf.call(this));
}

/**
 * The node's credential, cached, or why it cannot be read. `sealed`: the Automatic secret to open
 * (another one is read at once); `reread`: a cached read it rejects is read again once 10 s old.
 */
export async function credentialRead(
	this: Context,
	want: { sealed?: string; reread?: (read: CredentialRead) => boolean } = {},
): Promise<CredentialRead | string> {
	const key = nodeKeyOf.call(this);
	const cached = reads.get(key);
	const ageMs = cached ? Date.now() - cached.readAtMs : Infinity;
	const sameSeal = want.sealed === undefined || cached?.sealed?.value === want.sealed;
	if (cached && ageMs < MAX_AGE_MS && sameSeal && !(ageMs >= REREAD_MS && want.reread?.(cached)))
		return cached;
	const failed = unreadable.get(key);
	if (failed && failed.untilMs > Date.now()) return failed.reason;
	try {
		const credentials = await this.getCredentials(CREDENTIAL_TYPE);
		const apiKey = typeof credentials.apiKey === 'string' ? credentials.apiKey : '';
		const keys = Object.fromEntries(LABELS.map((label) => [label, deriveKey(apiKey, label)]));
		const secret = credentials.webhookSecret;
		const read: CredentialRead = {
			credentials,
			keys: apiKey === '' ? undefined : (keys as Record<KeyLabel, string>),
			webhookSecret: typeof secret === 'string' ? secret.trim() : '',
			readAtMs: Date.now(),
		};
		// The Automatic secret stays open across reads for the derived keys, and the other way round.
		const sealed = want.sealed ?? cached?.sealed?.value;
		if (sealed !== undefined) read.sealed = { value: sealed, secret: openSecret(sealed, apiKey) };
		if (reads.size >= BOUND) reads.clear();
		reads.set(key, read);
		return read;
	} catch (error) {
		const reason = `the credential could not be read (${(error as Error).message})`;
		if (unreadable.size >= BOUND) unreadable.clear();
		unreadable.set(key, { reason, untilMs: Date.now() + REREAD_MS });
		return reason;
	}
}

const NO_API_KEY = 'the credential has no API key';

export async function derivedKeys(this: Context): Promise<Record<KeyLabel, string> | string> {
	const read = await credentialRead.call(this);
	return typeof read === 'string' ? read : (read.keys ?? NO_API_KEY);
}

const NOT_SIGNED = "not signed with this trigger's API key";

/** True when `signature` is the derived key's HMAC of `message`, or why not. Fails closed. */
export async function verifyWithDerivedKey(
	this: Context,
	label: KeyLabel,
	message: Buffer,
	signature: string | string[] | undefined,
): Promise<true | string> {
	const signedWith = (read: CredentialRead) =>
		read.keys !== undefined && verifySignature(message, signature, read.keys[label]).valid;
	const read = await credentialRead.call(this, { reread: (cached) => !signedWith(cached) });
	if (typeof read === 'string') return read;
	if (signedWith(read)) return true;
	return read.keys === undefined ? NO_API_KEY : NOT_SIGNED;
}
