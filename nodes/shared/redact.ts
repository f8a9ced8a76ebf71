/** Service-supplied text can carry a secret (a 400 echoing `Bearer sk_live_…`): redacted first. */

const REDACTED = '[redacted]';

/** Secret tokens and bearer tokens, `%` and `\` included so encoded keys are redacted whole. */
const TOKEN_PATTERN = /(sk_live_|whsec_)[A-Za-z0-9_\-.~+/=%\\]+|(Bearer\s+)[^\s"',;]+/gi;

/** A field whose name says it holds a secret: its value is never shown. */
const SECRET_FIELD = /secret/i;

function writtenForms(value: string): string[] {
	return [
		...new Set([
			value,
			encodeURIComponent(value),
			JSON.stringify(value).slice(1, -1).replace(/\//g, '\\/'),
		]),
	];
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
