// Message → Get Many when the sandbox answers the spec's guesses another plausible way
// (test/sandbox/answers.ts): filters the service ignores are applied here, every list shape and
// the body/created record fields are read, each record once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IDataObject } from 'n8n-workflow';

import { keepsMessage } from '../../../../nodes/BusinessMessaging/actions/message/getMany.operation';
import type { Answers } from '../../../sandbox/answers';
import { runNode } from '../../../harness';
import {
	ACTION_TYPE,
	API_KEY,
	CONTACT,
	CREDENTIAL_TYPE,
	describeWithSandbox,
	OTHER_CONTACT,
} from '../../../support';
import { apiRequests, echo, inbound, run } from '../helpers';

const GET_MANY = { resource: 'message', operation: 'getMany', simple: false };
/** A small page, so that every shape but the bare array pages. */
const PAGE_OF_3 = { queryParameters: { parameter: [{ name: 'limit', value: '3' }] } };

describe('keepsMessage (pure): the filters applied here', () => {
	const inbound1 = { direction: 'in', from: CONTACT, to: undefined, number: '1' };
	it('contact: an inbound record’s from, an echo’s to; number: number; spaces and dashes aside', () => {
		expect(keepsMessage(inbound1, { direction: 'in', contact: CONTACT, number: '1' })).toBe(true);
		expect(keepsMessage(inbound1, { direction: 'in', contact: OTHER_CONTACT })).toBe(false);
		expect(keepsMessage(inbound1, { direction: 'in', number: '2' })).toBe(false);
		expect(
			keepsMessage({ direction: 'echo', to: CONTACT }, { direction: 'echo', contact: CONTACT }),
		).toBe(true);
		expect(
			keepsMessage({ direction: 'echo', from: CONTACT }, { direction: 'echo', contact: CONTACT }),
		).toBe(false);
		expect(
			keepsMessage({ from: '+1 555-123-4567' }, { direction: 'in', contact: '+15551234567' }),
		).toBe(true);
	});

	it('a record without the field, or of the other direction, is dropped', () => {
		expect(keepsMessage({ direction: 'in' }, { direction: 'in', contact: CONTACT })).toBe(false);
		expect(keepsMessage({ from: CONTACT }, { direction: 'in', number: '1' })).toBe(false);
		expect(keepsMessage({ direction: 'echo', to: CONTACT }, { direction: 'in' })).toBe(false);
		expect(keepsMessage({ from: CONTACT }, { direction: 'in', contact: CONTACT })).toBe(true);
	});
});

describeWithSandbox(
	'Get Many: a service that ignores the contact and number filters (inbound_filters=ignored)',
	(sandbox) => {
		const seed = async () => {
			await inbound(sandbox, { from: CONTACT, text: 'ada 1' });
			await inbound(sandbox, { from: CONTACT, text: 'ada 2' });
			for (let i = 1; i <= 5; i++)
				await inbound(sandbox, { from: OTHER_CONTACT, text: `bob ${i}` });
			await echo(sandbox, { to: OTHER_CONTACT, text: 'to bob' });
		};

		it('Contact: only that contact’s messages, none of another, with a Limit reached over pages', async () => {
			await seed();
			const all = await run(sandbox, {
				...GET_MANY,
				returnAll: true,
				filters: { contact: CONTACT },
			});
			expect(all.error).toBeUndefined();
			expect(all.items.map((item) => item.json.text)).toEqual(['ada 2', 'ada 1']);
			const before = apiRequests(sandbox, '/v1/messages/inbound').length;
			// The 5 newest are Bob's: paging goes on until the Limit is reached.
			const limited = await run(sandbox, {
				...GET_MANY,
				...PAGE_OF_3,
				returnAll: false,
				limit: 2,
				filters: { contact: CONTACT },
			});
			expect(limited.items.map((item) => item.json.text)).toEqual(['ada 2', 'ada 1']);
			// [bob 5, 4, 3], [bob 2, 1, ada 2], [ada 1]
			expect(apiRequests(sandbox, '/v1/messages/inbound').length - before).toBe(3);
		});

		it('as an AI agent’s tool would run it (Simplify on): no other contact’s text', async () => {
			await seed();
			const result = await run(sandbox, {
				...GET_MANY,
				simple: true,
				returnAll: false,
				limit: 5,
				filters: { contact: CONTACT },
			});
			expect(JSON.stringify(result.items)).not.toMatch(/bob|15557650000/);
			expect(result.items).toHaveLength(2);
		});

		it('Number: only that number’s messages; Echo with Contact: echoes to that contact', async () => {
			const [first, second] = sandbox.numbers.map((n) => n.phone_number_id);
			await inbound(sandbox, { number: first, text: 'on first' });
			await inbound(sandbox, { number: second, text: 'on second' });
			await echo(sandbox, { to: CONTACT, text: 'to ada' });
			await echo(sandbox, { to: OTHER_CONTACT, text: 'to bob' });
			const numbered = await run(sandbox, {
				...GET_MANY,
				returnAll: true,
				filters: { number: second },
			});
			expect(numbered.items.map((item) => item.json.text)).toEqual(['on second']);
			const echoes = await run(sandbox, {
				...GET_MANY,
				direction: 'echo',
				returnAll: true,
				filters: { contact: CONTACT },
			});
			expect(echoes.items.map((item) => item.json.text)).toEqual(['to ada']);
		});
	},
	{ answers: { inbound_filters: 'ignored' } },
);

