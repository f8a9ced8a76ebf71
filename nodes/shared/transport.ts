import type {
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	IHttpRequestMethods,
	IHttpRequestOptions,
	ILoadOptionsFunctions,
	INode,
	IWebhookFunctions,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError, sleep } from 'n8n-workflow';

import { apiKeyProblem, normalizeBaseUrl } from '../../credentials/BusinessMessagingApi.credentials';
import { explainHttpError, type RequestContext } from './errors';
import { describeType, idFromNumber } from './values';

export type { RequestContext } from './errors';

export const CREDENTIAL_TYPE = 'businessMessagingApi';

export type ApiContext = IExecuteFunctions | IHookFunctions | IWebhookFunctions | ILoadOptionsFunctions;

export interface RawResponse {
	statusCode: number;
	headers: Record<string, string | string[] | undefined>;
	body: unknown;
}

/** Bounded retry for idempotent reads: 3 retries, 0.5 s, 1 s, 2 s, or what Retry-After asks up to 30 s. */
export const RETRY_POLICY = { retries: 3, baseDelayMs: 500, maxRetryAfterMs: 30_000 };

const TRANSIENT_CODES = new Set(['ECONNRESET', 'ETIMEDOUT', 'ECONNABORTED', 'EPIPE', 'EAI_AGAIN', 'ESOCKETTIMEDOUT']);

/**
 * An id that goes into a URL path: one segment, encoded. Slashes and dot segments are
 * refused outright, because URL normalisation would turn `..` or `a/b` into another endpoint.
 */
export function pathSegment(node: INode, value: unknown, fieldName: string, itemIndex?: number): string {
	if (typeof value === 'number') value = idFromNumber(node, value, fieldName, itemIndex);
	if (typeof value !== 'string') {
		throw new NodeOperationError(node, `${fieldName} must be text, got ${describeType(value)}`, {
			itemIndex,
			description: `Check the expression that fills ${fieldName}: it should resolve to an ID string.`,
		});
	}
	const id = value.trim();
	if (!id) {
		throw new NodeOperationError(node, `${fieldName} is empty`, {
			itemIndex,
			description: `Enter ${fieldName}, or check that the expression that fills it resolves for this item.`,
		});
	}
	if (id.includes('/') || id.includes('\\') || id === '.' || id === '..' || /[\u0000-\u001f\u007f]/.test(id)) {
		throw new NodeOperationError(node, `${fieldName} "${id.slice(0, 100)}" is not a valid ID`, {
			itemIndex,
			description: `${fieldName} must be a single ID, without slashes, dot segments or control characters. Nothing was sent.`,
		});
	}
	return encodeURIComponent(id);
}

interface ResolvedCredentials {
	baseUrl: string;
}

/** Checks the credential before anything is sent, so a malformed key never leaves n8n. */
export async function resolveCredentials(this: ApiContext, itemIndex?: number): Promise<ResolvedCredentials> {
	const credentials = await this.getCredentials(CREDENTIAL_TYPE, itemIndex);
	const keyProblem = apiKeyProblem(credentials.apiKey);
	if (keyProblem) throw new NodeOperationError(this.getNode(), keyProblem, { itemIndex });
	const base = normalizeBaseUrl(credentials.baseUrl);
	if ('error' in base) throw new NodeOperationError(this.getNode(), base.error, { itemIndex });
	return { baseUrl: base.url };
}

function errorCode(error: unknown): string | undefined {
	let current = error as { code?: unknown; cause?: unknown } | undefined;
	for (let depth = 0; current && depth < 5; depth++) {
		if (typeof current.code === 'string' && TRANSIENT_CODES.has(current.code)) return current.code;
		current = current.cause as typeof current;
	}
	const message = (error as Error)?.message ?? '';
	return /socket hang up|ECONNRESET/i.test(message) ? 'ECONNRESET' : undefined;
}

