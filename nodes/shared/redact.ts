/**
 * Text the service (or a media host) supplies can carry a secret: a 400 that echoes the
 * request's headers carries `Bearer sk_live_…`. Everything service-supplied goes through
 * `redact` before it reaches an error, an output item or a log line.
 */

const REDACTED = '[redacted]';

/** Tokens of the service's secret formats, and any bearer token. */
const TOKEN_PATTERN = /(sk_live_|whsec_)[A-Za-z0-9_\-.~+/=]+|(Bearer\s+)[^\s"',;]+/gi;

/** The text with every secret token and every known secret value replaced. */
export function redactText(text: string, known: readonly string[] = []): string {
	let out = text.replace(
		TOKEN_PATTERN,
		(_match, prefix: string | undefined, bearer: string | undefined) =>
			prefix ? `${prefix}${REDACTED}` : `${bearer}${REDACTED}`,
	);
	for (const value of known) {
		// Short values would redact ordinary words; real keys and secrets are long.
		if (value.length >= 8 && out.includes(value)) out = out.split(value).join(REDACTED);
	}
	return out;
}

/** A parsed body (or any value) with every string in it redacted; objects are copied only when something changed. */
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
			copy[cleanKey] = redact(entry, known);
			changed ||= cleanKey !== key || copy[cleanKey] !== entry;
		}
		return (changed ? copy : value) as T;
	}
	return value;
}
