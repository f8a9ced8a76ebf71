import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import { apiRequest, type RequestContext } from '../../shared/transport';
import { isPlainObject } from '../../shared/json';
import { requirePositiveInteger } from '../../shared/fields';
import { asJsonObject } from './output';

/** Safety bound on pages followed for one item. */
const MAX_PAGES = 1000;

/**
 * One list answer in the shape the sandbox's CONTRACT.md fixed (I4): `{data: [...], has_more,
 * next_cursor}`. An answer without a `data` list is not guessed at: it is one record, as it came.
 */
export function splitPage(body: unknown): { records: IDataObject[]; cursor?: string } {
	if (!isPlainObject(body) || !Array.isArray(body.data)) {
		return { records: body === undefined || body === null || body === '' ? [] : [asJsonObject(body)] };
	}
	const cursor = body.has_more !== false && typeof body.next_cursor === 'string' && body.next_cursor !== '' ? body.next_cursor : undefined;
	return { records: body.data.map(asJsonObject), cursor };
}

/**
 * GET a list endpoint for one item, by its Return All and Limit fields: one page, or every
 * page following `next_cursor` (sent back as `cursor`), stopping as soon as the limit is reached.
 */
export async function getList(
	this: IExecuteFunctions,
	itemIndex: number,
	path: string,
	qs: IDataObject,
	context: RequestContext,
	/** Keeps only the records it accepts (applied before the limit). */
	keep: (record: IDataObject) => boolean = () => true,
): Promise<IDataObject[]> {
	const returnAll = this.getNodeParameter('returnAll', itemIndex, false) === true;
	const limit = returnAll
		? Infinity
		: requirePositiveInteger(this.getNode(), this.getNodeParameter('limit', itemIndex, 50), 'Limit', itemIndex);
	const records: IDataObject[] = [];
	const seen = new Set<string>();
	let cursor: string | undefined;
	for (let page = 0; page < MAX_PAGES; page++) {
		const body = await apiRequest.call(this, 'GET', path, { qs: cursor === undefined ? qs : { ...qs, cursor }, context });
		const split = splitPage(body);
		records.push(...split.records.filter(keep));
		if (records.length >= limit || !split.cursor || split.records.length === 0 || seen.has(split.cursor)) break;
		seen.add(split.cursor);
		cursor = split.cursor;
	}
	return records.slice(0, limit);
}
