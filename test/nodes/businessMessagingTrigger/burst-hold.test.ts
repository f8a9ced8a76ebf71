// Combine a Contact's Messages where trigger() runs in the process that takes the webhook (regular
// mode, issue 43 goal 2): a message starts no execution, n8n answers the service at once, and
// trigger() emits one execution per burst once the contact is quiet; that execution reads once.
// Held messages are in the static data n8n saves after each request, so a restart emits them.
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

import {
	HELD_AGAIN_FIELD,
	STORE_GRACE_MS,
} from '../../../nodes/BusinessMessagingTrigger/routing/burst';
import {
	HELD_KEY,
	burstOutputs,
	dueNow,
	savedHeld,
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
			emit: [],
			nextAtMs: T + 600 + 5_000 + grace,
		});
		expect(dueNow(held, settings, T + 600 + 5_000 + grace).emit).toEqual(held);
	});

	it('a contact who never pauses: at the Longest Wait all but the newest (its burst may still grow)', () => {
		const held = Array.from({ length: 20 }, (_, i) => at(i * 3_000));
		const due = dueNow(held, settings, T + 60_000 + grace);
		expect(due.emit).toEqual(held.slice(0, -1));
		expect(dueNow([at(0)], settings, T + 60_000 + grace).emit).toEqual([at(0)]);
	});

	it('the execution’s input: each message on its output, and a saved copy read back tolerantly', () => {
		const a = { ...at(0, 'a'), output: 1, outputs: 3 };
		const b = { ...at(1, 'b'), output: 1, outputs: 3 };
		expect(burstOutputs([a, b])).toEqual([[], [{ json: a.json }, { json: b.json }], []]);
		expect(savedHeld({ [HELD_KEY]: [a, { id: 'x' }, 'junk', b] })).toEqual([a, b]);
		expect(savedHeld({ [HELD_KEY]: 'junk' })).toEqual([]);
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
		// Held, not emitted yet; n8n saves the request's copy (it starts no execution).
		expect(started.emitted).toHaveLength(0);
		expect(savedHeld(running.harness.staticData).map((m) => m.json.data)).toHaveLength(5);

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
		// Emitted and run: the next copy n8n saves no longer carries them.
		// The copy n8n saved with the last emit carried that burst until its execution had run.
		expect(savedHeld(started.saved).map((m) => (m.json.data as IDataObject).text)).toEqual([
			'b1',
			'b2',
		]);
		await write(OTHER, 'b3');
		expect(savedHeld(running.harness.staticData).map((m) => m.id)).toHaveLength(1);
	});

	it('n8n restarts before the quiet period ends: the new process emits every held message once, in one execution, and its burst is whole', async () => {
		const running = await serve();
		const started = await running.harness.startTrigger('activate');
		await write(CONTACT, 'before 1');
		await write(CONTACT, 'before 2');
		// What n8n saved after the last request, and the process gone (no close, no emit).
		const saved = JSON.parse(JSON.stringify(running.harness.staticData)) as IDataObject;
		expect(savedHeld(saved)).toHaveLength(2);
		expect(started.emitted).toHaveLength(0);

		const next = await trigger(sb, COMBINE as never, { staticData: saved });
		const restarted = await next.startTrigger('init');
		open.push(restarted);
		await pause(DUE_MS + 1_500);
		expect(restarted.emitted).toHaveLength(1);
		expect(textsOf(restarted.emitted[0])).toEqual(['before 1', 'before 2']);
		const items = (await next.execute(restarted.emitted[0], 'trigger')).flat();
		expect(items.map((item) => item.json.text)).toEqual(['before 1\nbefore 2']);
		await pause(500);
		expect(restarted.emitted).toHaveLength(1);
		// The old process's close (never called on a crash) would have emitted them: not counted here.
		open.push({ close: async () => await started.close() });
	});

	it('n8n killed after two saves raced (the last saved copy lacks the newer message): the restored older one still emits the whole burst, once', async () => {
		const running = await serve();
		const started = await running.harness.startTrigger('activate');
		open.push(started);
		await write(CONTACT, 'kept 1');
		await write(CONTACT, 'dropped by a racing save');
		const saved = JSON.parse(JSON.stringify(running.harness.staticData)) as IDataObject;
		const node = saved as { [HELD_KEY]: HeldMessage[] };
		node[HELD_KEY] = node[HELD_KEY].slice(0, 1);

		const next = await trigger(sb, COMBINE as never, { staticData: saved });
		const restarted = await next.startTrigger('init');
		open.push(restarted);
		await pause(DUE_MS + 1_500);
		expect(restarted.emitted.map(textsOf)).toEqual([['kept 1']]);
		const items = (await next.execute(restarted.emitted[0], 'trigger')).flat();
		expect(items.map((item) => item.json.text)).toEqual(['kept 1\ndropped by a racing save']);
		expect(Object.keys(items[0].json)).not.toContain(HELD_AGAIN_FIELD);
	});

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

	it('a test event, or where trigger() does not run here (queue mode’s processors): each message starts its execution as before', async () => {
		const running = await serve();
		await write(CONTACT, 'no trigger() here');
		expect(running.results[0].workflowData?.flat()).toHaveLength(1);
		expect(running.harness.staticData[HELD_KEY]).toBeUndefined();
	});
});
