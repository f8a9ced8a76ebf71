import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { passThroughQuery, requirePositiveInteger } from '../../shared/fields';
import { listPage, readPages } from '../../shared/pagination';
import type { RequestContext } from '../../shared/transport';
import { asJsonObject, pick } from './output';

/** One list answer as output records; an answer without a `data` list is one record as it came. */
export function splitPage(body: unknown): { records: IDataObject[]; cursor?: string } {
	const page = listPage(body);
	if (!page) {
		return {
			records: body === undefined || body === null || body === '' ? [] : [asJsonObject(body)],
		};
	}
	return { records: page.entries.map(asJsonObject), cursor: page.cursor };
}

/**
 * GET a list for one item by its Return All, Limit, Simplify and Additional Query Parameters
 * fields, stopping at the limit: one output item per record.
 */
export async function getList(
	this: IExecuteFunctions,
	itemIndex: number,
	path: string,
	/** What Simplify keeps of each record. */
	simpleFields: readonly string[],
	/** The query the node's own fields set, and every name they may set (cursor is the loop's). */
	query: { qs: IDataObject; reserved: readonly string[] },
	context: RequestContext,
	/** Keeps only the records it accepts (applied before the limit). */
	keep: (record: IDataObject) => boolean = () => true,
): Promise<INodeExecutionData[]> {
	const returnAll = this.getNodeParameter('returnAll', itemIndex, false) === true;
	const limit = returnAll
		? Infinity
		: requirePositiveInteger(
				this.getNode(),
				this.getNodeParameter('limit', itemIndex, 50),
				'Limit',
				itemIndex,
			);
	const added = this.getNodeParameter('queryParameters', itemIndex, {});
	const reserved = [...query.reserved, 'cursor'];
	const qs = { ...query.qs, ...passThroughQuery(this.getNode(), added, reserved, itemIndex) };
	const records: IDataObject[] = [];
	await readPages.call(this, path, qs, context, (_page, body) => {
		const split = splitPage(body);
		records.push(...split.records.filter(keep));
		return records.length < limit && split.cursor !== undefined && split.records.length > 0;
	});
	const simple = this.getNodeParameter('simple', itemIndex, false) === true;
	return records
		.slice(0, limit)
		.map((json) => ({ json: simple ? pick(json, simpleFields) : json }));
}
