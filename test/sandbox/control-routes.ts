import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { SandboxContext } from './context';
import { asHttpError, errorBody, findRoute, HttpError, parseJsonBody, readRawBody, sendJson, validate, type Route } from './http';
import { receiveInbound, relayEcho, updateStatus } from './messaging';
import { phoneSchema } from './schemas';
import { DELIVERY_STATUSES, FAULT_KINDS, MESSAGE_TYPES, SCOPES } from './types';

/** One line per control endpoint; printed by the CLI and served at GET /_sandbox. */
export const CONTROL_API_SUMMARY: readonly string[] = [
	'GET    /_sandbox/state                       numbers, keys (no values), messages, inbound, webhook (with secret), deliveries, media_requests, requests, logs',
	'POST   /_sandbox/reset                       back to the seed (same key values)',
	'POST   /_sandbox/clock    {advance_seconds}  move the sandbox clock forward -> {now}',
	'POST   /_sandbox/keys     {scopes, allowed_numbers}  -> 201 {id, key}',
	'POST   /_sandbox/keys/{id}/revoke            -> 204',
	'POST   /_sandbox/inbound  {from, contact_name, number, type?, text?, media?: {mime, data_base64, filename?}, host_media?}  -> 201 {record, delivery}',
	'POST   /_sandbox/echo     {to, number, type?, text?, media_mime?}  -> 201 {record, delivery}',
	'POST   /_sandbox/status   {id, status, error?}  -> 200 {message, delivery}',
	'POST   /_sandbox/faults   {count, kind: status_500|status_429|reset|delay|malformed_json, retry_after_seconds?, delay_ms?, path_prefix?}  -> 201 {fault}',
	'GET    /_sandbox/faults   pending faults; DELETE /_sandbox/faults clears them',
];

const MAX_CLOCK_ADVANCE_SECONDS = 10 * 365 * 24 * 60 * 60;

const keySchema = z.object({
	scopes: z.array(z.enum(SCOPES)),
	allowed_numbers: z.array(z.string().min(1)).min(1).nullable().default(null),
});

const base64Schema = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const mimeSchema = z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, 'must be a MIME type such as image/jpeg');

const inboundSchema = z.object({
	from: phoneSchema,
	contact_name: z.string(),
	number: z.string().min(1),
	type: z.enum(MESSAGE_TYPES).optional(),
	text: z.string().max(4096).default(''),
	media: z.object({ mime: mimeSchema, data_base64: base64Schema, filename: z.string().min(1).max(255).optional() }).optional(),
	host_media: z.boolean().default(true),
});

const echoSchema = z.object({
	to: phoneSchema,
	number: z.string().min(1),
	type: z.enum(MESSAGE_TYPES).optional(),
	text: z.string().max(4096).default(''),
	media_mime: mimeSchema.optional(),
});

const statusSchema = z.object({ id: z.string().min(1), status: z.enum(DELIVERY_STATUSES), error: z.unknown().optional() });

const clockSchema = z.object({ advance_seconds: z.number().finite().min(0).max(MAX_CLOCK_ADVANCE_SECONDS) });

const faultSchema = z.object({
	count: z.number().int().min(1).max(1000),
	kind: z.enum(FAULT_KINDS),
	retry_after_seconds: z.number().int().min(0).max(86400).optional(),
	delay_ms: z.number().int().min(0).max(120000).optional(),
	path_prefix: z.string().startsWith('/v1').optional(),
});

interface ControlCall {
	ctx: SandboxContext;
	params: string[];
	rawBody: Buffer;
}

type ControlHandler = (call: ControlCall) => Promise<{ status: number; body?: unknown }> | { status: number; body?: unknown };

const body = <S extends z.ZodTypeAny>(schema: S, call: ControlCall): z.output<S> => validate(schema, parseJsonBody(call.rawBody));

function requireAccountNumber(ctx: SandboxContext, number: string, field: string): void {
	if (!ctx.store.hasNumber(number)) {
		throw new HttpError(400, 'invalid_request', `Invalid body: ${field}: ${number} is not a number of the account (${ctx.store.accountNumberIds().join(', ')})`);
	}
}

