/** The service's stored messages, newest first (CONTRACT I4, I5). */
import type { IDataObject, INodeExecutionData, INodePropertyOptions } from 'n8n-workflow';

import { MAX_PAGES, readPages } from './pagination';
import type { ApiContext } from './transport';
import { isPlainObject } from './json';
import { withReplyWindow } from './replyWindow';
import { reachesWatermark, type Watermark } from './watermark';

/** Page size and pages per read; one place so that a test can make them small. */
export const READ_BOUNDS = {
	history: { pageSize: 100, maxPages: MAX_PAGES },
	log: { pageSize: 100, maxPages: MAX_PAGES },
};

export const DIRECTIONS = { 'message.inbound': 'in', 'message.echo': 'echo' } as const;
export type MessageEvent = keyof typeof DIRECTIONS;
export const MESSAGE_EVENTS = Object.keys(DIRECTIONS) as MessageEvent[];

/**
 * Stored messages of one direction, newest first, back to the watermark (or one page), from
 * `cursor` if given. `complete` false: the bound stopped it, at `cursor`.
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
	const read = await readPages.call(
		this,
		'/v1/messages/inbound',
		qs,
		{ operation, scope: 'messages:read' },
		(page) => {
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

/** A stored message as the item the webhook emits, plus how it came. */
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
