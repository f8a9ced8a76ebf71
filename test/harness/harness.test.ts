// Tests of the harness itself, with tiny node and credential types defined here and a local
// HTTP server standing in for a service.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';

import type {
	ICredentialType,
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';

import {
	MANUAL_TRIGGER_NODE_NAME,
	MANUAL_TRIGGER_TYPE,
	runNode,
	runWorkflow,
	serveWebhook,
	testCredential,
	webhookHarness,
} from './index';
import { signBody } from '../support';

// ---------------------------------------------------------------- local service

interface Recorded {
	method: string;
	path: string;
	headers: http.IncomingHttpHeaders;
	body: string;
}

const requests: Recorded[] = [];
const TOKEN = 'tok_harness_123';
const FILE_BYTES = Buffer.from([
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10, 0x7f,
]);
// Large enough to arrive in several chunks.
const STREAM_BYTES = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) % 256));
let registrations = 0;

const server = http.createServer((req, res) => {
	const chunks: Buffer[] = [];
	req.on('data', (chunk: Buffer) => chunks.push(chunk));
	req.on('end', () => {
		const url = new URL(req.url ?? '/', 'http://x');
		requests.push({
			method: req.method ?? '',
			path: url.pathname + url.search,
			headers: req.headers,
			body: Buffer.concat(chunks).toString(),
		});
		const json = (status: number, body: unknown) => {
			res.writeHead(status, { 'content-type': 'application/json' });
			res.end(JSON.stringify(body));
		};
		if (req.headers.authorization !== `Bearer ${TOKEN}`)
			return json(401, { error: 'unauthorized' });
		if (url.pathname === '/echo')
			return json(200, { ok: true, query: Object.fromEntries(url.searchParams) });
		if (url.pathname === '/fail') return json(500, { error: 'boom' });
		if (url.pathname === '/file') {
			res.writeHead(200, { 'content-type': 'image/png' });
			return res.end(FILE_BYTES);
		}
		if (url.pathname === '/stream') {
			res.writeHead(200, { 'content-type': 'application/octet-stream' });
			Readable.from([STREAM_BYTES.subarray(0, 100_000), STREAM_BYTES.subarray(100_000)]).pipe(res);
			return undefined;
		}
		if (url.pathname === '/register' && req.method === 'POST') {
			registrations += 1;
			return json(201, { id: `reg_${registrations}`, secret: `secret_${registrations}` });
		}
		if (url.pathname.startsWith('/register/') && req.method === 'DELETE')
			return json(200, { deleted: true });
		return json(404, { error: 'not found' });
	});
});
let baseUrl = '';

beforeAll(async () => {
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
	server.closeAllConnections();
	await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
	requests.length = 0;
});

// ---------------------------------------------------------------- test credential and nodes

const testApi: ICredentialType = {
	name: 'harnessTestApi',
	displayName: 'Harness Test API',
	properties: [
		{
			displayName: 'Token',
			name: 'token',
			type: 'string',
			typeOptions: { password: true },
			default: '',
		},
		{ displayName: 'Base URL', name: 'baseUrl', type: 'string', default: '' },
		{ displayName: 'Region', name: 'region', type: 'string', default: 'eu' },
	],
	authenticate: {
		type: 'generic',
		properties: { headers: { Authorization: '=Bearer {{$credentials.token}}' } },
	},
	test: {
		request: { baseURL: '={{$credentials.baseUrl}}', url: '/echo' },
		rules: [
			{ type: 'responseCode', properties: { value: 401, message: 'The token was rejected' } },
		],
	},
};

const testNodeDescription: INodeTypeDescription = {
	displayName: 'Harness Test',
	name: 'harnessTest',
	group: ['transform'],
	version: 1,
	description: 'Calls the local test service',
	defaults: { name: 'Harness Test' },
	inputs: [NodeConnectionTypes.Main],
	outputs: [NodeConnectionTypes.Main],
	credentials: [{ name: 'harnessTestApi', required: true }],
	properties: [
		{
			displayName: 'Operation',
			name: 'operation',
			type: 'options',
			options: [
				{ name: 'Get', value: 'get' },
				{ name: 'Credentials', value: 'credentials' },
				{ name: 'File From Buffer', value: 'fileFromBuffer' },
				{ name: 'File From Stream', value: 'fileFromStream' },
			],
			default: 'get',
		},
		{ displayName: 'Path', name: 'path', type: 'string', default: '/echo' },
	],
};

