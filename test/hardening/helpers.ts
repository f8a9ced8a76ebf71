// Shared by the hardening tests: every operation of the Business Messaging node with what it
// needs to succeed against a fresh sandbox.
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { inbound, type Sandbox } from '../nodes/businessMessaging/helpers';
import { CONTACT, inboundItem } from '../support';

export const PNG_1PX =
	'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

export interface Prepared {
	parameters: INodeParameters;
	inputItems?: INodeExecutionData[];
}

export interface Operation {
	/** As the node names it in messages, e.g. "Message → Get Status". */
	label: string;
	method: 'GET' | 'POST';
	/** Prefix of the /v1 path(s) the operation requests (for faults and counting). */
	prefix: string;
	/** Sets the sandbox up so the operation succeeds; returns its parameters and input. */
	prepare(sandbox: Sandbox): Promise<Prepared>;
	/** Checks a successful output. */
	succeeded(items: INodeExecutionData[]): void;
}

async function apiCall(
	sandbox: Sandbox,
	method: string,
	path: string,
	body?: unknown,
): Promise<IDataObject> {
	const response = await fetch(`${sandbox.baseUrl}${path}`, {
		method,
		headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
	return text ? (JSON.parse(text) as IDataObject) : {};
}

/** A message sent through the API, so Get Status has something to read. */
export async function sentMessageId(sandbox: Sandbox): Promise<string> {
	const record = await inbound(sandbox);
	const message = await apiCall(sandbox, 'POST', '/v1/messages/reply', {
		to: CONTACT,
		text: 'Hi',
		from: record.number,
	});
	return String(message.id);
}

export const OPERATIONS: Operation[] = [
	{
		label: 'Account → Ping',
		method: 'GET',
		prefix: '/v1/ping',
		prepare: async () => ({ parameters: { resource: 'account', operation: 'ping' } }),
		succeeded: (items) => expect(items[0].json.valid).toBe(true),
	},
	{
		label: 'Message → Get Status',
		method: 'GET',
		prefix: '/v1/messages/msg_',
		prepare: async (sandbox) => ({
			parameters: {
				resource: 'message',
				operation: 'getStatus',
				messageId: await sentMessageId(sandbox),
			},
		}),
		succeeded: (items) => expect(items[0].json.status).toBe('sent'),
	},
	{
		label: 'Message → Get Many',
		method: 'GET',
		prefix: '/v1/messages/inbound',
		prepare: async (sandbox) => {
			await inbound(sandbox);
			return {
				parameters: { resource: 'message', operation: 'getMany', direction: 'in', returnAll: true },
			};
		},
		succeeded: (items) => expect(items.length).toBeGreaterThan(0),
	},
	{
		label: 'Message → Reply',
		method: 'POST',
		prefix: '/v1/messages/reply',
		prepare: async (sandbox) => ({
			parameters: { resource: 'message', operation: 'reply', text: 'Once only' },
			inputItems: [inboundItem(await inbound(sandbox))],
		}),
		succeeded: (items) =>
			expect(items[0].json).toMatchObject({ direction: 'out', text: 'Once only' }),
	},
	{
		label: 'Media → Download',
		method: 'GET',
		prefix: '/v1/media/',
		prepare: async (sandbox) => {
			const record = await inbound(sandbox, {
				type: 'image',
				text: '',
				media: { mime: 'image/png', data_base64: PNG_1PX },
			});
			return {
				parameters: { resource: 'media', operation: 'download' },
				inputItems: [inboundItem(record)],
			};
		},
		succeeded: (items) => expect(items[0].binary?.data?.mimeType).toBe('image/png'),
	},
	{
		label: 'Log → Get Many',
		method: 'GET',
		prefix: '/v1/logs',
		prepare: async () => ({
			parameters: { resource: 'log', operation: 'getMany', category: 'keys', returnAll: true },
		}),
		succeeded: (items) => expect(items.length).toBeGreaterThan(0),
	},
	{
		label: 'Key → Get Many',
		method: 'GET',
		prefix: '/v1/console/keys',
		prepare: async () => ({
			parameters: { resource: 'key', operation: 'getMany', returnAll: true },
		}),
		succeeded: (items) => expect(items.length).toBe(6),
	},
	{
		label: 'Webhook → Get',
		method: 'GET',
		prefix: '/v1/console/webhook',
		prepare: async () => ({ parameters: { resource: 'webhook', operation: 'get' } }),
		succeeded: (items) => expect(Object.keys(items[0].json).sort()).toEqual(['configured', 'url']),
	},
];

export const READS = OPERATIONS.filter((op) => op.method === 'GET');
export const REPLY = OPERATIONS.find((op) => op.label === 'Message → Reply') as Operation;

/** Milliseconds of a sandbox timestamp (`2026-11-22T10:15:30.123456+00:00`). */
export function atMs(at: string): number {
	const match = /^(.*T\d\d:\d\d:\d\d)\.(\d{3})(\d*)([+-]\d\d:\d\d|Z)$/.exec(at);
	if (!match) throw new Error(`Unexpected timestamp ${at}`);
	return Date.parse(`${match[1]}.${match[2]}${match[4]}`) + Number(`0.${match[3] || '0'}`);
}
