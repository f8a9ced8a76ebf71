/** Service-supplied text can carry a secret (a 400 echoing `Bearer sk_live_…`): redacted first. */

const REDACTED = '[redacted]';

/** Secret tokens and bearer tokens, `%` and `\` included so encoded keys are redacted whole. */
const TOKEN_PATTERN = /(sk_live_|whsec_)[A-Za-z0-9_\-.~+/=%\\]+|(Bearer\s+)[^\s"',;]+/gi;

/** A field whose name says it holds a secret: its value is never shown. */
const SECRET_FIELD = /secret/i;

function writtenForms(value: string): Set<string> {
	return new Set([
		value,
		encodeURIComponent(value),
		JSON.stringify(value).slice(1, -1).replace(/\//g, '\\/'),
	]);
}

export function redactText(text: string, known: readonly string[] = []): string {
	let out = text.replace(
		TOKEN_PATTERN,
		(_match, prefix: string | undefined, bearer: string | undefined) =>
			prefix ? `${prefix}${REDACTED}` : `${bearer}${REDACTED}`,
	);
	for (const value of known) {
		// Short values would redact ordinary words; real keys and secrets are long.
		if (value.length < 8) continue;
		for (const form of writtenForms(value)) {
			if (out.includes(form)) out = out.split(form).join(REDACTED);
		}
	}
	return out;
}

/** Any value with every string in it redacted; copied only when something changed. */
export function redact<T>(value: T, known: readonly string[] = []): T {
	if (typeof value === 'string') return redactText(value, known) as T;
	if (Buffer.isBuffer(value)) return value;
	if (Array.isArray(value)) {
		const items = value.map((entry) => redact(entry, known));
		return (items.some((entry, index) => entry !== value[index]) ? items : value) as T;
	}
	if (typeof value === 'object' && value !== null) {
		let changed = false;
		const copy: Record<string, unknown> = {};
		for (const [key, entry] of Object.entries(value)) {
			const cleanKey = redactText(key, known);
			const cleanEntry =
				SECRET_FIELD.test(key) && typeof entry === 'string' && entry !== ''
					? REDACTED
					: redact(entry, known);
			// defineProperty: a key named "__proto__" stays a plain field, never the copy's prototype.
			Object.defineProperty(copy, cleanKey, {
				value: cleanEntry,
				enumerable: true,
				writable: true,
				configurable: true,
			});
			changed ||= cleanKey !== key || cleanEntry !== entry;
		}
		return (changed ? copy : value) as T;
	}
	return value;
}

/** Service text quoted in a message is cut after this many characters (readable in a toast). */
const MAX_SERVICE_LINE_CHARS = 300;

/** C0 and C1 control characters and line or paragraph separators (a line of text has none). */
export const CONTROL_OR_SEPARATOR = /[\p{Cc}\p{Zl}\p{Zp}]+/gu;
/** Format characters (bidi overrides, zero-width marks, BOM): invisible, so removed. */
const INVISIBLE = /\p{Cf}+/gu;
const TAG = /<\/?[a-z!?][^<>]*>/gi;

/** Safe service text (docs/security.md): invisibles go first, so a key split by one is redacted. */
export function serviceLine(
	value: string,
	options: { max?: number; known?: readonly string[] } = {},
): string {
	const max = options.max ?? MAX_SERVICE_LINE_CHARS;
	const printable = value.replace(CONTROL_OR_SEPARATOR, ' ').replace(INVISIBLE, '');
	const text = redactText(printable, options.known).replace(TAG, ' ').replace(/\s+/g, ' ').trim();
	if (text.length <= max) return text;
	// Never half a surrogate pair at the cut.
	return `${text.slice(0, max).replace(/[\uD800-\uDBFF]$/, '')}…`;
}
