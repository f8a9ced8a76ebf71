/**
 * What an HTTP failure means for the user. n8n's editor shows the message, never the description:
 * what failed, the status, what to do, then the service's sentence; the description has the body.
 * The spec fixes only 401 and 403: the `from` and 24-hour window messages are hedged.
 */
import type { INode } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { bodyAsText, withServiceSentence } from './serviceText';

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
	/** What a 404 means here and what to do, e.g. which ID to use instead. */
	notFound?: string;
}

type ErrorExplanation = { message: string; description: string };

/** Retry-After (seconds or an HTTP date) in milliseconds. */
export function retryAfterMs(headers: ResponseHeaders | undefined): number | undefined {
	const value = headers && header(headers, 'retry-after')?.trim();
	if (!value) return undefined;
	if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
	const date = Date.parse(value);
	return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export function header(headers: ResponseHeaders, name: string): string | undefined {
	const value = headers[name];
	return Array.isArray(value) ? value[0] : value;
}

const WINDOW_HINT = /window|24[ -]?h|template/i;
const FROM_HINT = /(^|[^a-z])from([^a-z]|$)/i;
const TEMPLATE =
	'send an approved template message instead (HTTP Request node with this credential)';
const NEW_KEY =
	"make one in the console's Keys tab and put it in the Business Messaging API credential";
const CHECK_SENDS = 'check Log → Get Many (category Sends) before sending it again';

function quoted(body: unknown, message: string, description: string): ErrorExplanation {
	return { message: withServiceSentence(message, body), description };
}

/** A reply refused with a status the spec does not fix: worded from the body, else both causes. */
function explainRefusedReply(
	status: number,
	body: unknown,
	from: string | undefined,
	served: string,
): ErrorExplanation {
	// The hints read the body as it came (a code such as window_closed), not only its sentence.
	const text = bodyAsText(body);
	if (WINDOW_HINT.test(text)) {
		return quoted(
			body,
			`The 24-hour reply window is closed for this contact (${status}): ${TEMPLATE}`,
			`Free-text replies are allowed only within 24 hours of the contact's last message to this number. Outside it, send an approved template message (HTTP Request node with this credential). ${served}`,
		);
	}
	if (!from && FROM_HINT.test(text)) {
		return quoted(
			body,
			`The service refused the reply (${status}): From is required when the key is limited to several numbers. Set From to the "number" field of the inbound event`,
			`Set From to the phone_number_id that received the message: the "number" field of the inbound event. ${served}`,
		);
	}
	const todo = from
		? 'Check To and Text; if the contact last wrote more than 24 hours ago, send a template message instead'
		: 'Set From (the inbound event\'s "number") if the key is limited to several numbers; if the contact last wrote more than 24 hours ago, send a template message instead';
	const causes = from
		? "If the contact's last message to this number is more than 24 hours old, the free-text window is closed and a template message is needed instead."
		: 'From was empty: a key limited to several numbers needs From (the "number" field of the inbound event). If the contact\'s last message is more than 24 hours old, a template message is needed instead.';
	return quoted(body, `The service refused the reply (${status}). ${todo}`, `${causes} ${served}`);
}

/** 404 and 410: what is missing depends on the operation. */
function explainNotFound(status: number, body: unknown, context: RequestContext, served: string) {
	const { operation } = context;
	if (context.media && status === 410) {
		return quoted(
			body,
			`${operation} failed (410): the media is past the account's retention window and cannot be downloaded any more. Download media soon after its event arrives (the trigger's Download Media option does)`,
			`Media is kept only for the account's retention window. ${served}`,
		);
	}
	if (context.media) {
		return quoted(
			body,
			`${operation} failed (${status}): the service has no media with this ID. Use the media_id or media_url of an inbound event, soon after it arrives (an echo's media is never hosted)`,
			`The ID may be wrong, the media may not be hosted (an echo's media never is), or it may be past the account's retention window. ${served}`,
		);
	}
	const meaning =
		context.notFound ??
		"the service has nothing at this address. Check the ID or value this operation reads, and that the credential's Base URL is the service's address (without /v1)";
	return quoted(body, `${operation} failed (${status}): ${meaning}`, served);
}

export function explainHttpError(
	status: number,
	body: unknown,
	context: RequestContext,
	headers?: ResponseHeaders,
): ErrorExplanation {
	const { operation } = context;
	const served = `The service answered ${status}: ${bodyAsText(body)}`;
	const quote = (message: string, description: string) => quoted(body, message, description);

	if (status === 429) {
		const waitMs = retryAfterMs(headers);
		const wait = waitMs === undefined ? undefined : `${Math.ceil(waitMs / 1000)} s`;
		const replyNote = context.reply
			? 'A reply is never retried by the node; a 429 usually means the service did not accept it, so it can be sent again once the wait is over.'
			: 'Reads are retried up to 3 times, waiting as asked for up to 30 s; the limit was still in force.';
		const waitFor = `Wait ${wait ?? 'a moment'}`;
		const todo = context.reply
			? ` and the reply was not sent again. ${waitFor}, then send it again`
			: `. ${waitFor} and run it again, or space out the calls`;
		return quote(
			`${operation}: the service is limiting requests (429)${todo}`,
			`The service asked to slow down${wait ? ` and to wait ${wait} (Retry-After)` : ''}. ${replyNote} ${served}`,
		);
	}

	if (context.reply && status >= 500) {
		return quote(
			`${operation} failed (${status}): the service had an error and the reply was not sent again. It may have gone out: ${CHECK_SENDS}`,
			`The service may or may not have sent the reply before failing: check (Log → Get Many, category sends) before sending it again. ${served}`,
		);
	}

	if (status >= 500) {
		return quote(
			`${operation} failed (${status}): the service had an error. Run it again later; if it keeps failing, tell the service's support`,
			served,
		);
	}

	if (status === 401) {
		return quote(
			`The API key is revoked or unknown (401): ${NEW_KEY}`,
			`${operation} was refused. Make a new key in the console's Keys tab and paste it into the Business Messaging API credential. ${served}`,
		);
	}

	if (status === 403 && context.reply) {
		const from = context.reply.from ? `"${context.reply.from}"` : 'the number the key implies';
		return quote(
			`The key may not send this reply (403): From ${from} is not among the numbers the key is limited to, or the key lacks the messages:send scope. Set From to one of the key's numbers (Key → Get Many lists them), or use a key with messages:send`,
			`Set From to one of the key's allowed numbers (Key → Get Many shows them; the inbound event's "number" field is the receiving number), or use a key with messages:send. ${served}`,
		);
	}

	if (status === 403) {
		const scope = context.scope ? `the ${context.scope} scope` : 'the scope this operation needs';
		return quote(
			`The API key lacks ${scope} (403): use a key with ${context.scope || 'more scopes'}: ${NEW_KEY}`,
			`${operation} needs ${scope}. Make a key that has it in the console's Keys tab. ${served}`,
		);
	}

	if (context.reply && status >= 400 && status < 500 && status !== 404)
		return explainRefusedReply(status, body, context.reply.from, served);

	if (status === 404 || status === 410) return explainNotFound(status, body, context, served);

	if (status === 414 || status === 431) {
		return quote(
			`${operation} failed (${status}): the request's address is too long for the service. Shorten the ID or query value, or fix the expression that fills it`,
			`An ID or a query value is too long to be sent in the URL. Check the field, or the expression that fills it. ${served}`,
		);
	}

	if (status === 413) {
		return quote(
			`${operation} failed (413): the request is too large for the service. Shorten the value sent, or fix the expression that fills it`,
			`A value sent in the request body is too large. Check the field, or the expression that fills it. ${served}`,
		);
	}

	if (status >= 300 && status < 400) {
		return quote(
			`${operation} failed (${status}): the service answered with a redirect. Set the credential's Base URL to the address the service answers on (https, without /v1)`,
			`Requests carrying the API key never follow redirects. ${served}`,
		);
	}

	if (status >= 400) {
		return quote(
			`${operation} failed (${status}): the service refused the request. Check the node's fields and the expressions that fill them`,
			served,
		);
	}

	return quote(
		`${operation} failed (${status}): run it again; if it keeps failing, tell the service's support`,
		served,
	);
}

const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'ECONNABORTED']);

