import { request } from 'undici';
import { CONTACT, useSandbox } from '../../support';
import { api, call, control, inbound, registerWebhook } from './helpers';

const sb = useSandbox();
let n0: string;
beforeAll(() => {
	n0 = sb.numbers[0].phone_number_id;
});

describe('POST /_sandbox/keys', () => {
	it('creates a key with the given scopes and numbers; the value is returned once', async () => {
		const created = await control(sb, 'POST', '/keys', {
			scopes: ['balance:read'],
			allowed_numbers: [n0],
		});
		expect(created.status).toBe(201);
		expect(created.body).toEqual({
			id: expect.stringMatching(/^key_[0-9a-f]{12}$/),
			key: expect.stringMatching(/^sk_live_/),
			scopes: ['balance:read'],
			allowed_numbers: [n0],
		});
		const ping = await api(sb, 'GET', '/v1/ping', created.body.key);
		expect(ping.body).toMatchObject({ key_id: created.body.id, allowed_numbers: [n0] });
		expect(JSON.stringify(sb.state().keys)).not.toContain(created.body.key);
	});

	it('allowed_numbers defaults to null (all numbers)', async () => {
		const created = await control(sb, 'POST', '/keys', { scopes: [] });
		expect(created.body.allowed_numbers).toBeNull();
	});

	it.each([
		[{ scopes: ['messages:delete'], allowed_numbers: null }, 'scopes.0'],
		[{ allowed_numbers: null }, 'scopes'],
		[{ scopes: [], allowed_numbers: [] }, 'allowed_numbers'],
		[{ scopes: [], allowed_numbers: ['999'] }, 'allowed_numbers.0'],
	])('refuses %j with 400 naming %s', async (body, field) => {
		const result = await control(sb, 'POST', '/keys', body);
		expect(result.status).toBe(400);
		expect(result.body.error.message).toContain(`${field}:`);
	});

	it('revoke answers 204, then 404 for an unknown id', async () => {
		const created = await control(sb, 'POST', '/keys', { scopes: [], allowed_numbers: null });
		expect((await control(sb, 'POST', `/keys/${created.body.id}/revoke`)).status).toBe(204);
		expect(sb.state().keys.find((k) => k.id === created.body.id)).toMatchObject({ revoked: true });
		expect((await control(sb, 'POST', '/keys/key_nope/revoke')).status).toBe(404);
	});
});

describe('POST /_sandbox/inbound and /_sandbox/echo', () => {
	it('stores the record and reports the delivery', async () => {
		const result = await inbound(sb, n0, { text: 'hi there' });
		expect(result.body.record).toMatchObject({
			direction: 'in',
			from: CONTACT,
			number: n0,
			text: 'hi there',
		});
		expect(result.body.delivery).toMatchObject({
			delivered: false,
			reason: 'no webhook registered',
		});
		expect(sb.state().inbound).toEqual([result.body.record]);
	});

	it('infers the type from the media MIME type', async () => {
		const result = await inbound(sb, n0, { media: { mime: 'audio/ogg', data_base64: 'T2dnUw==' } });
		expect(result.body.record).toMatchObject({
			type: 'audio',
			media_mime: 'audio/ogg',
			media_id: expect.any(String),
		});
	});

	it.each([
		[{ from: '15551234567', contact_name: 'A', number: '100000000000001', text: 'x' }, 'from:'],
		[{ from: '+15551234567', number: '100000000000001', text: 'x' }, 'contact_name:'],
		[{ from: '+15551234567', contact_name: 'A', number: '999', text: 'x' }, 'number:'],
		[{ from: '+15551234567', contact_name: 'A', number: '100000000000001' }, 'text:'],
		[
			{ from: '+15551234567', contact_name: 'A', number: '100000000000001', type: 'image' },
			'media:',
		],
		[
			{
				from: '+15551234567',
				contact_name: 'A',
				number: '100000000000001',
				type: 'gif',
				text: 'x',
			},
			'type:',
		],
		[
			{
				from: '+15551234567',
				contact_name: 'A',
				number: '100000000000001',
				media: { mime: 'png', data_base64: 'AA==' },
			},
			'media.mime:',
		],
	])('inbound %j is 400 (%s)', async (body, field) => {
		const result = await control(sb, 'POST', '/inbound', body);
		expect(result.status).toBe(400);
		expect(result.body.error.message).toContain(field);
	});

	it('echo validates too', async () => {
		expect((await control(sb, 'POST', '/echo', { to: CONTACT, number: n0 })).status).toBe(400);
		expect(
			(await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, type: 'image' })).status,
		).toBe(400);
		const ok = await control(sb, 'POST', '/echo', {
			to: CONTACT,
			number: n0,
			type: 'sticker',
			media_mime: 'image/webp',
		});
		expect(ok.status).toBe(201);
		expect(ok.body.record).toMatchObject({
			direction: 'echo',
			type: 'sticker',
			media_mime: 'image/webp',
		});
	});

	it('a body that is not JSON is 400', async () => {
		const result = await call(sb.baseUrl, 'POST', '/_sandbox/inbound', { rawBody: 'nope' });
		expect(result.status).toBe(400);
		expect(result.body.error.code).toBe('invalid_json');
	});
});

