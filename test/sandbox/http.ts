import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ZodTypeAny, output } from 'zod';

/** An answer other than success, carried to the one place that writes error bodies. */
export class HttpError extends Error {
	constructor(
		readonly status: number,
		readonly code: string,
		message: string,
		readonly headers: Record<string, string> = {},
	) {
		super(message);
	}
}

export interface ErrorBody {
	error: { code: string; message: string };
}

export const errorBody = (code: string, message: string): ErrorBody => ({
	error: { code, message },
});

/** Large enough for base64 media posted to the control API. */
export const MAX_BODY_BYTES = 20 * 1024 * 1024;

export async function readRawBody(req: IncomingMessage): Promise<Buffer> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of req) {
		const buffer = chunk as Buffer;
		size += buffer.length;
		if (size > MAX_BODY_BYTES)
			throw new HttpError(413, 'payload_too_large', `Body larger than ${MAX_BODY_BYTES} bytes`);
		chunks.push(buffer);
	}
	return Buffer.concat(chunks);
}

/** Empty body reads as undefined so that zod reports the missing fields by name. */
export function parseJsonBody(raw: Buffer): unknown {
	if (raw.length === 0) return undefined;
	try {
		return JSON.parse(raw.toString('utf8'));
	} catch (err) {
		throw new HttpError(400, 'invalid_json', `Body is not valid JSON: ${(err as Error).message}`);
	}
}

export function validate<S extends ZodTypeAny>(
	schema: S,
	value: unknown,
	what = 'body',
): output<S> {
	const result = schema.safeParse(value);
	if (result.success) return result.data;
	const issues = result.error.issues
		.map((issue) => `${issue.path.length ? issue.path.join('.') : what}: ${issue.message}`)
		.join('; ');
	throw new HttpError(400, 'invalid_request', `Invalid ${what}: ${issues}`);
}

export function queryObject(url: URL): Record<string, string> {
	return Object.fromEntries(url.searchParams.entries());
}

/** A random marker per process, so that no text a client sends can pass for a raw number. */
const RAW_NUMBER_MARK = `raw-number-${randomBytes(8).toString('hex')}:`;
const RAW_NUMBER_TOKEN = new RegExp(`"${RAW_NUMBER_MARK}(-?\\d+(?:\\.\\d+)?)"`, 'g');

/**
 * A JSON number written exactly as `text` (e.g. `1795770930.120000`, trailing zeros kept), which
 * JSON.stringify cannot do with a number. Only sendJson (stringifyJson) writes it as a number.
 */
export class RawJsonNumber {
	constructor(readonly text: string) {
		if (!/^-?\d+(\.\d+)?$/.test(text)) throw new Error(`Not a JSON number: ${text}`);
	}

	toJSON(): string {
		return RAW_NUMBER_MARK + this.text;
	}
}

/** JSON.stringify, with RawJsonNumber values written as the number they hold. */
export function stringifyJson(body: unknown): string {
	return JSON.stringify(body).replace(RAW_NUMBER_TOKEN, (_match, digits: string) => digits);
}

export function sendJson(
	res: ServerResponse,
	status: number,
	body: unknown,
	headers: Record<string, string> = {},
): void {
	if (res.headersSent || res.destroyed) return;
	if (status === 204 || body === undefined) {
		res.writeHead(status, headers);
		res.end();
		return;
	}
	const payload = Buffer.from(stringifyJson(body));
	res.writeHead(status, {
		'Content-Type': 'application/json; charset=utf-8',
		'Content-Length': String(payload.length),
		...headers,
	});
	res.end(payload);
}

export function sendError(res: ServerResponse, error: HttpError): void {
	sendJson(res, error.status, errorBody(error.code, error.message), error.headers);
}

/** Unexpected exceptions become a 500 with the same error shape. */
export function asHttpError(err: unknown): HttpError {
	if (err instanceof HttpError) return err;
	return new HttpError(
		500,
		'internal_error',
		`Sandbox error: ${(err as Error)?.message ?? String(err)}`,
	);
}

/** A tiny router: the first route whose pattern matches and whose method fits. */
export interface Route<H> {
	method: string;
	pattern: RegExp;
	handler: H;
}

export type RouteLookup<H> =
	{ found: true; handler: H; params: string[] } | { found: false; error: HttpError };

export function findRoute<H>(
	routes: readonly Route<H>[],
	method: string,
	path: string,
): RouteLookup<H> {
	const matching = routes.filter((route) => route.pattern.test(path));
	if (matching.length === 0)
		return { found: false, error: new HttpError(404, 'not_found', `No endpoint ${path}`) };
	const route = matching.find((r) => r.method === method);
	if (!route) {
		const allowed = [...new Set(matching.map((r) => r.method))].join(', ');
		return {
			found: false,
			error: new HttpError(
				405,
				'method_not_allowed',
				`${method} is not allowed on ${path} (allowed: ${allowed})`,
				{
					Allow: allowed,
				},
			),
		};
	}
	const params = (route.pattern.exec(path) ?? []).slice(1).map(safeDecode);
	return { found: true, handler: route.handler, params };
}

export function safeDecode(segment: string): string {
	try {
		return decodeURIComponent(segment);
	} catch {
		return segment;
	}
}
