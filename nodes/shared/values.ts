import type { INode } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

/** How a value's type reads in a message: "null", "a list", "an object", "a number", ... */
export function describeType(value: unknown): string {
	if (value === null) return 'null';
	if (Array.isArray(value)) return 'a list';
	return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * An ID that an expression turned into a number, as its decimal text, but only when the number
 * is exact: 12345678901234567890 has already lost digits and 1.5 or NaN is no ID, so sending
 * them would address another record (or none) without saying so.
 */
export function idFromNumber(node: INode, value: number, fieldName: string, itemIndex?: number): string {
	if (Number.isSafeInteger(value)) return String(value);
	throw new NodeOperationError(node, `${fieldName} must be text: the number ${String(value)} is not an exact ID`, {
		itemIndex,
		description: `An expression made ${fieldName} a number that cannot be an ID exactly (numbers of more than 15 digits lose digits; IDs have no fractions). Pass the ID as text, as the service sends it. Nothing was sent.`,
	});
}
