import type { IDataObject, IDisplayOptions, INode, INodeProperties } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { describeType, idFromNumber } from '../../shared/values';

function mergeConditions(
	base: IDisplayOptions['show'],
	extra: IDisplayOptions['show'],
): IDisplayOptions['show'] {
	if (!base) return extra;
	if (!extra) return base;
	return { ...base, ...extra };
}

/**
 * Stamps resource/operation visibility on every property of an operation, keeping the
 * property's own conditions (the idea of n8n's nodes-base `updateDisplayOptions`,
 * which community packages cannot import).
 */
export function updateDisplayOptions(
	displayOptions: IDisplayOptions,
	properties: INodeProperties[],
): INodeProperties[] {
	return properties.map((property) => {
		const own = property.displayOptions ?? {};
		const merged: IDisplayOptions = { ...own };
		const show = mergeConditions(own.show, displayOptions.show);
		const hide = mergeConditions(own.hide, displayOptions.hide);
		if (show) merged.show = show;
		if (hide) merged.hide = hide;
		return { ...property, displayOptions: merged };
	});
}


/**
 * A required text field: a string that is not blank. Anything else (empty, whitespace,
 * a number or object from an expression) is refused before a request is made.
 */
export function requireText(
	node: INode,
	value: unknown,
	fieldName: string,
	itemIndex: number,
	hint = '',
): string {
	const sentence = (...parts: string[]) => parts.filter(Boolean).join(' ');
	if (value !== undefined && value !== null && typeof value !== 'string') {
		throw new NodeOperationError(node, `${fieldName} must be text, got ${describeType(value)}`, {
			itemIndex,
			description: sentence(
				`Check the expression that fills ${fieldName}: it should resolve to a string.`,
				hint,
				'Nothing was sent.',
			),
		});
	}
	if (value === undefined || value === null || value.trim() === '') {
		throw new NodeOperationError(node, `${fieldName} is empty`, {
			itemIndex,
			description: sentence(
				`Enter ${fieldName}, or check that the expression that fills it resolves for this item.`,
				hint,
				'Nothing was sent.',
			),
		});
	}
	return value;
}

/**
 * An optional ID: undefined when left blank (empty, whitespace, null, undefined), the
 * trimmed string otherwise. Exact whole numbers are taken as their decimal text, like path IDs.
 */
export function optionalId(
	node: INode,
	value: unknown,
	fieldName: string,
	itemIndex: number,
): string | undefined {
	if (value === undefined || value === null) return undefined;
	if (typeof value === 'number') return idFromNumber(node, value, fieldName, itemIndex);
	if (typeof value !== 'string') {
		throw new NodeOperationError(node, `${fieldName} must be text, got ${describeType(value)}`, {
			itemIndex,
			description: `Check the expression that fills ${fieldName}: it should resolve to an ID string, or be left empty. Nothing was sent.`,
		});
	}
	const trimmed = value.trim();
	return trimmed === '' ? undefined : trimmed;
}

/** One of a fixed set of values (an expression can put anything into an options field). */
export function requireOneOf<T extends string>(
	node: INode,
	value: unknown,
	allowed: readonly T[],
	fieldName: string,
	itemIndex: number,
): T {
	if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
	throw new NodeOperationError(
		node,
		`${fieldName} must be one of ${allowed.join(', ')}, got ${typeof value === 'string' ? `"${value.slice(0, 50)}"` : describeType(value)}`,
		{ itemIndex, description: 'Nothing was sent.' },
	);
}

/** A positive whole number, e.g. Limit. */
export function requirePositiveInteger(
	node: INode,
	value: unknown,
	fieldName: string,
	itemIndex: number,
): number {
	const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof number !== 'number' || !Number.isInteger(number) || number < 1) {
		throw new NodeOperationError(
			node,
			`${fieldName} must be a whole number of 1 or more, got ${typeof value === 'string' || typeof value === 'number' ? `"${String(value).slice(0, 50)}"` : describeType(value)}`,
			{ itemIndex, description: 'Nothing was sent.' },
		);
	}
	return number;
}

/** An API key value (the prefix followed by more), as opposed to the bare prefix a key list may show. */
function isKeyValue(value: unknown): boolean {
	return typeof value === 'string' && /^\s*sk_live_\S/.test(value);
}

/**
 * Copies an object without any key that looks like a secret and without any API key value, at
 * any depth. The service never returns either on a read; this keeps the promise if it ever did.
 */
export function withoutSecrets<T>(value: T): T {
	if (Array.isArray(value)) return value.filter((entry) => !isKeyValue(entry)).map((entry) => withoutSecrets(entry)) as T;
	if (value && typeof value === 'object') {
		const copy: IDataObject = {};
		for (const [key, entry] of Object.entries(value as IDataObject)) {
			if (/secret/i.test(key) || isKeyValue(entry)) continue;
			copy[key] = withoutSecrets(entry);
		}
		return copy as T;
	}
	return value;
}

/**
 * A response body as the JSON of one output item: an object as it came, nothing as an
 * empty object, anything else (a list, a bare value) under `data`.
 */
export function asJsonObject(body: unknown): IDataObject {
	if (body === undefined || body === null || body === '') return {};
	if (typeof body === 'object' && !Array.isArray(body)) return body as IDataObject;
	return { data: body as IDataObject[keyof IDataObject] };
}
