// Stand-ins for what n8n's webhook server (express) hands a webhook node: the request with its
// parsed body and raw bytes, and a response object that records what is written to it.
import { jsonParse } from 'n8n-workflow';
import { EventEmitter } from 'node:events';
import { parse as parseQueryString } from 'node:querystring';

/**
 * Stand-in for express's Response, which real n8n passes as getResponseObject(). Records what
 * the node (or the harness, answering as n8n) writes. Covers the calls nodes make: status, set /
 * header / setHeader, json, send, end, writeHead, write.
 */
export class RecordingResponse extends EventEmitter {
	statusCode = 200;

	headersSent = false;

	writableEnded = false;

	readonly headers: Record<string, string> = {};

	body: unknown = undefined;

	private chunks: Buffer[] = [];

	status(code: number) {
		this.statusCode = code;
		return this;
	}

	setHeader(name: string, value: string | number | readonly string[]) {
		this.headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
		return this;
	}

	set(field: string | Record<string, string>, value?: string) {
		if (typeof field === 'string') this.setHeader(field, value ?? '');
		else for (const [name, headerValue] of Object.entries(field)) this.setHeader(name, headerValue);
		return this;
	}

	header(field: string | Record<string, string>, value?: string) {
		return this.set(field, value);
	}

	getHeader(name: string) {
		return this.headers[name.toLowerCase()];
	}

	type(contentType: string) {
		return this.setHeader(
			'content-type',
			contentType.includes('/') ? contentType : `application/${contentType}`,
		);
	}

	json(body: unknown) {
		this.headers['content-type'] ??= 'application/json; charset=utf-8';
		this.body = body;
		return this.finish();
	}

	send(body?: unknown) {
		if (typeof body === 'object' && body !== null && !Buffer.isBuffer(body)) return this.json(body);
		if (typeof body === 'string') this.headers['content-type'] ??= 'text/html; charset=utf-8';
		if (Buffer.isBuffer(body)) this.headers['content-type'] ??= 'application/octet-stream';
		this.body = body;
		return this.finish();
	}

	writeHead(code: number, headers?: Record<string, string>) {
		this.statusCode = code;
		if (headers) this.set(headers);
		this.headersSent = true;
		return this;
	}

	write(chunk: string | Buffer) {
		this.headersSent = true;
		this.chunks.push(Buffer.from(chunk));
		return true;
	}

	end(chunk?: string | Buffer) {
		if (chunk !== undefined) this.write(chunk);
		if (this.body === undefined && this.chunks.length > 0) this.body = Buffer.concat(this.chunks);
		return this.finish();
	}

	/** When the answer was written (Date.now()): a node may answer before webhook() returns. */
	answeredAtMs: number | undefined = undefined;

	private finish() {
		this.answeredAtMs ??= Date.now();
		this.headersSent = true;
		this.writableEnded = true;
		this.emit('finish');
		this.emit('close');
		return this;
	}
}

/** Content type without parameters, and charset, as n8n's parseIncomingMessage reads them. */
export function contentTypeOf(headers: Record<string, string>): {
	contentType?: string;
	encoding: BufferEncoding;
} {
	const header = headers['content-type'];
	if (!header) return { encoding: 'utf-8' };
	const [type, ...params] = header.split(';');
	const charset = params
		.map((p) => p.trim().split('='))
		.find(([key]) => key.toLowerCase() === 'charset')?.[1];
	const encoding =
		charset && Buffer.isEncoding(charset.toLowerCase())
			? (charset.toLowerCase() as BufferEncoding)
			: 'utf-8';
	return { contentType: type.trim().toLowerCase(), encoding };
}

/** What parseRequestBody() gives: the parsed body, or the 422 n8n answers when it cannot parse. */
export type ParsedBody =
	{ body: unknown; parseError?: undefined } | { body?: undefined; parseError: Error };

/**
 * As the cli's parseBody (parseIncomingMessage + parseRequestBody): only these content types are
 * parsed; the raw bytes stay on req.rawBody. A multipart body is consumed by n8n's form parser
 * instead (parseFormData): then there is no rawBody and req.readRawBody() throws, as in n8n.
 */
export function parseRequestBody(
	contentType: string | undefined,
	encoding: BufferEncoding,
	rawBody: Buffer,
): ParsedBody {
	// The harness does not parse the form's fields; what matters is that the raw bytes are gone.
	if (contentType?.startsWith('multipart/')) return { body: {} };
	if (rawBody.length === 0) return { body: {} };
	try {
		if (contentType === 'application/json') return { body: jsonParse(rawBody.toString(encoding)) };
		if (contentType === 'application/x-www-form-urlencoded') {
			return {
				body: parseQueryString(rawBody.toString(encoding), undefined, undefined, { maxKeys: 1000 }),
			};
		}
		if (contentType === 'text/plain') return { body: rawBody.toString(encoding) };
		// Real n8n parses XML with xml2js into an object; the harness leaves the text.
		if (contentType?.endsWith('/xml') || contentType?.endsWith('+xml'))
			return { body: rawBody.toString(encoding) };
		return { body: {} };
	} catch (error) {
		return { parseError: error as Error };
	}
}

export interface ExpressRequestInput {
	method: string;
	/** Without leading or trailing slash. */
	requestPath: string;
	headers: Record<string, string>;
	rawBody: Buffer;
	body: unknown;
	query: Record<string, string | string[]>;
	contentType?: string;
	encoding: BufferEncoding;
}

/** Stand-in for express's Request, which real n8n passes as getRequestObject(). */
export function expressRequest(input: ExpressRequestInput) {
	const { method, requestPath, headers, body, query, contentType, encoding } = input;
	// n8n 2.41.1 body-parser: after parseFormData the request stream is no longer readable.
	const consumedByFormParser = contentType?.startsWith('multipart/') === true;
	const rawBody = consumedByFormParser ? undefined : input.rawBody;
	const url = `/${requestPath}${Object.keys(query).length ? `?${new URLSearchParams(query as Record<string, string>).toString()}` : ''}`;
	return {
		method,
		url,
		originalUrl: url,
		path: `/${requestPath}`,
		headers,
		body,
		rawBody,
		query,
		params: {},
		contentType,
		encoding,
		readRawBody: async () => {
			if (consumedByFormParser)
				throw new Error('Request body stream was aborted or is not readable');
		},
		get: (name: string) => headers[name.toLowerCase()],
		header: (name: string) => headers[name.toLowerCase()],
	};
}
