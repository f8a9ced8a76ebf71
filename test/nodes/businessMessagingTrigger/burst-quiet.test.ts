// Combine a Contact's Messages: the quiet period counts from when the trigger received the message
// (`received_at`, stamped by webhook() or the catch-up), so n8n's intake before execute() overlaps it.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import type { WebhookReceiveResult } from '../../harness';
import { CONTACT, useSandbox } from '../../support';
import { inboundFrom, listReads, servedTrigger, type ServedTrigger } from './helpers';

import { SETTLE_MS } from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import { STORE_GRACE_MS, quietWaitMs } from '../../../nodes/BusinessMessagingTrigger/routing/burst';
import { RECEIVED_AT_FIELD } from '../../../nodes/BusinessMessagingTrigger/routing/route';

const QUIET_S = 2;
const FULL_MS = QUIET_S * 1000 + STORE_GRACE_MS;
const COMBINE = { options: { combineMessages: true, quietPeriod: QUIET_S, longestWait: 30 } };
const pause = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));

describe('combine: how long an execution still waits (pure)', () => {
	const settings = { quietMs: 5_000, longestMs: 60_000 };
	const T = Date.parse('2026-11-28T10:00:00.000Z');
	const stamp = new Date(T).toISOString();

	it('the rest of quiet period + grace since the trigger received the message', () => {
		expect(quietWaitMs(stamp, settings, T)).toBe(6_000);
		expect(quietWaitMs(stamp, settings, T + 1_500)).toBe(4_500);
	});

	it('nothing once they have passed (n8n took longer than the quiet period to start it)', () => {
		expect(quietWaitMs(stamp, settings, T + 6_000)).toBe(0);
		expect(quietWaitMs(stamp, settings, T + 60_000)).toBe(0);
	});

	it('never more than quiet period + grace: a stamp ahead of this clock (another process) is capped', () => {
		expect(quietWaitMs(new Date(T + 30_000).toISOString(), settings, T)).toBe(6_000);
	});

	it('without a readable stamp (an older version’s item, resumed): the whole quiet period + grace, as before', () => {
		for (const missing of [undefined, null, '', 'yesterday', 12345, {}])
			expect(quietWaitMs(missing, settings, T)).toBe(6_000);
	});
});

describe('combine: the quiet period counts from the trigger’s receipt, against the sandbox', () => {
	const sb = useSandbox();
	const open: ServedTrigger[] = [];
	afterEach(async () => {
		jest.restoreAllMocks();
		for (const running of open.splice(0)) await running.close();
	});
	const serve = async (parameters: IDataObject = COMBINE) => {
		const running = await servedTrigger(sb, parameters);
		open.push(running);
		return running;
	};
	const write = async (text: string) => await inboundFrom(sb, CONTACT, text);
	const run = async (
		running: ServedTrigger,
		result: Pick<WebhookReceiveResult, 'workflowData'>,
	) => {
		const started = Date.now();
		const items = (await running.harness.execute(result.workflowData ?? [])).flat();
		return { items, ms: Date.now() - started };
	};
	const only = (result: WebhookReceiveResult) => result.workflowData![0][0];

	it('webhook() stamps the item with when it received the message (Combine on only)', async () => {
		const before = Date.now();
		const running = await serve();
		await write('hi');
		const stamped = Date.parse(String(only(running.results[0]).json[RECEIVED_AT_FIELD]));
		expect(stamped).toBeGreaterThanOrEqual(before);
		expect(stamped).toBeLessThanOrEqual(Date.now());
		await running.close();
		await running.harness.deactivate();
		const plain = await serve({});
		await write('without Combine');
		expect(only(plain.results[0]).json[RECEIVED_AT_FIELD]).toBeUndefined();
	});

	it('an execution that starts late waits only the rest of the quiet period', async () => {
		const running = await serve();
		await write('hi');
		await pause(1_500); // n8n's intake
		const { items, ms } = await run(running, running.results[0]);
		expect(items.map((item) => item.json.text)).toEqual(['hi']);
		expect(ms).toBeGreaterThanOrEqual(FULL_MS - 1_500 - 300);
		expect(ms).toBeLessThan(FULL_MS - 1_500 + 700); // before: the whole quiet period + grace
		expect(items[0].json[RECEIVED_AT_FIELD]).toBe(only(running.results[0]).json[RECEIVED_AT_FIELD]);
	});

	it('an execution that starts after the quiet period reads once, at once', async () => {
		const running = await serve();
		await write('hi');
		await write('still there?');
		await pause(FULL_MS + 200);
		const reads = listReads(sb);
		const { items, ms } = await run(running, running.results[1]);
		expect(items.map((item) => item.json.text)).toEqual(['hi\nstill there?']);
		expect(ms).toBeLessThan(700);
		expect(listReads(sb) - reads).toBe(1);
	});

	it('a message sent within the quiet period still joins the burst of an execution that started late', async () => {
		const running = await serve();
		await write('first');
		await pause(500);
		const first = run(running, running.results[0]);
		await pause(1_000);
		await write('second, 1.5 s later');
		const [a, b] = await Promise.all([first, run(running, running.results[1])]);
		expect(a.items).toEqual([]);
		expect(b.items.map((item) => item.json.text)).toEqual(['first\nsecond, 1.5 s later']);
	});

	it('an item without the stamp (an older version’s execution) waits the whole quiet period + grace', async () => {
		const running = await serve();
		await write('hi');
		await pause(FULL_MS);
		const item = only(running.results[0]);
		const json = { ...item.json };
		delete json[RECEIVED_AT_FIELD];
		const { items, ms } = await run(running, { workflowData: [[{ ...item, json }]] });
		expect(items.map((one) => one.json.text)).toEqual(['hi']);
		expect(ms).toBeGreaterThanOrEqual(FULL_MS - 50);
	});

	it('a recovered message counts as received when the service stored it (settled: its burst is read at once), and its burst comes out whole', async () => {
		const running = await serve();
		const first = await running.harness.startTrigger('activate');
		await first.close();
		await running.down();
		await write('sent while n8n was down');
		await write('and this too');
		await running.up();
		const now = Date.now() + SETTLE_MS + 5_000;
		jest.spyOn(Date, 'now').mockImplementation(() => now + (performance.now() % 1));
		const again = await running.harness.startTrigger('init');
		open.push({ close: async () => await again.close() } as ServedTrigger);
		const until = performance.now() + 10_000;
		while (again.emitted.length < 2 && performance.now() < until) await pause(50);
		const recovered: INodeExecutionData[] = again.emitted.map((data) => data.flat()[0]);
		expect(recovered.map((item) => item.json.recovered)).toEqual([true, true]);
		for (const item of recovered)
			expect(Date.parse(String(item.json[RECEIVED_AT_FIELD]))).toBe(
				Date.parse(String((item.json.data as IDataObject).created_at)),
			);
		const startedAt = performance.now();
		const runs = await Promise.all(
			recovered.map(async (item) => await run(running, { workflowData: [[item]] })),
		);
		// Not a quiet period (5 s) again: the burst's quiet period passed while it settled.
		expect(performance.now() - startedAt).toBeLessThan(2_000);
		expect(runs.flatMap((one) => one.items).map((item) => item.json.text)).toEqual([
			'sent while n8n was down\nand this too',
		]);
	});
});
