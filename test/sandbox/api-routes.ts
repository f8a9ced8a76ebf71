import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import {
	conversationRecordAnswer,
	listAnswer,
	registrationAnswer,
	sendApiError,
	webhookConfigAnswer,
	webhookLogEventIdEntry,
	wholeListAnswer,
} from './answers';
import type { SandboxContext } from './context';
import { applyFault } from './fault-responses';
import {
	asHttpError,
	findRoute,
	HttpError,
	parseJsonBody,
	queryObject,
	readRawBody,
	sendJson,
	validate,
	type Route,
} from './http';
import { sendReply } from './messaging';
import { pageQuerySchema } from './pagination';
import { MAX_TEXT_LENGTH } from './policy';
import { phoneSchema } from './schemas';
import { ACCOUNT_ID } from './seed';
import { LOG_CATEGORIES, type LogEntry, type Scope, type StoredKey } from './types';
import { checkWebhookUrl } from './webhook';

interface ApiCall {
	ctx: SandboxContext;
	key: StoredKey;
	params: string[];
	url: URL;
	rawBody: Buffer;
}

interface ApiResult {
	status: number;
	body?: unknown;
	headers?: Record<string, string>;
}

interface ApiHandler {
	/** null: any active key of the account may call it. */
	scope: Scope | null;
	run(call: ApiCall): ApiResult | Promise<ApiResult>;
}

const replyBodySchema = z.object({
	to: phoneSchema,
	text: z.string().min(1).max(MAX_TEXT_LENGTH),
	from: z.string().min(1).optional(),
});

const webhookBodySchema = z.object({ url: z.string().min(1).max(2048) });

const inboundQuerySchema = pageQuerySchema.extend({
	direction: z.enum(['in', 'echo']).default('in'),
	number: z.string().min(1).optional(),
	contact: z.string().min(1).optional(),
});

const logsQuerySchema = pageQuerySchema.extend({ category: z.enum(LOG_CATEGORIES) });

const body = <S extends z.ZodTypeAny>(schema: S, call: ApiCall): z.output<S> =>
	validate(schema, parseJsonBody(call.rawBody));

const routes: Route<ApiHandler>[] = [
	{
		method: 'GET',
		pattern: /^\/v1\/ping$/,
		handler: {
			scope: 'balance:read',
			run: ({ key }) => ({
				status: 200,
				body: {
					ok: true,
					key_id: key.id,
					account_id: ACCOUNT_ID,
					scopes: key.scopes,
					allowed_numbers: key.allowed_numbers,
				},
			}),
		},
	},
	{
		method: 'GET',
		pattern: /^\/v1\/console\/keys$/,
		handler: {
			scope: null,
			run: ({ ctx }) => ({
				status: 200,
				body: wholeListAnswer(ctx.store.answers.current.list_shape, ctx.store.keyViews()),
			}),
		},
	},
	{
		method: 'POST',
		pattern: /^\/v1\/console\/webhook$/,
		handler: {
			scope: null,
			run: (call) => {
				const url = checkWebhookUrl(body(webhookBodySchema, call).url);
				const webhook = call.ctx.store.registerWebhook(url);
				const field = call.ctx.store.answers.current.secret_field;
				return { status: 201, body: registrationAnswer(field, webhook) };
			},
		},
	},
	{
		method: 'GET',
		pattern: /^\/v1\/console\/webhook$/,
		handler: {
			scope: null,
			run: ({ ctx }) => {
				const url = ctx.store.currentWebhook()?.url ?? null;
				return {
					status: 200,
					body: webhookConfigAnswer(ctx.store.answers.current.webhook_config, url),
				};
			},
		},
	},
	{
		method: 'DELETE',
		pattern: /^\/v1\/console\/webhook$/,
		handler: {
			scope: null,
			run: ({ ctx }) => {
				ctx.store.removeWebhook();
				return { status: 204 };
			},
		},
	},
	{
		method: 'GET',
		pattern: /^\/v1\/logs$/,
		handler: {
			scope: null,
			run: ({ ctx, url }) => {
				const query = validate(logsQuerySchema, queryObject(url), 'query');
				const answers = ctx.store.answers.current;
				const byEventId = query.category === 'webhook' && answers.webhook_log === 'event_id';
				const body = listAnswer(answers.list_shape, {
					items: ctx.store.logsOf(query.category),
					order: byEventId ? 'oldest_first' : 'newest_first',
					query,
					url,
					baseUrl: ctx.baseUrl,
					show: byEventId
						? (entry: LogEntry) =>
								webhookLogEventIdEntry(entry, ctx.store.deliveryIdOfLog(entry.id))
						: undefined,
				});
				return { status: 200, body };
			},
		},
	},
	{
		method: 'POST',
		pattern: /^\/v1\/messages\/reply$/,
		handler: {
			scope: 'messages:send',
			run: (call) => ({
				status: 201,
				body: sendReply(call.ctx, call.key, body(replyBodySchema, call)),
			}),
		},
	},
	{
		method: 'GET',
		pattern: /^\/v1\/messages\/inbound$/,
		handler: {
			scope: 'messages:read',
			run: ({ ctx, url }) => {
				const query = validate(inboundQuerySchema, queryObject(url), 'query');
				const answers = ctx.store.answers.current;
				// `ignored`: contact and number are read (and validated) but not applied.
				const filtered = answers.inbound_filters === 'applied';
				const records = ctx.store.conversationRecords().filter(({ value }) => {
					if (value.direction !== query.direction) return false;
					if (!filtered) return true;
					if (query.number && value.number !== query.number) return false;
					const contact = value.direction === 'in' ? value.from : value.to;
					return !query.contact || contact === query.contact;
				});
				const body = listAnswer(answers.list_shape, {
					items: records,
					order: 'newest_first',
					query,
					url,
					baseUrl: ctx.baseUrl,
					show: (record) => conversationRecordAnswer(answers.record_fields, record),
				});
				return { status: 200, body };
			},
		},
	},
	{
		method: 'GET',
		pattern: /^\/v1\/messages\/([^/]+)$/,
		handler: {
			scope: 'messages:read',
			run: ({ ctx, params }) => {
				const message = ctx.store.getMessage(params[0]);
				if (!message) throw new HttpError(404, 'message_not_found', `No message ${params[0]}`);
				return { status: 200, body: message };
			},
		},
	},
	{
		method: 'GET',
		pattern: /^\/v1\/media\/([^/]+)$/,
		handler: {
			scope: 'messages:read',
			run: ({ ctx, params }) => {
				const media = ctx.store.getMedia(params[0]);
				if (!media) throw new HttpError(404, 'media_not_found', `No media ${params[0]}`);
				if (!media.data)
					throw new HttpError(404, 'media_not_hosted', `Media ${params[0]} is not hosted`);
				if (ctx.store.isPastRetention(media)) {
					throw new HttpError(
						410,
						'media_expired',
						`Media ${params[0]} is past the account's retention window`,
					);
				}
				const signed = ctx.signer.signedUrl(media.id, ctx.clock.nowUnixSeconds());
				return {
					status: 302,
					headers: { Location: signed.url, 'Cache-Control': 'no-store' },
					body: { url: signed.url, expires_at: new Date(signed.expires * 1000).toISOString() },
				};
			},
		},
	},
];

