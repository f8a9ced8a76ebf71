// Combine a Contact's Messages (routing/burst.ts): one item per burst, emitted by the burst's
// newest message's execution, after the quiet period, from what the sandbox stored.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import type { WebhookReceiveResult } from '../../harness';
import { CONTACT, OTHER_CONTACT, useSandbox } from '../../support';
import { control, inboundFrom, servedTrigger, type ServedTrigger } from './helpers';

import {
	burstItem,
	combinable,
	cutBursts,
	decideBurst,
	joinedText,
	type StoredMessage,
} from '../../../nodes/BusinessMessagingTrigger/routing/burst';
import { properties } from '../../../nodes/BusinessMessagingTrigger/description';
import {
	LONGEST_WAIT_SECONDS,
	QUIET_PERIOD_SECONDS,
	combineProblem,
	combineSettings,
} from '../../../nodes/BusinessMessagingTrigger/options';

const sb = useSandbox();
const settings = { quietMs: 5_000, longestMs: 60_000 };
const at = (id: string, seconds: number): StoredMessage => ({
	id,
	atMs: seconds * 1000,
	record: { wa_message_id: id, text: id },
});
const ids = (bursts: StoredMessage[][]) => bursts.map((burst) => burst.map((m) => m.id));

describe('combine: how bursts are cut (pure)', () => {
	it('a gap of the quiet period or more starts a new burst; any order in, oldest first out', () => {
		const messages = [at('c', 4.9), at('a', 0), at('b', 2), at('d', 9.9), at('e', 30)];
		expect(ids(cutBursts(messages, settings))).toEqual([['a', 'b', 'c'], ['d'], ['e']]);
	});

	it('a contact who never pauses is cut at the longest wait, counted from the burst’s first message', () => {
		const messages = Array.from({ length: 31 }, (_, i) => at(`m${i}`, i * 4));
		const bursts = cutBursts(messages, settings);
		expect(bursts.map((burst) => burst.length)).toEqual([15, 15, 1]);
		expect(bursts.every((burst) => burst.at(-1)!.atMs - burst[0].atMs < 60_000)).toBe(true);
	});

	it('messages stored within one millisecond keep their order (the microseconds decide)', () => {
		// The list is newest first; Date.parse drops the microseconds, so atMs ties.
		const stamp = (id: string, micros: string): StoredMessage => {
			const created_at = `2026-11-26T10:00:00.123${micros}+00:00`;
			return { id, atMs: Date.parse(created_at), record: { wa_message_id: id, created_at } };
		};
		const newestFirst = [stamp('c', '900'), stamp('b', '450'), stamp('a', '007')];
		expect(ids(cutBursts(newestFirst, settings))).toEqual([['a', 'b', 'c']]);
		expect(decideBurst(newestFirst, 'b', settings)).toEqual({ kind: 'later' });
		expect(decideBurst(newestFirst, 'c', settings).kind).toBe('emit');
	});

	it('only the newest message of its burst emits it; the others leave it to that one', () => {
		const messages = [at('a', 0), at('b', 1), at('c', 2), at('later', 20)];
		expect(decideBurst(messages, 'a', settings)).toEqual({ kind: 'later' });
		expect(decideBurst(messages, 'b', settings)).toEqual({ kind: 'later' });
		const last = decideBurst(messages, 'c', settings);
		expect(last.kind === 'emit' && last.burst.map((m) => m.id)).toEqual(['a', 'b', 'c']);
		expect(decideBurst(messages, 'gone', settings)).toEqual({ kind: 'missing' });
		const testEvent = decideBurst(messages, 'b', settings, true);
		expect(testEvent.kind === 'emit' && testEvent.burst.map((m) => m.id)).toEqual(['a', 'b']);
	});

	it('the prompt: texts joined by new lines, a message without text as its type', () => {
		expect(
			joinedText([{ text: 'hi' }, { type: 'image', text: null }, { text: 'order 4411' }]),
		).toBe('hi\n[image]\norder 4411');
	});

	it('answers to a wait, hand-over items, statuses and echoes are never combined', () => {
		const data = { from: CONTACT, number: '1', wa_message_id: 'wamid.x' };
		expect(combinable({ event: 'message.inbound', data })).toEqual({
			contact: CONTACT,
			number: '1',
			id: 'wamid.x',
		});
		expect(combinable({ event: 'message.inbound', data, resumed_execution: '7' })).toBeUndefined();
		expect(
			combinable({ event: 'message.inbound', data, hand_over: { active: true } }),
		).toBeUndefined();
		expect(combinable({ event: 'message.echo', data })).toBeUndefined();
		expect(combinable({ event: 'message.status', data })).toBeUndefined();
	});

	it('the item keeps the newest message’s event (Reply’s defaults still work) and adds the burst', () => {
		const newest = { json: { event: 'message.inbound', data: { from: CONTACT, number: '1' } } };
		const item = burstItem(newest, [{ text: 'a' }, { text: 'b' }]);
		expect(item.json).toEqual({
			...newest.json,
			contact: CONTACT,
			number: '1',
			text: 'a\nb',
			messages: [{ text: 'a' }, { text: 'b' }],
		});
	});
});