class HarnessTestNode implements INodeType {
	description = testNodeDescription;

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const out: INodeExecutionData[] = [];
		for (let i = 0; i < items.length; i++) {
			try {
				const operation = this.getNodeParameter('operation', i) as string;
				const path = this.getNodeParameter('path', i) as string;
				const credentials = await this.getCredentials<{ baseUrl: string }>('harnessTestApi');
				if (operation === 'credentials') {
					out.push({ json: { ...credentials }, pairedItem: { item: i } });
				} else if (operation === 'get') {
					const body = (await this.helpers.httpRequestWithAuthentication.call(
						this,
						'harnessTestApi',
						{
							method: 'GET',
							baseURL: credentials.baseUrl,
							url: path,
							json: true,
						},
					)) as object;
					out.push({ json: { ...body }, pairedItem: { item: i } });
				} else if (operation === 'fileFromBuffer') {
					const bytes = (await this.helpers.httpRequestWithAuthentication.call(
						this,
						'harnessTestApi',
						{
							method: 'GET',
							baseURL: credentials.baseUrl,
							url: '/file',
							encoding: 'arraybuffer',
						},
					)) as ArrayBuffer;
					const binary = await this.helpers.prepareBinaryData(
						Buffer.from(bytes),
						'picture.png',
						'image/png',
					);
					out.push({ json: {}, binary: { data: binary }, pairedItem: { item: i } });
				} else {
					const stream = (await this.helpers.httpRequestWithAuthentication.call(
						this,
						'harnessTestApi',
						{
							method: 'GET',
							baseURL: credentials.baseUrl,
							url: '/stream',
							encoding: 'stream',
						},
					)) as Readable;
					const binary = await this.helpers.prepareBinaryData(
						stream,
						'download.bin',
						'application/octet-stream',
					);
					out.push({ json: {}, binary: { file: binary }, pairedItem: { item: i } });
				}
			} catch (error) {
				if (this.continueOnFail()) {
					out.push({ json: { error: (error as Error).message }, pairedItem: { item: i } });
					continue;
				}
				throw error;
			}
		}
		return [out];
	}
}

/** Adds a field; a second node to show items flowing through connections. */
class HarnessMark implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Harness Mark',
		name: 'harnessMark',
		group: ['transform'],
		version: 1,
		description: 'Marks items',
		defaults: { name: 'Harness Mark' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [{ displayName: 'Mark', name: 'mark', type: 'string', default: '' }],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [
			this.getInputData().map((item, i) => ({
				json: { ...item.json, mark: this.getNodeParameter('mark', i) as string },
				pairedItem: { item: i },
			})),
		];
	}
}

const nodeTypes = {
	'test.harnessTest': new HarnessTestNode(),
	'test.harnessMark': new HarnessMark(),
};
const credentials = () => ({ harnessTestApi: { token: TOKEN, baseUrl } });

// ---------------------------------------------------------------- node runs