describe('POST /_sandbox/clock', () => {
	it('advances the sandbox clock and answers {now}', async () => {
		const before = sb.now().getTime();
		const result = await control(sb, 'POST', '/clock', { advance_seconds: 3600 });
		expect(result.status).toBe(200);
		expect(Date.parse(result.body.now) - before).toBeGreaterThanOrEqual(3600 * 1000);
		expect(sb.now().getTime() - before).toBeGreaterThanOrEqual(3600 * 1000);
		expect((await control(sb, 'POST', '/clock', { advance_seconds: -5 })).status).toBe(400);
		expect((await control(sb, 'POST', '/clock', { seconds: 5 })).status).toBe(400);
	});
});

describe('GET /_sandbox/state', () => {
	it('has every section, key metadata without values, and the current webhook secret', async () => {
		const secret = await registerWebhook(sb, 'https://example.com/h');
		const result = await control(sb, 'GET', '/state');
		expect(result.status).toBe(200);
		expect(Object.keys(result.body).sort()).toEqual(
			[
				'account_id',
				'credit_balance',
				'deliveries',
				'faults',
				'inbound',
				'issued_secrets',
				'keys',
				'logs',
				'media',
				'media_requests',
				'messages',
				'now',
				'numbers',
				'requests',
				'requests_count',
				'webhook',
			].sort(),
		);
		expect(result.body.webhook).toEqual({ url: 'https://example.com/h', configured: true, secret });
		for (const value of Object.values(sb.keys)) expect(result.text).not.toContain(value);
		expect(result.body.keys[0]).not.toHaveProperty('value');
	});

	it('unknown control paths are 404', async () => {
		expect((await control(sb, 'GET', '/nothing')).status).toBe(404);
		expect((await control(sb, 'GET', '/reset')).status).toBe(405);
	});
});

describe('POST /_sandbox/reset', () => {
	it('returns to the seed: webhook, messages, keys, clock and faults', async () => {
		await registerWebhook(sb, 'https://example.com/h');
		await inbound(sb, n0);
		await api(sb, 'POST', '/v1/messages/reply', sb.keys.oneNumber, { to: CONTACT, text: 'hi' });
		const extra = await control(sb, 'POST', '/keys', {
			scopes: ['balance:read'],
			allowed_numbers: null,
		});
		await control(sb, 'POST', '/clock', { advance_seconds: 86400 * 10 });
		await control(sb, 'POST', '/faults', { count: 5, kind: 'status_500' });

		expect((await control(sb, 'POST', '/reset')).status).toBe(204);
		const state = sb.state();
		expect(state.webhook).toEqual({ url: null, configured: false, secret: null });
		expect(state.messages).toEqual([]);
		expect(state.inbound).toEqual([]);
		expect(state.deliveries).toEqual([]);
		expect(state.faults).toEqual([]);
		expect(state.requests_count).toBe(0);
		expect(state.keys.map((k) => k.id)).not.toContain(extra.body.id);
		expect(Math.abs(sb.now().getTime() - Date.now())).toBeLessThan(5000);
		expect((await api(sb, 'GET', '/v1/ping', extra.body.key)).status).toBe(401);
		expect((await api(sb, 'GET', '/v1/ping', sb.keys.all)).status).toBe(200);
		expect((await api(sb, 'GET', '/v1/ping', sb.keys.revoked)).status).toBe(401);
	});
});

