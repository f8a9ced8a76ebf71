// The Business Messaging Polling Trigger against the sandbox, through n8n-core's real PollContext:
// new inbound and echo messages read from the history, each emitted once, oldest first.
import { Logger } from '@n8n/backend-common';
import type { INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { pollHarness, type PollHarness } from '../../harness';
import { HarnessCredentialsHelper } from '../../harness/credentials';
import { CREDENTIAL_TYPE, POLLING_TYPE, useSandbox } from '../../support';
import {
	createKey,
	echo,
	inbound,
	storedBeforeStart,
	type Sandbox,
} from '../businessMessaging/helpers';

const sb = useSandbox();

async function polling(
	sandbox: Sandbox,
	parameters: INodeParameters = {},
	key = sandbox.keys.all,
): Promise<PollHarness> {
	return await pollHarness({
		type: POLLING_TYPE,
		parameters,
		credentials: { [CREDENTIAL_TYPE]: { apiKey: key, baseUrl: sandbox.baseUrl } },
	});
}

const texts = (result: INodeExecutionData[][] | null) =>
	(result?.[0] ?? []).map((item) => (item.json.data as { text: string }).text);

afterEach(() => jest.restoreAllMocks());

describe('Business Messaging Polling Trigger', () => {
	it('emits only what arrives after the first activation, each message once, oldest first, as {event, data, timestamp}', async () => {
		await storedBeforeStart(sb, 'before activation');
		const trigger = await polling(sb);
		expect(await trigger.poll()).toBeNull();

		for (const text of ['one', 'two', 'three']) await inbound(sb, { text });
		const result = await trigger.poll();
		expect(texts(result)).toEqual(['one', 'two', 'three']);
		const item = result![0][0].json;
		expect(item).toMatchObject({
			event: 'message.inbound',
			polled: true,
			data: {
				direction: 'in',
				text: 'one',
				from: expect.any(String),
				number: sb.numbers[0].phone_number_id,
			},
		});
		expect(item.timestamp).toBe((item.data as { created_at: string }).created_at);
		expect(await trigger.poll()).toBeNull();
	});

	it("registers no webhook: another system's webhook is left untouched", async () => {
		const trigger = await polling(sb);
		await trigger.poll();
		await inbound(sb, { text: 'hello' });
		await trigger.poll();
		expect(
			sb.state().requests.filter((request) => request.path.startsWith('/v1/console/webhook')),
		).toEqual([]);
	});

	it('echoes only when selected, as message.echo, interleaved with inbound messages in stored order; Receiving Numbers filters', async () => {
		const trigger = await polling(sb, {
			events: ['message.inbound', 'message.echo'],
			options: { numbers: sb.numbers[1].phone_number_id },
		});
		await trigger.poll();
		await echo(sb, { text: 'from the app', number: sb.numbers[1].phone_number_id });
		await inbound(sb, { text: 'other number', number: sb.numbers[0].phone_number_id });
		await inbound(sb, { text: 'this number', number: sb.numbers[1].phone_number_id });
		const items = (await trigger.poll())![0].map((entry) => [
			entry.json.event,
			(entry.json.data as { text: string }).text,
		]);
		// In the order they were stored: the echo was sent first.
		expect(items).toEqual([
			['message.echo', 'from the app'],
			['message.inbound', 'this number'],
		]);
		const inboundOnly = await polling(sb);
		await inboundOnly.poll();
		await echo(sb, { text: 'not selected' });
		expect(await inboundOnly.poll()).toBeNull();
	});

	it('more than a page and more than Max Messages per Poll: all of them, oldest first, over several polls, with a log line', async () => {
		const trigger = await polling(sb, { options: { maxPerPoll: 120 } });
		await trigger.poll();
		for (let i = 0; i < 250; i++) await inbound(sb, { text: `m${i}` });
		const lines: string[] = [];
		jest.spyOn(Logger.prototype, 'info').mockImplementation((message: string) => {
			lines.push(message);
		});
		const seen = [
			...texts(await trigger.poll()),
			...texts(await trigger.poll()),
			...texts(await trigger.poll()),
		];
		expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => `m${i}`));
		expect(await trigger.poll()).toBeNull();
		expect(
			lines.some((line) =>
				/130 more message\.inbound message\(s\) wait for the next poll/.test(line),
			),
		).toBe(true);
	});

	it('n8n restarts: the messages that arrived while it was down are emitted once at the first poll', async () => {
		const trigger = await polling(sb);
		await trigger.poll();
		await inbound(sb, { text: 'before the restart' });
		expect(texts(await trigger.poll())).toEqual(['before the restart']);
		trigger.restart();
		for (const text of ['while down 1', 'while down 2']) await inbound(sb, { text });
		expect(texts(await trigger.poll())).toEqual(['while down 1', 'while down 2']);
		expect(await trigger.poll()).toBeNull();
	});

	it('Recover Earlier Messages: only those of the last N minutes', async () => {
		await inbound(sb, { text: 'stored earlier' });
		const later = Date.now() + 10 * 60_000;
		jest.spyOn(Date, 'now').mockReturnValue(later);
		const none = await polling(sb);
		expect(await none.poll()).toBeNull();
		const recovering = await polling(sb, { options: { recoverMinutes: 15 } });
		const recovered = await recovering.poll();
		expect(texts(recovered)).toEqual(['stored earlier']);
		const tooShort = await polling(sb, { options: { recoverMinutes: 5 } });
		expect(await tooShort.poll()).toBeNull();
	});

	it('"Fetch Test Event" shows the newest message and moves nothing', async () => {
		const trigger = await polling(sb);
		await trigger.poll();
		await inbound(sb, { text: 'first' });
		await inbound(sb, { text: 'newest' });
		expect(texts(await trigger.poll('manual'))).toEqual(['newest']);
		expect(texts(await trigger.poll())).toEqual(['first', 'newest']);
	});

	it('polls read the credential once, not per poll and request (n8n 2.x builds an isolate for each read)', async () => {
		const trigger = await polling(sb, { events: ['message.inbound', 'message.echo'] });
		expect(await trigger.poll()).toBeNull();
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		for (let poll = 0; poll < 4; poll++) {
			await inbound(sb, { text: `m${poll}` });
			expect(texts(await trigger.poll())).toEqual([`m${poll}`]);
		}
		// 4 polls of 2 history reads each.
		expect(reads.mock.calls.length).toBeLessThanOrEqual(1);
	});

	it('a key without messages:read fails the poll with what to do', async () => {
		const key = (await createKey(sb, ['balance:read'])).value;
		const trigger = await polling(sb, {}, key);
		await expect(trigger.poll()).rejects.toThrow(/lacks the messages:read scope/);
	});
});