describe('runNode / runWorkflow', () => {
	it('applies the generic credential: the Authorization header reaches the server', async () => {
		const result = await runNode({
			type: 'test.harnessTest',
			parameters: { operation: 'get', path: '/echo?x=1' },
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
		});
		expect(result.error).toBeUndefined();
		expect(result.items.map((item) => item.json)).toEqual([{ ok: true, query: { x: '1' } }]);
		expect(requests).toHaveLength(1);
		expect(requests[0].headers.authorization).toBe(`Bearer ${TOKEN}`);
		expect(result.runData[MANUAL_TRIGGER_NODE_NAME][0].data?.main[0]).toHaveLength(1);
	});

	it('getCredentials() returns the decrypted data with defaults filled in', async () => {
		const result = await runNode({
			type: 'test.harnessTest',
			parameters: { operation: 'credentials' },
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
		});
		expect(result.items[0].json).toEqual({ token: TOKEN, baseUrl, region: 'eu' });
	});

	it('feeds inputItems to the node and resolves expressions per item', async () => {
		const result = await runNode({
			type: 'test.harnessTest',
			parameters: { operation: 'get', path: '={{ "/echo?n=" + $json.n }}' },
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
			inputItems: [{ json: { n: 1 } }, { json: { n: 2 } }],
		});
		expect(result.items.map((item) => item.json.query)).toEqual([{ n: '1' }, { n: '2' }]);
		expect(requests.map((r) => r.path)).toEqual(['/echo?n=1', '/echo?n=2']);
	});

	it('runs a workflow as stored in n8n JSON, through its connections', async () => {
		const result = await runWorkflow({
			nodes: [
				{
					id: 'a',
					name: 'Start',
					type: MANUAL_TRIGGER_TYPE,
					typeVersion: 1,
					position: [0, 0],
					parameters: {},
				},
				{
					id: 'b',
					name: 'Call',
					type: 'test.harnessTest',
					typeVersion: 1,
					position: [200, 0],
					parameters: { operation: 'get', path: '/echo' },
					credentials: { harnessTestApi: { id: '1', name: 'Test account' } },
				},
				{
					id: 'c',
					name: 'Mark',
					type: 'test.harnessMark',
					typeVersion: 1,
					position: [400, 0],
					parameters: { mark: '={{ "ok=" + $("Call").item.json.ok }}' },
				},
			],
			connections: {
				Start: { main: [[{ node: 'Call', type: 'main', index: 0 }]] },
				Call: { main: [[{ node: 'Mark', type: 'main', index: 0 }]] },
			},
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
		});
		expect(result.error).toBeUndefined();
		expect(result.execution.status).toBe('success');
		expect(result.output('Mark')).toEqual([
			expect.objectContaining({ json: { ok: true, query: {}, mark: 'ok=true' } }),
		]);
		expect(Object.keys(result.runData)).toEqual(['Start', 'Call', 'Mark']);
	});

	it('continueOnFail turns a failed request into an error item and the workflow goes on', async () => {
		const result = await runNode({
			type: 'test.harnessTest',
			parameters: { operation: 'get', path: '/fail' },
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
			nodeSettings: { continueOnFail: true },
		});
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(1);
		// n8n's NodeApiError replaces the message by HTTP status (500 → this one).
		expect(result.items[0].json.error).toBe('The service was not able to process your request');
	});

	it("onError 'continueErrorOutput' sends error items to the error output", async () => {
		const result = await runNode({
			type: 'test.harnessTest',
			parameters: { operation: 'get', path: '/fail' },
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
			nodeSettings: { onError: 'continueErrorOutput' },
		});
		expect(result.error).toBeUndefined();
		expect(result.output(result.nodeName, 0)).toEqual([]);
		expect(result.output(result.nodeName, 1)).toHaveLength(1);
	});

	it('surfaces a workflow error when a node fails without continueOnFail', async () => {
		const result = await runWorkflow({
			nodes: [
				{
					id: 'a',
					name: 'Start',
					type: MANUAL_TRIGGER_TYPE,
					typeVersion: 1,
					position: [0, 0],
					parameters: {},
				},
				{
					id: 'b',
					name: 'Call',
					type: 'test.harnessTest',
					typeVersion: 1,
					position: [200, 0],
					parameters: { operation: 'get', path: '/fail' },
					credentials: { harnessTestApi: { id: '1', name: 'Test account' } },
				},
				{
					id: 'c',
					name: 'Mark',
					type: 'test.harnessMark',
					typeVersion: 1,
					position: [400, 0],
					parameters: {},
				},
			],
			connections: {
				Start: { main: [[{ node: 'Call', type: 'main', index: 0 }]] },
				Call: { main: [[{ node: 'Mark', type: 'main', index: 0 }]] },
			},
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
		});
		expect(result.execution.status).toBe('error');
		expect(result.error).toBeDefined();
		expect(result.error?.name).toBe('NodeApiError');
		expect(result.nodeError('Call')).toMatchObject({
			name: 'NodeApiError',
			httpCode: '500',
			description: 'Request failed with status code 500',
		});
		expect(result.runData.Mark).toBeUndefined();
	});

	it('a node without the credentials it requires fails as in n8n', async () => {
		const result = await runNode({
			type: 'test.harnessTest',
			parameters: {},
			nodeTypes,
			credentialTypes: [testApi],
		});
		expect(result.error?.message).toMatch(/credentials/i);
	});

	it('a node type that does not exist is reported by name', async () => {
		await expect(runNode({ type: 'test.nothing', parameters: {} })).rejects.toThrow(
			/test\.nothing/,
		);
	});

	it.each(['default', 'filesystem'] as const)(
		"binary data round trip in '%s' mode, from a Buffer and from a Readable stream",
		async (binaryDataMode) => {
			const fromBuffer = await runNode({
				type: 'test.harnessTest',
				parameters: { operation: 'fileFromBuffer' },
				credentials: credentials(),
				nodeTypes,
				credentialTypes: [testApi],
				binaryDataMode,
			});
			expect(fromBuffer.error).toBeUndefined();
			const picture = fromBuffer.items[0].binary?.data;
			expect(picture).toMatchObject({
				mimeType: 'image/png',
				fileName: 'picture.png',
				bytes: FILE_BYTES.length,
			});
			expect(await fromBuffer.binary(fromBuffer.nodeName, 0)).toEqual(FILE_BYTES);

			const fromStream = await runNode({
				type: 'test.harnessTest',
				parameters: { operation: 'fileFromStream' },
				credentials: credentials(),
				nodeTypes,
				credentialTypes: [testApi],
				binaryDataMode,
			});
			expect(fromStream.error).toBeUndefined();
			const download = fromStream.items[0].binary?.file;
			expect(download).toMatchObject({ fileName: 'download.bin', bytes: STREAM_BYTES.length });
			expect(await fromStream.binary(fromStream.nodeName, 0, 'file')).toEqual(STREAM_BYTES);

			if (binaryDataMode === 'filesystem') {
				// Stored: the item carries only a reference.
				expect(download?.id).toMatch(
					/^filesystem-v2:workflows\/.+\/executions\/temp\/binary_data\//,
				);
				expect(download?.data).toBe('filesystem-v2');
			} else {
				// In memory: the bytes travel base64-encoded in the item.
				expect(download?.id).toBeUndefined();
				expect(Buffer.from(download?.data ?? '', 'base64')).toEqual(STREAM_BYTES);
			}
		},
	);

	it('result.binary() names what is missing', async () => {
		const result = await runNode({
			type: 'test.harnessTest',
			parameters: { operation: 'fileFromBuffer' },
			credentials: credentials(),
			nodeTypes,
			credentialTypes: [testApi],
		});
		await expect(result.binary(result.nodeName, 0, 'nope')).rejects.toThrow(
			/has no binary property "nope" \(it has: data\)/,
		);
		await expect(result.binary(result.nodeName, 5)).rejects.toThrow(/no output item 5/);
	});
});

