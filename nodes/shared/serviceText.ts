/** What an error body says, whatever its shape (the spec shows none); HTML is never quoted. */
import { isPlainObject } from './json';
import { serviceLine } from './redact';

/** Service text in a description (the body as it came) is cut after this many characters. */
const MAX_BODY_CHARS = 500;
/** A plain-text body longer than this is a dump (a stack trace, a page), not a sentence. */
const MAX_TEXT_BODY_CHARS = 500;

/** The body as the service sent it, on one line (serviceLine), shortened when long. */
export function bodyAsText(body: unknown): string {
	if (body === undefined || body === null || body === '') return '(empty body)';
	let text: string;
	if (Buffer.isBuffer(body)) text = body.toString('utf8');
	else if (typeof body === 'string') text = body;
	else {
		try {
			text = JSON.stringify(body);
		} catch {
			text = String(body);
		}
	}
	const line = serviceLine(text, { max: MAX_BODY_CHARS });
	return line.endsWith('…') ? `${line} (${text.length} chars)` : line;
}

function cleaned(value: unknown): string | undefined {
	if (typeof value !== 'string') return undefined;
	const text = serviceLine(value);
	return text === '' ? undefined : text;
}

const MARKUP = /<!doctype|<\/?[a-z][a-z0-9]*(\s[^>]*)?\/?>/i;

function fromText(raw: string): string | undefined {
	const text = raw.trim();
	if (text === '' || MARKUP.test(text)) return undefined;
	// JSON sent as text (a wrong content type): read it as JSON, and quote nothing if it is broken.
	if (/^[[{]/.test(text)) {
		try {
			return fromObject(JSON.parse(text));
		} catch {
			return undefined;
		}
	}
	return text.length > MAX_TEXT_BODY_CHARS ? undefined : cleaned(text);
}

function fromObject(body: unknown): string | undefined {
	if (!isPlainObject(body)) return undefined;
	const nested = isPlainObject(body.error) ? body.error.message : undefined;
	// `title` is RFC 9457's generic phrase ("Not Found"): only when nothing says more.
	for (const value of [nested, body.detail, body.message, body.error, body.title]) {
		const found = cleaned(value);
		if (found) return found;
	}
	return undefined;
}

/** The sentence an error body carries for people, one line, redacted; undefined when none. */
export function serviceMessage(body: unknown): string | undefined {
	if (Buffer.isBuffer(body)) return fromText(body.toString('utf8'));
	if (typeof body === 'string') return fromText(body);
	return fromObject(body);
}

export function withServiceSentence(message: string, body: unknown): string {
	const said = serviceMessage(body);
	return said ? `${message}. The service said: "${said}"` : message;
}
