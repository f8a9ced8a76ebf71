// Where the API key may travel: the credential's authenticate() run inside n8n-core's real
// request helpers (httpRequestWithAuthentication for IHttpRequestOptions, requestWithAuthentication
// for the legacy request options the HTTP Request node passes), against the sandbox and local
// servers that record every request they get. Each refusal must leave them untouched.
import type {
	IDataObject,
	IExecuteFunctions,
	IHttpRequestOptions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { BusinessMessagingApi } from '../../credentials/BusinessMessagingApi.credentials';
import { isLoopbackHost } from '../../nodes/shared/ipAddress';
import { normalizeBaseUrl } from '../../nodes/shared/credentialRules';
import { runNode, testCredential } from '../harness';
import { startSandbox } from '../sandbox';
import { CREDENTIAL_TYPE } from '../support';

type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

const KEY_REQUEST = 'test.keyRequest';

/**
 * A node that sends one request with the credential, as a community node (style "http":
 * this.helpers.httpRequestWithAuthentication) or as n8n's HTTP Request node (style "legacy":
 * this.helpers.requestWithAuthentication with request-style options) would. Outputs the status
 * and Location of the answer.
 */
class KeyRequest implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Key Request',
		name: KEY_REQUEST,
		group: ['transform'],
		version: 1,
		description: 'Sends one request with the Business Messaging API credential',
		defaults: { name: 'Key Request' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: CREDENTIAL_TYPE, required: true }],
		properties: [
			{ displayName: 'Style', name: 'style', type: 'string', default: 'http' },
			{ displayName: 'Options', name: 'options', type: 'string', default: '{}' },
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const style = this.getNodeParameter('style', 0) as string;
		const options = JSON.parse(String(this.getNodeParameter('options', 0))) as IDataObject;
		if (style === 'legacy') {
			const response = (await this.helpers.requestWithAuthentication.call(this, CREDENTIAL_TYPE, {
				method: 'GET',
				resolveWithFullResponse: true,
				simple: false,
				...options,
			} as never)) as { statusCode: number; headers: IDataObject };
			return [
				[
					{
						json: { statusCode: response.statusCode, location: response.headers.location ?? null },
					},
				],
			];
		}
		const response = (await this.helpers.httpRequestWithAuthentication.call(this, CREDENTIAL_TYPE, {
			method: 'GET',
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
			...options,
		} as unknown as IHttpRequestOptions)) as { statusCode: number; headers: IDataObject };
		return [
			[{ json: { statusCode: response.statusCode, location: response.headers.location ?? null } }],
		];
	}
}

/** An HTTP server on all interfaces that answers 200 to anything and records what it got. */
async function recordingServer(): Promise<{
	server: Server;
	port: number;
	requests: Array<{ url?: string; headers: IncomingHttpHeaders }>;
}> {
	const requests: Array<{ url?: string; headers: IncomingHttpHeaders }> = [];
	const server = createServer((req, res) => {
		requests.push({ url: req.url, headers: req.headers });
		res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
	});
	// CONNECT (a proxy tunnel for https) is recorded too.
	server.on('connect', (req, socket) => {
		requests.push({ url: req.url, headers: req.headers });
		socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
	});
	await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
	return { server, port: (server.address() as AddressInfo).port, requests };
}

let sb: Sandbox;
let recorder: Awaited<ReturnType<typeof recordingServer>>;
beforeAll(async () => {
	sb = await startSandbox();
	recorder = await recordingServer();
});
afterAll(async () => {
	await sb.close();
	await new Promise((resolve) => recorder.server.close(resolve));
});

interface State {
	requests: Array<{ method: string; path: string; status: number | null }>;
	media_requests: Array<{ path: string; headers: Record<string, string> }>;
}

async function state(): Promise<State> {
	return (await (await fetch(`${sb.baseUrl}/_sandbox/state`)).json()) as State;
}

/** Everything the sandbox (API and media host) and the recording server got while `body` ran. */
async function traffic<T>(body: () => Promise<T>) {
	const before = await state();
	const recorded = recorder.requests.length;
	const result = await body();
	const after = await state();
	return {
		result,
		api: after.requests.slice(before.requests.length),
		media: after.media_requests.slice(before.media_requests.length),
		recorder: recorder.requests.slice(recorded),
	};
}

async function sendWithKey(style: 'http' | 'legacy', options: IDataObject, baseUrl = sb.baseUrl) {
	const run = await runNode({
		type: KEY_REQUEST,
		parameters: { style, options: JSON.stringify(options) },
		credentials: { [CREDENTIAL_TYPE]: { apiKey: sb.keys.all, baseUrl, webhookSecret: '' } },
		nodeTypes: { [KEY_REQUEST]: new KeyRequest() },
	});
	const error = run.nodeError(run.nodeName);
	return {
		items: run.items.map((item) => item.json),
		error: error ? `${error.message} ${error.description ?? ''}` : undefined,
	};
}

