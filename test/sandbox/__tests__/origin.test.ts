// The dev sandbox refuses what a web page could make a developer's browser send it: a Host that
// is not this machine (DNS rebinding), and a state-changing request from another origin (a
// cross-site form or text/plain POST). n8n, curl and the tests send no Origin and pass.
import { request as httpRequest } from 'node:http';

import { startSandbox } from '../server';
import type { Sandbox } from '../types';

let sandbox: Sandbox;
beforeAll(async () => {
	sandbox = await startSandbox();
});
afterAll(async () => await sandbox.close());

async function send(
	base: string,
	method: string,
	path: string,
	headers: Record<string, string>,
	body?: string,
): Promise<{ status: number; text: string }> {
	const url = new URL(path, base);
	return await new Promise((resolve, reject) => {
		const req = httpRequest(
			{ host: url.hostname, port: url.port, method, path: url.pathname, headers },
			(res) => {
				let text = '';
				res.setEncoding('utf8');
				res.on('data', (chunk: string) => (text += chunk));
				res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
			},
		);
		req.on('error', reject);
		req.end(body);
	});
}

const INBOUND = JSON.stringify({
	from: '+33612345678',
	contact_name: 'Ada',
	number: '100000000000001',
	text: 'from a web page',
});

describe('the sandbox refuses foreign Hosts and Origins', () => {
	it('a cross-site text/plain POST to a state-changing route is refused, nothing changes', async () => {
		const before = sandbox.state().inbound.length;
		const result = await send(
			sandbox.baseUrl,
			'POST',
			'/_sandbox/inbound',
			{ origin: 'https://evil.example', 'content-type': 'text/plain' },
			INBOUND,
		);
		expect(result.status).toBe(403);
		expect(result.text).toMatch(/origin https:\/\/evil\.example/);
		expect(sandbox.state().inbound).toHaveLength(before);
	});

	it('a POST from another site without Origin (Sec-Fetch-Site: cross-site) is refused', async () => {
		const result = await send(sandbox.baseUrl, 'POST', '/_sandbox/reset', {
			'sec-fetch-site': 'cross-site',
		});
		expect(result.status).toBe(403);
	});

	it('a Host that is not this machine is refused, on every route (the secret included)', async () => {
		for (const [method, path] of [
			['GET', '/_sandbox/state'],
			['GET', '/v1/console/webhook'],
			['POST', '/_sandbox/reset'],
		]) {
			const result = await send(sandbox.baseUrl, method, path, { host: 'attacker.example:4010' });
			expect(result.status).toBe(403);
			expect(result.text).toMatch(/Host header/);
		}
		const media = await send(sandbox.mediaBaseUrl, 'GET', '/anything', { host: 'rebound.example' });
		expect(media.status).toBe(403);
	});

	it("the sandbox's own page (a loopback origin on its port) and callers without Origin pass", async () => {
		const port = new URL(sandbox.baseUrl).port;
		for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
			const result = await send(
				sandbox.baseUrl,
				'POST',
				'/_sandbox/inbound',
				{ origin, 'content-type': 'application/json', host: `localhost:${port}` },
				INBOUND,
			);
			expect(result.status).toBe(201);
		}
		const plain = await send(
			sandbox.baseUrl,
			'POST',
			'/_sandbox/inbound',
			{ 'content-type': 'application/json' },
			INBOUND,
		);
		expect(plain.status).toBe(201);
		// Another port of this machine is another origin (n8n's editor, another dev server).
		const otherPort = await send(
			sandbox.baseUrl,
			'POST',
			'/_sandbox/inbound',
			{ origin: 'http://127.0.0.1:5678', 'content-type': 'application/json' },
			INBOUND,
		);
		expect(otherPort.status).toBe(403);
	});
});
