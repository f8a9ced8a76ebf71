/**
 * Reply and Wait for Answer's registration channel (waitingEntries.ts, item 3): the waiting
 * execution posts its entries, signed with a key derived from the API key, to the account's
 * webhook; the Business Messaging Trigger keeps those whose resume URLs are of its own n8n.
 */
import type { IDataObject, IExecuteFunctions, IWebhookFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { WAIT_REGISTRATION_LABEL, verifyWithDerivedKey } from '../credentialKeys';
import { isPlainObject, parseJsonBody } from '../json';
import { ReplayGuard } from '../replayGuard';
import { postSigned } from '../signedPost';
import { apiRequest } from '../transport';
import {
	REGISTRATION_MAX_AGE_MS,
	isForgotten,
	isWaitingEntry,
	keepWaitingEntriesCurrent,
	registerWaiting,
	type WaitingEntry,
} from './waitingEntries';

/** The header a registration's signature comes in, and what tells it from the service's events. */
export const REGISTRATION_HEADER = 'x-business-messaging-wait';

export type WaitRegistration = { key: string; entry: WaitingEntry };

/** n8n's resume URL: [<base path>]/webhook-waiting/<execution id>, nothing after it. */
const RESUME_PATH = /^(?:\/[^/]+)*\/webhook-waiting\/[^/]+\/?$/;
/** A trigger's production URL as n8n builds it: [<base path>]/<webhook id>/webhook. */
export const TRIGGER_PATH =
	/^(?:\/[^/]+)*\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/webhook\/?$/i;

/** A registration signed in the future by at most this much (clocks differ) is still taken. */
const REGISTRATION_FUTURE_TOLERANCE_MS = 60_000;

/**
 * The registrations in a verified body, keeping only well-formed entries whose resume URL is a
 * waiting-execution URL of `ownOrigin` (this n8n): the trigger later posts the contact's answer there.
 */
export function parseRegistrations(body: unknown, ownOrigin: string): WaitRegistration[] {
	const list =
		isPlainObject(body) && Array.isArray(body.business_messaging_wait)
			? body.business_messaging_wait
			: [];
	return list.filter((item): item is WaitRegistration => {
		if (!isPlainObject(item) || typeof item.key !== 'string' || !isWaitingEntry(item.entry))
			return false;
		if (!URL.canParse(item.entry.resumeUrl)) return false;
		const url = new URL(item.entry.resumeUrl);
		return url.origin === ownOrigin && RESUME_PATH.test(url.pathname);
	});
}

/**
 * The waiting execution's side: posts the entries to the account's webhook when it is a Business
 * Messaging Trigger of this n8n (the resume URL's origin). Any failure leaves them in this
 * process's memory only: the answer then starts a normal execution, as the fail-safe says.
 */
export async function registerWithTrigger(
	this: IExecuteFunctions,
	apiKey: string,
	resumeUrl: string,
	registrations: WaitRegistration[],
): Promise<void> {
	const why = (reason: string) =>
		this.logger.info(
			`Business Messaging: Reply and Wait for Answer kept its waiting entry in this process only (${reason})`,
		);
	try {
		const webhook = await apiRequest.call(this, 'GET', '/v1/console/webhook', {
			context: { operation: 'Reply and Wait for Answer' },
		});
		const url =
			isPlainObject(webhook) && webhook.configured === true && typeof webhook.url === 'string'
				? webhook.url
				: undefined;
		if (!url) return why('no webhook is registered for the account');
		const target = new URL(url);
		if (target.origin !== new URL(resumeUrl).origin)
			return why("the account's webhook is not this n8n");
		if (!TRIGGER_PATH.test(target.pathname) || target.search !== '')
			return why("the account's webhook is not a Business Messaging Trigger's URL");
		const post = async () => {
			const body = JSON.stringify({
				business_messaging_wait: registrations,
				issued_at_ms: Date.now(),
			});
			const response = await postSigned.call(this, url, body, {
				header: REGISTRATION_HEADER,
				apiKey,
				label: WAIT_REGISTRATION_LABEL,
				timeoutMs: REGISTRATION_TIMEOUT_MS,
			});
			return response.statusCode;
		};
		const status = await post();
		if (status !== 200) return why(`the trigger answered ${status}`);
		// Behind a balancer (queue mode) the next request usually reaches another webhook processor.
		// Each processor writes the entries it holds into every save it makes, so an entry two of
		// them hold survives a save of the other's at the same instant. Sent later, not awaited.
		void sleep(REGISTRATION_REPEAT_MS)
			.then(post)
			.catch(() => undefined);
	} catch (error) {
		why((error as Error).message);
	}
}

/** When the registration is posted a second time (see registerWithTrigger). */
const REGISTRATION_REPEAT_MS = 1500;
/** Each post of the registration (the trigger stores it and n8n saves its static data before answering). */
const REGISTRATION_TIMEOUT_MS = 4000;

/** Registrations taken in this process, by signature, while they are fresh. */
const registrationsSeen = new ReplayGuard(10_000);

/**
 * The trigger's side: a registration (REGISTRATION_HEADER) is stored in this workflow's static
 * data, which n8n loaded for this request and saves after it. Starts no execution; a refusal is
 * answered (and logged, within the bound on rejections) by the caller.
 */
export async function receiveWaitRegistration(
	this: IWebhookFunctions,
	rawBody: Buffer | undefined,
	signature: string | string[] | undefined,
): Promise<{ registered: number } | { status: 400 | 401; reason: string }> {
	if (!rawBody) return { status: 400, reason: 'the raw request body is not available' };
	const verified = await verifyWithDerivedKey.call(
		this,
		WAIT_REGISTRATION_LABEL,
		rawBody,
		signature,
	);
	if (verified !== true) return { status: 401, reason: verified };
	const body = parseJsonBody(rawBody)?.json;
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
	const ownOrigin = new URL(this.getNodeWebhookUrl('default') ?? 'http://invalid').origin;
	const registrations = parseRegistrations(body, ownOrigin);
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	const home = this.getWorkflow().id ?? undefined;
	// A registration slower than the answer it waits for must not bring the answered wait back.
	const fresh = registrations.filter(({ key, entry }) => !isForgotten(key, entry));
	for (const { key, entry } of fresh) registerWaiting(staticData, key, { ...entry, home });
	keepWaitingEntriesCurrent(staticData, home);
	return { registered: fresh.length };
}
