/** The service's stored messages, newest first (CONTRACT I4, I5). */
import type { IDataObject, INodeExecutionData, INodePropertyOptions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { LIST_SHAPES, MAX_PAGES, readPages, type NextPage } from './pagination';
import { recordCreatedAt, withCanonicalFields } from './storedRecord';
import type { ApiContext } from './transport';
import { isPlainObject, shortened } from './json';
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

const HISTORY_PATH = '/v1/messages/inbound';

/** An inbound message event's contact and number (trimmed), id and time; undefined for any other event. */
export function inboundParts(json: IDataObject) {
	if (json.event !== 'message.inbound') return undefined;
	const data = isPlainObject(json.data) ? json.data : {};
	const text = (value: unknown) => (typeof value === 'string' ? value : '');
	const [contact, number, id] = [data.from, data.number, data.wa_message_id].map(text);
	const at = typeof json.timestamp === 'string' ? json.timestamp : undefined;
	return { contact: contact.trim(), number: number.trim(), id, at };
}

/**
 * Stored messages of one direction, newest first, back to the watermark (or one page), canonical
 * (storedRecord.ts). `complete` false: the bound stopped it, at `next` (none: no way on). An answer
 * that is not a list, or a record without a readable time, throws (they cannot be ordered).
 */
export async function readHistory(
	this: ApiContext,
	event: MessageEvent,
	watermark: Watermark | undefined,
	operation: string,
	next?: NextPage,
): Promise<{ records: IDataObject[]; complete: boolean; next?: NextPage }> {
	const records: IDataObject[] = [];
	const qs: IDataObject = {
		limit: READ_BOUNDS.history.pageSize,
		...(event === 'message.echo' ? { direction: 'echo' } : {}),
	};
	let problem: string | undefined;
	const read = await readPages.call(
		this,
		HISTORY_PATH,
		qs,
		{ operation, scope: 'messages:read' },
		(page, body) => {
			if (!page) {
				problem = `the answer of GET ${HISTORY_PATH} is not a list this node reads (${LIST_SHAPES}); it was: ${shortened(body)}`;
				return false;
			}
			const pageRecords = page.entries
				.filter(isPlainObject)
				.filter(
					(record) => record.direction === undefined || record.direction === DIRECTIONS[event],
				)
				.map(withCanonicalFields);
			const untimed = pageRecords.find((record) => recordCreatedAt(record) === undefined);
			if (untimed) {
				problem = `a stored message of GET ${HISTORY_PATH} has no readable time (created_at or created: ISO 8601, or unix seconds or milliseconds), so messages cannot be ordered; it was: ${shortened(untimed)}`;
				return false;
			}
			records.push(...pageRecords);
			return watermark !== undefined && !reachesWatermark(pageRecords, watermark);
		},
		{ next, maxPages: READ_BOUNDS.history.maxPages },
	);
	// Nothing was read: a reader never takes an answer it cannot read for an empty list.
	if (problem !== undefined) {
		const message = `${operation}: ${problem}. Nothing was read, and nothing is skipped: the next read tries again. If the credential's Base URL is the messaging service, it answers in a shape this version does not read: report it with this answer.`;
		throw new NodeOperationError(this.getNode(), message, { description: message });
	}
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
