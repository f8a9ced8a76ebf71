/** The waiting execution posts its signed entries to the registration URL of the trigger holding the account's webhook. */
import type { IExecuteFunctions, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { WAIT_REGISTRATION_LABEL } from '../credentialKeys';
import { serviceLine } from '../redact';
import { postSigned } from '../signedPost';
import { apiRequest } from '../transport';
import { TRIGGER_PATH, registrationUrlOf } from '../triggerUrls';
import { WEBHOOK_PATH, readWebhookAnswer } from '../webhookAnswer';
import { type WaitingEntry } from './entry';

export const REGISTRATION_HEADER = 'x-business-messaging-wait';

export type WaitRegistration = { key: string; entry: WaitingEntry };

/** n8n's resume URL: [<base path>]/webhook-waiting/<execution id>, nothing after it. */
const RESUME_PATH = /^(?:\/[^/]+)*\/webhook-waiting\/[^/]+\/?$/;

/** The longest Limit Wait Time: a wait without a limit keeps waiting, but a later answer starts a new execution. */
export const MAX_ENTRY_LIFE_MS = 30 * 86_400_000;
/** What an entry may end beyond MAX_ENTRY_LIFE_MS from now (clocks, a registration's age). */
const ENTRY_LIFE_MARGIN_MS = 15 * 60_000;

export function entryExpiry(waitTill: Date, nowMs: number): number {
	return Math.min(waitTill.getTime(), nowMs + MAX_ENTRY_LIFE_MS);
}

/** Entries one registration may carry at most (Reply and Wait posts more in several). */
export const MAX_ENTRIES_PER_REGISTRATION = 100;

export type EntryBounds = { ownOrigin: string; account: string; nowMs: number };

/** Whether the trigger may post an answer to this entry (static data is anyone's): this n8n's resume URL, its account, live. */
export function isEntryInBounds(entry: WaitingEntry, bounds: EntryBounds): boolean {
	if (entry.account !== bounds.account || !URL.canParse(entry.resumeUrl)) return false;
	const latest = bounds.nowMs + MAX_ENTRY_LIFE_MS + ENTRY_LIFE_MARGIN_MS;
	if (!(entry.expiresAtMs > bounds.nowMs && entry.expiresAtMs <= latest)) return false;
	const url = new URL(entry.resumeUrl);
	return url.origin === bounds.ownOrigin && RESUME_PATH.test(url.pathname) && url.hash === '';
}

/**
 * Where this n8n's waiting executions are resumed (resume URLs share the webhook base): the trigger's
 * URL; in trigger(), which has none, the event URL it registered, else the instance's base URL.
 */
export function ownOrigin(this: IWebhookFunctions | ITriggerFunctions): string {
	const url =
		'getNodeWebhookUrl' in this
			? this.getNodeWebhookUrl('default')
			: (this.getWorkflowStaticData('node') as { webhookUrl?: unknown }).webhookUrl;
	const base = typeof url === 'string' ? url : this.getInstanceBaseUrl();
	return URL.canParse(base) ? new URL(base).origin : 'http://invalid';
}

/** The waiting execution's side; false: kept in this process and the execution's copy only (the answer then starts anew). */
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
		// Queue mode: a second post usually reaches another processor, so a save of either keeps it.
		void sleep(REGISTRATION_REPEAT_MS)
			.then(post)
			.catch(() => undefined);
		return true;
	} catch (error) {
		return why((error as Error).message);
	}
}

const REGISTRATION_REPEAT_MS = 1500;
/** Each post (the trigger stores it and n8n saves its static data before answering). */
const REGISTRATION_TIMEOUT_MS = 4000;
