/**
 * What an HTTP failure means for the user, as plain data. The spec fixes 401 and 403; a missing
 * `from` and a closed 24-hour window have no status shown, so those messages are hedged.
 */
import type { INode } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { isPlainObject } from './json';

export interface RequestContext {
	/** e.g. "Message → Get Status". */
	operation: string;
	/** Scope the endpoint needs, named on a 403. */
	scope?: string;
	itemIndex?: number;
	/** Set for a reply: enables the `from` and 24-hour window messages. */
	reply?: { from?: string };
	/** Set for a media download: a 404/410 means the media is past retention. */
	media?: boolean;
}

export type ErrorExplanation = { message: string; description: string };

const MAX_BODY_CHARS = 2000;

/** The body as the service sent it, shortened only when huge. */
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
	return text.length > MAX_BODY_CHARS
		? `${text.slice(0, MAX_BODY_CHARS)}… (${text.length} chars)`
		: text;
}

/** The sentence an error body carries for people: `error.message` (CONTRACT G1) or `message`. */
export function serviceMessage(body: unknown): string | undefined {
	if (!isPlainObject(body)) return undefined;
	const nested = isPlainObject(body.error) ? body.error.message : undefined;
	const found = [nested, body.message].find(
		(value): value is string => typeof value === 'string' && value.trim() !== '',
	);
	if (!found) return undefined;
	const text = found.trim().replace(/\s+/g, ' ');
	return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Retry-After (seconds or an HTTP date) in milliseconds. */
export function retryAfterMs(headers: ResponseHeaders | undefined): number | undefined {
	const raw = headers?.['retry-after'];
	const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
	if (!value) return undefined;
	if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
	const date = Date.parse(value);
	return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

export type ResponseHeaders = Record<string, string | string[] | undefined>;

const WINDOW_HINT = /window|24[ -]?h|template/i;
const FROM_HINT = /(^|[^a-z])from([^a-z]|$)/i;

/** A reply refused with a status the spec does not fix: worded from the body, else both causes. */
function explainRefusedReply(
	status: number,
	body: unknown,
	from: string | undefined,
): ErrorExplanation {
	const text = bodyAsText(body);
	const served = `The service answered ${status}: ${text}`;
	if (WINDOW_HINT.test(text)) {
		return {
			message: `The 24-hour reply window is closed for this contact (${status}): send a template message instead`,
			description: `Free-text replies are allowed only within 24 hours of the contact's last message to this number. Outside it, send an approved template message (HTTP Request node with this credential). ${served}`,
		};
	}
	if (!from && FROM_HINT.test(text)) {
		return {
			message: `The service refused the reply (${status}): From is required when the key is limited to several numbers`,
			description: `Set From to the phone_number_id that received the message: the "number" field of the inbound event. ${served}`,
		};
	}
	const causes = from
		? "If the contact's last message to this number is more than 24 hours old, the free-text window is closed and a template message is needed instead."
		: 'From was empty: a key limited to several numbers needs From (the "number" field of the inbound event). If the contact\'s last message is more than 24 hours old, a template message is needed instead.';
	// The service's own sentence says why better than our guesses.
	const said = serviceMessage(body);
	return {
		message: `The service refused the reply (${status})${said ? `: ${said}` : ''}`,
		description: `${causes} ${served}`,
	};
}

export function explainHttpError(
	status: number,
	body: unknown,
	context: RequestContext,
	headers?: ResponseHeaders,
): ErrorExplanation {
	const served = `The service answered ${status}: ${bodyAsText(body)}`;

	if (status === 429) {
		const waitMs = retryAfterMs(headers);
		const wait = waitMs === undefined ? undefined : `${Math.ceil(waitMs / 1000)} s`;
		const replyNote = context.reply
			? 'A reply is never retried by the node; a 429 usually means the service did not accept it, so it can be sent again once the wait is over.'
			: 'Reads are retried up to 3 times, waiting as asked for up to 30 s; the limit was still in force.';
		return {
			message: `${context.operation}: the service is limiting requests (429)${wait ? `, retry after ${wait}` : ''}`,
			description: `The service asked to slow down${wait ? ` and to wait ${wait} (Retry-After)` : ''}. ${replyNote} ${served}`,
		};
	}

	if (context.reply && status >= 500) {
		return {
			message: `${context.operation} failed (${status}): the service had an error; the reply was not sent again`,
			description: `The service may or may not have sent the reply before failing: check (Log → Get Many, category sends) before sending it again. ${served}`,
		};
	}

	if (status === 401) {
		return {
			message: 'The API key is revoked or unknown (401)',
			description: `Make a new key in the console's Keys tab and paste it into the Business Messaging API credential. ${served}`,
		};
	}

	if (status === 403 && context.reply) {
		const from = context.reply.from ? `"${context.reply.from}"` : 'the number the key implies';
		return {
			message: `The key may not send this reply (403): From ${from} is not among the numbers the key is limited to, or the key lacks the messages:send scope`,
			description: `Set From to one of the key's allowed numbers (Key → Get Many shows them; the inbound event's "number" field is the receiving number), or use a key with messages:send. ${served}`,
		};
	}

	if (status === 403) {
		const scope = context.scope ? `the ${context.scope} scope` : 'the scope this operation needs';
		return {
			message: `The API key lacks ${scope} (403)`,
			description: `${context.operation} needs ${scope}. Make a key that has it in the console's Keys tab. ${served}`,
		};
	}

	if (context.reply && status >= 400 && status < 500 && status !== 404 && status !== 429)
		return explainRefusedReply(status, body, context.reply.from);

	if (context.media && status === 410) {
		return {
			message: `The media is no longer available (410): it is past the account's retention window`,
			description: `Media is kept only for the account's retention window; download it soon after the event arrives (the trigger's Download Media option does). ${served}`,
		};
	}

	if (context.media && status === 404) {
		return {
			message: 'The media was not found (404)',
			description: `The ID may be wrong, the media may not be hosted (an echo's media never is), or it may be past the account's retention window. ${served}`,
		};
	}

	if (status === 414 || status === 431) {
		return {
			message: `${context.operation} failed (${status}): the request's address is too long for the service`,
			description: `An ID or a query value is too long to be sent in the URL. Check the field, or the expression that fills it. ${served}`,
		};
	}

	if (status === 413) {
		return {
			message: `${context.operation} failed (413): the request is too large for the service`,
			description: `A value sent in the request body is too large. Check the field, or the expression that fills it. ${served}`,
		};
	}

	return { message: `${context.operation} failed (${status})`, description: served };
}

/** A node's own errors as they are, anything else wrapped; all with the item's index. */
export function asNodeError(
	node: INode,
	error: unknown,
	itemIndex: number,
): NodeApiError | NodeOperationError {
	if (error instanceof NodeApiError || error instanceof NodeOperationError) {
		error.context.itemIndex ??= itemIndex;
		return error;
	}
	return new NodeOperationError(node, error as Error, { itemIndex });
}