/** A request that got no answer at all (refused connection, reset, timeout). */
export function explainNetworkFailure(
	reason: string,
	context: RequestContext,
	attempt: { write: boolean; attempts: number },
): ErrorExplanation {
	const { operation } = context;
	const timedOut = TIMEOUT_CODES.has(reason) || /time(d)? ?out/i.test(reason);
	const what = timedOut
		? 'the service did not answer in time'
		: `could not reach the service (${reason.slice(0, 120)})`;
	const todo = attempt.write
		? `It was not sent again, because the service may already have acted on it: ${context.reply ? CHECK_SENDS : 'check before repeating it'}`
		: timedOut
			? `Tried ${attempt.attempts} time(s). Run it again later; if it keeps happening, check the credential's Base URL`
			: `Check the credential's Base URL and that n8n can reach the service, then run it again`;
	return {
		message: `${operation}: ${what}. ${todo}`,
		description: `The connection failed (${reason}). Check the credential's Base URL and that the service is reachable. ${
			attempt.write
				? 'It was not sent again, because the service may already have acted on it: check before retrying.'
				: `Tried ${attempt.attempts} time(s).`
		}`,
	};
}

/** Keeps our message: n8n swaps one naming e.g. ECONNRESET (even quoted) for a generic one. */
export function apiError(
	node: INode,
	response: object,
	options: { message: string; description?: string; httpCode?: string; itemIndex?: number },
): NodeApiError {
	const error = new NodeApiError(node, response as never, options);
	error.message = options.message;
	return error;
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
