/**
 * Every check of what a user (or an expression) put into a field, in one place. Each one
 * refuses bad input with a NodeOperationError that names the field and what to do, before
 * any request is made; the credential's checks return the sentence instead, because the
 * credential's authenticate has no node to attach an error to.
 */
import type { IDataObject, INode } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

export const API_KEY_PREFIX = 'sk_live_';

const NOTHING_SENT = 'Nothing was sent.';

export function isPlainObject(value: unknown): value is IDataObject {
	return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

/** How a value's type reads in a message: "null", "a list", "an object", "a number", ... */
export function describeType(value: unknown): string {
	if (value === null) return 'null';
	if (Array.isArray(value)) return 'a list';
	return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A value quoted for a message, shortened: never a whole 100k-character expression result. */
function quoted(value: unknown): string {
	return typeof value === 'string' || typeof value === 'number' ? `"${String(value).slice(0, 50)}"` : describeType(value);
}

// ---------------------------------------------------------------------------
// Credential

/** Base URL without trailing slashes, or an error message naming the field. */
export function normalizeBaseUrl(raw: unknown): { url: string } | { error: string } {
	const value = typeof raw === 'string' ? raw.trim().replace(/\/+$/, '') : '';
	if (!value) return { error: 'Base URL is empty: enter the service address, e.g. https://api.example.com' };
	// A key pasted into the wrong field must not be echoed into an error (and so into execution data and logs).
	if (value.includes(API_KEY_PREFIX)) {
		return {
			error: `Base URL looks like an API key (it contains "${API_KEY_PREFIX}"): put the key in API Key and the service address in Base URL, e.g. https://api.example.com`,
		};
	}
	let parsed: URL;
	try {
		parsed = new URL(value);
	} catch {
		return { error: `Base URL "${value}" is not a valid URL: enter it with its scheme, e.g. https://api.example.com` };
	}
	if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
		return { error: `Base URL must start with https:// (or http:// for a local sandbox), got "${parsed.protocol}"` };
	}
	// Every path carries /v1 already; refusing it here keeps the Test button and the nodes in agreement.
	if (/\/v1$/i.test(parsed.pathname.replace(/\/+$/, ''))) {
		return { error: `Base URL must not end in /v1: enter "${value.replace(/\/v1$/i, '')}" (each path already starts with /v1)` };
	}
	return { url: value };
}

/** Why the key cannot be used, or undefined when it has the service's shape. Never echoes the key. */
export function apiKeyProblem(raw: unknown): string | undefined {
	const key = typeof raw === 'string' ? raw.trim() : '';
	if (!key) return 'API Key is empty: paste the key shown once when it was created in the console (Keys tab)';
	if (!key.startsWith(API_KEY_PREFIX)) {
		return `API Key must start with "${API_KEY_PREFIX}": copy the whole key from the console's Keys tab (the value is shown only once, at creation; make a new key if it is lost)`;
	}
	return undefined;
}

// ---------------------------------------------------------------------------
// Node fields

/**
 * An ID that an expression turned into a number, as its decimal text, but only when the number
 * is exact: 12345678901234567890 has already lost digits and 1.5 or NaN is no ID, so sending
 * them would address another record (or none) without saying so.
 */
function idFromNumber(node: INode, value: number, fieldName: string, itemIndex?: number): string {
	if (Number.isSafeInteger(value)) return String(value);
	throw new NodeOperationError(node, `${fieldName} must be text: the number ${String(value)} is not an exact ID`, {
		itemIndex,
		description: `An expression made ${fieldName} a number that cannot be an ID exactly (numbers of more than 15 digits lose digits; IDs have no fractions). Pass the ID as text, as the service sends it. ${NOTHING_SENT}`,
	});
}

/**
 * A required text field: a string that is not blank. Anything else (empty, whitespace,
 * a number or object from an expression) is refused.
 */
export function requireText(node: INode, value: unknown, fieldName: string, itemIndex?: number, hint = ''): string {
	const sentence = (...parts: string[]) => parts.filter(Boolean).join(' ');
	if (value !== undefined && value !== null && typeof value !== 'string') {
		throw new NodeOperationError(node, `${fieldName} must be text, got ${describeType(value)}`, {
			itemIndex,
			description: sentence(`Check the expression that fills ${fieldName}: it should resolve to a string.`, hint, NOTHING_SENT),
		});
	}
	if (value === undefined || value === null || value.trim() === '') {
		throw new NodeOperationError(node, `${fieldName} is empty`, {
			itemIndex,
			description: sentence(
				`Enter ${fieldName}, or check that the expression that fills it resolves for this item.`,
				hint,
				NOTHING_SENT,
			),
		});
	}
	return value;
}

/**
 * An ID that goes into a URL path: one segment, encoded. Slashes and dot segments are
 * refused outright, because URL normalisation would turn `..` or `a/b` into another endpoint.
 */
export function pathSegment(node: INode, value: unknown, fieldName: string, itemIndex?: number): string {
	const text = typeof value === 'number' ? idFromNumber(node, value, fieldName, itemIndex) : value;
	if (typeof text !== 'string') {
		throw new NodeOperationError(node, `${fieldName} must be text, got ${describeType(text)}`, {
			itemIndex,
			description: `Check the expression that fills ${fieldName}: it should resolve to an ID string. ${NOTHING_SENT}`,
		});
	}
	const id = requireText(node, text, fieldName, itemIndex).trim();
	if (id.includes('/') || id.includes('\\') || id === '.' || id === '..' || /[\u0000-\u001f\u007f]/.test(id)) {
		throw new NodeOperationError(node, `${fieldName} "${id.slice(0, 100)}" is not a valid ID`, {
			itemIndex,
			description: `${fieldName} must be a single ID, without slashes, dot segments or control characters. ${NOTHING_SENT}`,
		});
	}
	return encodeURIComponent(id);
}

/**
 * An optional ID: undefined when left blank (empty, whitespace, null, undefined), the
 * trimmed string otherwise. Exact whole numbers are taken as their decimal text, like path IDs.
 */
export function optionalId(node: INode, value: unknown, fieldName: string, itemIndex: number): string | undefined {
	if (value === undefined || value === null) return undefined;
	if (typeof value === 'number') return idFromNumber(node, value, fieldName, itemIndex);
	if (typeof value !== 'string') {
		throw new NodeOperationError(node, `${fieldName} must be text, got ${describeType(value)}`, {
			itemIndex,
			description: `Check the expression that fills ${fieldName}: it should resolve to an ID string, or be left empty. ${NOTHING_SENT}`,
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
	throw new NodeOperationError(node, `${fieldName} must be one of ${allowed.join(', ')}, got ${quoted(value)}`, {
		itemIndex,
		description: NOTHING_SENT,
	});
}

/** A positive whole number, e.g. Limit. */
export function requirePositiveInteger(node: INode, value: unknown, fieldName: string, itemIndex: number): number {
	const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof number !== 'number' || !Number.isInteger(number) || number < 1) {
		throw new NodeOperationError(node, `${fieldName} must be a whole number of 1 or more, got ${quoted(value)}`, {
			itemIndex,
			description: NOTHING_SENT,
		});
	}
	return number;
}

/**
 * The pairs of an "Additional Query Parameters" collection as a query object. A name
 * that a field of the node already sets is refused, so a pass-through pair cannot
 * silently override the operation's own parameters.
 */
export function passThroughQuery(node: INode, collection: unknown, reserved: readonly string[], itemIndex: number): IDataObject {
	const qs: IDataObject = {};
	const pairs = (collection as { parameter?: Array<{ name?: unknown; value?: unknown }> } | undefined)?.parameter;
	if (!Array.isArray(pairs)) return qs;
	const refuse = (message: string, description: string) =>
		new NodeOperationError(node, `Additional Query Parameters: ${message}`, { itemIndex, description });
	for (const pair of pairs) {
		const name = typeof pair.name === 'string' ? pair.name.trim() : '';
		if (!name) throw refuse('a parameter has no name', `Give every added parameter a name, or remove it. ${NOTHING_SENT}`);
		if (reserved.includes(name)) {
			throw refuse(`"${name}" is set by the node itself`, `Use the node's own field for ${name}. ${NOTHING_SENT}`);
		}
		const value = pair.value;
		if (value !== null && typeof value === 'object') {
			throw refuse(`the value of "${name}" must be text or a number`, NOTHING_SENT);
		}
		qs[name] = value === undefined || value === null ? '' : String(value);
	}
	return qs;
}

/**
 * The media ID behind a reference: a bare ID, or a media_url of the credential's own
 * service (`{base_url}/v1/media/{id}`), returned encoded for the path. A URL of any other
 * host is refused, so the API key is only ever presented to the service itself.
 */
export function mediaIdFromReference(
	node: INode,
	reference: unknown,
	baseUrl: string,
	fieldName: string,
	itemIndex?: number,
): string {
	if (typeof reference !== 'string' || !/^https?:\/\//i.test(reference.trim())) {
		return pathSegment(node, reference, fieldName, itemIndex);
	}
	const base = new URL(baseUrl);
	const basePath = base.pathname.replace(/\/$/, '');
	const expected = `${base.origin}${basePath}/v1/media/{id} (the media_url of an inbound event) or a bare media ID`;
	const invalid = (message: string, why: string) =>
		new NodeOperationError(node, message, { itemIndex, description: `${why} Expected ${expected}.` });
	let url: URL;
	try {
		url = new URL(reference.trim());
	} catch {
		throw invalid(`${fieldName} is not a valid media URL`, `"${reference.trim().slice(0, 200)}" does not parse as a URL. ${NOTHING_SENT}`);
	}
	const match = /^\/v1\/media\/([^/]+)\/?$/.exec(url.pathname.slice(basePath.length));
	if (url.origin !== base.origin || !url.pathname.startsWith(basePath) || !match) {
		throw invalid(
			`${fieldName} is not a media URL of this credential's service`,
			`Got ${url.origin}${url.pathname}. The API key is only sent to the credential's Base URL.`,
		);
	}
	let id: string;
	try {
		id = decodeURIComponent(match[1]);
	} catch {
		throw invalid(
			`${fieldName} is not a valid media URL`,
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