const routes: Route<ControlHandler>[] = [
	{ method: 'GET', pattern: /^\/_sandbox\/?$/, handler: () => ({ status: 200, body: { endpoints: CONTROL_API_SUMMARY } }) },
	{ method: 'GET', pattern: /^\/_sandbox\/state$/, handler: ({ ctx }) => ({ status: 200, body: ctx.store.snapshot() }) },
	{
		method: 'POST',
		pattern: /^\/_sandbox\/reset$/,
		handler: ({ ctx }) => {
			ctx.clock.reset();
			ctx.store.reset();
			return { status: 204 };
		},
	},
	{
		method: 'POST',
		pattern: /^\/_sandbox\/clock$/,
		handler: (call) => {
			call.ctx.clock.advance(body(clockSchema, call).advance_seconds);
			return { status: 200, body: { now: call.ctx.store.now() } };
		},
	},
	{
		method: 'POST',
		pattern: /^\/_sandbox\/keys$/,
		handler: (call) => {
			const input = body(keySchema, call);
			input.allowed_numbers?.forEach((n, i) => requireAccountNumber(call.ctx, n, `allowed_numbers.${i}`));
			const key = call.ctx.store.createKey(input.scopes, input.allowed_numbers);
			return { status: 201, body: { id: key.id, key: key.value, scopes: key.scopes, allowed_numbers: key.allowed_numbers } };
		},
	},
	{
		method: 'POST',
		pattern: /^\/_sandbox\/keys\/([^/]+)\/revoke$/,
		handler: ({ ctx, params }) => {
			if (!ctx.store.revokeKey(params[0])) throw new HttpError(404, 'key_not_found', `No key ${params[0]}`);
			return { status: 204 };
		},
	},
	{
		method: 'POST',
		pattern: /^\/_sandbox\/inbound$/,
		handler: async (call) => {
			const input = body(inboundSchema, call);
			requireAccountNumber(call.ctx, input.number, 'number');
			const media = input.media && {
				mime: input.media.mime,
				data: Buffer.from(input.media.data_base64, 'base64'),
				filename: input.media.filename,
			};
			return { status: 201, body: await receiveInbound(call.ctx, { ...input, media }) };
		},
	},
	{
		method: 'POST',
		pattern: /^\/_sandbox\/echo$/,
		handler: async (call) => {
			const input = body(echoSchema, call);
			requireAccountNumber(call.ctx, input.number, 'number');
			return { status: 201, body: await relayEcho(call.ctx, input) };
		},
	},
	{
		method: 'POST',
		pattern: /^\/_sandbox\/status$/,
		handler: async (call) => ({ status: 200, body: await updateStatus(call.ctx, body(statusSchema, call)) }),
	},
	{
		method: 'POST',
		pattern: /^\/_sandbox\/faults$/,
		handler: (call) => ({ status: 201, body: { fault: call.ctx.store.faults.add(body(faultSchema, call)) } }),
	},
	{ method: 'GET', pattern: /^\/_sandbox\/faults$/, handler: ({ ctx }) => ({ status: 200, body: { data: ctx.store.faults.list() } }) },
	{
		method: 'DELETE',
		pattern: /^\/_sandbox\/faults$/,
		handler: ({ ctx }) => {
			ctx.store.faults.clear();
			return { status: 204 };
		},
	},
];

/** The control API: no auth, never counted as /v1 traffic, never faulted. */
export async function handleControlRequest(ctx: SandboxContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
	try {
		const rawBody = await readRawBody(req);
		const route = findRoute(routes, req.method ?? 'GET', url.pathname);
		if (!route.found) throw route.error;
		const result = await route.handler({ ctx, params: route.params, rawBody });
		sendJson(res, result.status, result.body);
	} catch (err) {
		const error = asHttpError(err);
		sendJson(res, error.status, errorBody(error.code, error.message), error.headers);
	}
}
