import type { IDataObject, INode } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

/**
 * The pairs of an "Additional Query Parameters" collection as a query object. A name
 * that a field of the node already sets is refused, so a pass-through pair cannot
 * silently override the operation's own parameters.
 */
export function passThroughQuery(
	node: INode,
	collection: unknown,
	reserved: readonly string[],
	itemIndex: number,
): IDataObject {
	const qs: IDataObject = {};
	const pairs = (collection as { parameter?: Array<{ name?: unknown; value?: unknown }> } | undefined)
		?.parameter;
	if (!Array.isArray(pairs)) return qs;
	for (const pair of pairs) {
		const name = typeof pair.name === 'string' ? pair.name.trim() : '';
		if (!name) {
			throw new NodeOperationError(node, 'Additional Query Parameters: a parameter has no name', {
				itemIndex,
				description: 'Give every added parameter a name, or remove it. Nothing was sent.',
			});
		}
		if (reserved.includes(name)) {
			throw new NodeOperationError(
				node,
				`Additional Query Parameters: "${name}" is set by the node itself`,
				{ itemIndex, description: `Use the node's own field for ${name}. Nothing was sent.` },
			);
		}
		const value = pair.value;
		if (value !== null && typeof value === 'object') {
			throw new NodeOperationError(
				node,
				`Additional Query Parameters: the value of "${name}" must be text or a number`,
				{ itemIndex, description: 'Nothing was sent.' },
			);
		}
		qs[name] = value === undefined || value === null ? '' : String(value);
	}
	return qs;
}
