import { CONTACT, useReceiver, useSandbox } from '../../support';
import { api, control, inbound, registerWebhook, type Json } from './helpers';

const sb = useSandbox();
const receiver = useReceiver();
let n0: string;
beforeAll(() => {
	n0 = sb.numbers[0].phone_number_id;
});

async function logs(category: string, query = ''): Promise<Json[]> {
	const result = await api(sb, 'GET', `/v1/logs?category=${category}${query}`, sb.keys.all);
	expect(result.status).toBe(200);
	return result.body.data;
}

const entryShape = {
	id: expect.stringMatching(/^log_/),
	category: expect.any(String),
	created_at: expect.any(String),
};

describe('GET /v1/logs', () => {
	it.each(['', '?category=', '?category=payments', '?category=SENDS'])(
		'%s is 400',
		async (query) => {
			const result = await api(sb, 'GET', `/v1/logs${query}`, sb.keys.all);
			expect(result.status).toBe(400);
			expect(result.body.error.message).toContain('category');
		},
	);

	it('numbers: the seeded numbers, registered at start', async () => {
		const entries = await logs('numbers');
		expect(entries.map((e) => e.phone_number_id).sort()).toEqual(
			sb.numbers.map((n) => n.phone_number_id).sort(),
		);
		expect(entries[0]).toMatchObject({ ...entryShape, category: 'numbers', action: 'registered' });
	});

	it('keys: created and revoked, newest first', async () => {
		const seeded = await logs('keys');
		expect(seeded.filter((e) => e.action === 'created')).toHaveLength(6);
		expect(seeded.filter((e) => e.action === 'revoked').map((e) => e.key_id)).toEqual([
			'key_revoked',
		]);
		const created = await control(sb, 'POST', '/keys', {
			scopes: ['messages:read'],
			allowed_numbers: [n0],
		});
		await control(sb, 'POST', `/keys/${created.body.id}/revoke`);
		const [revoked, made] = await logs('keys');
		expect(revoked).toMatchObject({
			...entryShape,
			category: 'keys',
			action: 'revoked',
			key_id: created.body.id,
		});
		expect(made).toMatchObject({
			action: 'created',
			key_id: created.body.id,
			scopes: ['messages:read'],
			allowed_numbers: [n0],
		});
		expect(JSON.stringify(await logs('keys'))).not.toContain(created.body.key);
	});

	it('receptions: inbound and echo records', async () => {
		await inbound(sb, n0);
		await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, text: 'app' });
		const [echo, inboundEntry] = await logs('receptions');
		expect(inboundEntry).toMatchObject({
			...entryShape,
			direction: 'in',
			contact: CONTACT,
			number: n0,
			type: 'text',
		});
		expect(echo).toMatchObject({ direction: 'echo', contact: CONTACT, number: n0 });
	});

	it('sends and credits: each reply is sent and debits one credit', async () => {
		expect(await logs('sends')).toEqual([]);
		expect(await logs('credits')).toEqual([]);
		await inbound(sb, n0);
		const sent = await api(sb, 'POST', '/v1/messages/reply', sb.keys.oneNumber, {
			to: CONTACT,
			text: 'hi',
		});
		expect(await logs('sends')).toEqual([
			{
				...entryShape,
				category: 'sends',
				message_id: sent.body.id,
				wa_message_id: sent.body.wa_message_id,
				to: CONTACT,
				from: n0,
				key_id: 'key_one_number',
			},
		]);
		const before = sb.state().credit_balance;
		expect(await logs('credits')).toEqual([
			{
				...entryShape,
				category: 'credits',
				action: 'debit',
				amount: 1,
				balance_after: before,
				reason: 'reply',
				message_id: sent.body.id,
			},
		]);
	});

	it('rejections: 401, 403, 422 and 400 refusals', async () => {
		await api(sb, 'GET', '/v1/ping', sb.keys.revoked);
		await api(sb, 'GET', '/v1/ping', sb.keys.noBalance);
		await api(sb, 'POST', '/v1/messages/reply', sb.keys.all, { to: CONTACT, text: 'hi', from: n0 });
		await api(sb, 'POST', '/v1/messages/reply', sb.keys.all, { text: 'hi' });
		const entries = await logs('rejections');
		expect(entries.map((e) => [e.status, e.code, e.key_id])).toEqual([
			[400, 'invalid_request', 'key_all'],
			[422, 'window_closed', 'key_all'],
			[403, 'missing_scope', 'key_no_balance'],
			[401, 'key_revoked', null],
		]);
		expect(entries[0]).toMatchObject({ ...entryShape, method: 'POST', path: '/v1/messages/reply' });
	});

	it('webhook: each delivery attempt with success and reason', async () => {
		await registerWebhook(sb, receiver.url);
		receiver.mode = { kind: 'status', status: 200 };
		await inbound(sb, n0);
		receiver.mode = { kind: 'status', status: 401 };
		await inbound(sb, n0);
		const [failed, ok] = await logs('webhook');
		expect(ok).toMatchObject({
			...entryShape,
			event: 'message.inbound',
			url: receiver.url,
			success: true,
			status_code: 200,
			reason: null,
		});
		expect(failed).toMatchObject({ success: false, status_code: 401, reason: 'HTTP 401' });
		receiver.mode = { kind: 'status', status: 200 };
	});

	it('pages newest first with limit and next_cursor', async () => {
		const first = await api(sb, 'GET', '/v1/logs?category=keys&limit=4', sb.keys.all);
		expect(first.body.data).toHaveLength(4);
		expect(first.body.has_more).toBe(true);
		const second = await api(
			sb,
			'GET',
			`/v1/logs?category=keys&limit=4&cursor=${first.body.next_cursor}`,
			sb.keys.all,
		);
		expect(second.body.data).toHaveLength(3);
		expect(second.body.next_cursor).toBeNull();
		const ids = [...first.body.data, ...second.body.data].map((e: { id: string }) => e.id);
		expect(new Set(ids).size).toBe(7);
	});
});