describe('combine: the options', () => {
	it('defaults and bounds: the editor’s are the runtime’s', () => {
		const options = properties.find((p) => p.name === 'options')!
			.options as unknown as IDataObject[];
		const field = (name: string) => options.find((o) => o.name === name)!;
		for (const [name, bounds] of [
			['quietPeriod', QUIET_PERIOD_SECONDS],
			['longestWait', LONGEST_WAIT_SECONDS],
		] as const) {
			expect(field(name).default).toBe(bounds.default);
			expect(field(name).typeOptions).toEqual({ minValue: bounds.min, maxValue: bounds.max });
		}
		expect(field('combineMessages').default).toBe(false);
		expect(combineSettings({})).toBeUndefined();
		expect(combineSettings({ combineMessages: true })).toEqual({ quietMs: 5000, longestMs: 60000 });
	});

	it('a value out of bounds names the field and the bounds', () => {
		expect(combineProblem({ combineMessages: true, quietPeriod: 0.5 })).toBe(
			'Options → Quiet Period (Seconds) must be a number from 1 to 20 (it is 0.5)',
		);
		expect(combineProblem({ combineMessages: true, longestWait: '={{ 1 }}' })).toMatch(
			/Longest Wait \(Seconds\) must be a number from 5 to 600/,
		);
		expect(combineProblem({ combineMessages: false, quietPeriod: 0 })).toBeUndefined();
	});
});

describe('combine: in the trigger, against the sandbox', () => {
	const open: ServedTrigger[] = [];
	afterEach(async () => {
		for (const running of open.splice(0)) await running.close();
	});
	const COMBINE = { options: { combineMessages: true, quietPeriod: 1, longestWait: 30 } };
	const serve = async (parameters: IDataObject = COMBINE) => {
		const running = await servedTrigger(sb, parameters);
		open.push(running);
		return running;
	};
	const write = async (from: string, text: string, numberIndex = 0) =>
		await inboundFrom(sb, from, text, numberIndex);
	const runAll = async (running: ServedTrigger, results: WebhookReceiveResult[]) =>
		(
			await Promise.all(
				results.map(async (result) => await running.harness.execute(result.workflowData ?? [])),
			)
		).flatMap((outputs) => outputs.flat());
	const texts = (items: INodeExecutionData[]) => items.map((item) => item.json.text).sort();

	it('3 messages in a row: one item, the 3 oldest first; another contact and another number are their own bursts', async () => {
		const running = await serve();
		await write(CONTACT, 'hi');
		await write(OTHER_CONTACT, 'hello from Bob');
		await write(CONTACT, 'I ordered last week');
		await write(CONTACT, 'on the other number', 1);
		await write(CONTACT, 'order 4411');
		expect(running.results).toHaveLength(5);
		const items = await runAll(running, running.results);
		expect(texts(items)).toEqual([
			'hello from Bob',
			'hi\nI ordered last week\norder 4411',
			'on the other number',
		]);
		const ada = items.find((item) => item.json.text === 'hi\nI ordered last week\norder 4411')!;
		const number0 = sb.numbers[0].phone_number_id;
		const stored = sb
			.state()
			.inbound.filter((r) => r.direction === 'in' && r.from === CONTACT && r.number === number0)
			.slice(-3);
		expect(ada.json).toMatchObject({
			event: 'message.inbound',
			contact: CONTACT,
			number: sb.numbers[0].phone_number_id,
			data: { text: 'order 4411' },
			reply_window_closes_at: expect.any(String),
		});
		expect((ada.json.messages as IDataObject[]).map((m) => m.wa_message_id)).toEqual(
			stored.map((r) => r.wa_message_id),
		);
	});

	it('the newest message’s delivery failed: the others emit nothing, its catch-up copy emits the whole burst', async () => {
		const running = await serve();
		await write(CONTACT, 'first');
		await write(CONTACT, 'second');
		await write(CONTACT, 'third, not delivered');
		const [first, second, third] = running.results;
		// A newer message of their burst is listed already: they end without waiting the quiet period + 1 s.
		const started = Date.now();
		expect(await runAll(running, [first, second])).toEqual([]);
		expect(Date.now() - started).toBeLessThan(1500);
		expect(texts(await runAll(running, [third]))).toEqual(['first\nsecond\nthird, not delivered']);
	});

	it('the burst cannot be read (500): the message is emitted alone, once, with the reason', async () => {
		const running = await serve();
		await write(CONTACT, 'during an outage');
		// Every attempt of both reads: the first (is a newer message listed?) and the one after the wait.
		await control(sb, 'POST', '/faults', {
			count: 8,
			kind: 'status_500',
			path_prefix: '/v1/messages/inbound',
		});
		const items = await runAll(running, running.results);
		expect(items).toHaveLength(1);
		expect(items[0].json).toMatchObject({
			text: 'during an outage',
			messages: [expect.objectContaining({ text: 'during an outage' })],
			combine_problem: expect.stringMatching(/could not be read.*500/),
		});
	});

	it('off (the default): one item per message, no read of the list', async () => {
		const running = await serve({});
		await write(CONTACT, 'one');
		await write(CONTACT, 'two');
		const before = sb.state().requests.length;
		const items = await runAll(running, running.results);
		expect(items.map((item) => (item.json.data as IDataObject).text)).toEqual(['one', 'two']);
		expect(items[0].json.messages).toBeUndefined();
		expect(
			sb
				.state()
				.requests.slice(before)
				.filter((r) => r.path === '/v1/messages/inbound'),
		).toEqual([]);
	});

	it('an out-of-bounds quiet period refuses activation, naming the field and the bounds', async () => {
		const running = await serve({ options: { combineMessages: true, quietPeriod: 100 } });
		await expect(running.harness.startTrigger()).rejects.toThrow(
			'Options → Quiet Period (Seconds) must be a number from 1 to 20 (it is 100)',
		);
	});
});
