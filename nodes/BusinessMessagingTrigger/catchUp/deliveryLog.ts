/** The webhook log; a log not naming each message (CONTRACT L2) is reported, never guessed. */
import type { IDataObject } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { bodyAsText } from '../../shared/serviceText';
import { serviceLine } from '../../shared/redact';
import { MESSAGE_EVENTS, READ_BOUNDS } from '../../shared/history';
import { isPlainObject } from '../../shared/json';
import { readPages } from '../../shared/pagination';
import { recordCreatedAt } from '../../shared/storedRecord';
import type { ApiContext } from '../../shared/transport';
import { sameUrl } from '../registration/decision';

export interface WebhookAttempt {
	success: boolean;
	reason: string | null;
}

const LOG_PATH = '/v1/logs';

/** An entry's time in ms, read as a stored message's (storedRecord.ts); NaN if unsaid. */
export function entryTimeMs(entry: IDataObject): number {
	return Date.parse(recordCreatedAt(entry) ?? '');
}

/** Pure: one log entry; `unnamed`: no `wa_message_id`, nor an `event` saying it is no message. */
export function readEntry(
	entry: IDataObject,
): { kind: 'message'; id: string } | { kind: 'other' } | { kind: 'unnamed' } {
	if (typeof entry.event === 'string' && !(MESSAGE_EVENTS as string[]).includes(entry.event))
		return { kind: 'other' };
	const nested = isPlainObject(entry.data) ? entry.data.wa_message_id : undefined;
	const id = [entry.wa_message_id, nested].find((value) => typeof value === 'string' && value);
	return id ? { kind: 'message', id: id as string } : { kind: 'unnamed' };
}

/** The log's pages to `onPage` until it says stop; an answer that is not a list throws. */
async function readLogPages(
	this: ApiContext,
	limit: number,
	maxPages: number,
	operation: string,
	onPage: (entries: IDataObject[]) => boolean,
): Promise<{ complete: boolean }> {
	let unreadable: { body: unknown } | undefined;
	const read = await readPages.call(
		this,
		LOG_PATH,
		{ limit, category: 'webhook' },
		{ operation },
		(page, body) => {
			if (page) return onPage(page.entries.filter(isPlainObject));
			unreadable = { body };
			return false;
		},
		{ maxPages },
	);
	if (!unreadable) return read;
	const text = bodyAsText(unreadable.body);
	throw new NodeApiError(
		this.getNode(),
		{ body: text },
		{
			message: `${operation}: the service's webhook log (GET ${LOG_PATH}?category=webhook) is not a list this node can read, so missed messages cannot be found; nothing was recovered. Turn off Recover Missed Messages, or use a Business Messaging Polling Trigger. The body: ${text.slice(0, 200)}`,
			description: `The body as it came: ${text}`,
		},
	);
}

/** Deliveries to `ourUrl` (all without it) since `sinceMs`, by message id; a success wins. */
export async function readWebhookLog(
	this: ApiContext,
	sinceMs: number,
	ourUrl: string | undefined,
	operation: string,
): Promise<{
	attempts: Map<string, WebhookAttempt>;
	identified: boolean;
	complete: boolean;
	reachedMs: number;
}> {
	const attempts = new Map<string, WebhookAttempt>();
	let reachedMs = Number.POSITIVE_INFINITY;
	let identified = true;
	const { pageSize, maxPages } = READ_BOUNDS.log;
	const read = await readLogPages.call(this, pageSize, maxPages, operation, (entries) => {
		const times = entries.map(entryTimeMs);
		// Only a list newest first may stop at its first older entry (oldest first: read on).
		const newestFirst = times.length < 2 || !(times[0] < times[times.length - 1]);
		let older = false;
		entries.forEach((entry, index) => {
			const at = times[index];
			if (at < sinceMs) older = true;
			if (at < reachedMs) reachedMs = at;
			const said = readEntry(entry);
			if (said.kind === 'other') return;
			if (said.kind === 'unnamed') return void (identified = false);
			if (ourUrl !== undefined && typeof entry.url === 'string' && !sameUrl(entry.url, ourUrl))
				return;
			const success = entry.success === true;
			if (attempts.get(said.id)?.success) return;
			// Written into the recovered item (delivery_failure): one short printable line.
			const reason = success || typeof entry.reason !== 'string' ? null : serviceLine(entry.reason);
			attempts.set(said.id, { success, reason });
		});
		return identified && !(older && newestFirst);
	});
	return { attempts, identified, complete: read.complete, reachedMs };
}

export async function isWebhookLogUnnamed(this: ApiContext, operation: string): Promise<boolean> {
	let unnamed = false;
	await readLogPages.call(this, 20, 1, operation, (entries) => {
		unnamed = entries.some((entry) => readEntry(entry).kind === 'unnamed');
		return false;
	});
	return unnamed;
}

export const UNNAMED_LOG_NOTICE =
	"the service's webhook delivery log does not say which message each delivery carried, so the catch-up cannot tell a missed message from a delivered one: it recovers nothing (no message runs twice, but a message n8n did not receive, while it was down or refused, is not run). " +
	'For a read of every stored message that needs no log, use a Business Messaging Polling Trigger in this workflow instead of this trigger';
