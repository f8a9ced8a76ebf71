import { createHmac, randomUUID } from 'crypto';
import type { IDataObject, INodeParameters } from 'n8n-workflow';
import { request } from 'undici';

import { webhookHarness, type WebhookHarness, type WebhookHarnessOptions } from '../../harness';
import type { Sandbox } from '../../sandbox';

export const TRIGGER_TYPE = 'n8n-nodes-business-messaging.businessMessagingTrigger';
export const FOREIGN_URL = 'https://crm.example.org/hooks/messaging';
export const CONTACT = '+15551234567';

export type Json = any;

export function credentialsFor(sb: Sandbox, extra: Record<string, unknown> = {}) {
	return { businessMessagingApi: { apiKey: sb.keys.all, baseUrl: sb.baseUrl, ...extra } };
}

export async function trigger(
	sb: Sandbox,
	parameters: INodeParameters = {},
	options: Partial<WebhookHarnessOptions> & { credentialExtra?: Record<string, unknown> } = {},
): Promise<WebhookHarness> {
	const { credentialExtra, ...rest } = options;
	return await webhookHarness({
		type: TRIGGER_TYPE,
		parameters,
		credentials: credentialsFor(sb, credentialExtra),
		...rest,
	});
}

async function http(sb: Sandbox, method: string, path: string, body?: unknown, key?: string) {
	const headers: Record<string, string> = {};
	if (key) headers.authorization = `Bearer ${key}`;
	if (body !== undefined) headers['content-type'] = 'application/json';
	const response = await request(`${sb.baseUrl}${path}`, {
		method: method as 'GET',
		headers,
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await response.body.text();
	return { status: response.statusCode, body: (text ? JSON.parse(text) : undefined) as Json };
}

export const control = (sb: Sandbox, method: string, path: string, body?: unknown) =>
	http(sb, method, `/_sandbox${path}`, body);

export const api = (sb: Sandbox, method: string, path: string, body?: unknown, key?: string) =>
	http(sb, method, path, body, key ?? sb.keys.all);

/** Someone else registers a webhook (the console, another tool): returns its secret. */
export async function registerForeign(sb: Sandbox, url = FOREIGN_URL): Promise<string> {
	const result = await api(sb, 'POST', '/v1/console/webhook', { url });
	expect(result.status).toBe(201);
	return result.body.secret as string;
}

/** Calls of one method+path the sandbox counted on /v1. */
export function apiCalls(sb: Sandbox, method: string, path: string): number {
	return sb.state().requests.filter((r) => r.method === method && r.path === path).length;
}

export function sign(body: Buffer | string, secret: string): string {
	return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The service's timestamp shape, microseconds and +00:00. */
export function serviceTimestamp(ms = Date.now()): string {
	return `${new Date(ms).toISOString().slice(0, 23)}456+00:00`;
}

export function inboundEvent(data: IDataObject = {}, timestamp = serviceTimestamp()) {
	return {
		event: 'message.inbound',
		data: {
			from: CONTACT,
			contact_name: 'Ada',
			number: '109876543210',
			wa_message_id: `wamid.${randomUUID()}`,
			type: 'text',
			text: 'hello',
			media_id: null,
			media_url: null,
			...data,
		},
		timestamp,
	};
}

export function statusEvent(data: IDataObject = {}, timestamp = serviceTimestamp()) {
	return {
		event: 'message.status',
		data: {
			id: 'msg_1',
			wa_message_id: 'wamid.1',
			status: 'delivered',
			recipient_masked: '+1555****567',
			error: null,
			...data,
		},
		timestamp,
	};
}

export function echoEvent(data: IDataObject = {}, timestamp = serviceTimestamp()) {
	return {
		event: 'message.echo',
		data: {
			to: CONTACT,
			number: '109876543210',
			wa_message_id: 'wamid.2',
			type: 'text',
			text: 'sent from the app',
			media_id: null,
			...data,
		},
		timestamp,
	};
}

/** A request as the service sends it: JSON bytes, signed with the secret. */
export function signedRequest(event: unknown, secret: string) {
	const rawBody = Buffer.from(typeof event === 'string' ? event : JSON.stringify(event));
	return {
		headers: { 'content-type': 'application/json', 'x-service-signature': sign(rawBody, secret) },
		rawBody,
	};
}
