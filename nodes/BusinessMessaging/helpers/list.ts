import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import { requirePositiveInteger } from '../../shared/fields';
import { listPage, readPages } from '../../shared/pagination';
import type { RequestContext } from '../../shared/transport';
import { asJsonObject } from './output';

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

/** GET a list for one item by its Return All and Limit fields, stopping at the limit. */
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
		: requirePositiveInteger(
				this.getNode(),
				this.getNodeParameter('limit', itemIndex, 50),
				'Limit',
				itemIndex,
			);
	const records: IDataObject[] = [];
	await readPages.call(this, path, qs, context, (_page, body) => {
		const split = splitPage(body);
		records.push(...split.records.filter(keep));
		return records.length < limit && split.cursor !== undefined && split.records.length > 0;
	});
	return records.slice(0, limit);
}
