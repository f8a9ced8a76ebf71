import { CONTACT, useSandbox } from '../../support';
import { api, call, control, inbound } from './helpers';

const sb = useSandbox();

/** Every /v1 endpoint, with a body that would be valid. */
const everyEndpoint = (): Array<[string, string, unknown?]> => [
	['GET', '/v1/ping'],
	['GET', '/v1/console/keys'],
	['POST', '/v1/console/webhook', { url: 'https://example.com/hook' }],
	['GET', '/v1/console/webhook'],
	['DELETE', '/v1/console/webhook'],
	['GET', '/v1/logs?category=sends'],
	['GET', '/v1/messages/msg_000'],
	['GET', '/v1/messages/inbound'],
	['POST', '/v1/messages/reply', { to: CONTACT, text: 'hi', from: sb.numbers[0].phone_number_id }],
	['GET', '/v1/media/123'],
	['GET', '/v1/no-such-endpoint'],
];

describe('seeded keys', () => {
	it('are distinct sk_live_ values with ids, and survive reset()', () => {
		const values = Object.values(sb.keys);
		expect(values).toHaveLength(6);
		for (const value of values) expect(value).toMatch(/^sk_live_[0-9a-f]{48}$/);
		expect(new Set(values).size).toBe(6);
		expect(sb.keyIds).toEqual({
			all: 'key_all',
			oneNumber: 'key_one_number',
			twoNumbers: 'key_two_numbers',
			noSend: 'key_no_send',
			noBalance: 'key_no_balance',
			revoked: 'key_revoked',
		});
		const before = { ...sb.keys };
		sb.reset();
		expect(sb.keys).toEqual(before);
	});

	it('seeds at least three numbers', () => {
		expect(sb.numbers.length).toBeGreaterThanOrEqual(3);
		expect(sb.numbers[0]).toEqual({
			phone_number_id: '100000000000001',
			display_number: '+15550000001',
		});
	});
});

describe('401', () => {
	it('answers 401 to a missing, malformed or unknown key with the error shape', async () => {
		const missing = await call(sb.baseUrl, 'GET', '/v1/ping');
		expect(missing.status).toBe(401);
		expect(missing.body).toEqual({ error: { code: 'missing_key', message: expect.any(String) } });
		const basic = await call(sb.baseUrl, 'GET', '/v1/ping', {
			headers: { authorization: `Basic ${sb.keys.all}` },
		});
		expect(basic.status).toBe(401);
		const unknown = await api(sb, 'GET', '/v1/ping', 'sk_live_0000');
		expect(unknown.status).toBe(401);
		expect(unknown.body.error.code).toBe('invalid_key');
	});

	it('answers 401 key_revoked to the revoked key on every endpoint', async () => {
		for (const [method, path, body] of everyEndpoint()) {
			const result = await api(sb, method, path, sb.keys.revoked, body);
			expect({ method, path, status: result.status, code: result.body.error.code }).toEqual({
				method,
				path,
				status: 401,
				code: 'key_revoked',
			});
		}
		// The refused registration did not register anything.
		expect(sb.state().webhook.configured).toBe(false);
	});

	it('answers 401 once a key is revoked through the control API', async () => {
		const created = await control(sb, 'POST', '/keys', {
			scopes: ['balance:read'],
			allowed_numbers: null,
		});
		expect((await api(sb, 'GET', '/v1/ping', created.body.key)).status).toBe(200);
		expect((await control(sb, 'POST', `/keys/${created.body.id}/revoke`)).status).toBe(204);
		expect((await api(sb, 'GET', '/v1/ping', created.body.key)).status).toBe(401);
	});
});

