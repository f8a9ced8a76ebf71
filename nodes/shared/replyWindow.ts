/** The 24-hour reply window. The service decides: only a clearly closed one is refused here. */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from './json';

const REPLY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Disagreement between n8n's clock and the service's that is left for the service to judge. */
const CLOCK_SKEW_MS = 60 * 1000;

function replyWindowClosesAt(timestamp: unknown): string | undefined {
	if (typeof timestamp !== 'string' || timestamp.trim() === '') return undefined;
	// Invalid for a timestamp that is no date, or within a day of the latest date JavaScript has.
	const closes = new Date(Date.parse(timestamp) + REPLY_WINDOW_MS);
	return Number.isNaN(closes.getTime()) ? undefined : closes.toISOString();
}

/** An inbound item's JSON with `reply_window_closes_at` (from its timestamp, else created_at). */
export function withReplyWindow(json: IDataObject): IDataObject {
	if (json.event !== 'message.inbound') return json;
	const data = isPlainObject(json.data) ? json.data : {};
	const closesAt = replyWindowClosesAt(json.timestamp) ?? replyWindowClosesAt(data.created_at);
	return closesAt === undefined ? json : { ...json, reply_window_closes_at: closesAt };
}

/** When the input item is the message this reply answers and its window closed: when it closed. */
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
	return nowMs > closesMs + CLOCK_SKEW_MS ? input.reply_window_closes_at : undefined;
}
