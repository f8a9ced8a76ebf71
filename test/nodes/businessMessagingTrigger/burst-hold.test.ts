// Combine a Contact's Messages where trigger() runs in the process that takes the webhook (regular
// mode, issue 43 goal 2): a message starts no execution, n8n answers the service at once, and
// trigger() emits one execution per burst once the contact is quiet; that execution reads once.
// Held messages are in memory only; the static data n8n saves keeps one time before which every held
// message has run, and after a crash the catch-up recovers what was stored since then (issue 49).
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import { CONTACT, inboundEnvelope, signedRequest, useSandbox } from '../../support';
import {
	inboundFrom,
	listReads,
	servedTrigger,
	storedSecret,
	trigger,
	type ServedTrigger,
} from './helpers';

import { STORE_GRACE_MS } from '../../../nodes/BusinessMessagingTrigger/routing/burst';
import { SETTLE_MS } from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import { TAKEN_BEFORE_RESTART } from '../../../nodes/BusinessMessagingTrigger/catchUp/catchUp';
import {
	HELD_SINCE_KEY,
	MAX_HELD_PER_CONTACT,
	burstOutputs,
	dueNow,
	heldSince,
	type HeldMessage,
} from '../../../nodes/BusinessMessagingTrigger/routing/burstHold';

const QUIET_S = 1;
const DUE_MS = QUIET_S * 1000 + STORE_GRACE_MS;
const COMBINE = { options: { combineMessages: true, quietPeriod: QUIET_S, longestWait: 30 } };
const OTHER = '+15557770002';
const pause = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));
const textsOf = (data: INodeExecutionData[][]) =>
	data.flat().map((item) => (item.json.data as IDataObject).text);

describe('combine held by trigger(): when a contact’s messages fall due (pure)', () => {
	const settings = { quietMs: 5_000, longestMs: 60_000 };
	const T = 1_800_000_000_000;
	const at = (ms: number, id = `m${ms}`): HeldMessage => ({
		id,
		atMs: T + ms,
		output: 0,
		outputs: 1,
		json: { id },
	});
	const grace = STORE_GRACE_MS;

	it('all of them once the newest is a quiet period and the grace old, not before', () => {
		const held = [at(0), at(300), at(600)];
		expect(dueNow(held, settings, T + 600 + 5_000 + grace - 1)).toEqual({
			due: [],
			nextAtMs: T + 600 + 5_000 + grace,
		});
		expect(dueNow(held, settings, T + 600 + 5_000 + grace).due).toEqual([held]);
	});

	it('a contact who never pauses: the burst closes at the Longest Wait (the rule execute() cuts by), the next one starts after it', () => {
		const held = Array.from({ length: 25 }, (_, i) => at(i * 3_000));
		const before = dueNow(held.slice(0, 20), settings, T + 60_000 + grace);
		expect(before.due).toEqual([held.slice(0, 20)]);
		const after = dueNow(held, settings, T + 72_000);
		expect(after.due).toEqual([held.slice(0, 20)]);
		expect(after.nextAtMs).toBe(T + 72_000 + 5_000 + grace);
	});

	it('the execution’s input: each message on its output; the saved time read tolerantly', () => {
		const a = { ...at(0, 'a'), output: 1, outputs: 3 };
		const b = { ...at(1, 'b'), output: 1, outputs: 3 };
		expect(burstOutputs([a, b])).toEqual([[], [{ json: a.json }, { json: b.json }], []]);
		expect(heldSince({ [HELD_SINCE_KEY]: T })).toBe(T);
		expect(heldSince({ [HELD_SINCE_KEY]: 'junk' })).toBeUndefined();
		expect(heldSince({ [HELD_SINCE_KEY]: -1 })).toBeUndefined();
		expect(heldSince({})).toBeUndefined();
	});
});

