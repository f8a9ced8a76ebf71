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
	// Plain http would carry the API key across the network in clear: only a loopback address
	// (a sandbox on this machine) may use it, as the service's rule for webhook URLs.
	if (parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname)) {
		return {
			error: `Base URL must use https://: plain http would send the API key unencrypted to ${parsed.host} (http is accepted only for a local sandbox on 127.0.0.1, ::1 or localhost). Enter "https://${parsed.host}${parsed.pathname.replace(/\/+$/, '')}"`,
		};
	}
	// Every path carries /v1 already; refusing it here keeps the Test button and the nodes in agreement.
	if (/\/v1$/i.test(parsed.pathname.replace(/\/+$/, ''))) {
		return { error: `Base URL must not end in /v1: enter "${value.replace(/\/v1$/i, '')}" (each path already starts with /v1)` };
	}
	return { url: value };
}

/**
 * A loopback host as the URL parser gives it (IPv4 already normalised, IPv6 in brackets):
 * 127.0.0.0/8, ::1 or localhost. Nothing else reaches only this machine.
 */
export function isLoopbackHost(hostname: string): boolean {
	const host = hostname.toLowerCase();
	if (host === 'localhost' || host === '[::1]' || host === '::1') return true;
	return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Why a request must not carry the API key because of how it would travel, or undefined.
 * Both option styles reach the credential's authenticate: n8n's IHttpRequestOptions
 * (`proxy`, `skipSslCertificateValidation`) and the legacy request options the HTTP Request
 * node passes (`proxy`, `rejectUnauthorized`, `strictSSL`, `agentOptions`). A proxy receives
 * the key (in clear on n8n 1.x, and whenever certificate checks are off); without certificate
 * checks anyone on the path can pose as the service. Never echoes the proxy's address, which
 * may hold a password.
 */
export function insecureTransportProblem(options: object): string | undefined {
	const o = options as {
		proxy?: unknown;
		skipSslCertificateValidation?: unknown;
		rejectUnauthorized?: unknown;
		strictSSL?: unknown;
		agentOptions?: { rejectUnauthorized?: unknown; checkServerIdentity?: unknown } | null;
	};
	const refusing = 'Refusing to send the API key';
	if (o.proxy !== undefined && o.proxy !== null && o.proxy !== false && o.proxy !== '') {
		return `${refusing} through a proxy: the proxy would receive the key. Remove the Proxy option (on an HTTP Request node: Options → Proxy); the key goes only straight to the credential's Base URL. Nothing was sent.`;
	}
	if (
		o.skipSslCertificateValidation === true ||
		o.rejectUnauthorized === false ||
		o.strictSSL === false ||
		o.agentOptions?.rejectUnauthorized === false ||
		typeof o.agentOptions?.checkServerIdentity === 'function'
	) {
		return `${refusing} with certificate checks turned off: anyone between n8n and the service could pose as it and read the key. Turn off the HTTP Request option Ignore SSL Issues (Insecure). Nothing was sent.`;
	}
	return undefined;
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

// Control characters are tested by code rather than with a regular expression: ESLint's
// no-control-regex (in n8n's default lint config) refuses control characters in a regex.

/** True when the text holds a C0 control character (U+0000 to U+001F: CR, LF, NUL, ...) or DEL (U+007F). */
function hasControlCharacter(text: string): boolean {
	for (let i = 0; i < text.length; i++) {
		const code = text.charCodeAt(i);
		if (code <= 0x1f || code === 0x7f) return true;
	}
	return false;
}

/** The text without C0 and C1 control characters (CR, LF, NUL, ..., U+007F to U+009F) and the Unicode line separators (U+2028, U+2029). */
function withoutControlCharacters(text: string): string {
	let kept = '';
	for (let i = 0; i < text.length; i++) {
		const code = text.charCodeAt(i);
		if (code <= 0x1f || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029) continue;
		kept += text[i];
	}
	return kept;
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
	if (id.includes('/') || id.includes('\\') || id === '.' || id === '..' || hasControlCharacter(id)) {
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

// ---------------------------------------------------------------------------
// Media download targets, file names and types (pure: no lookup, no request)

/** Where an address points: only `public` is a place a media file may come from. */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'reserved';

function ipv4Class(octets: number[]): AddressClass {
	const [a, b] = octets;
	if (a === 0) return 'unspecified'; // 0.0.0.0/8 ("this network"; 0.0.0.0 reaches loopback on Linux)
	if (a === 127) return 'loopback';
	if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
	if (a === 100 && b >= 64 && b <= 127) return 'private'; // 100.64.0.0/10, carrier-grade NAT
	if (a === 169 && b === 254) return 'link-local'; // cloud metadata services live here
	if (a >= 224) return 'reserved'; // multicast, 240/4 and broadcast
	if ((a === 192 && b === 0 && octets[2] === 0) || (a === 198 && (b === 18 || b === 19))) return 'reserved';
	return 'public';
}

function parseIpv4(text: string): number[] | undefined {
	const parts = text.split('.');
	if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part))) return undefined;
	const octets = parts.map(Number);
	return octets.every((octet) => octet <= 255) ? octets : undefined;
}

/** The eight 16-bit groups of an IPv6 literal (brackets, zone and embedded IPv4 allowed), or undefined. */
function parseIpv6(text: string): number[] | undefined {
	let value = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '').toLowerCase();
	const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(value);
	if (dotted) {
		const octets = parseIpv4(dotted[2]);
		if (!octets) return undefined;
		value = `${dotted[1]}${((octets[0] << 8) | octets[1]).toString(16)}:${((octets[2] << 8) | octets[3]).toString(16)}`;
	}
	const halves = value.split('::');
	if (halves.length > 2) return undefined;
	const groups = (half: string) => (half === '' ? [] : half.split(':'));
	const head = groups(halves[0]);
	const tail = halves.length === 2 ? groups(halves[1]) : [];
	const missing = 8 - head.length - tail.length;
	if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)) return undefined;
	const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
	if (!all.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined;
	return all.map((group) => parseInt(group, 16));
}

