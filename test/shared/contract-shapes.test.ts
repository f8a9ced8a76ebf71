// Where the spec says "not shown", the nodes read one shape (CONTRACT.md, "The guesses the nodes
// depend on") and pass anything else through as it came, or refuse where guessing could do harm.
// A real HTTP server on loopback plays a service that answers in other shapes than the sandbox.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { runNode, webhookHarness } from '../harness';
import { ACTION_TYPE, API_KEY, CREDENTIAL_TYPE, TRIGGER_TYPE } from '../support';

type Route = (req: IncomingMessage, body: string) => { status: number; json?: unknown };

let server: Server;
let baseUrl = '';
let route: Route = () => ({ status: 404, json: {} });
const requests: Array<{ method: string; url: string }> = [];

beforeAll(async () => {
	server = createServer((req: IncomingMessage, res: ServerResponse) => {
		let body = '';
		req.on('data', (chunk) => (body += chunk));
		req.on('end', () => {
			requests.push({ method: req.method ?? '', url: req.url ?? '' });
			const { status, json } = route(req, body);
			res.statusCode = status;
			if (json !== undefined) res.setHeader('content-type', 'application/json');
			res.end(json === undefined ? undefined : JSON.stringify(json));
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
	await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
	requests.length = 0;
});

const credentials = () => ({ [CREDENTIAL_TYPE]: { apiKey: API_KEY, baseUrl } });

async function activationError(parameters = {}) {
	const harness = await webhookHarness({
		type: TRIGGER_TYPE,
		parameters,
		credentials: credentials(),
	});
	try {
		await harness.activate();
	} catch (error) {
		return { harness, error: error as { message: string; description?: string } };
	}
	return { harness, error: undefined };
}

describe('GET /v1/console/webhook: the trigger reads {url, configured} (W5) and nothing else', () => {
	it.each([
		['nested under data', { data: { url: 'https://crm.example.org/hook', configured: true } }],
		['configured missing', { url: 'https://crm.example.org/hook' }],
		['a list', [{ url: 'https://crm.example.org/hook' }]],
	])(
		'%s: activation fails showing the answer, and nothing is registered or deleted',
		async (_label, answer) => {
			route = () => ({ status: 200, json: answer });
			const { error } = await activationError();
			expect(error?.message).toMatch(
				/^Trigger → Check Webhook: the service's webhook configuration is not in the shape \{url, configured\} this node reads, so nothing was registered or deleted\. Set Registration to Manual/,
			);
			expect(error?.description).toContain(JSON.stringify(answer));
			expect(requests.filter((request) => request.method !== 'GET')).toEqual([]);
		},
	);
});

describe('POST /v1/console/webhook: the secret is read from `secret` (W3) or a common other name', () => {
	it('an answer with the secret under a name the node does not read: the registration is deleted again and activation fails, naming the way out', async () => {
		route = (req) => {
			if (req.method === 'GET') return { status: 200, json: { url: null, configured: false } };
			if (req.method === 'POST')
				return {
					status: 201,
					json: { url: 'x', configured: true, hmac_key: 'cd'.repeat(32) },
				};
			return { status: 204 };
		};
		const { harness, error } = await activationError();
		expect(error?.message).toMatch(
			/^The service registered the webhook but its answer carried no signing secret under a name this node reads \(secret, signing_secret, .*\)\. Register the webhook in the console and set Registration to Manual, with the secret in the credential\. The registration was deleted again$/,
		);
		expect(error?.description).toMatch(/The answer's fields: url, configured, hmac_key$/);
		// checkExists and create each read the configuration; n8n then runs delete, which reads it again.
		expect(requests.map((request) => request.method).slice(0, 4)).toEqual([
			'GET',
			'GET',
			'POST',
			'DELETE',
		]);
		expect(requests.filter((request) => request.method === 'POST')).toHaveLength(1);
		expect(harness.staticData).toEqual({});
		// The secret it did carry, under another name, never reaches the error.
		expect(JSON.stringify(error)).not.toContain('cd'.repeat(32));
	});
});

describe('list answers (I4): every shape pagination.ts reads; anything else one item as it came', () => {
	const LOGS = { resource: 'log', operation: 'getMany', category: 'webhook', returnAll: true };

	it('an answer in none of the shapes, Simplify off: one item, as it came, no second page', async () => {
		const answer = { results: [{ id: 'log_1' }, { id: 'log_2' }], next_cursor: 'c2' };
		route = () => ({ status: 200, json: answer });
		const result = await runNode({
			type: ACTION_TYPE,
			parameters: { ...LOGS, simple: false },
			credentials: credentials(),
		});
		expect(result.error).toBeUndefined();
		expect(result.output('Business Messaging').map((item) => item.json)).toEqual([answer]);
		expect(requests).toHaveLength(1);
	});

	it('the same answer with Simplify on: fails naming the shapes, never passed through whole', async () => {
		route = () => ({ status: 200, json: { results: [{ id: 'log_1', secret_note: 'x' }] } });
		const result = await runNode({
			type: ACTION_TYPE,
			parameters: { ...LOGS, simple: true },
			credentials: credentials(),
		});
		expect(result.error?.message).toBe(
			'Log → Get Many: the answer of GET /v1/logs is not a list this node reads ({data: [...], has_more, next_cursor}, {items: [...], next}, a JSON array, or {data: [...], page, total_pages}), so Simplify cannot read it (turn Simplify off to get the answer as it came)',
		);
		expect(String((result.error as { description?: string }).description)).toContain('log_1');
	});

	it('{data, has_more, next_cursor} is followed page by page with cursor', async () => {
		route = (req) =>
			req.url?.includes('cursor=c2')
				? { status: 200, json: { data: [{ id: 'log_2' }], has_more: false, next_cursor: null } }
				: { status: 200, json: { data: [{ id: 'log_1' }], has_more: true, next_cursor: 'c2' } };
		const result = await runNode({
			type: ACTION_TYPE,
			parameters: { ...LOGS, simple: false },
			credentials: credentials(),
		});
		expect(result.output('Business Messaging').map((item) => item.json)).toEqual([
			{ id: 'log_1' },
			{ id: 'log_2' },
		]);
		expect(
			requests.map((request) => new URL(request.url, baseUrl).searchParams.get('cursor')),
		).toEqual([null, 'c2']);
	});
});

describe('service text never carries a secret into an error or an item (security item 9)', () => {
	it('a 400 that echoes the request headers: the key is redacted from the error and the Continue On Fail item', async () => {
		route = (req) => ({
			status: 400,
			json: {
				error: { code: 'bad', message: `bad request; headers were ${JSON.stringify(req.headers)}` },
				echoed: req.headers.authorization,
			},
		});
		for (const continueOnFail of [false, true]) {
			const result = await runNode({
				type: ACTION_TYPE,
				parameters: { resource: 'message', operation: 'getStatus', messageId: 'msg_1' },
				credentials: credentials(),
				nodeSettings: continueOnFail ? { continueOnFail: true } : undefined,
			});
			const text = JSON.stringify({
				error: result.error,
				output: continueOnFail ? result.output('Business Messaging') : null,
			});
			expect(text).toContain('Bearer [redacted]');
			expect(text).not.toContain(API_KEY);
			expect(text).not.toContain(API_KEY.slice('sk_live_'.length));
		}
	});

	it('a 2xx read that carries key values or secret tokens: redacted in the output item', async () => {
		route = () => ({
			status: 200,
			json: { id: 'msg_1', note: `used ${API_KEY} and whsec_${'ef'.repeat(32)}` },
		});
		const result = await runNode({
			type: ACTION_TYPE,
			parameters: { resource: 'message', operation: 'getStatus', messageId: 'msg_1' },
			credentials: credentials(),
		});
		expect(result.output('Business Messaging')[0].json).toEqual({
			id: 'msg_1',
			note: 'used sk_live_[redacted] and whsec_[redacted]',
		});
	});
});