const SHAPES: Array<Answers['list_shape']> = [
	'data_cursor',
	'items_next_url',
	'items_next_token',
	'page_number',
	'bare_array',
];

describe.each(SHAPES)('Get Many, list_shape=%s, record_fields=body_created', (listShape) => {
	describeWithSandbox(
		'every stored message once, with its own fields and the canonical text and created_at',
		(sandbox) => {
			it('Return All', async () => {
				for (let i = 0; i < 7; i++) await inbound(sandbox, { text: `m${i}` });
				const paging = listShape === 'bare_array' ? {} : PAGE_OF_3;
				const result = await run(sandbox, { ...GET_MANY, ...paging, returnAll: true });
				expect(result.error).toBeUndefined();
				expect(result.items.map((item) => item.json.text)).toEqual([
					'm6',
					'm5',
					'm4',
					'm3',
					'm2',
					'm1',
					'm0',
				]);
				const first = result.items[0].json as IDataObject;
				expect(first).toMatchObject({ body: 'm6', text: 'm6', created: expect.any(Number) });
				const stored = sandbox.state().inbound.find((r) => r.text === 'm6');
				expect(first.created_at).toBe(stored?.created_at);
				const pages = apiRequests(sandbox, '/v1/messages/inbound').length;
				expect(pages).toBe(listShape === 'bare_array' ? 1 : 3);
			});

			it('Simplify: text from body, created_at from created', async () => {
				await inbound(sandbox, { text: 'hello' });
				const result = await run(sandbox, { ...GET_MANY, simple: true, returnAll: true });
				expect(result.items[0].json).toMatchObject({
					text: 'hello',
					created_at: expect.any(String),
				});
				expect(result.items[0].json).not.toHaveProperty('body');
			});
		},
		{ answers: { list_shape: listShape, record_fields: 'body_created' } },
	);
});

describe('Get Many: an answer that is not a list (a loopback service)', () => {
	let server: Server;
	let baseUrl = '';
	const answer = { results: [{ from: OTHER_CONTACT, text: 'bob' }] };
	beforeAll(async () => {
		server = createServer((_req, res) => {
			res.setHeader('content-type', 'application/json');
			res.end(JSON.stringify(answer));
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(async () => await new Promise<void>((resolve) => server.close(() => resolve())));
	const getMany = async (parameters: IDataObject) =>
		await runNode({
			type: ACTION_TYPE,
			parameters: { ...GET_MANY, returnAll: true, ...parameters },
			credentials: { [CREDENTIAL_TYPE]: { apiKey: API_KEY, baseUrl } },
		});

	it('with a filter: fails naming the shapes, the body never output', async () => {
		const result = await getMany({ filters: { contact: CONTACT } });
		expect(result.error?.message).toBe(
			'Message → Get Many: the answer of GET /v1/messages/inbound is not a list this node reads ({data: [...], has_more, next_cursor}, {items: [...], next}, a JSON array, or {data: [...], page, total_pages}), so the filters cannot be applied to it',
		);
		expect(result.items).toEqual([]);
	});

	it('without filters (Simplify off): one item, as it came (unchanged)', async () => {
		const result = await getMany({});
		expect(result.items.map((item) => item.json)).toEqual([answer]);
	});
});