// ---------------------------------------------------------------- credential test

describe('testCredential', () => {
	it('OK when the test request succeeds with the credential applied', async () => {
		await expect(
			testCredential('harnessTestApi', { token: TOKEN, baseUrl }, { credentialTypes: [testApi] }),
		).resolves.toEqual({
			status: 'OK',
			message: 'Connection successful!',
		});
		expect(requests.map((r) => [r.path, r.headers.authorization])).toEqual([
			['/echo', `Bearer ${TOKEN}`],
		]);
	});

	it('a responseCode rule gives its message', async () => {
		await expect(
			testCredential('harnessTestApi', { token: 'wrong', baseUrl }, { credentialTypes: [testApi] }),
		).resolves.toEqual({
			status: 'Error',
			message: 'The token was rejected',
		});
	});

	it('no response at all gives the error code', async () => {
		const closed = http.createServer();
		await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
		const port = (closed.address() as AddressInfo).port;
		await new Promise((resolve) => closed.close(resolve));
		await expect(
			testCredential(
				'harnessTestApi',
				{ token: TOKEN, baseUrl: `http://127.0.0.1:${port}` },
				{ credentialTypes: [testApi] },
			),
		).resolves.toEqual({ status: 'Error', message: 'ECONNREFUSED' });
	});
});

// ---------------------------------------------------------------- webhooks

class HarnessWebhookTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Harness Webhook Trigger',
		name: 'harnessWebhookTrigger',
		group: ['trigger'],
		version: 1,
		description: 'Registers a signed webhook at the local service',
		defaults: { name: 'Harness Webhook Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'harnessTestApi', required: true }],
		webhooks: [{ name: 'default', httpMethod: 'POST', responseMode: 'onReceived', path: 'events' }],
		properties: [],
	};

	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				return typeof this.getWorkflowStaticData('node').registrationId === 'string';
			},
			async create(this: IHookFunctions): Promise<boolean> {
				const { baseUrl: serviceUrl } = await this.getCredentials<{ baseUrl: string }>(
					'harnessTestApi',
				);
				const registration = (await this.helpers.httpRequestWithAuthentication.call(
					this,
					'harnessTestApi',
					{
						method: 'POST',
						baseURL: serviceUrl,
						url: '/register',
						body: { url: this.getNodeWebhookUrl('default'), mode: this.getActivationMode() },
						json: true,
					},
				)) as { id: string; secret: string };
				const staticData = this.getWorkflowStaticData('node');
				staticData.registrationId = registration.id;
				staticData.secret = registration.secret;
				return true;
			},
			async delete(this: IHookFunctions): Promise<boolean> {
				const staticData = this.getWorkflowStaticData('node');
				if (typeof staticData.registrationId !== 'string') return false;
				const { baseUrl: serviceUrl } = await this.getCredentials<{ baseUrl: string }>(
					'harnessTestApi',
				);
				await this.helpers.httpRequestWithAuthentication.call(this, 'harnessTestApi', {
					method: 'DELETE',
					baseURL: serviceUrl,
					url: `/register/${staticData.registrationId}`,
				});
				delete staticData.registrationId;
				delete staticData.secret;
				return true;
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const req = this.getRequestObject() as unknown as { rawBody: Buffer; body: { type?: string } };
		const { secret } = this.getWorkflowStaticData('node') as { secret?: string };
		const signature = this.getHeaderData()['x-signature'];
		if (!secret || signature !== signBody(req.rawBody, secret)) {
			this.getResponseObject().status(401).json({ error: 'bad signature' });
			return { noWebhookResponse: true };
		}
		const body = this.getBodyData() as { type?: string };
		if (body.type === 'ping') return { webhookResponse: 'pong' };
		if (body.type === 'explode') throw new NodeOperationError(this.getNode(), 'exploded');
		return {
			workflowData: [
				[
					{
						json: {
							event: body,
							rawIsBuffer: Buffer.isBuffer(req.rawBody),
							rawLength: req.rawBody.length,
						},
					},
				],
			],
		};
	}
}

