import { maskRecipient } from '..';
import { CONTACT, OTHER_CONTACT, useSandbox } from '../../support';
import { api, call, control, inbound } from './helpers';

/** The spec's window, written out so that a change of the constant fails here. */
const DAY_SECONDS = 24 * 60 * 60;

const sb = useSandbox();
let n0: string;
let n1: string;
let n2: string;
beforeAll(() => {
	[n0, n1, n2] = sb.numbers.map((n) => n.phone_number_id);
});
beforeEach(async () => {
	// Open the window from CONTACT on every seeded number, so only the `from` rules decide.
	for (const number of [n0, n1, n2]) await inbound(sb, number);
});

const reply = (key: string, body: Record<string, unknown>) =>
	api(sb, 'POST', '/v1/messages/reply', key, body);
const text = { to: CONTACT, text: 'Thanks, on it' };

describe('from rules', () => {
	it('key limited to one number: from may be left out, the number is used', async () => {
		const result = await reply(sb.keys.oneNumber, text);
		expect(result.status).toBe(201);
		expect(result.body.from).toBe(n0);
		expect((await reply(sb.keys.oneNumber, { ...text, from: n0 })).status).toBe(201);
	});

	it('key limited to one number: a different from is 403', async () => {
		const result = await reply(sb.keys.oneNumber, { ...text, from: n1 });
		expect(result.status).toBe(403);
		expect(result.body.error.code).toBe('from_not_allowed');
	});

	it('key limited to two numbers: a missing from is 422 from_required', async () => {
		const result = await reply(sb.keys.twoNumbers, text);
		expect(result.status).toBe(422);
		expect(result.body.error.code).toBe('from_required');
		expect(result.body.error.message).toContain(n0);
	});

	it('key limited to two numbers: from must be one of them, else 403', async () => {
		expect((await reply(sb.keys.twoNumbers, { ...text, from: n1 })).status).toBe(201);
		const outside = await reply(sb.keys.twoNumbers, { ...text, from: n2 });
		expect(outside.status).toBe(403);
		expect(outside.body.error.code).toBe('from_not_allowed');
	});

	it('unrestricted key: any number of the account; none given on a 3-number account is 422; foreign is 403', async () => {
		for (const from of [n0, n1, n2]) {
			const result = await reply(sb.keys.all, { ...text, from });
			expect(result.status).toBe(201);
			expect(result.body.from).toBe(from);
		}
		expect((await reply(sb.keys.all, text)).body.error.code).toBe('from_required');
		const foreign = await reply(sb.keys.all, { ...text, from: '199999999999999' });
		expect(foreign.status).toBe(403);
		expect(foreign.body.error.code).toBe('from_not_allowed');
	});

	it('logs every refusal under rejections and sends nothing for it', async () => {
		await reply(sb.keys.oneNumber, { ...text, from: n1 });
		await reply(sb.keys.twoNumbers, text);
		const rejections = sb.state().logs.filter((l) => l.category === 'rejections');
		expect(rejections.map((r) => [r.status, r.code, r.key_id])).toEqual([
			[403, 'from_not_allowed', 'key_one_number'],
			[422, 'from_required', 'key_two_numbers'],
		]);
		expect(sb.state().messages).toHaveLength(0);
	});
});

describe('24-hour window', () => {
	it('is closed without an inbound message from the contact on that number', async () => {
		const result = await reply(sb.keys.all, { to: OTHER_CONTACT, text: 'hi', from: n0 });
		expect(result.status).toBe(422);
		expect(result.body.error.code).toBe('window_closed');
		expect(result.body.error.message).toMatch(/template/);
	});

	it('stays open 24 h after the last inbound, closes 1 s later (sandbox clock)', async () => {
		sb.advanceClock(DAY_SECONDS - 1);
		expect((await reply(sb.keys.all, { ...text, from: n0 })).status).toBe(201);
		sb.advanceClock(2);
		const closed = await reply(sb.keys.all, { ...text, from: n0 });
		expect(closed.status).toBe(422);
		expect(closed.body.error.code).toBe('window_closed');
		// A new inbound reopens it.
		await inbound(sb, n0);
		expect((await reply(sb.keys.all, { ...text, from: n0 })).status).toBe(201);
	});

	it('is per number: an inbound on another number does not open it; an echo never does', async () => {
		sb.reset();
		await inbound(sb, n1);
		await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, text: 'sent from the app' });
		expect((await reply(sb.keys.all, { ...text, from: n0 })).body.error.code).toBe('window_closed');
		expect((await reply(sb.keys.all, { ...text, from: n1 })).status).toBe(201);
	});
});

