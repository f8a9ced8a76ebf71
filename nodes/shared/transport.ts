/** Every request goes through here; only reads are retried: a reply is never sent twice. */
import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	IHttpRequestMethods,
	IHttpRequestOptions,
	INode,
	IPollFunctions,
	ITriggerFunctions,
	IWebhookFunctions,
	JsonObject,
} from 'n8n-workflow';
import { NodeOperationError, sleep } from 'n8n-workflow';

import {
	apiError,
	explainHttpError,
	explainNetworkFailure,
	retryAfterMs,
	type RequestContext,
	type ResponseHeaders,
} from './errors';
import { redact, serviceLine } from './redact';
import { CREDENTIAL_TYPE, apiKeyProblem, normalizeBaseUrl } from './credentialRules';
import { credentialRead, forgetCredentialRead } from './credentialKeys';

export { CREDENTIAL_TYPE };

export type ApiContext =
	IExecuteFunctions | IHookFunctions | IWebhookFunctions | IPollFunctions | ITriggerFunctions;

/** Node's Readable, named without importing 'stream' (the scanner allows no such import). */
export type Readable = Exclude<
	Parameters<IExecuteFunctions['helpers']['prepareBinaryData']>[0],
	Buffer
>;

export interface RawResponse<Body = unknown> {
	statusCode: number;
	headers: ResponseHeaders;
	body: Body;
	/** Only when asked for: the body before redaction (the registration answer's secret). */
	unredactedBody?: unknown;
}

/** Reads: 3 retries after 0.5 s, 1 s and 2 s, or after what Retry-After asks, up to 30 s. */
const RETRIES = 3;
const BASE_DELAY_MS = 500;
const MAX_RETRY_AFTER_MS = 30_000;

const TRANSIENT_CODES = new Set([
	'ECONNRESET',
	'ETIMEDOUT',
	'ECONNABORTED',
	'EPIPE',
	'EAI_AGAIN',
	'ESOCKETTIMEDOUT',
]);

function transientCode(error: unknown): string | undefined {
	let current = error as { code?: unknown; cause?: unknown } | undefined;
	for (let depth = 0; current && depth < 5; depth++) {
		if (typeof current.code === 'string' && TRANSIENT_CODES.has(current.code)) return current.code;
		current = current.cause as typeof current;
	}
	const message = (error as Error)?.message ?? '';
	return /socket hang up|ECONNRESET/i.test(message) ? 'ECONNRESET' : undefined;
}

/** Sends, then up to `retries` more times on a reset or timeout, a 429 or a 5xx. */
export async function withRetries<T extends { statusCode: number; headers: ResponseHeaders }>(
	send: () => Promise<T>,
	options: {
		retries: number;
		onError: (error: unknown, code: string | undefined, attempts: number) => Error;
		discard?: (response: T) => void;
	},
): Promise<T> {
	for (let attempt = 0; ; attempt++) {
		let response: T;
		try {
			response = await send();
		} catch (error) {
			const code = transientCode(error);
			if (code && attempt < options.retries) {
				await sleep(BASE_DELAY_MS * 2 ** attempt);
				continue;
			}
			throw options.onError(error, code, attempt + 1);
		}
		const status = response.statusCode;
		if ((status === 429 || status >= 500) && attempt < options.retries) {
			const asked = status === 429 ? retryAfterMs(response.headers) : undefined;
			if (asked !== undefined && asked > MAX_RETRY_AFTER_MS) return response;
			options.discard?.(response);
			await sleep(asked ?? BASE_DELAY_MS * 2 ** attempt);
			continue;
		}
		return response;
	}
}

/** The credential's Base URL (checked before anything is sent) and its secret values. */
export async function checkedCredential(this: ApiContext, itemIndex?: number) {
	// Outside an execution, the node's cached read: n8n 2.x builds an isolate per read there.
	const read = outsideExecution(this)
		? await credentialRead.call(this)
		: { credentials: await this.getCredentials(CREDENTIAL_TYPE, itemIndex) };
	if (typeof read === 'string') throw new NodeOperationError(this.getNode(), read, { itemIndex });
	return checkCredential(this.getNode(), read.credentials, itemIndex);
}

