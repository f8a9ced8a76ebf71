// The Business Messaging API credential: its "Test" button (run as n8n's CredentialsTester runs
// it, over real HTTP against the sandbox) and its authenticate() function.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { IHttpRequestOptions } from 'n8n-workflow';

import { BusinessMessagingApi } from '../../credentials/BusinessMessagingApi.credentials';
import { testCredential } from '../harness';
import { startSandbox } from '../sandbox';
import { CREDENTIAL_TYPE } from '../support';

type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

let sb: Sandbox;
beforeAll(async () => {
	sb = await startSandbox();
});
afterAll(async () => {
	await sb.close();
});

/** The sandbox's log of API requests (control endpoints are not in it). */
async function apiRequests(): Promise<
	Array<{ method: string; path: string; status: number | null }>
> {
	const response = await fetch(`${sb.baseUrl}/_sandbox/state`);
	const state = (await response.json()) as {
		requests: Array<{ method: string; path: string; status: number | null }>;
	};
	return state.requests;
}

/** Runs the credential test and returns its result with the API requests it caused. */
async function test(apiKey: string, baseUrl = sb.baseUrl) {
	const before = (await apiRequests()).length;
	const result = await testCredential(CREDENTIAL_TYPE, { apiKey, baseUrl });
	const requests = (await apiRequests()).slice(before);
	return { result, requests };
}

describe('credential test (GET /v1/ping)', () => {
	it('a valid key: OK', async () => {
		const { result, requests } = await test(sb.keys.all);
		expect(result).toEqual({ status: 'OK', message: 'Connection successful!' });
		expect(requests).toEqual([
			expect.objectContaining({ method: 'GET', path: '/v1/ping', status: 200 }),
		]);
	});

	it('a Base URL with a trailing slash still reaches /v1/ping', async () => {
		const { result, requests } = await test(sb.keys.all, `${sb.baseUrl}/`);
		expect(result).toEqual({ status: 'OK', message: 'Connection successful!' });
		expect(requests.map((r) => r.path)).toEqual(['/v1/ping']);
	});

	it('a revoked key: Error saying it is revoked, pointing at the Keys tab', async () => {
		const { result, requests } = await test(sb.keys.revoked);
		expect(result.status).toBe('Error');
		expect(result.message).toMatch(/revoked/i);
		expect(result.message).toMatch(/Keys tab/);
		expect(result.message).not.toContain(sb.keys.revoked);
		// n8n's httpRequestWithAuthentication retries a 401 once (after preAuthentication),
		// so the service sees the ping twice.
		expect(requests).toEqual([
			expect.objectContaining({ path: '/v1/ping', status: 401 }),
			expect.objectContaining({ path: '/v1/ping', status: 401 }),
		]);
	});

	it('a key without balance:read: Error naming the scope', async () => {
		const { result, requests } = await test(sb.keys.noBalance);
		expect(result.status).toBe('Error');
		expect(result.message).toMatch(/balance:read/);
		expect(result.message).not.toContain(sb.keys.noBalance);
		expect(requests).toEqual([expect.objectContaining({ path: '/v1/ping', status: 403 })]);
	});

	it('a key with the wrong prefix: Error before any request is sent', async () => {
		const { result, requests } = await test('abc_123');
		expect(result).toEqual({
			status: 'Error',
			message: expect.stringContaining('must start with "sk_live_"'),
		});
		expect(result.message).not.toContain('abc_123');
		expect(requests).toEqual([]);
	});

	it('a Base URL ending in /v1: Error saying to remove it, before any request is sent', async () => {
		const { result, requests } = await test(sb.keys.all, `${sb.baseUrl}/v1`);
		expect(result.status).toBe('Error');
		expect(result.message).toContain(`Base URL must not end in /v1: enter "${sb.baseUrl}"`);
		expect(requests).toEqual([]);
	});

	it('the key pasted into Base URL: Error that does not echo it, before any request is sent', async () => {
		const { result, requests } = await test(sb.keys.all, sb.keys.all);
		expect(result.status).toBe('Error');
		expect(result.message).toMatch(/^Base URL looks like an API key/);
		expect(result.message).not.toContain(sb.keys.all);
		expect(requests).toEqual([]);
	});

	it('an empty key: Error before any request is sent', async () => {
		const { result, requests } = await test('');
		expect(result.status).toBe('Error');
		expect(result.message).toMatch(/API Key is empty/);
		expect(requests).toEqual([]);
	});

	it('a Base URL of another web site (200 with an HTML page, or plain text): Error naming the Base URL', async () => {
		// Any web site answers 200 to GET /v1/ping; only the service answers it with JSON.
		const seen: string[] = [];
		const site = createServer((request, response) => {
			seen.push(
				`${request.method} ${request.url} ${request.headers.authorization ? 'with Authorization' : ''}`,
			);
			const html = request.url?.startsWith('/v1/ping');
			response.writeHead(200, { 'content-type': html ? 'text/html; charset=utf-8' : 'text/plain' });
			response.end(html ? '<!doctype html><html><body><h1>Welcome</h1></body></html>' : 'pong');
		});
		await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
		const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
		try {
			const html = await testCredential(CREDENTIAL_TYPE, { apiKey: sb.keys.all, baseUrl: base });
			expect(html.status).toBe('Error');
			expect(html.message).toMatch(
				/^The Base URL answered, but not as the service: .*not JSON\. Check the Base URL/,
			);
			expect(html.message).not.toContain(sb.keys.all);
			const text = await testCredential(CREDENTIAL_TYPE, {
				apiKey: sb.keys.all,
				baseUrl: `${base}/text`,
			});
			expect(text).toEqual({ status: 'Error', message: html.message });
			expect(seen).toEqual([
				'GET /v1/ping with Authorization',
				'GET /text/v1/ping with Authorization',
			]);
		} finally {
			await new Promise((resolve) => site.close(resolve));
		}
	});

	it('a key the service does not know: Error, and the key is not echoed', async () => {
		const unknown = 'sk_live_this_key_does_not_exist_0000';
		const { result } = await test(unknown);
		expect(result.status).toBe('Error');
		expect(result.message).toMatch(/revoked or unknown/);
		expect(result.message).not.toContain(unknown);
	});
});

