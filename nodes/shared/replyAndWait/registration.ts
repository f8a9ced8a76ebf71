/**
 * Reply and Wait's registration channel: the waiting execution posts its signed entries to the
 * registration URL of the trigger holding the account's webhook (docs/conversations.md, "Where the
 * waiting entry lives"); the trigger keeps those of its own n8n (forTrigger.ts stores them).
 */
import type { IExecuteFunctions, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { WAIT_REGISTRATION_LABEL, verifyWithDerivedKey } from '../credentialKeys';
import { isPlainObject, parseJsonBody } from '../json';
import { serviceLine } from '../redact';
import { ReplayGuard } from '../replayGuard';
import { postSigned } from '../signedPost';
import { apiRequest } from '../transport';
import { TRIGGER_PATH, registrationUrlOf } from '../triggerUrls';
import { WEBHOOK_PATH, readWebhookAnswer } from '../webhookAnswer';
import { triggerIdentity } from './resume';
import { REGISTRATION_MAX_AGE_MS, isForgotten } from './waitingEntries';
import { isWaitingEntry, type WaitingEntry } from './entry';

/** The header a registration's signature comes in. */
export const REGISTRATION_HEADER = 'x-business-messaging-wait';

export type WaitRegistration = { key: string; entry: WaitingEntry };

/** n8n's resume URL: [<base path>]/webhook-waiting/<execution id>, nothing after it. */
const RESUME_PATH = /^(?:\/[^/]+)*\/webhook-waiting\/[^/]+\/?$/;

/**
 * The longest an entry lives: the longest Limit Wait Time. A wait without a limit (n8n's
 * WAIT_INDEFINITELY) keeps waiting, but its entry ends after this: a later answer starts a new
 * execution instead of resuming it. A far-future entry (a year 2999) is never taken.
 */
export const MAX_ENTRY_LIFE_MS = 30 * 86_400_000;
/** What an entry may end beyond MAX_ENTRY_LIFE_MS from now (clocks, a registration's age). */
const ENTRY_LIFE_MARGIN_MS = 15 * 60_000;

/** An entry's end for a wait until `waitTill`: never beyond MAX_ENTRY_LIFE_MS from `nowMs`. */
export function entryExpiry(waitTill: Date, nowMs: number): number {
	return Math.min(waitTill.getTime(), nowMs + MAX_ENTRY_LIFE_MS);
}

/**
 * A registration signed in the future by at most this much (clocks differ) is still taken. Small:
 * a replay of a registration from a clock this far ahead is taken this much longer elsewhere.
 */
const REGISTRATION_FUTURE_TOLERANCE_MS = 10_000;

/** Entries one registration may carry at most (Reply and Wait posts more in several). */
export const MAX_ENTRIES_PER_REGISTRATION = 100;

/** What a trigger takes an entry for: its own n8n, its own account, now. */
export type EntryBounds = { ownOrigin: string; account: string; nowMs: number };

/**
 * Whether the trigger may keep this entry and post an answer to it (a registration, or static data,
 * which a Code node can write too): a waiting-execution URL of this n8n, its own account, live, and
 * ending no later than a wait can.
 */
export function isEntryInBounds(entry: WaitingEntry, bounds: EntryBounds): boolean {
	if (entry.account !== bounds.account || !URL.canParse(entry.resumeUrl)) return false;
	const latest = bounds.nowMs + MAX_ENTRY_LIFE_MS + ENTRY_LIFE_MARGIN_MS;
	if (!(entry.expiresAtMs > bounds.nowMs && entry.expiresAtMs <= latest)) return false;
	const url = new URL(entry.resumeUrl);
	return url.origin === bounds.ownOrigin && RESUME_PATH.test(url.pathname) && url.hash === '';
}

/**
 * Where this n8n's waiting executions are resumed (resume URLs share n8n's webhook base): the trigger's
 * own URL in a webhook request; in trigger(), which has none, the event URL it registered, else the
 * instance's base URL (2.x: the editor's, the same unless WEBHOOK_URL points elsewhere).
 */
export function ownOrigin(this: IWebhookFunctions | ITriggerFunctions): string {
	const url =
		'getNodeWebhookUrl' in this
			? this.getNodeWebhookUrl('default')
			: (this.getWorkflowStaticData('node') as { webhookUrl?: unknown }).webhookUrl;
	const base = typeof url === 'string' ? url : this.getInstanceBaseUrl();
	return URL.canParse(base) ? new URL(base).origin : 'http://invalid';
}

/**
 * The waiting execution's side: posts the entries to the registration URL of the trigger whose event
 * URL is the account's webhook, when that is a trigger of this n8n. Whether the trigger took them;
 * if not, they are in this process's memory and the execution's copy only (fail-safe: the answer
 * then starts a normal execution).
 */
export async function registerWithTrigger(
	this: IExecuteFunctions,
	apiKey: string,
	resumeUrl: string,
	registrations: WaitRegistration[],
): Promise<boolean> {
	const why = (reason: string) => {
		this.logger.info(
			`Business Messaging: Reply and Wait for Answer kept its waiting entry in this process only (${serviceLine(reason)})`,
		);
		return false;
	};
	try {
		const webhook = readWebhookAnswer(
			await apiRequest.call(this, 'GET', WEBHOOK_PATH, {
				context: { operation: 'Reply and Wait for Answer' },
			}),
		);
		if ('unreadable' in webhook)
			return why(`the service's webhook configuration cannot be read: ${webhook.unreadable}`);
		if (!webhook.configured) return why('no webhook is registered for the account');
		const url = webhook.url;
		if (!URL.canParse(url)) return why("the account's webhook is not a URL");
		const target = new URL(url);
		if (target.origin !== new URL(resumeUrl).origin)
			return why("the account's webhook is not this n8n");
		if (!TRIGGER_PATH.test(target.pathname) || target.search !== '')
			return why("the account's webhook is not a Business Messaging Trigger's URL");
		const post = async () => {
			let status = 200;
			for (let at = 0; at < registrations.length; at += MAX_ENTRIES_PER_REGISTRATION) {
				const body = JSON.stringify({
					business_messaging_wait: registrations.slice(at, at + MAX_ENTRIES_PER_REGISTRATION),
					issued_at_ms: Date.now(),
				});
				const response = await postSigned.call(this, registrationUrlOf(url), body, {
					header: REGISTRATION_HEADER,
					apiKey,
					label: WAIT_REGISTRATION_LABEL,
					timeoutMs: REGISTRATION_TIMEOUT_MS,
				});
				if (response.statusCode !== 200) status = response.statusCode;
			}
			return status;
		};
		const status = await post();
		if (status !== 200) return why(`the trigger answered ${status}`);
		// Queue mode: a second post usually reaches another processor, so two hold the entry and a
		// save of either keeps it. Sent later, not awaited.
		void sleep(REGISTRATION_REPEAT_MS)
			.then(post)
			.catch(() => undefined);
		return true;
	} catch (error) {
		return why((error as Error).message);
	}
}

/** When the registration is posted a second time (see registerWithTrigger). */
const REGISTRATION_REPEAT_MS = 1500;
/** Each post of the registration (the trigger stores it and n8n saves its static data before answering). */
const REGISTRATION_TIMEOUT_MS = 4000;

/** Registrations taken in this process, by signature, while they are fresh. */
const registrationsSeen = new ReplayGuard(10_000);

/**
 * The trigger's side: the registrations of a request to its registration URL, verified, fresh and
 * of its own n8n, not yet answered here (forTrigger.ts stores them). Reads no static data.
 */
export async function receiveWaitRegistration(
	this: IWebhookFunctions,
	rawBody: Buffer | undefined,
	signature: string | string[] | undefined,
): Promise<{ registrations: WaitRegistration[] } | { status: 400 | 401; reason: string }> {
	if (!rawBody) return { status: 400, reason: 'the raw request body is not available' };
	const verified = await verifyWithDerivedKey.call(
		this,
		WAIT_REGISTRATION_LABEL,
		rawBody,
		signature,
	);
	if (verified !== true) return { status: 401, reason: verified };
	const body = parseJsonBody(rawBody);
	if (body === undefined) return { status: 400, reason: 'the body is not JSON' };
	// A captured registration replayed later would put back an answered wait: each is taken once, while fresh.
	const nowMs = Date.now();
	const issuedAtMs = isPlainObject(body) ? body.issued_at_ms : undefined;
	if (
		typeof issuedAtMs !== 'number' ||
		nowMs - issuedAtMs > REGISTRATION_MAX_AGE_MS ||
		issuedAtMs - nowMs > REGISTRATION_FUTURE_TOLERANCE_MS
	) {
		return { status: 401, reason: 'the registration is not fresh (replayed, or its clock is off)' };
	}
	const header = String(Array.isArray(signature) ? signature[0] : signature).toLowerCase();
	if (!registrationsSeen.firstSighting(header, issuedAtMs + REGISTRATION_MAX_AGE_MS, nowMs))
		return { status: 401, reason: 'this registration was already received (replay)' };
	const list = isPlainObject(body) ? body.business_messaging_wait : undefined;
	if (!Array.isArray(list) || list.length > MAX_ENTRIES_PER_REGISTRATION)
		return { status: 400, reason: `not a list of at most ${MAX_ENTRIES_PER_REGISTRATION} entries` };
	// Read when the signature was checked: no second credential read.
	const identity = await triggerIdentity.call(this);
	if (typeof identity === 'string') return { status: 401, reason: identity };
	const bounds = { ownOrigin: ownOrigin.call(this), account: identity.account, nowMs };
	const registrations = list.filter(
		(item): item is WaitRegistration =>
			isPlainObject(item) &&
			typeof item.key === 'string' &&
			isWaitingEntry(item.entry) &&
			isEntryInBounds(item.entry, bounds) &&
			// A registration slower than the answer it waits for must not bring the answered wait back.
			!isForgotten(item.key, item.entry),
	);
	return { registrations };
}
