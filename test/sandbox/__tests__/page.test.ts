import { request } from 'undici';
import { CONTACT, signBody, startReceiver, useSandbox } from '../../support';
import { api, call, closedPort, control, inbound, registerWebhook } from './helpers';

const sb = useSandbox();
let n0: string;
beforeAll(() => {
	n0 = sb.numbers[0].phone_number_id;
});

/** Reads `event: state` messages from GET /_sandbox/events until `until` accepts one (or the time is up). */
async function readStates(
	until: (states: any[]) => boolean,
	timeoutMs = 5000,
): Promise<{ states: any[]; raw: string }> {
	const controller = new AbortController();
	const timer = setTimeout(() => controller.abort(), timeoutMs);
	const states: any[] = [];
	let raw = '';
	try {
		const response = await request(`${sb.baseUrl}/_sandbox/events`, { signal: controller.signal });
		expect(response.statusCode).toBe(200);
		expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
		let buffer = '';
		for await (const chunk of response.body) {
			buffer += (chunk as Buffer).toString('utf8');
			raw += (chunk as Buffer).toString('utf8');
			let end: number;
			while ((end = buffer.indexOf('\n\n')) >= 0) {
				const message = buffer.slice(0, end);
				buffer = buffer.slice(end + 2);
				const data = /^event: state\ndata: (.*)$/s.exec(message);
				if (data) states.push(JSON.parse(data[1]));
			}
			if (until(states)) break;
		}
		response.body.destroy();
	} catch (error) {
		if (!controller.signal.aborted) throw error;
	} finally {
		clearTimeout(timer);
	}
	return { states, raw };
}

describe('the chat page at the root', () => {
	it('GET / from a browser (Accept: text/html) is the page, with its script and stylesheet; curl still gets the JSON index', async () => {
		const page = await call(sb.baseUrl, 'GET', '/', {
			headers: { accept: 'text/html,application/xhtml+xml' },
		});
		expect(page.status).toBe(200);
		expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
		expect(page.headers['content-security-policy']).toContain("script-src 'self'");
		expect(page.text).toContain('<script src="/ui/app.js"');
		for (const [path, type] of [
			['/ui/app.js', 'text/javascript; charset=utf-8'],
			['/ui/style.css', 'text/css; charset=utf-8'],
		]) {
			const file = await call(sb.baseUrl, 'GET', path);
			expect([path, file.status, file.headers['content-type']]).toEqual([path, 200, type]);
			expect(file.text.length).toBeGreaterThan(500);
		}
		const index = await call(sb.baseUrl, 'GET', '/');
		expect(index.body).toMatchObject({ service: 'messaging sandbox', page: `${sb.baseUrl}/` });
	});

	it('serves only its own files', async () => {
		for (const path of [
			'/ui/',
			'/ui/index.html',
			'/ui/../control-routes.ts',
			'/ui/%2e%2e/server.ts',
			'/ui/app.js.map',
		]) {
			expect([path, (await call(sb.baseUrl, 'GET', path)).status]).toEqual([path, 404]);
		}
		const post = await call(sb.baseUrl, 'POST', '/ui/app.js', { body: {} });
		expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
	});
});

describe('GET /_sandbox/view: what the page shows', () => {
	it('keys and the webhook secret masked; no key value, secret, signature, requests or logs', async () => {
		const receiver = await startReceiver();
		try {
			const secret = await registerWebhook(sb, receiver.url);
			await inbound(sb, n0, { text: 'hello page' });
			const view = await control(sb, 'GET', '/view');
			expect(view.status).toBe(200);
			expect(view.body.webhook).toEqual({
				url: receiver.url,
				configured: true,
				secret_masked: `whsec_…${secret.slice(-4)}`,
			});
			expect(view.body.keys.find((k: any) => k.id === 'key_all')).toMatchObject({
				masked: `sk_live_…${sb.keys.all.slice(-4)}`,
				last4: sb.keys.all.slice(-4),
			});
			expect(view.body.inbound[0]).toMatchObject({ from: CONTACT, text: 'hello page' });
			expect(view.body.deliveries[0]).toMatchObject({
				event: 'message.inbound',
				delivered: true,
				status: 200,
				answer: 'ok',
			});
			expect(view.body.deliveries[0]).not.toHaveProperty('signature');
			for (const field of ['requests', 'media_requests', 'logs'])
				expect(view.body).not.toHaveProperty(field);
			for (const value of [secret, ...Object.values(sb.keys)])
				expect(view.text).not.toContain(value);
			expect(view.text).not.toMatch(/whsec_[0-9a-f]{8}|sk_live_[0-9a-f]{8}/);
		} finally {
			await receiver.close();
		}
	});
});

