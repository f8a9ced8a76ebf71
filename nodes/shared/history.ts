/**
 * Reading what the service keeps: the stored inbound and echo messages (GET /v1/messages/inbound)
 * and the log of webhook deliveries (GET /v1/logs?category=webhook). Both are read newest first,
 * page by page, only as far back as needed (CONTRACT I4, L1, L2). Used by the Polling Trigger and
 * by the Business Messaging Trigger's catch-up.
 */
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import { apiRequest, type ApiContext } from './transport';
import { isPlainObject } from './json';
import { withReplyWindow } from './replyWindow';
import { reachesWatermark, type Watermark } from './watermark';

const PAGE_SIZE = 100;
/** Pages read per list and run at most (100 000 entries): a bound, not an expected size. */
const MAX_PAGES = 1000;

/** The stored message events and the `direction` that selects them. */
export const DIRECTIONS = { 'message.inbound': 'in', 'message.echo': 'echo' } as const;
export type MessageEvent = keyof typeof DIRECTIONS;
export const MESSAGE_EVENTS = Object.keys(DIRECTIONS) as MessageEvent[];

/** One page of a list in the one shape the nodes read (CONTRACT I4), or undefined for any other answer. */
async function readPage(this: ApiContext, path: string, qs: IDataObject, operation: string, scope?: string) {
	const body = await apiRequest.call(this, 'GET', path, { qs: { limit: PAGE_SIZE, ...qs }, context: { operation, scope } });
	if (!isPlainObject(body) || !Array.isArray(body.data)) return undefined;
	const next = body.has_more !== false && typeof body.next_cursor === 'string' ? body.next_cursor : undefined;
	return { entries: body.data.filter(isPlainObject), next };
}

/**
 * Stored messages of one direction, newest first, back to the watermark (or one page without
 * one). `complete` is false when the bound stopped the reading before the watermark.
 */
export async function readHistory(
	this: ApiContext,
	event: MessageEvent,
	watermark: Watermark | undefined,
	operation: string,
): Promise<{ records: IDataObject[]; complete: boolean }> {
	const records: IDataObject[] = [];
	let cursor: string | undefined;
	for (let page = 0; page < MAX_PAGES; page++) {
		const qs: IDataObject = { ...(event === 'message.echo' ? { direction: 'echo' } : {}), ...(cursor ? { cursor } : {}) };
		const read = await readPage.call(this, '/v1/messages/inbound', qs, operation, 'messages:read');
		// Anything but the one shape carries no records we can order.
		if (!read) return { records, complete: true };
		const pageRecords = read.entries.filter((record) => record.direction === undefined || record.direction === DIRECTIONS[event]);
		records.push(...pageRecords);
		if (!watermark || !read.next || reachesWatermark(pageRecords, watermark)) return { records, complete: true };
		cursor = read.next;
	}
	return { records, complete: false };
}

/** What the delivery log says about one message. */
export interface Delivery {
	success: boolean;
	reason: string | null;
}

/**
 * Deliveries of inbound and echo events logged since `sinceMs`, by the message's
 * `wa_message_id` (CONTRACT L2). A success anywhere wins: the workflow got the message.
 * `identified` is false when the log's entries do not name their message, so that nothing
 * can be told apart. Only deliveries to `url` count when one is given (the account's
 * webhook may have pointed elsewhere while this workflow was inactive).
 */
export async function readDeliveries(
	this: ApiContext,
	sinceMs: number,
	url: string | undefined,
	operation: string,
): Promise<{ deliveries: Map<string, Delivery>; identified: boolean; complete: boolean }> {
	const deliveries = new Map<string, Delivery>();
	let identified = true;
	let cursor: string | undefined;
	for (let page = 0; page < MAX_PAGES; page++) {
		const read = await readPage.call(this, '/v1/logs', { category: 'webhook', ...(cursor ? { cursor } : {}) }, operation);
		if (!read) return { deliveries, identified: false, complete: true };
		let older = false;
		for (const entry of read.entries) {
			const at = typeof entry.created_at === 'string' ? Date.parse(entry.created_at) : Number.NaN;
			if (at < sinceMs) older = true;
			if (entry.event !== 'message.inbound' && entry.event !== 'message.echo') continue;
			if (typeof entry.wa_message_id !== 'string') {
				identified = false;
				continue;
			}
			if (url !== undefined && typeof entry.url === 'string' && entry.url !== url) continue;
			const success = entry.success === true;
			const known = deliveries.get(entry.wa_message_id);
			if (known?.success) continue;
			deliveries.set(entry.wa_message_id, { success, reason: success ? null : typeof entry.reason === 'string' ? entry.reason : null });
		}
		if (older || !read.next) return { deliveries, identified, complete: true };
		cursor = read.next;
	}
	return { deliveries, identified, complete: false };
}

/** A stored message as the item the webhook emits: `{event, data, timestamp}` (+ reply_window_closes_at for inbound) plus how it came. */
export function storedMessageItem(event: MessageEvent, record: IDataObject, how: IDataObject): INodeExecutionData {
	return { json: withReplyWindow({ event, data: record, timestamp: record.created_at ?? null, ...how }) };
}