describe('faults', () => {
	const addFault = async (body: Record<string, unknown>) => {
		const result = await control(sb, 'POST', '/faults', body);
		expect(result.status).toBe(201);
		return result.body.fault;
	};
	const ping = () => api(sb, 'GET', '/v1/ping', sb.keys.all);

	it('status_500 for the next `count` /v1 requests, then normal', async () => {
		const fault = await addFault({ count: 2, kind: 'status_500' });
		expect(fault).toMatchObject({
			id: expect.stringMatching(/^flt_/),
			kind: 'status_500',
			count: 2,
			remaining: 2,
		});
		const first = await ping();
		expect(first.status).toBe(500);
		expect(first.body.error.code).toBe('internal_error');
		expect((await ping()).status).toBe(500);
		expect((await ping()).status).toBe(200);
		expect(sb.state().requests.map((r) => [r.path, r.status, r.fault])).toEqual([
			['/v1/ping', 500, 'status_500'],
			['/v1/ping', 500, 'status_500'],
			['/v1/ping', 200, null],
		]);
	});

	it('status_429 with Retry-After', async () => {
		await addFault({ count: 1, kind: 'status_429', retry_after_seconds: 7 });
		const result = await ping();
		expect(result.status).toBe(429);
		expect(result.headers['retry-after']).toBe('7');
		expect(result.body.error.code).toBe('rate_limited');
	});

	it('reset destroys the connection without an answer', async () => {
		await addFault({ count: 1, kind: 'reset' });
		await expect(ping()).rejects.toThrow();
		expect(sb.state().requests).toEqual([
			expect.objectContaining({ path: '/v1/ping', status: null, fault: 'reset' }),
		]);
		expect((await ping()).status).toBe(200);
	});

	it('delay holds the answer back, then handles the request normally', async () => {
		await addFault({ count: 1, kind: 'delay', delay_ms: 300 });
		const started = Date.now();
		const result = await ping();
		expect(Date.now() - started).toBeGreaterThanOrEqual(280);
		expect(result.status).toBe(200);
		expect(result.body.ok).toBe(true);
	});

	it('malformed_json answers 200 with a body that does not parse', async () => {
		await addFault({ count: 1, kind: 'malformed_json' });
		const response = await request(`${sb.baseUrl}/v1/ping`, {
			headers: { authorization: `Bearer ${sb.keys.all}` },
		});
		expect(response.statusCode).toBe(200);
		expect(response.headers['content-type']).toContain('application/json');
		const text = await response.body.text();
		expect(() => JSON.parse(text)).toThrow();
	});

	it('path_prefix limits the fault to matching paths; faulted POSTs do nothing and are counted once', async () => {
		await inbound(sb, n0);
		await addFault({ count: 1, kind: 'status_500', path_prefix: '/v1/messages/reply' });
		expect((await ping()).status).toBe(200);
		expect(sb.state().faults).toHaveLength(1);
		const send = () =>
			api(sb, 'POST', '/v1/messages/reply', sb.keys.oneNumber, { to: CONTACT, text: 'hi' });
		expect((await send()).status).toBe(500);
		expect(sb.state().messages).toHaveLength(0);
		expect((await send()).status).toBe(201);
		const posts = sb
			.state()
			.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages/reply');
		expect(posts.map((r) => r.status)).toEqual([500, 201]);
		expect(sb.state().requests_count).toBe(3);
	});

	it('faults do not touch the control API; GET lists, DELETE clears; bad bodies are 400', async () => {
		await addFault({ count: 3, kind: 'status_500' });
		expect((await control(sb, 'GET', '/faults')).body.data).toHaveLength(1);
		expect((await control(sb, 'DELETE', '/faults')).status).toBe(204);
		expect((await ping()).status).toBe(200);
		const bad = await control(sb, 'POST', '/faults', { count: 0, kind: 'explode' });
		expect(bad.status).toBe(400);
		expect(bad.body.error.message).toMatch(/count:.*kind:|kind:.*count:/);
		expect(
			(await control(sb, 'POST', '/faults', { count: 1, kind: 'reset', path_prefix: '/x' })).status,
		).toBe(400);
	});
});