async function hostedMedia(): Promise<string> {
	const response = await fetch(`${sb.baseUrl}/_sandbox/inbound`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({
			from: '+33612345678',
			contact_name: 'Ada',
			number: sb.numbers[0].phone_number_id,
			media: { mime: 'image/png', data_base64: Buffer.from('not really a png').toString('base64') },
		}),
	});
	const { record } = (await response.json()) as { record: { media_id: string } };
	return record.media_id;
}

describe('proxy and certificate checks: refused before anything is sent', () => {
	const proxyUrl = () => `http://127.0.0.1:${recorder.port}`;
	const cases: Array<[string, 'http' | 'legacy', () => IDataObject, RegExp]> = [
		[
			'IHttpRequestOptions.proxy',
			'http',
			() => ({
				url: '/v1/ping',
				baseURL: sb.baseUrl,
				proxy: { host: '127.0.0.1', port: recorder.port, protocol: 'http' },
			}),
			/through a proxy/,
		],
		[
			'legacy proxy (HTTP Request → Options → Proxy)',
			'legacy',
			() => ({ uri: `${sb.baseUrl}/v1/ping`, proxy: proxyUrl() }),
			/through a proxy/,
		],
		[
			'legacy proxy with Ignore SSL Issues',
			'legacy',
			() => ({ uri: `${sb.baseUrl}/v1/ping`, proxy: proxyUrl(), rejectUnauthorized: false }),
			/through a proxy/,
		],
		[
			'IHttpRequestOptions.skipSslCertificateValidation',
			'http',
			() => ({ url: '/v1/ping', baseURL: sb.baseUrl, skipSslCertificateValidation: true }),
			/certificate checks turned off/,
		],
		[
			'legacy rejectUnauthorized: false (HTTP Request → Ignore SSL Issues)',
			'legacy',
			() => ({ uri: `${sb.baseUrl}/v1/ping`, rejectUnauthorized: false }),
			/certificate checks turned off/,
		],
		[
			'legacy strictSSL: false',
			'legacy',
			() => ({ uri: `${sb.baseUrl}/v1/ping`, strictSSL: false }),
			/certificate checks turned off/,
		],
		[
			'legacy agentOptions.rejectUnauthorized: false',
			'legacy',
			() => ({ uri: `${sb.baseUrl}/v1/ping`, agentOptions: { rejectUnauthorized: false } }),
			/certificate checks turned off/,
		],
	];

	it.each(cases)(
		'%s: the node fails saying why; no request reaches the service or the proxy',
		async (_label, style, options, why) => {
			const {
				result,
				api,
				media,
				recorder: proxied,
			} = await traffic(() => sendWithKey(style, options()));
			expect(result.items).toEqual([]);
			expect(result.error).toMatch(why);
			expect(result.error).toMatch(/Refusing to send the API key/);
			expect(result.error).not.toContain(sb.keys.all);
			expect(api).toEqual([]);
			expect(media).toEqual([]);
			expect(proxied).toEqual([]);
		},
	);

	it('the same request without the proxy / with certificate checks on reaches the service (the refusals are the cause)', async () => {
		const { result, api } = await traffic(async () => [
			await sendWithKey('http', {
				url: '/v1/ping',
				baseURL: sb.baseUrl,
				skipSslCertificateValidation: false,
			}),
			await sendWithKey('legacy', { uri: `${sb.baseUrl}/v1/ping`, rejectUnauthorized: true }),
		]);
		expect(result.map((r) => r.error)).toEqual([undefined, undefined]);
		expect(result.map((r) => r.items[0]?.statusCode)).toEqual([200, 200]);
		expect(api.map((r) => r.path)).toEqual(['/v1/ping', '/v1/ping']);
	});

	it('authenticate() itself refuses each one, without echoing the proxy address or the key', async () => {
		const credential = new BusinessMessagingApi();
		const data = { apiKey: sb.keys.all, baseUrl: sb.baseUrl, webhookSecret: '' };
		for (const [, , options, why] of cases) {
			const request = { ...options() } as unknown as IHttpRequestOptions;
			if (typeof request.proxy === 'string')
				request.proxy = 'http://user:hunter2@proxy.example:3128' as never;
			const attempt = credential.authenticate(data, request);
			await expect(attempt).rejects.toThrow(why);
			await attempt.catch((error: Error) => {
				expect(error.message).not.toContain(sb.keys.all);
				expect(error.message).not.toContain('hunter2');
			});
		}
	});
});