/**
 * The class of an IP literal (IPv4, or IPv6 with or without brackets), or undefined when the
 * text is not an IP address (a host name, to be resolved first). IPv6 forms that carry an IPv4
 * address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d) take its class.
 */
export function ipAddressClass(address: string): AddressClass | undefined {
	const v4 = parseIpv4(address);
	if (v4) return ipv4Class(v4);
	const v6 = parseIpv6(address);
	if (!v6) return undefined;
	const embeddedV4 = [v6[6] >> 8, v6[6] & 0xff, v6[7] >> 8, v6[7] & 0xff];
	const firstFiveZero = v6.slice(0, 5).every((group) => group === 0);
	if (firstFiveZero && v6[5] === 0xffff) return ipv4Class(embeddedV4);
	if (v6[0] === 0x64 && v6[1] === 0xff9b && v6.slice(2, 6).every((group) => group === 0)) return ipv4Class(embeddedV4);
	if (firstFiveZero && v6[5] === 0) {
		if (v6[6] === 0 && v6[7] === 0) return 'unspecified';
		if (v6[6] === 0 && v6[7] === 1) return 'loopback';
		return ipv4Class(embeddedV4);
	}
	if ((v6[0] & 0xfe00) === 0xfc00) return 'private'; // fc00::/7, unique local
	if ((v6[0] & 0xffc0) === 0xfe80) return 'link-local'; // fe80::/10
	if ((v6[0] & 0xff00) === 0xff00) return 'reserved'; // multicast
	return 'public';
}

/**
 * Why a media URL may not be fetched, judged on its text alone, or undefined. Only http and
 * https, and never a step down from an https Base URL; a literal address must be public
 * (loopback allowed only when the Base URL itself is loopback, as for a local sandbox).
 * Host names are checked again on their resolved addresses (mediaAddressProblem).
 */
export function mediaUrlProblem(target: URL, baseUrl: URL): string | undefined {
	if (target.protocol !== 'http:' && target.protocol !== 'https:') {
		return `its scheme is "${target.protocol}" (only https, or http when the Base URL is http, is fetched)`;
	}
	if (baseUrl.protocol === 'https:' && target.protocol !== 'https:') {
		return 'it is http while the Base URL is https (the file would travel unencrypted)';
	}
	if (target.username || target.password) return 'it carries a user name or password';
	const host = target.hostname.toLowerCase().replace(/\.$/, '');
	if ((host === 'localhost' || host.endsWith('.localhost')) && !isLoopbackHost(baseUrl.hostname)) {
		return `its host ${host} is this machine`;
	}
	return ipAddressClass(host) === undefined ? undefined : mediaAddressProblem(host, baseUrl);
}

