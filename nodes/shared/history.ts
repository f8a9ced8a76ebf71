/**
 * Reading what the service keeps: the stored inbound and echo messages (GET /v1/messages/inbound)
 * and the log of webhook deliveries (GET /v1/logs?category=webhook). Both are read newest first,
 * page by page, only as far back as needed (CONTRACT I4, L1, L2). Used by the Polling Trigger and
 * by the Business Messaging Trigger's catch-up.
 */
import type { IDataObject, INodeExecutionData, INodePropertyOptions } from 'n8n-workflow';

import { MAX_PAGES, readPagesFrom } from './pagination';
import type { ApiContext } from './transport';
import { isPlainObject } from './json';
import { withReplyWindow } from './replyWindow';
import { reachesWatermark, type Watermark } from './watermark';

/**
 * Records a page and pages a read at most, for the stored messages and for the webhook log.
 * One place, so that a test can make them small and show what happens beyond the bound.
 */
export const READ_BOUNDS = {
	history: { pageSize: 100, maxPages: MAX_PAGES },
	log: { pageSize: 100, maxPages: MAX_PAGES },
};

/** The stored message events and the `direction` that selects them. */
export const DIRECTIONS = { 'message.inbound': 'in', 'message.echo': 'echo' } as const;
export type MessageEvent = keyof typeof DIRECTIONS;
export const MESSAGE_EVENTS = Object.keys(DIRECTIONS) as MessageEvent[];

/**
 * Stored messages of one direction, newest first, back to the watermark (or one page without
 * one), starting at `cursor` when given (where a bounded read stopped). `complete` is false
 * when the bound stopped the reading before the watermark; `cursor` is then where it stopped.
 */
export async function readHistory(
	this: ApiContext,
	event: MessageEvent,
	watermark: Watermark | undefined,
	operation: string,
	cursor?: string,
): Promise<{ records: IDataObject[]; complete: boolean; cursor?: string }> {
	const records: IDataObject[] = [];
	const qs: IDataObject = {
		limit: READ_BOUNDS.history.pageSize,
		...(event === 'message.echo' ? { direction: 'echo' } : {}),
	};
	const read = await readPagesFrom.call(
		this,
		'/v1/messages/inbound',
		qs,
		{ operation, scope: 'messages:read' },
		(page) => {
			// Anything but the one shape carries no records we can order.
			if (!page) return false;
			const pageRecords = page.entries
				.filter(isPlainObject)
				.filter(
					(record) => record.direction === undefined || record.direction === DIRECTIONS[event],
				);
			records.push(...pageRecords);
			return watermark !== undefined && !reachesWatermark(pageRecords, watermark);
		},
		{ cursor, maxPages: READ_BOUNDS.history.maxPages },
	);
	return { records, ...read };
}

/** What the webhook log says about the delivery of one message's event. */
export interface WebhookAttempt {
	success: boolean;
	reason: string | null;
}

/**
 * Deliveries of inbound and echo events logged since `sinceMs`, by the message's
 * `wa_message_id` (CONTRACT L2). A success anywhere wins: the workflow got the message.
 * `identified` is false when the log's entries do not name their message, so that nothing
 * can be told apart; `complete` false when the bound stopped it before `sinceMs` (what is
 * older was not read, so a message delivered then looks undelivered). Only deliveries to a URL
 * `counts` accepts count when it is given (the account's webhook may have pointed elsewhere
 * while this workflow was inactive).
 */
export async function readWebhookLog(
	this: ApiContext,
	sinceMs: number,
	counts: ((url: string) => boolean) | undefined,
	operation: string,
): Promise<{
	attempts: Map<string, WebhookAttempt>;
	identified: boolean;
	complete: boolean;
	/** The oldest instant the read got to. */
	reachedMs: number;
}> {
	const attempts = new Map<string, WebhookAttempt>();
	let reachedMs = Number.POSITIVE_INFINITY;
	let identified = true;
	const qs = { limit: READ_BOUNDS.log.pageSize, category: 'webhook' };
	const read = await readPagesFrom.call(
		this,
		'/v1/logs',
		qs,
		{ operation },
		(page) => {
			if (!page) {
				identified = false;
				return false;
			}
			let older = false;
			for (const entry of page.entries.filter(isPlainObject)) {
				const at = typeof entry.created_at === 'string' ? Date.parse(entry.created_at) : Number.NaN;
				if (at < sinceMs) older = true;
				if (at < reachedMs) reachedMs = at;
				if (entry.event !== 'message.inbound' && entry.event !== 'message.echo') continue;
				if (typeof entry.wa_message_id !== 'string') {
					identified = false;
					continue;
				}
				if (counts !== undefined && typeof entry.url === 'string' && !counts(entry.url)) continue;
				const success = entry.success === true;
				if (attempts.get(entry.wa_message_id)?.success) continue;
				const reason = success ? null : typeof entry.reason === 'string' ? entry.reason : null;
				attempts.set(entry.wa_message_id, { success, reason });
			}
			return !older;
		},
		{ maxPages: READ_BOUNDS.log.maxPages },
	);
	return { attempts, identified, complete: read.complete, reachedMs };
}

/** A stored message as the item the webhook emits: `{event, data, timestamp}` (+ reply_window_closes_at for inbound) plus how it came. */
export function storedMessageItem(
	event: MessageEvent,
	record: IDataObject,
	how: IDataObject,
): INodeExecutionData {
	return {
		json: withReplyWindow({ event, data: record, timestamp: record.created_at ?? null, ...how }),
	};
}

/** The two events the service also stores (so the Polling Trigger offers them too). */
export const MESSAGE_EVENT_OPTIONS: INodePropertyOptions[] = [
	{
		name: 'Echo',
		value: 'message.echo',
		description: 'Sent from the business app, not the API. Leave off for auto-replies.',
	},
	{
		name: 'Inbound Message',
		value: 'message.inbound',
		description: 'A message an end user sent to one of your numbers',
	},
];