describe('combine held by trigger(), against the sandbox', () => {
	const sb = useSandbox();
	const open: Array<{ close(): Promise<void> }> = [];
	afterEach(async () => {
		for (const running of open.splice(0).reverse()) await running.close();
	});
	const serve = async (): Promise<ServedTrigger> => {
		const running = await servedTrigger(sb, COMBINE);
		open.push(running);
		return running;
	};
	const write = async (from: string, text: string) => await inboundFrom(sb, from, text);

	it('a burst starts one execution: every delivery answered at once with none, then one per contact once it is quiet, which reads once and waits for nothing', async () => {
		const running = await serve();
		const started = await running.harness.startTrigger('activate');
		open.push(started);
		for (const [from, text] of [
			[CONTACT, 'a1'],
			[OTHER, 'b1'],
			[CONTACT, 'a2'],
			[CONTACT, 'a3'],
			[OTHER, 'b2'],
		])
			await write(from, text);
		expect(running.results).toHaveLength(5);
		for (const result of running.results) {
			expect(result.status).toBe(200);
			expect(result.body).toEqual({ received: true });
			expect(result.workflowData).toBeUndefined();
			expect(result.answeredAfterMs).toBeLessThan(1_500);
		}
		// Held in memory; the copy n8n saves after the first request keeps only a time before it.
		expect(started.emitted).toHaveLength(0);
		const saved = running.harness.staticData;
		expect(saved[HELD_SINCE_KEY]).toBeLessThanOrEqual(Date.now());
		// Whole JSON strings and phone numbers: a bare 'a1' also matches the random webhook id or sealed secret.
		const savedText = JSON.stringify(saved);
		expect(savedText).not.toMatch(/"(a1|a2|a3|b1|b2)"/);
		expect(savedText).not.toContain(CONTACT);
		expect(savedText).not.toContain(OTHER);

		await pause(DUE_MS + 600);
		expect(started.emitted).toHaveLength(2);
		const byContact = started.emitted.map(textsOf).sort();
		expect(byContact).toEqual([
			['a1', 'a2', 'a3'],
			['b1', 'b2'],
		]);
		const reads = listReads(sb);
		const begun = Date.now();
		const items = (
			await Promise.all(
				started.emitted.map(async (data) => await running.harness.execute(data, 'trigger')),
			)
		).flat(2);
		// No quiet period waited out inside the execution (the machine may be busy: a bound, not a figure).
		expect(Date.now() - begun).toBeLessThan(DUE_MS);
		expect(listReads(sb) - reads).toBe(2);
		expect(items.map((item) => item.json.text).sort()).toEqual(['a1\na2\na3', 'b1\nb2']);
		// The copy n8n saved with the last emit: its time is before the burst it emits.
		const lastBurst = started.emitted[1]
			.flat()
			.map((item) => Date.parse(String(item.json.received_at)));
		expect(started.saved[HELD_SINCE_KEY]).toBeLessThanOrEqual(Math.min(...lastBurst));
	});

	/** n8n killed: a new process from what n8n saved, its clock past the catch-up's settle time. */
	const restartFrom = async (saved: IDataObject) => {
		jest
			.spyOn(Date, 'now')
			.mockImplementation(() => performance.timeOrigin + performance.now() + SETTLE_MS + 5_000);
		const next = await trigger(sb, COMBINE as never, { staticData: saved });
		const restarted = await next.startTrigger('init');
		open.push(restarted);
		return { next, restarted };
	};
	const emittedAtLeast = async (run: { emitted: unknown[] }, count: number) => {
		for (let waited = 0; run.emitted.length < count && waited < 10_000; waited += 100)
			await pause(100);
		return run.emitted as INodeExecutionData[][][];
	};
	afterEach(() => jest.restoreAllMocks());

	it('n8n killed before the quiet period ends: the catch-up of the next process recovers every held message, and their executions emit the burst whole, once', async () => {
		const running = await serve();
		const started = await running.harness.startTrigger('activate');
		await write(CONTACT, 'before 1');
		await write(CONTACT, 'before 2');
		// What n8n saved after the last request, and the process gone (no close, no emit).
		const saved = JSON.parse(JSON.stringify(running.harness.staticData)) as IDataObject;
		expect(heldSince(saved)).toBeDefined();
		expect(started.emitted).toHaveLength(0);

		const { next, restarted } = await restartFrom(saved);
		const emitted = await emittedAtLeast(restarted, 2);
		expect(emitted.map(textsOf)).toEqual([['before 1'], ['before 2']]);
		for (const item of emitted.flat(2)) {
			expect(item.json.recovered).toBe(true);
			expect(item.json.delivery_failure).toBe(TAKEN_BEFORE_RESTART);
		}
		const items = (
			await Promise.all(emitted.map(async (data) => await next.execute(data, 'trigger')))
		).flat(2);
		expect(items.map((item) => item.json.text)).toEqual(['before 1\nbefore 2']);
		// The old process's close (never called on a crash) would have emitted them: not counted here.
		open.push({ close: async () => await started.close() });
	});

	it('a second kill before the catch-up has passed the restart: the time n8n saves does not move, so the next process recovers them again (run-once drops what ran)', async () => {
		const running = await serve();
		const started = await running.harness.startTrigger('activate');
		open.push({ close: async () => await started.close() });
		await write(CONTACT, 'held at the first kill');
		const saved = JSON.parse(JSON.stringify(running.harness.staticData)) as IDataObject;
		const since = heldSince(saved) as number;

		const secret = storedSecret(saved, sb.keys.all) as string;
		const { next, restarted } = await restartFrom(saved);
		await emittedAtLeast(restarted, 1);
		// The new process holds a new message and emits its burst: the copy saved with it keeps the time.
		const event = inboundEnvelope({ from: OTHER }, new Date(Date.now()).toISOString());
		expect((await next.receive(signedRequest(event, secret))).workflowData).toBeUndefined();
		await emittedAtLeast(restarted, 2);
		expect(heldSince(restarted.saved)).toBe(since);
	});

	it('one contact’s flood never turns Combine off for another, nor grows what n8n saves: at the bound the contact’s burst so far runs', async () => {
		const running = await serve();
		const started = await running.harness.startTrigger('activate');
		open.push(started);
		const long = 'x'.repeat(4_000);
		for (let i = 0; i < MAX_HELD_PER_CONTACT; i++) await write(CONTACT, `${i} ${long}`);
		const size = JSON.stringify(running.harness.staticData).length;
		expect(size).toBeLessThan(2_000);
		await write(CONTACT, 'one more');
		await write(OTHER, 'another contact');
		expect(started.emitted).toHaveLength(1);
		expect(started.emitted[0].flat()).toHaveLength(MAX_HELD_PER_CONTACT);
		expect(JSON.stringify(running.harness.staticData).length).toBeLessThan(2_000);
		for (const result of running.results) expect(result.workflowData).toBeUndefined();
		await pause(DUE_MS + 600);
		expect(started.emitted.slice(1).map(textsOf).sort()).toEqual([
			['another contact'],
			['one more'],
		]);
	}, 60_000);

	it('closing (deactivation, a graceful stop) emits what it holds once due, before it returns', async () => {
		const running = await serve();
		const started = await running.harness.startTrigger('activate');
		await write(CONTACT, 'x1');
		await write(CONTACT, 'x2');
		const closing = Date.now();
		await started.close();
		expect(Date.now() - closing).toBeGreaterThan(DUE_MS - 600);
		expect(started.emitted.map(textsOf)).toEqual([['x1', 'x2']]);
		// Closed: the next message starts its own execution, as where trigger() does not run.
		await write(CONTACT, 'x3');
		expect(running.results[2].workflowData?.flat()).toHaveLength(1);
	});

	it('past the Late Delivery Cutoff (n8n took the request late): held and answered 2xx where trigger() runs here, still refused 503 (the catch-up brings it) elsewhere', async () => {
		const held = await trigger(sb, COMBINE as never);
		await held.activate();
		const secret = storedSecret(held.staticData, sb.keys.all) as string;
		const sixSecondsAgo = new Date(Date.now() - 6_000).toISOString();
		const late = () => signedRequest(inboundEnvelope({}, sixSecondsAgo), secret);
		const refused = await held.receive(late());
		expect(refused.status).toBe(503);
		const started = await held.startTrigger('activate');
		open.push(started);
		const taken = await held.receive(late());
		expect(taken.status).toBe(200);
		expect(taken.workflowData).toBeUndefined();
		await pause(DUE_MS + 600);
		expect(started.emitted).toHaveLength(1);
	});

	it('a start with Combine off forgets the saved time, so turning Combine on later recovers nothing from before', async () => {
		const next = await trigger(sb, {} as never, {
			staticData: { [HELD_SINCE_KEY]: Date.now() - 86_400_000 },
		});
		const started = await next.startTrigger('init');
		open.push(started);
		expect(next.staticData[HELD_SINCE_KEY]).toBeUndefined();
	});

	it('a test event, or where trigger() does not run here (queue mode’s processors): each message starts its execution as before', async () => {
		const running = await serve();
		await write(CONTACT, 'no trigger() here');
		expect(running.results[0].workflowData?.flat()).toHaveLength(1);
		expect(running.harness.staticData[HELD_SINCE_KEY]).toBeUndefined();
	});
});
