// The Polling Trigger when the service answers the spec's guesses another plausible way: every
// list shape and body/created records are read, each message emitted once; an answer it cannot
// read fails the poll (n8n shows it) and moves nothing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INodeExecutionData } from 'n8n-workflow';

import { READ_BOUNDS } from '../../../nodes/shared/history';
import { pollHarness, type PollHarness } from '../../harness';
import type { Answers } from '../../sandbox/answers';
import { API_KEY, CREDENTIAL_TYPE, describeWithSandbox, POLLING_TYPE } from '../../support';
import { inbound, storedBeforeStart, type Sandbox } from '../businessMessaging/helpers';

async function polling(baseUrl: string, apiKey: string): Promise<PollHarness> {
	return await pollHarness({
		type: POLLING_TYPE,
		parameters: {},
		credentials: { [CREDENTIAL_TYPE]: { apiKey, baseUrl } },
	});
}

const texts = (result: INodeExecutionData[][] | null) =>
	(result?.[0] ?? []).map((item) => (item.json.data as { text: string }).text);

const SHAPES: Array<Answers['list_shape']> = [
	'data_cursor',
	'items_next_url',
	'items_next_token',
	'page_number',
	'bare_array',
];

describe.each(SHAPES)('Polling Trigger, list_shape=%s, record_fields=body_created', (listShape) => {
	const pageSize = READ_BOUNDS.history.pageSize;
	// Pages of 3, so that every shape but the bare array (one page, no way on) pages.
	beforeAll(() => (READ_BOUNDS.history.pageSize = listShape === 'bare_array' ? 100 : 3));
	afterAll(() => (READ_BOUNDS.history.pageSize = pageSize));

	describeWithSandbox(
		'each new message once, oldest first, with the canonical text and created_at',
		(sandbox: Sandbox) => {
			it('over several pages, then only what is newer', async () => {
				await storedBeforeStart(sandbox, 'before activation');
				const trigger = await polling(sandbox.baseUrl, sandbox.keys.all);
				expect(await trigger.poll()).toBeNull();
				for (let i = 0; i < 7; i++) await inbound(sandbox, { text: `m${i}` });
				const result = await trigger.poll();
				expect(texts(result)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6']);
				const item = result![0][0].json;
				const stored = sandbox.state().inbound.find((r) => r.text === 'm0');
				expect(item).toMatchObject({
					event: 'message.inbound',
					timestamp: stored?.created_at,
					data: { body: 'm0', text: 'm0', created: expect.any(Number) },
				});
				expect(await trigger.poll()).toBeNull();
				await inbound(sandbox, { text: 'later' });
				expect(texts(await trigger.poll())).toEqual(['later']);
			});
		},
		{ answers: { list_shape: listShape, record_fields: 'body_created' } },
	);
});

describe('Polling Trigger: an answer it cannot read fails the poll', () => {
	let server: Server;
	let baseUrl = '';
	let answer: unknown = {};
	beforeAll(async () => {
		server = createServer((_req, res) => {
			res.setHeader('content-type', 'application/json');
			res.end(JSON.stringify(answer));
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(async () => await new Promise<void>((resolve) => server.close(() => resolve())));

	it('a body in none of the list shapes: the error names the endpoint, the shapes, the body and what to do', async () => {
		answer = { results: [{ id: 'm1', text: 'hi' }] };
		const trigger = await polling(baseUrl, API_KEY);
		const failed = trigger.poll();
		await expect(failed).rejects.toThrow(
			'Polling Trigger → Read Messages: the answer of GET /v1/messages/inbound is not a list this node reads ({data: [...], has_more, next_cursor}, {items: [...], next}, a JSON array, or {data: [...], page, total_pages}); it was: {"results":[{"id":"m1","text":"hi"}]}. Nothing was read, and nothing is skipped',
		);
		await expect(trigger.poll()).rejects.toThrow(/report it with this answer/);
		expect(trigger.staticData.watermarks ?? {}).toEqual({});
	});

	it('records without a readable time: they cannot be ordered, the poll fails naming one', async () => {
		answer = { data: [{ id: 'm1', text: 'hi', when: 'yesterday' }], has_more: false };
		const trigger = await polling(baseUrl, API_KEY);
		await expect(trigger.poll()).rejects.toThrow(
			/has no readable time \(created_at or created: ISO 8601, or unix seconds or milliseconds\), so messages cannot be ordered; it was: \{"id":"m1","text":"hi","when":"yesterday"\}/,
		);
	});

	it('a long body is shortened in the message', async () => {
		answer = { results: 'x'.repeat(5000) };
		const trigger = await polling(baseUrl, API_KEY);
		const error = await trigger.poll().catch((e: Error) => e);
		expect((error as Error).message).toContain(`${'x'.repeat(100)}…`);
		expect((error as Error).message.length).toBeLessThan(1000);
	});
});