describe('webhookHarness / serveWebhook', () => {
	const triggerTypes = { 'test.harnessWebhookTrigger': new HarnessWebhookTrigger() };
	const harnessFor = async (
		extra: { isTest?: boolean; staticData?: IDataObject; webhookUrl?: string } = {},
	) =>
		await webhookHarness({
			type: 'test.harnessWebhookTrigger',
			parameters: {},
			credentials: credentials(),
			nodeTypes: triggerTypes,
			credentialTypes: [testApi],
			...extra,
		});
	// Exact bytes, with spacing and non-ASCII that a re-serialisation would change.
	const rawEvent = Buffer.from('{"type":"message",  "text":"héllo"}\n', 'utf-8');

	it('activate / receive / deactivate with static data persisted between calls', async () => {
		const staticData: IDataObject = {};
		const harness = await harnessFor({ staticData, webhookUrl: 'https://n8n.example.com/webhook' });
		expect(harness.webhookUrl).toBe(
			`https://n8n.example.com/webhook/${harness.node.webhookId}/events`,
		);

		await harness.activate();
		expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /register']);
		expect(JSON.parse(requests[0].body)).toEqual({ url: harness.webhookUrl, mode: 'activate' });
		expect(harness.staticData).toMatchObject({
			registrationId: expect.stringMatching(/^reg_/),
			secret: expect.any(String),
		});
		expect(staticData.registrationId).toBe(harness.staticData.registrationId); // the very object passed in

		await harness.activate(); // checkExists → true: nothing created twice
		expect(requests).toHaveLength(1);

		const secret = String(harness.staticData.secret);
		const received = await harness.receive({
			headers: { 'Content-Type': 'application/json', 'X-Signature': signBody(rawEvent, secret) },
			rawBody: rawEvent,
		});
		expect(received.status).toBe(200);
		// No responseData on this webhook: n8n's default, 'firstEntryJson', sent as that word (2.41.1
		// evaluateComplexWebhookDescriptionExpression('responseData', undefined, 'firstEntryJson')).
		expect(received.body).toBe('firstEntryJson');
		expect(received.workflowData?.[0][0].json).toEqual({
			event: { type: 'message', text: 'héllo' },
			rawIsBuffer: true,
			rawLength: rawEvent.length,
		});

		const registrationId = String(harness.staticData.registrationId);
		await harness.deactivate();
		expect(requests.at(-1)).toMatchObject({
			method: 'DELETE',
			path: `/register/${registrationId}`,
		});
		expect(harness.staticData).toEqual({});
		const afterwards = await harness.receive({ headers: {}, rawBody: '{}' });
		expect(afterwards.status).toBe(404);
		expect(afterwards.body).toMatchObject({
			message: `The requested webhook "POST ${harness.node.webhookId}/events" is not registered.`,
		});
	});

	it("answers as n8n: the node's own response, webhookResponse without execution, 500 when webhook() throws", async () => {
		const harness = await harnessFor();
		await harness.activate();
		const secret = String(harness.staticData.secret);

		const unsigned = await harness.receive({
			headers: { 'content-type': 'application/json' },
			rawBody: rawEvent,
		});
		expect(unsigned).toMatchObject({
			status: 401,
			body: { error: 'bad signature' },
			noWebhookResponse: true,
		});
		expect(unsigned.workflowData).toBeUndefined();

		const ping = Buffer.from('{"type":"ping"}');
		const pong = await harness.receive({
			headers: { 'content-type': 'application/json', 'x-signature': signBody(ping, secret) },
			rawBody: ping,
		});
		expect(pong).toMatchObject({ status: 200, body: 'pong' });
		expect(pong.workflowData).toBeUndefined();

		const bad = Buffer.from('{"type":"explode"}');
		const exploded = await harness.receive({
			headers: { 'content-type': 'application/json', 'x-signature': signBody(bad, secret) },
			rawBody: bad,
		});
		expect(exploded.status).toBe(500);
		expect(exploded.body).toEqual({
			code: 0,
			message: 'Workflow Webhook Error: Workflow could not be started!',
		});
		expect(exploded.error?.message).toBe('exploded');

		const notJson = Buffer.from('{oops');
		const unparsable = await harness.receive({
			headers: { 'content-type': 'application/json' },
			rawBody: notJson,
		});
		expect(unparsable).toMatchObject({
			status: 422,
			body: { message: 'Failed to parse request body' },
		});

		const wrongMethod = await harness.receive({ headers: {}, rawBody: '', method: 'GET' });
		expect(wrongMethod).toMatchObject({
			status: 404,
			body: { message: expect.stringContaining('not registered for GET requests') },
		});
	});

	it('a test webhook serves one call that starts an execution, then is deleted', async () => {
		const harness = await harnessFor({ isTest: true });
		expect(harness.webhookUrl).toBe(
			`http://localhost:5678/webhook-test/${harness.node.webhookId}/events`,
		);
		await harness.activate();
		expect(JSON.parse(requests[0].body)).toMatchObject({ mode: 'manual' });
		const secret = String(harness.staticData.secret);
		const received = await harness.receive({
			headers: { 'content-type': 'application/json', 'x-signature': signBody(rawEvent, secret) },
			rawBody: rawEvent,
		});
		expect(received.status).toBe(200);
		expect(requests.at(-1)?.method).toBe('DELETE');
		expect((await harness.receive({ headers: {}, rawBody: '' })).status).toBe(404);
	});

	it('serveWebhook delivers real HTTP requests to the node, at the URL the node registered', async () => {
		const harness = await harnessFor();
		const served = await serveWebhook(harness);
		try {
			expect(served.url).toBe(harness.webhookUrl);
			expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhook\/[0-9a-f-]{36}\/events$/);
			await harness.activate();
			expect(JSON.parse(requests[0].body).url).toBe(served.url);

			const secret = String(harness.staticData.secret);
			const response = await fetch(served.url, {
				method: 'POST',
				headers: {
					'content-type': 'application/json; charset=utf-8',
					'x-signature': signBody(rawEvent, secret),
				},
				body: rawEvent,
			});
			expect(response.status).toBe(200);
			expect(await response.text()).toBe('firstEntryJson');

			const rejected = await fetch(served.url, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: rawEvent,
			});
			expect(rejected.status).toBe(401);
			expect(await rejected.json()).toEqual({ error: 'bad signature' });

			const elsewhere = await fetch(new URL('/webhook/other/events', served.url), {
				method: 'POST',
				body: '{}',
			});
			expect(elsewhere.status).toBe(404);
		} finally {
			await served.close();
		}
	});
});