describe('GET /_sandbox/events: live state for the page', () => {
	it('sends the state at once, then again after a change (an inbound message, then its status-less delivery)', async () => {
		const reading = readStates((states) => states.some((s) => s.inbound.length === 1));
		await new Promise((resolve) => setTimeout(resolve, 200));
		await inbound(sb, n0, { text: 'live' });
		const { states, raw } = await reading;
		expect(states[0].inbound).toEqual([]);
		const last = states[states.length - 1];
		expect(last.inbound[0]).toMatchObject({ text: 'live', from: CONTACT });
		expect(last.deliveries[0]).toMatchObject({ reason: 'no webhook registered' });
		// The inbound record, its log line and its delivery come within 100 ms: one state, not three.
		expect(states.length).toBeLessThanOrEqual(3);
		for (const value of Object.values(sb.keys)) expect(raw).not.toContain(value);
	});

	it('a status change reaches the page before its delivery has finished', async () => {
		const receiver = await startReceiver({ kind: 'slow', ms: 1500, status: 200 });
		try {
			await inbound(sb, n0);
			await registerWebhook(sb, receiver.url);
			const reply = await api(sb, 'POST', '/v1/messages/reply', sb.keys.all, {
				to: CONTACT,
				from: n0,
				text: 'hi',
			});
			expect(reply.status).toBe(201);
			const started = Date.now();
			const reading = readStates((states) => states.some((s) => s.messages[0]?.status === 'read'));
			await new Promise((resolve) => setTimeout(resolve, 200));
			const status = control(sb, 'POST', '/status', { id: reply.body.id, status: 'read' });
			const { states } = await reading;
			expect(states[states.length - 1].messages[0]).toMatchObject({
				id: reply.body.id,
				status: 'read',
			});
			expect(Date.now() - started).toBeLessThan(1500);
			expect((await status).body.delivery).toMatchObject({ delivered: true });
		} finally {
			await receiver.close();
		}
	});
});

describe('POST /_sandbox/deliveries/{id}/resend', () => {
	it('posts the same event and data again with a fresh timestamp, signed with the current secret, to the current URL', async () => {
		const down = `http://127.0.0.1:${await closedPort()}/hook`;
		await registerWebhook(sb, down);
		const first = await inbound(sb, n0, { text: 'resend me' });
		expect(first.body.delivery).toMatchObject({ delivered: false, reason: 'connection refused' });
		const failed = sb.state().deliveries[0];

		const receiver = await startReceiver();
		try {
			const secret = await registerWebhook(sb, receiver.url);
			await new Promise((resolve) => setTimeout(resolve, 5));
			const resent = await control(sb, 'POST', `/deliveries/${failed.id}/resend`);
			expect(resent.status).toBe(201);
			expect(resent.body.delivery).toMatchObject({
				id: expect.stringMatching(/^dlv_/),
				event: 'message.inbound',
				url: receiver.url,
				delivered: true,
				status: 200,
				reason: null,
				answer: 'ok',
				resend_of: failed.id,
			});
			expect(receiver.requests).toHaveLength(1);
			const got = receiver.requests[0];
			expect(got.headers['x-service-signature']).toBe(signBody(got.raw, secret));
			const envelope = JSON.parse(got.raw.toString('utf8'));
			const original = JSON.parse(failed.body as string);
			expect(envelope.data).toEqual(original.data);
			expect(envelope.timestamp > original.timestamp).toBe(true);
			expect(sb.state().deliveries.map((d) => d.resend_of)).toEqual([null, failed.id]);
			const log = await api(sb, 'GET', '/v1/logs?category=webhook', sb.keys.all);
			expect(log.body.data.map((entry: any) => entry.success)).toEqual([true, false]);
		} finally {
			await receiver.close();
		}
	});

	it('a delivery that found no webhook can be resent once one is registered; an unknown id is 404', async () => {
		await inbound(sb, n0);
		const none = sb.state().deliveries[0];
		expect(none).toMatchObject({ reason: 'no webhook registered', body: null });
		const receiver = await startReceiver();
		try {
			await registerWebhook(sb, receiver.url);
			const resent = await control(sb, 'POST', `/deliveries/${none.id}/resend`);
			expect(resent.body.delivery).toMatchObject({ delivered: true, resend_of: none.id });
			expect(JSON.parse(receiver.requests[0].raw.toString('utf8')).data).toMatchObject({
				from: CONTACT,
				text: 'hello',
			});
		} finally {
			await receiver.close();
		}
		const unknown = await control(sb, 'POST', '/deliveries/dlv_nope/resend');
		expect(unknown.status).toBe(404);
		expect(unknown.body.error.code).toBe('delivery_not_found');
	});

	it("keeps the receiver's answer on the delivery record (state and page), not in the control call's outcome (D10)", async () => {
		const receiver = await startReceiver({ kind: 'status', status: 404 });
		try {
			await registerWebhook(sb, receiver.url);
			const result = await inbound(sb, n0);
			expect(result.body.delivery).toMatchObject({
				delivered: false,
				status: 404,
				reason: 'HTTP 404',
			});
			expect(result.body.delivery).not.toHaveProperty('answer');
			expect(sb.state().deliveries[0].answer).toBe('ok');
		} finally {
			await receiver.close();
		}
	});
});
