/** Checks of a node's fields: bad input is refused before any request, naming field and fix. */
import type { IDataObject, INode } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { describeType } from './json';

const NOTHING_SENT = 'Nothing was sent.';

function refused(node: INode, itemIndex: number | undefined, message: string, description = '') {
	return new NodeOperationError(node, message, {
		itemIndex,
		description: [description, NOTHING_SENT].filter(Boolean).join(' '),
	});
}

/** A value quoted for a message, shortened: never a whole 100k-character expression result. */
function quoted(value: unknown): string {
	return typeof value === 'string' || typeof value === 'number'
		? `"${String(value).slice(0, 50)}"`
		: describeType(value);
}

/** A number as an ID's decimal text, only when exact (over 15 digits lose some; 1.5 is no ID). */
function idFromNumber(node: INode, value: number, fieldName: string, itemIndex?: number): string {
	if (Number.isSafeInteger(value)) return String(value);
	throw refused(
		node,
		itemIndex,
		`${fieldName} must be text: the number ${String(value)} is not an exact ID. Pass the ID as text, as the service sends it`,
		`An expression made ${fieldName} a number that cannot be an ID exactly (numbers of more than 15 digits lose digits; IDs have no fractions). Pass the ID as text, as the service sends it.`,
	);
}

export function requireText(
	node: INode,
	value: unknown,
	fieldName: string,
	itemIndex?: number,
	hint = '',
): string {
	const refuse = (message: string, description: string) =>
		refused(
			node,
			itemIndex,
			[message, hint].filter(Boolean).join(' ').replace(/\.$/, ''),
			[description, hint].filter(Boolean).join(' '),
		);
	if (value !== undefined && value !== null && typeof value !== 'string') {
		throw refuse(
			`${fieldName} must be text, got ${describeType(value)}: check the expression that fills it.`,
			`Check the expression that fills ${fieldName}: it should resolve to a string.`,
		);
	}
	if (value === undefined || value === null || value.trim() === '') {
		throw refuse(
			`${fieldName} is empty: enter it, or check that the expression that fills it resolves for this item.`,
			`Enter ${fieldName}, or check that the expression that fills it resolves for this item.`,
		);
	}
	return value;
}

/** C0 control characters or DEL, tested by code: n8n's lint config has no-control-regex. */
function hasControlCharacter(text: string): boolean {
	return Array.from(text, (c) => c.charCodeAt(0)).some((code) => code <= 0x1f || code === 0x7f);
}

/** An ID for a URL path: one encoded segment (slashes or dot segments reach other endpoints). */
export function pathSegment(
	node: INode,
	value: unknown,
	fieldName: string,
	itemIndex?: number,
): string {
	const text = typeof value === 'number' ? idFromNumber(node, value, fieldName, itemIndex) : value;
	if (typeof text !== 'string') {
		throw refused(
			node,
			itemIndex,
			`${fieldName} must be text, got ${describeType(text)}: check the expression that fills it (it should resolve to an ID)`,
			`Check the expression that fills ${fieldName}: it should resolve to an ID string.`,
		);
	}
	const id = requireText(node, text, fieldName, itemIndex).trim();
	if (/[/\\]/.test(id) || id === '.' || id === '..' || hasControlCharacter(id)) {
		throw refused(
			node,
			itemIndex,
			`${fieldName} "${id.slice(0, 100)}" is not a valid ID: enter a single ID, without slashes or dot segments`,
			`${fieldName} must be a single ID, without slashes, dot segments or control characters.`,
		);
	}
	return encodeURIComponent(id);
}

/** An optional ID: undefined when blank, otherwise trimmed (exact numbers as their text). */
export function optionalId(
	node: INode,
	value: unknown,
	fieldName: string,
	itemIndex: number,
): string | undefined {
	if (value === undefined || value === null) return undefined;
	if (typeof value === 'number') return idFromNumber(node, value, fieldName, itemIndex);
	if (typeof value !== 'string') {
		throw refused(
			node,
			itemIndex,
			`${fieldName} must be text, got ${describeType(value)}: check the expression that fills it (an ID, or empty)`,
			`Check the expression that fills ${fieldName}: it should resolve to an ID string, or be left empty.`,
		);
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
	if (typeof value === 'string' && (allowed as readonly string[]).includes(value))
		return value as T;
	throw refused(
		node,
		itemIndex,
		`${fieldName} must be one of ${allowed.join(', ')}, got ${quoted(value)}: pick one, or fix the expression that fills it`,
	);
}

export function requirePositiveInteger(
	node: INode,
	value: unknown,
	fieldName: string,
	itemIndex: number,
): number {
	const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof number !== 'number' || !Number.isInteger(number) || number < 1) {
		throw refused(
			node,
			itemIndex,
			`${fieldName} must be a whole number of 1 or more, got ${quoted(value)}: enter one, or fix the expression that fills it`,
		);
	}
	return number;
}