type AuthResult = { key: StoredKey } | { error: HttpError };

function authenticate(ctx: SandboxContext, header: string | undefined): AuthResult {
	const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
	if (!match) {
		return {
			error: new HttpError(
				401,
				'missing_key',
				'Send the API key as "Authorization: Bearer sk_live_..."',
			),
		};
	}
	const key = ctx.store.findKeyByValue(match[1]);
	if (!key) return { error: new HttpError(401, 'invalid_key', 'The API key is not known') };
	if (key.revoked)
		return { error: new HttpError(401, 'key_revoked', 'The API key has been revoked') };
	return { key };
}

/** Everything under /v1: count, inject faults, authenticate, route, check scope, answer, log refusals. */
export async function handleApiRequest(
	ctx: SandboxContext,
	req: IncomingMessage,
	res: ServerResponse,
	url: URL,
): Promise<void> {
	const method = req.method ?? 'GET';
	const record = ctx.store.recordApiRequest(method, url.pathname);
	let keyId: string | null = null;
	let result: ApiResult;
	let error: HttpError | null = null;
	try {
		const rawBody = await readRawBody(req);
		const fault = ctx.store.faults.take(url.pathname);
		if (fault) {
			record.fault = fault.kind;
			const handled = await applyFault(fault, res, (faultError) =>
				sendApiError(res, ctx.store.answers.current.error_body, faultError),
			);
			if (handled.answered) {
				record.status = handled.status;
				return;
			}
		}
		const auth = authenticate(ctx, req.headers.authorization);
		if ('error' in auth) throw auth.error;
		keyId = auth.key.id;
		const route = findRoute(routes, method, url.pathname);
		if (!route.found) throw route.error;
		const { scope } = route.handler;
		if (scope && !auth.key.scopes.includes(scope)) {
			throw new HttpError(
				403,
				'missing_scope',
				`This operation needs the scope ${scope}, which the key does not have`,
			);
		}
		result = await route.handler.run({ ctx, key: auth.key, params: route.params, url, rawBody });
	} catch (err) {
		error = asHttpError(err);
		result = { status: error.status };
		if (error.status >= 400 && error.status < 500) {
			ctx.store.log('rejections', {
				method,
				path: url.pathname,
				status: error.status,
				code: error.code,
				key_id: keyId,
			});
		}
	}
	record.status = result.status;
	if (error) sendApiError(res, ctx.store.answers.current.error_body, error);
	else sendJson(res, result.status, result.body, result.headers);
}
