import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { RequestContext } from '../../shared/errors';
import { passThroughQuery, requirePositiveInteger } from '../../shared/fields';
import { shortened } from '../../shared/json';
import { LIST_SHAPES, readPages } from '../../shared/pagination';
import { asJsonObject, pick } from './output';

/** What a Get Many does with its records beyond the page: read, then keep (before the limit). */
interface RecordRules {
	/** The record as output (and as Simplify reads it). */
	read?: (record: IDataObject) => IDataObject;
	/** Our own side of filters the service may ignore: a record it refuses is never output. */
	keep?: (record: IDataObject) => boolean;
	/** Filters are set: an answer that is not a list fails rather than being output as it came. */
	filtered?: boolean;
}

/** One item's Get Many by its list fields, paging up to Limit (within the page bound). */
export async function getList(
	this: IExecuteFunctions,
	itemIndex: number,
	path: string,
	simpleFields: readonly string[],
	/** The query the node's own fields set, and every name they may set (cursor is the loop's). */
	query: { qs: IDataObject; reserved: readonly string[] },
	context: RequestContext,
	rules: RecordRules = {},
): Promise<INodeExecutionData[]> {
	const { read = (record: IDataObject) => record, keep = () => true, filtered = false } = rules;
	const returnAll = this.getNodeParameter('returnAll', itemIndex, false) === true;
	const limit = returnAll
		? Infinity
		: requirePositiveInteger(
				this.getNode(),
				this.getNodeParameter('limit', itemIndex, 50),
				'Limit',
				itemIndex,
			);
	const simple = this.getNodeParameter('simple', itemIndex, false) === true;
	const added = this.getNodeParameter('queryParameters', itemIndex, {});
	const reserved = [...query.reserved, 'cursor', 'page'];
	const qs = { ...query.qs, ...passThroughQuery(this.getNode(), added, reserved, itemIndex) };
	const records: IDataObject[] = [];
	let unreadable: { body: unknown } | undefined;
	const { complete } = await readPages.call(this, path, qs, context, (page, body) => {
		if (!page) {
			unreadable = { body };
			return false;
		}
		records.push(...page.entries.map(asJsonObject).map(read).filter(keep));
		return records.length < limit && page.entries.length > 0;
	});
	if (!complete && records.length < limit) {
		this.logger.warn(
			`${context.operation}: the service's list answer gave no way to its next page (or the page bound was reached); ${records.length} record(s) read`,
		);
	}
	if (unreadable) {
		const { body } = unreadable;
		// Filters the service may ignore, or Simplify: an unknown body must not reach the output whole.
		if (filtered || simple) {
			const why = filtered
				? 'the filters cannot be applied to it'
				: 'Simplify cannot read it (turn Simplify off to get the answer as it came)';
			throw new NodeOperationError(
				this.getNode(),
				`${context.operation}: the answer of GET ${path} is not a list this node reads (${LIST_SHAPES}), so ${why}`,
				{ description: `The answer was: ${shortened(body, 500)}`, itemIndex },
			);
		}
		if (body !== undefined && body !== null && body !== '') records.push(asJsonObject(body));
	}
	return records
		.slice(0, limit)
		.map((json) => ({ json: simple ? pick(json, simpleFields) : json }));
}
