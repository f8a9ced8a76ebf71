/**
 * The 24-hour free-text reply window, as data: when it closes for an inbound message, and
 * whether a reply's input item says it is already closed. The service stays the authority:
 * the check below only refuses a reply when the item's own clock says the window closed more
 * than CLOCK_SKEW_MS ago; anything closer is sent and the service decides.
 */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from './json';

export const REPLY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Disagreement between n8n's clock and the service's that is left for the service to judge. */
export const CLOCK_SKEW_MS = 60 * 1000;

/** When the free-text window opened by a message at `timestamp` closes (ISO 8601), or undefined. */
export function replyWindowClosesAt(timestamp: unknown): string | undefined {
	if (typeof timestamp !== 'string' || timestamp.trim() === '') return undefined;
	const ms = Date.parse(timestamp);
	if (!Number.isFinite(ms)) return undefined;
	return new Date(ms + REPLY_WINDOW_MS).toISOString();
}

/**
 * An inbound item's JSON with `reply_window_closes_at` added (from the envelope's timestamp,
 * else the record's created_at); any other event is returned as it is.
 */
export function withReplyWindow(json: IDataObject): IDataObject {
	if (json.event !== 'message.inbound') return json;
	const data = isPlainObject(json.data) ? json.data : {};
	const closesAt = replyWindowClosesAt(json.timestamp) ?? replyWindowClosesAt(data.created_at);
	return closesAt === undefined ? json : { ...json, reply_window_closes_at: closesAt };
}

/**
 * When the input item is the inbound message this reply answers (same contact, same number
 * when From is given) and its window closed by n8n's clock: when it closed. Undefined otherwise.
 */
export function closedWindow(
	input: IDataObject | undefined,
	to: string,
	from: string | undefined,
	nowMs: number,
): string | undefined {
	if (!input || typeof input.reply_window_closes_at !== 'string') return undefined;
	const data = isPlainObject(input.data) ? input.data : {};
	if (typeof data.from !== 'string' || data.from.trim() !== to) return undefined;
	if (from !== undefined && typeof data.number === 'string' && data.number.trim() !== from)
		return undefined;
	const closesMs = Date.parse(input.reply_window_closes_at);
	if (!Number.isFinite(closesMs)) return undefined;
	return nowMs > closesMs + CLOCK_SKEW_MS ? input.reply_window_closes_at : undefined;
}
