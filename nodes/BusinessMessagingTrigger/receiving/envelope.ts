/** Event envelope: parsing, validation and the replay window. Pure, never throws. */
import { isPlainObject, parseJsonBody } from '../../shared/json';
import { boundedMaxAge } from '../options';

export const EVENT_TYPES = ['message.inbound', 'message.status', 'message.echo'] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface EventEnvelope {
	event: EventType;
	data: Record<string, unknown>;
	timestamp: string;
	[key: string]: unknown;
}

export type EnvelopeResult =
	{ ok: true; envelope: EventEnvelope; timestampMs: number } | { ok: false; reason: string };

export const FUTURE_TOLERANCE_SECONDS = 60;

// ISO 8601 with an offset (µs from the service); the day is checked: Date.parse rolls 30 Feb over.
const TIMESTAMP_PATTERN =
	/^(\d{4})-(\d{2})-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)$/i;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Epoch ms, or undefined when the text is not an ISO 8601 date-time with offset. */
export function parseTimestamp(value: unknown): number | undefined {
	const match = typeof value === 'string' ? TIMESTAMP_PATTERN.exec(value.trim()) : null;
	if (!match) return undefined;
	const [year, month, day] = match.slice(1, 4).map(Number);
	const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
	const daysInMonth = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
	if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return undefined;
	const ms = Date.parse(match[0]);
	return Number.isNaN(ms) ? undefined : ms;
}

export function parseEnvelope(rawBody: Buffer): EnvelopeResult {
	const parsed = parseJsonBody(rawBody);
	if (parsed === undefined) return { ok: false, reason: 'the body is not valid JSON' };
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
	if (timestampMs === undefined)
		return { ok: false, reason: '"timestamp" must be an ISO 8601 date-time with a UTC offset' };
	return { ok: true, envelope: parsed as EventEnvelope, timestampMs };
}

/** Replay window: refused when older than the maximum (1 s .. 1 h) or too far in the future. */
export function checkEventAge(
	timestampMs: number,
	nowMs: number,
	maxAgeSeconds: number,
): { ok: true } | { ok: false; reason: string } {
	maxAgeSeconds = boundedMaxAge(maxAgeSeconds);
	const ageMs = nowMs - timestampMs;
	if (ageMs > maxAgeSeconds * 1000) {
		return {
			ok: false,
			reason: `the event is ${Math.round(ageMs / 1000)} s old, more than the maximum age of ${maxAgeSeconds} s`,
		};
	}
	if (-ageMs > FUTURE_TOLERANCE_SECONDS * 1000) {
		return {
			ok: false,
			reason: `the event is dated ${Math.round(-ageMs / 1000)} s in the future (tolerance ${FUTURE_TOLERANCE_SECONDS} s)`,
		};
	}
	return { ok: true };
}
