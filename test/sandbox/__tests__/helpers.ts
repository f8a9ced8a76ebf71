import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, type Dispatcher } from 'undici';
import type { Sandbox } from '../types';
import { CONTACT } from '../../support/fixtures';

/** Bodies are asserted field by field; a loose type keeps the tests readable. */
export type Json = any;

export interface HttpResult {
	status: number;
	headers: Record<string, string | string[] | undefined>;
	text: string;
	body: Json;
}

export interface CallOptions {
	key?: string;
	body?: unknown;
	/** Sent as is instead of JSON.stringify(body). */
	rawBody?: string;
	headers?: Record<string, string>;
}

export async function call(
	baseUrl: string,
	method: string,
	path: string,
	options: CallOptions = {},
): Promise<HttpResult> {
	const headers: Record<string, string> = { ...options.headers };
	if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
	let payload: string | undefined = options.rawBody;
	if (payload === undefined && options.body !== undefined) payload = JSON.stringify(options.body);
	if (payload !== undefined) headers['content-type'] = 'application/json';
	const response = await request(`${baseUrl}${path}`, {
		method: method as Dispatcher.HttpMethod,
		headers,
		body: payload,
	});
	const text = await response.body.text();
	let body: Json = undefined;
	try {
		body = text ? JSON.parse(text) : undefined;
	} catch {
		body = undefined;
	}
	return { status: response.statusCode, headers: response.headers, text, body };
}

/** /v1 call with a key. */
export const api = (
	sb: Sandbox,
	method: string,
	path: string,
	key: string | undefined,
	body?: unknown,
): Promise<HttpResult> => call(sb.baseUrl, method, path, { key, body });

/** /_sandbox call, no auth. */
export const control = (
	sb: Sandbox,
	method: string,
	path: string,
	body?: unknown,
): Promise<HttpResult> => call(sb.baseUrl, method, `/_sandbox${path}`, { body });

/** An inbound text from CONTACT on the given number: opens the reply window. */
export async function inbound(
	sb: Sandbox,
	number: string,
	extra: Record<string, unknown> = {},
): Promise<HttpResult> {
	const result = await control(sb, 'POST', '/inbound', {
		from: CONTACT,
		contact_name: 'Ada',
		number,
		text: 'hello',
		...extra,
	});
	expect(result.status).toBe(201);
	return result;
}

/** Registers the receiver as the account's webhook and returns the secret from the registration answer. */
export async function registerWebhook(sb: Sandbox, url: string): Promise<string> {
	const result = await api(sb, 'POST', '/v1/console/webhook', sb.keys.all, { url });
	expect(result.status).toBe(201);
	return result.body.secret as string;
}

/** A port with nothing listening: bind, read the port, close. */
export async function closedPort(): Promise<number> {
	const server = createServer();
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	await new Promise<void>((resolve) => server.close(() => resolve()));
	return port;
}

export const MICRO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$/;