/** trigger(), poll() and webhook(): the contexts that read the node's cached credential. */
const outsideExecution = (
	context: ApiContext,
): context is ITriggerFunctions | IPollFunctions | IWebhookFunctions =>
	'emit' in context || '__emit' in context || 'getBodyData' in context;

/** A key or Base URL changed since the cached read may be why a request failed: read it afresh next. */
function forgetReadAfterFailure(context: ApiContext, status?: number): void {
	const mayBeCredential =
		status === undefined || status === 401 || status === 403 || status === 404;
	if (mayBeCredential && outsideExecution(context)) forgetCredentialRead.call(context);
}

/** checkedCredential for a credential read already (the trigger's cache, credentialKeys.ts). */
export function checkCredential(
	node: INode,
	credentials: ICredentialDataDecryptedObject,
	itemIndex?: number,
) {
	const keyProblem = apiKeyProblem(credentials.apiKey);
	if (keyProblem) throw new NodeOperationError(node, keyProblem, { itemIndex });
	const base = normalizeBaseUrl(credentials.baseUrl);
	if ('error' in base) throw new NodeOperationError(node, base.error, { itemIndex });
	const secrets = [credentials.apiKey, credentials.webhookSecret].filter(
		(value): value is string => typeof value === 'string',
	);
	return { baseUrl: base.url, secrets: secrets.map((value) => value.trim()), credentials };
}

/** A service URL as path and query under the Base URL, or undefined: the key goes only there. */
export function pathUnderBase(baseUrl: string, url: string): string | undefined {
	if (!URL.canParse(baseUrl) || !URL.canParse(url, baseUrl)) return undefined;
	const base = new URL(baseUrl);
	const target = new URL(url, base);
	if (target.origin !== base.origin || target.username !== '' || target.password !== '')
		return undefined;
	const basePath = base.pathname.replace(/\/+$/, '');
	if (basePath !== '' && !target.pathname.startsWith(`${basePath}/`)) return undefined;
	const rest = target.pathname.slice(basePath.length);
	// "//host" would read as another origin when joined to the Base URL again.
	if (!rest.startsWith('/') || rest.startsWith('//')) return undefined;
	return `${rest}${target.search}`;
}

interface RequestOptions {
	qs?: IDataObject;
	body?: IDataObject;
	context: RequestContext;
	/** The credential as the caller read it with checkedCredential (read here otherwise). */
	credential?: ReturnType<typeof checkCredential>;
}

/** A request with the API key; its answer, of any status, comes back redacted. */
export async function rawApiRequest(
	this: ApiContext,
	method: IHttpRequestMethods,
	path: string,
	options: RequestOptions & { unredacted?: boolean },
): Promise<RawResponse> {
	const { context } = options;
	const { baseUrl, secrets, credentials } =
		options.credential ?? (await checkedCredential.call(this, context.itemIndex));
	// As read above, or n8n reads it per attempt (an isolate each in 2.x: docs/performance.md).
	const reference = this.getNode().credentials?.[CREDENTIAL_TYPE];
	const credentialsDecrypted: ICredentialsDecrypted = {
		id: reference?.id ?? '',
		name: reference?.name ?? '',
		type: CREDENTIAL_TYPE,
		data: credentials,
	};
	// Joined to the Base URL: a path like "//host" or "https://..." would leave it.
	if (!path.startsWith('/') || path.startsWith('//'))
		throw new NodeOperationError(
			this.getNode(),
			`${context.operation}: not a path under the Base URL`,
			{ itemIndex: context.itemIndex },
		);
	const request: IHttpRequestOptions = {
		method,
		baseURL: baseUrl,
		url: path,
		qs: options.qs,
		body: options.body,
		json: true,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		// The media endpoint answers with a redirect to another host, which must not get the key.
		disableFollowRedirect: true,
		timeout: 30_000,
	};
	const sent = withRetries(
		async () =>
			(await this.helpers.httpRequestWithAuthentication.call(
				this,
				CREDENTIAL_TYPE,
				{ ...request },
				{ credentialsDecrypted },
			)) as RawResponse,
		{
			retries: method === 'GET' ? RETRIES : 0,
			onError: (error, code, attempts) => {
				// Our own checks (key prefix, base URL) already speak to the user: keep them.
				if (error instanceof NodeOperationError) return error;
				const reason =
					code ?? serviceLine((error as Error)?.message || 'unknown error', { known: secrets });
				const explained = explainNetworkFailure(reason, context, {
					write: method !== 'GET',
					attempts,
				});
				// A fresh error without `cause`: the underlying one carries the request, headers included.
				return apiError(
					this.getNode(),
					{ message: reason },
					{ ...explained, itemIndex: context.itemIndex },
				);
			},
		},
	);
	const response = await sent.catch((error: unknown) => {
		forgetReadAfterFailure(this);
		throw error;
	});
	forgetReadAfterFailure(this, response.statusCode);
	const redacted = { ...response, body: redact(response.body, secrets) };
	return options.unredacted ? { ...redacted, unredactedBody: response.body } : redacted;
}

