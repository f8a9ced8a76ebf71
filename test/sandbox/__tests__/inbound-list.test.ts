import { CONTACT, OTHER_CONTACT, useSandbox } from '../../support';
import { api, control, inbound } from './helpers';

const sb = useSandbox();
let n0: string;
let n1: string;
beforeAll(() => {
	[n0, n1] = sb.numbers.map((n) => n.phone_number_id);
});

const list = (query = '') => api(sb, 'GET', `/v1/messages/inbound${query}`, sb.keys.all);

describe('GET /v1/messages/inbound', () => {
	it('returns stored inbound records (direction in), newest first', async () => {
		await inbound(sb, n0, { text: 'first' });
		await inbound(sb, n1, { text: 'second', contact_name: 'Grace' });
		await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, text: 'from the app' });
		const result = await list();
		expect(result.status).toBe(200);
		expect(result.body.has_more).toBe(false);
		expect(result.body.next_cursor).toBeNull();
		expect(result.body.data.map((r: { text: string }) => r.text)).toEqual(['second', 'first']);
		expect(result.body.data[0]).toEqual({
			id: expect.stringMatching(/^inb_/),
			direction: 'in',
			from: CONTACT,
			contact_name: 'Grace',
			number: n1,
			wa_message_id: expect.stringMatching(/^wamid\./),
			type: 'text',
			text: 'second',
			media_id: null,
			media_url: null,
			media_mime: null,
			created_at: expect.any(String),
		});
	});

	it('direction=echo returns echo records only', async () => {
		await inbound(sb, n0);
		await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, text: 'from the app' });
		const result = await list('?direction=echo');
		expect(result.status).toBe(200);
		expect(result.body.data).toEqual([
			{
				id: expect.any(String),
				direction: 'echo',
				to: CONTACT,
				number: n0,
				wa_message_id: expect.any(String),
				type: 'text',
				text: 'from the app',
				media_id: null,
				media_mime: null,
				created_at: expect.any(String),
			},
		]);
		expect(
			(await list('?direction=in')).body.data.map((r: { direction: string }) => r.direction),
		).toEqual(['in']);
	});

	it.each(['out', 'all', ''])('direction=%s is 400', async (direction) => {
		const result = await list(`?direction=${direction}`);
		expect(result.status).toBe(400);
		expect(result.body.error.message).toContain('direction');
	});

	it('pages with limit and next_cursor', async () => {
		for (let i = 1; i <= 5; i++) await inbound(sb, n0, { text: `m${i}` });
		const texts = (body: { data: Array<{ text: string }> }) => body.data.map((r) => r.text);
		const first = await list('?limit=2');
		expect(texts(first.body)).toEqual(['m5', 'm4']);
		expect(first.body.has_more).toBe(true);
		const second = await list(`?limit=2&cursor=${first.body.next_cursor}`);
		expect(texts(second.body)).toEqual(['m3', 'm2']);
		const third = await list(`?limit=2&cursor=${second.body.next_cursor}`);
		expect(texts(third.body)).toEqual(['m1']);
		expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
	});

	it.each(['?limit=0', '?limit=101', '?limit=abc', '?cursor=garbage'])(
		'%s is 400',
		async (query) => {
			expect((await list(query)).status).toBe(400);
		},
	);

	it('filters by number and contact', async () => {
		await inbound(sb, n0, { text: 'a' });
		await inbound(sb, n1, { text: 'b' });
		await inbound(sb, n1, { text: 'c', from: OTHER_CONTACT });
		const texts = (body: { data: Array<{ text: string }> }) => body.data.map((r) => r.text);
		expect(texts((await list(`?number=${n1}`)).body)).toEqual(['c', 'b']);
		expect(texts((await list(`?contact=${encodeURIComponent(CONTACT)}`)).body)).toEqual(['b', 'a']);
	});
});