describe('validation', () => {
	it.each([
		['missing to', { text: 'hi', from: '100000000000001' }, 'to'],
		['missing text', { to: CONTACT, from: '100000000000001' }, 'text'],
		['text not a string', { to: CONTACT, text: 42, from: '100000000000001' }, 'text'],
		['to without plus', { to: '15551234567', text: 'hi', from: '100000000000001' }, 'to'],
		['from not a string', { to: CONTACT, text: 'hi', from: 100000000000001 }, 'from'],
	])('%s is 400 invalid_request naming the field', async (_label, body, field) => {
		const result = await reply(sb.keys.all, body);
		expect(result.status).toBe(400);
		expect(result.body.error.code).toBe('invalid_request');
		expect(result.body.error.message).toContain(`${field}:`);
	});

	it('a body that is not JSON is 400 invalid_json', async () => {
		const result = await call(sb.baseUrl, 'POST', '/v1/messages/reply', {
			key: sb.keys.all,
			rawBody: '{"to":',
		});
		expect(result.status).toBe(400);
		expect(result.body.error.code).toBe('invalid_json');
	});
});

describe('message records', () => {
	it('a reply answers 201 with the record, readable with GET /v1/messages/{id}', async () => {
		const sent = await reply(sb.keys.all, { ...text, from: n0 });
		expect(sent.status).toBe(201);
		expect(sent.body).toEqual({
			id: expect.stringMatching(/^msg_[0-9a-f]{24}$/),
			wa_message_id: expect.stringMatching(/^wamid\./),
			direction: 'out',
			type: 'text',
			to: CONTACT,
			from: n0,
			text: text.text,
			status: 'sent',
			error: null,
			created_at: expect.any(String),
			updated_at: expect.any(String),
		});
		const read = await api(sb, 'GET', `/v1/messages/${sent.body.id}`, sb.keys.all);
		expect(read.status).toBe(200);
		expect(read.body).toEqual(sent.body);
	});

	it('an unknown id is 404 message_not_found', async () => {
		const result = await api(sb, 'GET', '/v1/messages/msg_doesnotexist', sb.keys.all);
		expect(result.status).toBe(404);
		expect(result.body.error.code).toBe('message_not_found');
	});

	it('a status update through the control API shows in GET /v1/messages/{id}', async () => {
		const sent = await reply(sb.keys.all, { ...text, from: n0 });
		const updated = await control(sb, 'POST', '/status', { id: sent.body.id, status: 'delivered' });
		expect(updated.status).toBe(200);
		const read = await api(sb, 'GET', `/v1/messages/${sent.body.id}`, sb.keys.all);
		expect(read.body).toMatchObject({ status: 'delivered', error: null });
		await control(sb, 'POST', '/status', { id: sent.body.id, status: 'failed' });
		const failed = await api(sb, 'GET', `/v1/messages/${sent.body.id}`, sb.keys.all);
		expect(failed.body).toMatchObject({ status: 'failed', error: { code: 'undeliverable' } });
	});

	it('a status update for an unknown id or status is refused', async () => {
		expect((await control(sb, 'POST', '/status', { id: 'msg_nope', status: 'read' })).status).toBe(
			404,
		);
		const sent = await reply(sb.keys.all, { ...text, from: n0 });
		expect(
			(await control(sb, 'POST', '/status', { id: sent.body.id, status: 'lost' })).status,
		).toBe(400);
	});
});

describe('maskRecipient', () => {
	it('keeps the plus, 4 leading and 3 trailing digits', () => {
		expect(maskRecipient('+15550000001')).toBe('+1555****001');
		expect(maskRecipient('+447911123456')).toBe('+4479*****456');
		expect(maskRecipient('+3312345')).toBe('+33***45');
	});
});