/** A streamed request without credentials; redirects are returned, not followed. */
export async function fetchWithoutCredentials(
	this: ApiContext,
	url: string,
	context: RequestContext,
	abort?: { signal: AbortSignal; abortedError: () => Error },
): Promise<RawResponse<Readable>> {
	return await withRetries(
		async () =>
			(await this.helpers.httpRequest({
				method: 'GET',
				url,
				encoding: 'stream',
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				disableFollowRedirect: true,
				abortSignal: abort?.signal,
				timeout: 60_000,
			})) as RawResponse<Readable>,
		{
			retries: RETRIES,
			discard: (response) => response.body.destroy(),
			onError: (error) => {
				if (abort?.signal.aborted) return abort.abortedError();
				const reason = serviceLine((error as Error).message ?? 'unknown error');
				return apiError(
					this.getNode(),
					{ message: reason },
					{
						message: `${context.operation}: could not fetch the media file (${reason.slice(0, 120)}). Run it again soon: the media host may be down, and its link is short-lived`,
						description: `The media host did not answer (${reason}); nothing was downloaded.`,
						itemIndex: context.itemIndex,
					},
				);
			},
		},
	);
}

export function throwForStatus(node: INode, response: RawResponse, context: RequestContext): void {
	const { statusCode, body, headers } = response;
	if (statusCode >= 200 && statusCode < 300) return;
	const { message, description } = explainHttpError(statusCode, body, context, headers);
	throw apiError(
		node,
		{
			status: statusCode,
			body: typeof body === 'object' && body !== null ? (body as JsonObject) : String(body ?? ''),
		},
		{ message, description, httpCode: String(statusCode), itemIndex: context.itemIndex },
	);
}

/** A JSON request whose 2xx body is returned as it came; any other status becomes a NodeApiError. */
export async function apiRequest(
	this: ApiContext,
	method: IHttpRequestMethods,
	path: string,
	options: RequestOptions,
): Promise<unknown> {
	const response = await rawApiRequest.call(this, method, path, options);
	throwForStatus(this.getNode(), response, options.context);
	const body = response.body;
	if (typeof body === 'string' && body.trim() !== '') {
		const acted =
			method === 'GET'
				? ''
				: 'The request was probably carried out (the service answered success) and was not sent again: check before repeating it. ';
		const todo =
			method === 'GET'
				? "Check the credential's Base URL: it should be the service's address (without /v1), not a web page"
				: 'It was probably carried out and was not sent again: check before repeating it';
		throw apiError(
			this.getNode(),
			{ body },
			{
				message: `${options.context.operation}: the service answered ${response.statusCode} with a body that is not JSON. ${todo}`,
				description: `${acted}The body as it came: ${body.slice(0, 2000)}`,
				itemIndex: options.context.itemIndex,
			},
		);
	}
	return body;
}
