/**
 * Event envelope: parsing, validation and the replay window. Pure: no n8n imports,
 * never throws. Runs only after the signature has been verified.
 */

export const EVENT_TYPES = ['message.inbound', 'message.status', 'message.echo'] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface EventEnvelope {
	event: EventType;
	data: Record<string, unknown>;
	timestamp: string;
	/** Anything else the service put in the envelope is kept as sent. */
	[key: string]: unknown;
}

export type EnvelopeResult =
	| { ok: true; envelope: EventEnvelope; timestampMs: number }
	| { ok: false; reason: string };

/**
 * Default maximum age of an event, in seconds. The service answers within about 8 s and
 * never retries, so a genuine event reaches n8n seconds after its timestamp; 5 minutes
 * leaves ample room for clock skew between the service and n8n and for a slow network,
 * while a captured request replayed later is refused.
 */
export const DEFAULT_MAX_AGE_SECONDS = 300;

/** How far in the future a timestamp may be (clock skew) before the event is refused. */
export const FUTURE_TOLERANCE_SECONDS = 60;

// ISO 8601 date-time with a UTC offset (or Z); the service sends microseconds, any
// number of fractional digits is accepted.
const TIMESTAMP_PATTERN =
	/^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})$/i;

function isPlainObject(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

// Arithmetic rather than a Date object: this runs on every event, on the hot path.
function daysInMonth(year: number, month: number): number {
	const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
	return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
}

/** Milliseconds since the epoch, or undefined when the text is not an ISO 8601 date-time with offset. */
export function parseTimestamp(value: unknown): number | undefined {
	if (typeof value !== 'string') return undefined;
	const match = TIMESTAMP_PATTERN.exec(value.trim());
	if (!match) return undefined;
	const [, y, mo, d, h, mi, s, fraction, zone] = match;
	const year = Number(y);
	const month = Number(mo);
	const day = Number(d);
	const hour = Number(h);
	const minute = Number(mi);
	const second = Number(s);
	if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
	if (day > daysInMonth(year, month)) return undefined;
	const millis = fraction ? Math.floor(Number(`0.${fraction}`) * 1000) : 0;
	let offsetMinutes = 0;
	if (zone.toUpperCase() !== 'Z') {
		const sign = zone.startsWith('-') ? -1 : 1;
		const digits = zone.slice(1).replace(':', '');
		const offsetHours = Number(digits.slice(0, 2));
		const offsetMins = Number(digits.slice(2, 4));
		if (offsetHours > 23 || offsetMins > 59) return undefined;
		offsetMinutes = sign * (offsetHours * 60 + offsetMins);
	}
	return Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
}

/** Parses and validates the raw body as an event envelope. */
export function parseEnvelope(rawBody: Buffer): EnvelopeResult {
	let parsed: unknown;
	try {
		parsed = JSON.parse(rawBody.toString('utf8'));
	} catch {
		return { ok: false, reason: 'the body is not valid JSON' };
	}
	if (!isPlainObject(parsed)) return { ok: false, reason: 'the body is not a JSON object' };
	const { event, data, timestamp } = parsed;
	if (typeof event !== 'string' || !(EVENT_TYPES as readonly string[]).includes(event)) {
		return {
			ok: false,
			reason: `"event" must be one of ${EVENT_TYPES.join(', ')}, got ${typeof event === 'string' ? `"${event.slice(0, 100)}"` : typeof event}`,
		};
	}
	if (!isPlainObject(data)) return { ok: false, reason: '"data" must be an object' };
	const timestampMs = parseTimestamp(timestamp);
	if (timestampMs === undefined) {
		return { ok: false, reason: '"timestamp" must be an ISO 8601 date-time with a UTC offset' };
	}
	return { ok: true, envelope: parsed as EventEnvelope, timestampMs };
}

export type AgeResult = { ok: true } | { ok: false; reason: string };

/**
 * Replay window. `maxAgeSeconds` 0 disables the check (both directions); otherwise an
 * event older than the maximum, or dated more than the tolerance in the future, is refused.
 */
export function checkEventAge(
	timestampMs: number,
	nowMs: number,
	maxAgeSeconds: number,
	futureToleranceSeconds = FUTURE_TOLERANCE_SECONDS,
): AgeResult {
	if (!Number.isFinite(maxAgeSeconds) || maxAgeSeconds <= 0) return { ok: true };
	const ageMs = nowMs - timestampMs;
	if (ageMs > maxAgeSeconds * 1000) {
		return {
			ok: false,
			reason: `the event is ${Math.round(ageMs / 1000)} s old, more than the maximum age of ${maxAgeSeconds} s`,
		};
	}
	if (-ageMs > futureToleranceSeconds * 1000) {
		return {
			ok: false,
			reason: `the event is dated ${Math.round(-ageMs / 1000)} s in the future (tolerance ${futureToleranceSeconds} s)`,
		};
	}
	return { ok: true };
}
