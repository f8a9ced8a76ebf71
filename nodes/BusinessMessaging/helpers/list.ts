import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import { apiRequest, type RequestContext } from '../../shared/transport';

/** Keys under which a list answer may carry its records (the spec does not show the shape). */
const RECORD_KEYS = ['data', 'items', 'results', 'records', 'messages', 'logs', 'entries', 'keys'];
/** Keys under which a list answer may carry the cursor of the next page. */
const CURSOR_KEYS = ['next_cursor', 'nextCursor', 'next_page_token', 'nextPageToken'];
const CURSOR_HOLDERS = ['paging', 'pagination', 'meta'];

/** Safety bound on pages followed for one item. */
export const MAX_PAGES = 1000;

export interface Page {
	records: IDataObject[];
	cursor?: string;
}

function isObject(value: unknown): value is IDataObject {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function findCursor(body: IDataObject): string | undefined {
	if (body.has_more === false || body.hasMore === false) return undefined;
	const holders = [body, ...CURSOR_HOLDERS.map((key) => body[key]).filter(isObject)];
	for (const holder of holders) {
		for (const key of CURSOR_KEYS) {
			const value = holder[key];
			if (typeof value === 'string' && value !== '') return value;
			if (typeof value === 'number') return String(value);
		}
		const next = holder.next;
		if (typeof next === 'string' && next !== '' && !/^https?:/i.test(next)) return next;
	}
	return undefined;
}

/**
 * Records and next cursor of one list answer: a plain array, or an object carrying the
 * array under a usual key (or its only array), with an optional cursor. An object with
 * no array at all is taken as a single record.
 */
export function splitPage(body: unknown): Page {
	if (Array.isArray(body)) return { records: body.map(asRecord) };
	if (!isObject(body)) return { records: body === undefined || body === null || body === '' ? [] : [asRecord(body)] };
	let list: unknown[] | undefined;
	for (const key of RECORD_KEYS) {
		if (Array.isArray(body[key])) {
			list = body[key] as unknown[];
			break;
		}
	}
	if (!list) {
		const arrays = Object.values(body).filter(Array.isArray);
		if (arrays.length === 1) list = arrays[0] as unknown[];
	}
	if (!list) return { records: [body] };
	return { records: list.map(asRecord), cursor: findCursor(body) };
}

function asRecord(value: unknown): IDataObject {
	return isObject(value) ? value : { value: value as IDataObject[keyof IDataObject] };
}

/**
 * GET a list endpoint: one page, or every page when Return All is on, following
 * whatever cursor the answer carries (sent back as `cursor`). With a limit, stops as
 * soon as enough records are in and cuts the rest.
 */
export async function getList(
	this: IExecuteFunctions,
	path: string,
	qs: IDataObject,
	options: {
		returnAll: boolean;
		limit?: number;
		context: RequestContext;
		/** Keeps only the records it accepts (applied before the limit). */
		keep?: (record: IDataObject) => boolean;
	},
): Promise<IDataObject[]> {
	const records: IDataObject[] = [];
	const seen = new Set<string>();
	let cursor: string | undefined;
	for (let page = 0; page < MAX_PAGES; page++) {
		const query = cursor === undefined ? qs : { ...qs, cursor };
		const body = await apiRequest.call(this, 'GET', path, { qs: query, context: options.context });
		const split = splitPage(body);
		records.push(...(options.keep ? split.records.filter(options.keep) : split.records));
		if (!options.returnAll && options.limit !== undefined && records.length >= options.limit) break;
		if (split.cursor === undefined || split.records.length === 0 || seen.has(split.cursor)) break;
		seen.add(split.cursor);
		cursor = split.cursor;
	}
	return !options.returnAll && options.limit !== undefined ? records.slice(0, options.limit) : records;
}