describe('authenticate()', () => {
	const credential = new BusinessMessagingApi();
	const data = () => ({ apiKey: sb.keys.all, baseUrl: sb.baseUrl, webhookSecret: '' });

	it('puts the key on a request to the Base URL', async () => {
		const request: IHttpRequestOptions = {
			baseURL: sb.baseUrl,
			url: '/v1/ping',
			headers: { Accept: 'application/json' },
		};
		const authenticated = await credential.authenticate(data(), request);
		expect(authenticated.headers).toEqual({
			Accept: 'application/json',
			Authorization: `Bearer ${sb.keys.all}`,
		});
		expect(authenticated.url).toBe('/v1/ping');
	});

	it.each([
		['another host', 'https://attacker.example.com/v1/ping'],
		['the same host on another port (the sandbox media host)', '__MEDIA__/v1/ping'],
		['another scheme', '__HTTPS__/v1/ping'],
	])('refuses to put the key on a request to %s', async (_label, target) => {
		const url = target
			.replace('__MEDIA__', sb.mediaBaseUrl)
			.replace('__HTTPS__', sb.baseUrl.replace(/^http:/, 'https:'));
		const expectedOrigin = new URL(url).origin;
		const attempt = credential.authenticate(data(), { url });
		await expect(attempt).rejects.toThrow(`Refusing to send the API key to ${expectedOrigin}`);
		await attempt.catch((error: Error) => expect(error.message).not.toContain(sb.keys.all));
	});

	it('refuses an absolute URL elsewhere even when baseURL is the Base URL', async () => {
		await expect(
			credential.authenticate(data(), {
				baseURL: sb.baseUrl,
				url: 'https://attacker.example.com/steal',
			}),
		).rejects.toThrow(/Refusing to send the API key to https:\/\/attacker\.example\.com/);
	});
});