describe('plain http only to loopback', () => {
	it.each([
		['http://127.0.0.1:4010', true],
		['http://127.8.9.10', true],
		['http://localhost:4010', true],
		['http://LOCALHOST', true],
		['http://[::1]:4010', true],
		['http://[0:0:0:0:0:0:0:1]', true],
		['https://api.example.com', true],
		['https://10.0.0.5:8443', true],
		['http://api.example.com', false],
		['http://10.0.0.5:4010', false],
		['http://0.0.0.0:4010', false],
		['http://128.0.0.1', false],
		['http://127.0.0.1.nip.io', false],
		['http://localhost.example.com', false],
		['http://[::2]', false],
	])('%s accepted: %s', (url, accepted) => {
		const result = normalizeBaseUrl(url);
		if (accepted) expect(result).toEqual({ url: url.replace(/\/+$/, '') });
		else {
			expect(result).toEqual({
				error: expect.stringMatching(
					/^Base URL must use https:\/\/: plain http would send the API key unencrypted/,
				),
			});
			expect((result as { error: string }).error).toContain(
				'http is accepted only for a local sandbox on 127.0.0.1, ::1 or localhost',
			);
		}
	});

	it('isLoopbackHost takes hostnames as the URL parser writes them', () => {
		expect(isLoopbackHost(new URL('http://127.1').hostname)).toBe(true);
		expect(isLoopbackHost(new URL('http://2130706433').hostname)).toBe(true);
		expect(isLoopbackHost(new URL('http://[::1]').hostname)).toBe(true);
		expect(isLoopbackHost(new URL('http://[::ffff:10.0.0.1]').hostname)).toBe(false);
	});

	// 0.0.0.0 is not a loopback name, yet on Linux it reaches a server listening here: a real
	// server behind a non-loopback http Base URL, to show that nothing reaches it.
	it('an http Base URL of a non-loopback host: Test button, nodes and authenticate refuse it; the server gets nothing', async () => {
		const baseUrl = `http://0.0.0.0:${recorder.port}`;
		const before = recorder.requests.length;
		const tested = await testCredential(CREDENTIAL_TYPE, { apiKey: sb.keys.all, baseUrl });
		expect(tested.status).toBe('Error');
		expect(tested.message).toMatch(
			/^Base URL must use https:\/\/: plain http would send the API key unencrypted to 0\.0\.0\.0/,
		);
		const viaNode = await sendWithKey('http', { url: '/v1/ping', baseURL: baseUrl }, baseUrl);
		expect(viaNode.error).toMatch(/Base URL must use https:\/\//);
		const viaLegacy = await sendWithKey('legacy', { uri: `${baseUrl}/v1/ping` }, baseUrl);
		expect(viaLegacy.error).toMatch(/Base URL must use https:\/\//);
		expect(recorder.requests.slice(before)).toEqual([]);
		// Reachable indeed: the same server answers a request without the credential.
		const direct = await fetch(`${baseUrl}/v1/ping`);
		expect(direct.status).toBe(200);
		expect(recorder.requests.slice(before)).toHaveLength(1);
		expect(recorder.requests[before].headers.authorization).toBeUndefined();
	});
});

describe('redirects: a request with the key never follows one (the 3xx comes back)', () => {
	it.each([
		[
			'httpRequestWithAuthentication, redirects not disabled',
			'http' as const,
			(id: string) => ({ url: `/v1/media/${id}`, baseURL: sb.baseUrl }),
		],
		[
			'HTTP Request 4.2 options: follow all redirects, sendCredentialsOnCrossOriginRedirect: true',
			'legacy' as const,
			(id: string) => ({
				uri: `${sb.baseUrl}/v1/media/${id}`,
				followRedirect: true,
				followAllRedirects: true,
				sendCredentialsOnCrossOriginRedirect: true,
				rejectUnauthorized: true,
				gzip: true,
			}),
		],
		[
			'HTTP Request 4.5 options: follow redirects, credentials dropped cross-origin',
			'legacy' as const,
			(id: string) => ({
				uri: `${sb.baseUrl}/v1/media/${id}`,
				followRedirect: true,
				followAllRedirects: true,
				sendCredentialsOnCrossOriginRedirect: false,
			}),
		],
	])(
		'%s: 302 with the signed Location; the media host gets no request',
		async (_label, style, options) => {
			const id = await hostedMedia();
			const { result, api, media } = await traffic(() => sendWithKey(style, options(id)));
			expect(result.error).toBeUndefined();
			expect(result.items).toEqual([
				{
					statusCode: 302,
					location: expect.stringMatching(new RegExp(`^${sb.mediaBaseUrl}/media/`)),
				},
			]);
			expect(api).toEqual([expect.objectContaining({ path: `/v1/media/${id}`, status: 302 })]);
			expect(media).toEqual([]);
		},
	);

	it('authenticate() returns options that turn redirects off in both option styles', async () => {
		const credential = new BusinessMessagingApi();
		const data = { apiKey: sb.keys.all, baseUrl: sb.baseUrl, webhookSecret: '' };
		const out = (await credential.authenticate(data, {
			url: `${sb.baseUrl}/v1/media/x`,
			followRedirect: true,
			followAllRedirects: true,
			maxRedirects: 5,
			sendCredentialsOnCrossOriginRedirect: true,
		} as IHttpRequestOptions)) as IHttpRequestOptions & Record<string, unknown>;
		expect(out).toMatchObject({
			disableFollowRedirect: true,
			followRedirect: false,
			followAllRedirects: false,
			maxRedirects: 0,
			sendCredentialsOnCrossOriginRedirect: false,
		});
	});
});
