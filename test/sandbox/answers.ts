/**
 * Answering a guess differently (CONTRACT.md, "Answering a guess differently"): seven settings, each
 * answering one of the spec's "not shown" details another plausible way. The first value of each is the
 * default, the sandbox's own guess. This module holds the settings, their validation and the functions
 * that reshape an answer accordingly; the routes call them with the current settings.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import { HttpError, RawJsonNumber, sendJson, validate } from './http';
import { pageNumberSchema, paginateByCursor, paginateByNumber, type ListOrder } from './pagination';
import type { Sequenced } from './store';
import type { ConversationRecord, LogEntry } from './types';

export const ANSWER_SETTINGS = {
	list_shape: ['data_cursor', 'items_next_url', 'items_next_token', 'bare_array', 'page_number'],
	record_fields: ['text_created_at', 'body_created'],
	inbound_filters: ['applied', 'ignored'],
	webhook_log: ['by_message', 'event_id'],
	secret_field: ['secret', 'signing_secret', 'hmac_key'],
	error_body: ['error_object', 'detail', 'message', 'text'],
	webhook_config: ['url_configured', 'other_shape'],
} as const;

export type AnswerSetting = keyof typeof ANSWER_SETTINGS;
export type Answers = { -readonly [S in AnswerSetting]: (typeof ANSWER_SETTINGS)[S][number] };

export const ANSWER_SETTING_NAMES = Object.keys(ANSWER_SETTINGS) as AnswerSetting[];

/** Today's answers: the first value of each setting. */
export const DEFAULT_ANSWERS: Readonly<Answers> = Object.freeze(
	Object.fromEntries(
		ANSWER_SETTING_NAMES.map((name) => [name, ANSWER_SETTINGS[name][0]]),
	) as Answers,
);

/** The settings in `input` (a partial set), or the sentence naming the first unknown setting or value. */
function checkAnswers(input: unknown): { answers: Partial<Answers> } | { problem: string } {
	if (typeof input !== 'object' || input === null || Array.isArray(input))
		return { problem: 'answers: expected an object of settings' };
	const answers: Record<string, string> = {};
	for (const [name, value] of Object.entries(input)) {
		if (!Object.hasOwn(ANSWER_SETTINGS, name))
			return {
				problem: `${name}: unknown setting (known: ${ANSWER_SETTING_NAMES.join(', ')})`,
			};
		const allowed = ANSWER_SETTINGS[name as AnswerSetting] as readonly string[];
		if (typeof value !== 'string' || !allowed.includes(value))
			return {
				problem: `${name}: unknown value ${JSON.stringify(value)} (one of ${allowed.join(', ')})`,
			};
		answers[name] = value;
	}
	return { answers: answers as Partial<Answers> };
}

/** A partial set given in process (startSandbox, setAnswers); throws an Error naming what is wrong. */
export function requireAnswers(input: unknown): Partial<Answers> {
	const checked = checkAnswers(input);
	if ('problem' in checked) throw new Error(`Invalid sandbox answers: ${checked.problem}`);
	return checked.answers;
}

/** The body of POST /_sandbox/answers: a 400 invalid_request names the unknown setting or value. */
export function answersFromBody(body: unknown): Partial<Answers> {
	const checked = checkAnswers(body ?? {});
	if ('problem' in checked)
		throw new HttpError(400, 'invalid_request', `Invalid body: ${checked.problem}`);
	return checked.answers;
}

/** `list_shape=items_next_url,record_fields=body_created` (the CLI flag and SANDBOX_ANSWERS). */
export function parseAnswersSpec(spec: string): Partial<Answers> {
	const input: Record<string, string> = {};
	for (const part of spec.split(',')) {
		if (part.trim() === '') continue;
		const match = /^\s*([^=\s]+)\s*=\s*(\S+)\s*$/.exec(part);
		if (!match)
			throw new Error(
				`Invalid sandbox answers: "${part}" is not setting=value (e.g. list_shape=items_next_url)`,
			);
		input[match[1]] = match[2];
	}
	return requireAnswers(input);
}

/** The current answers; reset() goes back to the ones given at start, not to the defaults. */
export class AnswerSettings {
	private readonly start: Answers;
	private currentAnswers: Answers;

	constructor(start: Partial<Answers> = {}) {
		this.start = { ...DEFAULT_ANSWERS, ...requireAnswers(start) };
		this.currentAnswers = { ...this.start };
	}

	get current(): Readonly<Answers> {
		return this.currentAnswers;
	}

	/** Applies an already checked partial set; returns the whole set. */
	set(partial: Partial<Answers>): Answers {
		this.currentAnswers = { ...this.currentAnswers, ...partial };
		return { ...this.currentAnswers };
	}

	reset(): void {
		this.currentAnswers = { ...this.start };
	}
}

// ---- list_shape ---------------------------------------------------------

/** What a list route hands over: the items oldest first, their order in the answer, how each is shown. */
export interface ListRequest<T> {
	items: readonly Sequenced<T>[];
	order: ListOrder;
	query: { limit: number; cursor?: string };
	/** The request URL (its path and query make `next` of items_next_url). */
	url: URL;
	/** The API's own origin. */
	baseUrl: string;
	show?: (value: T) => unknown;
}