/** Why a (resolved) address may not be connected to, or undefined when it is public. */
export function mediaAddressProblem(address: string, baseUrl: URL): string | undefined {
	const kind = ipAddressClass(address);
	if (kind === undefined) return `${address} is not an IP address`;
	if (kind === 'public') return undefined;
	if (kind === 'loopback' && isLoopbackHost(baseUrl.hostname)) return undefined;
	return `its address ${address} is ${kind === 'reserved' ? 'a reserved' : kind === 'unspecified' ? 'an unspecified' : `a ${kind}`} address`;
}

/** Default and bounds of the download limits (node options). */
export const DEFAULT_MAX_FILE_SIZE_MB = 100;
export const DEFAULT_DOWNLOAD_TIMEOUT_SECONDS = 300;

export interface DownloadLimits {
	maxFileSizeMb: number;
	timeoutSeconds: number;
}

/**
 * The limits from a node's options ("Max File Size (MB)", "Download Timeout (Seconds)"):
 * the defaults when left empty, a NodeOperationError naming the option when not a positive number.
 */
export function downloadLimits(
	node: INode,
	options: { maxFileSize?: unknown; downloadTimeout?: unknown },
	itemIndex?: number,
): DownloadLimits {
	const positive = (value: unknown, fallback: number, label: string): number => {
		if (value === undefined || value === null || value === '') return fallback;
		const number = typeof value === 'string' ? Number(value) : value;
		if (typeof number === 'number' && Number.isFinite(number) && number > 0) return number;
		throw new NodeOperationError(node, `${label} must be a number above 0, got ${JSON.stringify(value)?.slice(0, 50)}`, {
			itemIndex,
			description: 'Nothing was downloaded. Leave it empty for the default.',
		});
	};
	return {
		maxFileSizeMb: positive(options.maxFileSize, DEFAULT_MAX_FILE_SIZE_MB, 'Max File Size (MB)'),
		timeoutSeconds: positive(options.downloadTimeout, DEFAULT_DOWNLOAD_TIMEOUT_SECONDS, 'Download Timeout (Seconds)'),
	};
}

/**
 * Types a browser would run or render as a page (script, HTML, SVG, XML with stylesheets):
 * a file from a customer is stored as opaque bytes instead, so opening it from n8n cannot act.
 */
const ACTIVE_CONTENT_TYPES = new Set([
	'text/html',
	'application/xhtml+xml',
	'image/svg+xml',
	'text/javascript',
	'application/javascript',
	'application/x-javascript',
	'application/ecmascript',
	'text/ecmascript',
	'text/xml',
	'application/xml',
	'text/xsl',
	'multipart/x-mixed-replace',
]);

/** The type to store a file under, and the type as sent when it was not kept. */
export function storedMimeType(sent: string | undefined): { mimeType: string; mimeTypeAsSent?: string } {
	const type = (sent ?? '').split(';')[0].trim().toLowerCase();
	if (!type) return { mimeType: 'application/octet-stream' };
	const wellFormed = /^[a-z0-9][\w.+-]*\/[a-z0-9][\w.+-]*$/.test(type);
	if (!wellFormed || ACTIVE_CONTENT_TYPES.has(type) || type.endsWith('+xml')) {
		return { mimeType: 'application/octet-stream', mimeTypeAsSent: (sent ?? '').slice(0, 200) };
	}
	return { mimeType: type };
}

export const MAX_FILE_NAME_LENGTH = 200;

/**
 * A file name safe to store and offer for download: no control characters (CR, LF, NUL, ...),
 * no path separators, no leading dots, at most 200 characters with its extension kept.
 * `fallback` (the media id) when nothing usable is left.
 */
export function safeFileName(sent: string | undefined, fallback: string): string {
	const cleaned = withoutControlCharacters(sent ?? '')
		.replace(/[/\\]/g, '_')
		.trim()
		.replace(/^\.+/, '');
	const characters = Array.from(cleaned || fallback.replace(/[/\\]/g, '_'));
	if (characters.length <= MAX_FILE_NAME_LENGTH) return characters.join('');
	const dot = characters.lastIndexOf('.');
	const extension = dot > 0 && characters.length - dot <= 16 ? characters.slice(dot) : [];
	return [...characters.slice(0, MAX_FILE_NAME_LENGTH - extension.length), ...extension].join('');
}