describe('403 missing scope', () => {
	it('refuses ping without balance:read and reply without messages:send', async () => {
		const ping = await api(sb, 'GET', '/v1/ping', sb.keys.noBalance);
		expect(ping.status).toBe(403);
		expect(ping.body.error).toEqual({
			code: 'missing_scope',
			message: expect.stringContaining('balance:read'),
		});
		await inbound(sb, sb.numbers[0].phone_number_id);
		const reply = await api(sb, 'POST', '/v1/messages/reply', sb.keys.noSend, {
			to: CONTACT,
			text: 'hi',
			from: sb.numbers[0].phone_number_id,
		});
		expect(reply.status).toBe(403);
		expect(reply.body.error.message).toContain('messages:send');
		expect(sb.state().messages).toHaveLength(0);
	});

	it('requires messages:read for message status, the inbound list and media', async () => {
		const scopes = ['balance:read', 'messages:send'];
		const key = (await control(sb, 'POST', '/keys', { scopes, allowed_numbers: null })).body
			.key as string;
		for (const path of ['/v1/messages/msg_000', '/v1/messages/inbound', '/v1/media/123']) {
			const result = await api(sb, 'GET', path, key);
			expect({ path, status: result.status }).toEqual({ path, status: 403 });
			expect(result.body.error.message).toContain('messages:read');
		}
	});

	it('lets a key without any scope use the console and logs (no scope required)', async () => {
		const key = (await control(sb, 'POST', '/keys', { scopes: [], allowed_numbers: null })).body
			.key as string;
		expect((await api(sb, 'GET', '/v1/ping', key)).status).toBe(403);
		expect((await api(sb, 'GET', '/v1/console/keys', key)).status).toBe(200);
		expect((await api(sb, 'GET', '/v1/console/webhook', key)).status).toBe(200);
		expect(
			(await api(sb, 'POST', '/v1/console/webhook', key, { url: 'https://example.com/h' })).status,
		).toBe(201);
		expect((await api(sb, 'DELETE', '/v1/console/webhook', key)).status).toBe(204);
		expect((await api(sb, 'GET', '/v1/logs?category=keys', key)).status).toBe(200);
	});
});

describe('GET /v1/ping', () => {
	it('returns the key identity', async () => {
		const result = await api(sb, 'GET', '/v1/ping', sb.keys.twoNumbers);
		expect(result.status).toBe(200);
		expect(result.body).toEqual({
			ok: true,
			key_id: 'key_two_numbers',
			account_id: 'acct_sandbox',
			scopes: expect.arrayContaining(['balance:read', 'messages:send']),
			allowed_numbers: [sb.numbers[0].phone_number_id, sb.numbers[1].phone_number_id],
		});
	});
});

describe('GET /v1/console/keys', () => {
	it('lists every key with allowed_numbers (list or null) and never a key value', async () => {
		const result = await api(sb, 'GET', '/v1/console/keys', sb.keys.all);
		expect(result.status).toBe(200);
		const byId = Object.fromEntries(
			(result.body.data as Array<{ id: string }>).map((k) => [k.id, k]),
		);
		expect(byId.key_all).toEqual({
			id: 'key_all',
			prefix: 'sk_live_',
			last4: sb.keys.all.slice(-4),
			scopes: expect.any(Array),
			allowed_numbers: null,
			revoked: false,
			created_at: expect.any(String),
			revoked_at: null,
		});
		expect(byId.key_one_number).toMatchObject({ allowed_numbers: [sb.numbers[0].phone_number_id] });
		expect(byId.key_two_numbers).toMatchObject({
			allowed_numbers: [sb.numbers[0].phone_number_id, sb.numbers[1].phone_number_id],
		});
		expect(byId.key_revoked).toMatchObject({ revoked: true, revoked_at: expect.any(String) });
		for (const value of Object.values(sb.keys)) expect(result.text).not.toContain(value);
	});
});

describe('routing', () => {
	it('answers 404 to an unknown /v1 path and 405 to a wrong method, after auth', async () => {
		expect((await api(sb, 'GET', '/v1/nothing', sb.keys.all)).status).toBe(404);
		const wrongMethod = await api(sb, 'PUT', '/v1/ping', sb.keys.all);
		expect(wrongMethod.status).toBe(405);
		expect(wrongMethod.headers.allow).toBe('GET');
	});
});