/** A paginated list (inbound, logs) in the current list_shape. */
export function listAnswer<T>(shape: Answers['list_shape'], request: ListRequest<T>): unknown {
	const show = request.show ?? ((value: T): unknown => value);
	if (shape === 'page_number') {
		const { page } = validate(
			pageNumberSchema,
			{ page: request.url.searchParams.get('page') ?? undefined },
			'query',
		);
		const perPage = request.query.limit;
		const result = paginateByNumber(request.items, perPage, page, request.order);
		return {
			data: result.values.map(show),
			page,
			per_page: perPage,
			total_pages: result.total_pages,
		};
	}
	if (shape === 'bare_array') {
		// The first page only: no cursor is ever given, so none is read.
		const first = paginateByCursor(request.items, { limit: request.query.limit }, request.order);
		return first.values.map(show);
	}
	const page = paginateByCursor(request.items, request.query, request.order);
	const values = page.values.map(show);
	switch (shape) {
		case 'data_cursor':
			return { data: values, has_more: page.nextCursor !== null, next_cursor: page.nextCursor };
		case 'items_next_token':
			return { items: values, next: page.nextCursor };
		case 'items_next_url':
			return { items: values, next: page.nextCursor && nextPageUrl(request, page.nextCursor) };
	}
}

function nextPageUrl(request: { url: URL; baseUrl: string }, cursor: string): string {
	const next = new URL(request.url.pathname + request.url.search, request.baseUrl);
	next.searchParams.set('cursor', cursor);
	return next.toString();
}

/**
 * A list the service answers whole (GET /v1/console/keys, K3: no limit, no cursor) in the current
 * list_shape: `data_cursor` keeps today's `{data}`; the others are a single, last page.
 */
export function wholeListAnswer(shape: Answers['list_shape'], values: unknown[]): unknown {
	switch (shape) {
		case 'data_cursor':
			return { data: values };
		case 'items_next_url':
		case 'items_next_token':
			return { items: values, next: null };
		case 'bare_array':
			return values;
		case 'page_number':
			return { data: values, page: 1, per_page: values.length, total_pages: 1 };
	}
}

// ---- record_fields --------------------------------------------------------

/** `2026-11-22T10:15:30.123456+00:00` as unix seconds with exactly 6 decimals. */
export function unixSecondsText(timestamp: string): string {
	const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})\+00:00$/.exec(timestamp);
	if (!match) throw new Error(`Not a sandbox timestamp: ${timestamp}`);
	const seconds = Date.parse(`${match[1]}Z`) / 1000;
	return `${seconds}.${match[2]}`;
}

/** A record of GET /v1/messages/inbound in the current record_fields (keys keep their places). */
export function conversationRecordAnswer(
	fields: Answers['record_fields'],
	record: ConversationRecord,
): unknown {
	if (fields === 'text_created_at') return record;
	return Object.fromEntries(
		Object.entries(record).map(([name, value]) => {
			if (name === 'text') return ['body', value];
			if (name === 'created_at')
				return ['created', new RawJsonNumber(unixSecondsText(record.created_at))];
			return [name, value];
		}),
	);
}

// ---- webhook_log ---------------------------------------------------------

/** A `webhook` log entry in the `event_id` answer: the delivery it logs, by id, and its outcome. */
export function webhookLogEventIdEntry(entry: LogEntry, deliveryId: string | undefined): unknown {
	return {
		event_id: deliveryId ?? null,
		url: entry.url,
		success: entry.success,
		reason: entry.reason,
	};
}

// ---- secret_field, webhook_config ----------------------------------------

export function registrationAnswer(
	field: Answers['secret_field'],
	webhook: { url: string; secret: string },
): Record<string, unknown> {
	return { url: webhook.url, configured: true, [field]: webhook.secret };
}

export function webhookConfigAnswer(
	shape: Answers['webhook_config'],
	url: string | null,
): Record<string, unknown> {
	if (shape === 'url_configured') return { url, configured: url !== null };
	return { endpoint: { address: url, enabled: url !== null } };
}

// ---- error_body -----------------------------------------------------------

/** Writes an error of /v1 in the current error_body; the status and extra headers are the same in all. */
export function sendApiError(
	res: ServerResponse,
	shape: Answers['error_body'],
	error: { status: number; code: string; message: string; headers?: Record<string, string> },
): void {
	const { status, code, message } = error;
	const headers = error.headers ?? {};
	switch (shape) {
		case 'error_object':
			sendJson(res, status, { error: { code, message } }, headers);
			return;
		case 'detail':
			sendJson(
				res,
				status,
				{ type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail: message },
				{ 'Content-Type': 'application/problem+json; charset=utf-8', ...headers },
			);
			return;
		case 'message':
			sendJson(res, status, { message, code }, headers);
			return;
		case 'text': {
			if (res.headersSent || res.destroyed) return;
			const payload = Buffer.from(message, 'utf8');
			res.writeHead(status, {
				'Content-Type': 'text/plain; charset=utf-8',
				'Content-Length': String(payload.length),
				...headers,
			});
			res.end(payload);
			return;
		}
	}
}