function retryAfterMs(headers: RawResponse['headers']): number | undefined {
	const raw = headers['retry-after'];
	const value = Array.isArray(raw) ? raw[0] : raw;
	if (!value) return undefined;
	const seconds = Number(value);
	if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
	const date = Date.parse(value);
	return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * The one place requests are sent with the API key. Only the credential's own origin
 * is ever addressed (the credential's authenticate refuses any other), GETs are retried
 * a bounded number of times on 429/5xx/connection resets, and other methods are sent
 * exactly once: a reply that may have reached the service is never sent again.
 * Answers of any status come back as they are; `apiRequest` turns failures into errors.
 */
export async function rawApiRequest(
	this: ApiContext,
	method: IHttpRequestMethods,
	path: string,
	options: {
		qs?: IDataObject;
		body?: IDataObject;
		context: RequestContext;
		followRedirect?: boolean;
	},
): Promise<RawResponse> {
	const { baseUrl } = await resolveCredentials.call(this, options.context.itemIndex);
	const request: IHttpRequestOptions = {
		method,
		baseURL: baseUrl,
		url: path,
		qs: options.qs,
		body: options.body,
		json: true,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		disableFollowRedirect: options.followRedirect !== true,
		timeout: 30_000,
	};
	const retriesAllowed = method === 'GET' ? RETRY_POLICY.retries : 0;

	for (let attempt = 0; ; attempt++) {
		let response: RawResponse;
		try {
			response = (await this.helpers.httpRequestWithAuthentication.call(
				this,
				CREDENTIAL_TYPE,
				{ ...request },
			)) as RawResponse;
		} catch (error) {
			const code = errorCode(error);
			if (code && attempt < retriesAllowed) {
				await sleep(RETRY_POLICY.baseDelayMs * 2 ** attempt);
				continue;
			}
			throw connectionError(this.getNode(), error, options.context, code, method, attempt);
		}

		const status = response.statusCode;
		const transient = status === 429 || status >= 500;
		if (transient && attempt < retriesAllowed) {
			const asked = status === 429 ? retryAfterMs(response.headers) : undefined;
			if (asked !== undefined && asked > RETRY_POLICY.maxRetryAfterMs) return response;
			await sleep(asked ?? RETRY_POLICY.baseDelayMs * 2 ** attempt);
			continue;
		}
		return response;
	}
}

function connectionError(
	node: INode,
	error: unknown,
	context: RequestContext,
	code: string | undefined,
	method: string,
	attempt: number,
): Error {
	// Our own checks (key prefix, base URL) already speak to the user: keep them.
	if (error instanceof NodeOperationError) return error;
	const reason = code ?? ((error as Error)?.message || 'unknown error');
	const unsure =
		method === 'GET'
			? `Tried ${attempt + 1} time(s).`
			: 'It was not sent again, because the service may already have acted on it: check before retrying.';
	// A fresh error without `cause`: the underlying one carries the request, headers included.
	return new NodeApiError(
		node,
		{ message: reason } as JsonObject,
		{
			// The reason stays out of the message: n8n swaps a message naming e.g. ECONNRESET for
			// its generic "you can retry the request immediately", wrong for a reply.
			message: `${context.operation}: could not reach the service`,
			description: `The connection failed (${reason}). Check the credential's Base URL and that the service is reachable. ${unsure}`,
			itemIndex: context.itemIndex,
		},
	);
}

export function throwForStatus(node: INode, response: RawResponse, context: RequestContext): void {
	if (response.statusCode >= 200 && response.statusCode < 300) return;
	const { message, description } = explainHttpError(response.statusCode, response.body, context, response.headers);
	const body = response.body;
	throw new NodeApiError(
		node,
		{ status: response.statusCode, body: typeof body === 'object' && body !== null ? (body as JsonObject) : String(body ?? '') } as JsonObject,
		{ message, description, httpCode: String(response.statusCode), itemIndex: context.itemIndex },
	);
}

/** A JSON request whose 2xx body is returned as it came; any other status becomes a NodeApiError. */
export async function apiRequest<T = IDataObject>(
	this: ApiContext,
	method: IHttpRequestMethods,
	path: string,
	options: { qs?: IDataObject; body?: IDataObject; context: RequestContext },
): Promise<T> {
	const response = await rawApiRequest.call(this, method, path, options);
	throwForStatus(this.getNode(), response, options.context);
	const body = response.body;
	if (typeof body === 'string' && body.trim() !== '') {
		// A 2xx to anything but a read means the service probably acted: say so, it is not resent.
		const acted =
			method === 'GET'
				? ''
				: 'The request was probably carried out (the service answered success) and was not sent again: check before repeating it. ';
		throw new NodeApiError(this.getNode(), { body } as JsonObject, {
			message: `${options.context.operation}: the service answered ${response.statusCode} with a body that is not JSON`,
			description: `${acted}The body as it came: ${body.slice(0, 2000)}`,
			itemIndex: options.context.itemIndex,
		});
	}
	return body as T;
}