/** "Additional Query Parameters" as a query; a name a field of the node already sets is refused. */
export function passThroughQuery(
	node: INode,
	collection: unknown,
	reserved: readonly string[],
	itemIndex: number,
): IDataObject {
	const qs: IDataObject = {};
	const pairs = (
		collection as { parameter?: Array<{ name?: unknown; value?: unknown }> } | undefined
	)?.parameter;
	if (!Array.isArray(pairs)) return qs;
	const refuse = (message: string, description = '') =>
		refused(node, itemIndex, `Additional Query Parameters: ${message}`, description);
	for (const pair of pairs) {
		const name = typeof pair.name === 'string' ? pair.name.trim() : '';
		if (!name)
			throw refuse(
				'a parameter has no name: give it one, or remove it',
				'Give every added parameter a name, or remove it.',
			);
		if (reserved.includes(name)) {
			throw refuse(
				`"${name}" is set by the node itself: use the node's own field instead`,
				`Use the node's own field for ${name}.`,
			);
		}
		const value = pair.value;
		if (value !== null && typeof value === 'object')
			throw refuse(
				`the value of "${name}" must be text or a number: fix the expression that fills it`,
			);
		qs[name] = value === undefined || value === null ? '' : String(value);
	}
	return qs;
}

/** The encoded media ID of a bare ID or of a media_url on the Base URL: the key goes only there. */
export function mediaIdFromReference(
	node: INode,
	reference: unknown,
	baseUrl: string,
	fieldName: string,
	itemIndex?: number,
): string {
	if (typeof reference !== 'string' || !/^https?:\/\//i.test(reference.trim()))
		return pathSegment(node, reference, fieldName, itemIndex);
	const base = new URL(baseUrl);
	const basePath = base.pathname.replace(/\/$/, '');
	const expected = `${base.origin}${basePath}/v1/media/{id} (the media_url of an inbound event) or a bare media ID`;
	const invalid = (message: string, why: string) =>
		new NodeOperationError(node, message, {
			itemIndex,
			description: `${why} Expected ${expected}.`,
		});
	if (!URL.canParse(reference.trim())) {
		throw invalid(
			`${fieldName} is not a valid media URL: use the media_url or media_id of an inbound event`,
			`"${reference.trim().slice(0, 200)}" does not parse as a URL. ${NOTHING_SENT}`,
		);
	}
	const url = new URL(reference.trim());
	const match = /^\/v1\/media\/([^/]+)\/?$/.exec(url.pathname.slice(basePath.length));
	if (url.origin !== base.origin || !url.pathname.startsWith(basePath) || !match) {
		throw invalid(
			`${fieldName} is not a media URL of this credential's service: use the media_url of an inbound event from this service, or its media_id`,
			`Got ${url.origin}${url.pathname}. The API key is only sent to the credential's Base URL.`,
		);
	}
	let id: string;
	try {
		id = decodeURIComponent(match[1]);
	} catch {
		throw invalid(
			`${fieldName} is not a valid media URL: use the media_url or media_id of an inbound event`,
			`The media ID in it, "${match[1].slice(0, 100)}", is not valid percent-encoding. ${NOTHING_SENT}`,
		);
	}
	return pathSegment(node, id, fieldName, itemIndex);
}

/** A comma- or line-separated list field, e.g. Receiving Numbers, without blanks. */
export function splitList(value: unknown): string[] {
	if (typeof value !== 'string') return [];
	return value
		.split(/[,\n]/)
		.map((entry) => entry.trim())
		.filter((entry) => entry !== '');
}

/** `fallback` when empty or not a number. */
export function boundedNumber(value: unknown, fallback: number, min: number, max: number): number {
	const number = typeof value === 'number' ? value : Number(value);
	if (value === undefined || value === null || value === '' || !Number.isFinite(number))
		return fallback;
	return Math.min(max, Math.max(min, number));
}
