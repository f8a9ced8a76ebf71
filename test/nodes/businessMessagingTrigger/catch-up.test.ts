// The trigger's catch-up: what it decides (pure), and what it emits in n8n's TriggerContext
// against the sandbox, with the trigger behind a real HTTP server that goes down and up.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import {
	decideRecoveries,
	recoveredItem,
	startingWatermark,
	SETTLE_MS,
} from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import { catchUpSettings } from '../../../nodes/BusinessMessagingTrigger/options';
import type { WebhookAttempt } from '../../../nodes/BusinessMessagingTrigger/catchUp/deliveryLog';
import type { StartedTrigger, WebhookHarness } from '../../harness';
import { CONTACT, useSandbox } from '../../support';
import { TAKEN_BEFORE_RESTART } from '../../../nodes/BusinessMessagingTrigger/catchUp/catchUp';
import * as recoveries from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import {
	api,
	control,
	servedTrigger,
	startingN8n,
	trigger,
	type Json,
	type ServedTrigger,
} from './helpers';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const at = (seconds: number) =>
	new Date(T0 + seconds * 1000).toISOString().replace('Z', '000+00:00');
const record = (id: string, seconds: number, extra: IDataObject = {}): IDataObject => ({
	id,
	direction: 'in',
	wa_message_id: `wamid.${id}`,
	created_at: at(seconds),
	number: '100',
	...extra,
});
const start = { createdAt: at(0), ids: [] };
const delivered = (...ids: string[]) =>
	new Map<string, WebhookAttempt>(
		ids.map((id) => [`wamid.${id}`, { success: true, reason: null }]),
	);

describe('decideRecoveries (pure)', () => {
	it('recovers what has no successful delivery, oldest first across inbound and echo, with the logged reason', () => {
		const deliveries = delivered('b');
		deliveries.set('wamid.c', { success: false, reason: 'connection refused' });
		const decision = decideRecoveries(
			[
				{ event: 'message.inbound', records: [record('c', 3), record('b', 2), record('a', 1)] },
				{ event: 'message.echo', records: [record('e', 2.5, { direction: 'echo' })] },
			],
			{ 'message.inbound': start, 'message.echo': start },
			deliveries,
			T0 + 60_000,
			500,
		);
		expect(decision.recover.map((r) => [r.event, r.record.id, r.reason])).toEqual([
			['message.inbound', 'a', null],
			['message.echo', 'e', null],
			['message.inbound', 'c', 'connection refused'],
		]);
		expect(decision.watermarks['message.inbound']).toEqual({ createdAt: at(3), ids: ['c'] });
		expect(decision.watermarks['message.echo']).toEqual({ createdAt: at(2.5), ids: ['e'] });
		expect(decision.left).toBe(0);
	});

	it('a success wins over a failure for the same message (the log holds both when it was re-posted)', () => {
		const deliveries = delivered('a');
		const decision = decideRecoveries(
			[{ event: 'message.inbound', records: [record('a', 1)] }],
			{ 'message.inbound': start },
			deliveries,
			T0 + 60_000,
			500,
		);
		expect(decision.recover).toEqual([]);
		expect(decision.watermarks['message.inbound']).toEqual({ createdAt: at(1), ids: ['a'] });
	});

	it('leaves messages younger than the settle time (their delivery may still be under way) for the next run', () => {
		const decision = decideRecoveries(
			[{ event: 'message.inbound', records: [record('young', 50), record('old', 10)] }],
			{ 'message.inbound': start },
			new Map(),
			T0 + 30_000,
			500,
		);
		expect(decision.recover.map((r) => r.record.id)).toEqual(['old']);
		expect(decision.watermarks['message.inbound']).toEqual({ createdAt: at(10), ids: ['old'] });
	});

	it('cuts at the bound: the watermark stops at the last recovered message, the rest is counted as left', () => {
		const records = [record('d', 4), record('c', 3), record('b', 2), record('a', 1)];
		const decision = decideRecoveries(
			[{ event: 'message.inbound', records }],
			{ 'message.inbound': start },
			delivered('b'),
			T0 + 60_000,
			2,
		);
		expect(decision.recover.map((r) => r.record.id)).toEqual(['a', 'c']);
		expect(decision.watermarks['message.inbound']).toEqual({ createdAt: at(3), ids: ['c'] });
		expect(decision.left).toBe(1);
	});

	it('skips messages of other numbers without recovering them, and moves past them', () => {
		const decision = decideRecoveries(
			[
				{
					event: 'message.inbound',
					records: [record('mine', 2), record('other', 1, { number: '200' })],
				},
			],
			{ 'message.inbound': start },
			new Map(),
			T0 + 60_000,
			500,
			(r) => r.number === '100',
		);
		expect(decision.recover.map((r) => r.record.id)).toEqual(['mine']);
		expect(decision.watermarks['message.inbound']?.createdAt).toBe(at(2));
	});

	it('does nothing with messages at or before the watermark', () => {
		const decision = decideRecoveries(
			[{ event: 'message.inbound', records: [record('a', 1)] }],
			{ 'message.inbound': { createdAt: at(1), ids: ['a'] } },
			new Map(),
			T0 + 60_000,
			500,
		);
		expect(decision.recover).toEqual([]);
	});

	it('the recovered item is the webhook item, marked', () => {
		const item = recoveredItem({
			event: 'message.inbound',
			record: record('a', 1),
			reason: 'HTTP 503',
		});
		expect(item.json).toEqual({
			event: 'message.inbound',
			data: record('a', 1),
			timestamp: at(1),
			recovered: true,
			delivery_failure: 'HTTP 503',
			// As the webhook's inbound items: 24 hours after the message was stored.
			reply_window_closes_at: new Date(T0 + 1000 + 86_400_000).toISOString(),
		});
		expect(
			recoveredItem({ event: 'message.echo', record: record('e', 1), reason: null }).json
				.delivery_failure,
		).toBe('no delivery was logged');
	});
});

describe('startingWatermark and options', () => {
	const saved = { createdAt: at(-3600), ids: ['x'] };
	it('first activation: now, so nothing from before it', () => {
		expect(startingWatermark(undefined, 'activate', 'sinceLastActive', T0)).toEqual({
			createdAt: new Date(T0).toISOString(),
			ids: [],
		});
	});
	it('n8n restarting, the workflow updated or reactivated (default): carries on from the saved watermark', () => {
		for (const activation of ['init', 'update', 'leadershipChange', 'activate']) {
			expect(startingWatermark(saved, activation, 'sinceLastActive', T0)).toBe(saved);
		}
	});
	it("no saved watermark on a restart (a webhook request saved an older copy of the static data over it): from the user's last activation, not from the restart", () => {
		const activatedAtMs = T0 - 60_000;
		expect(startingWatermark(undefined, 'init', 'sinceLastActive', T0, activatedAtMs)).toEqual({
			createdAt: new Date(activatedAtMs).toISOString(),
			ids: [],
		});
		expect(
			startingWatermark(undefined, 'init', 'fromActivation', T0, activatedAtMs).createdAt,
		).toBe(new Date(activatedAtMs).toISOString());
		// A user's activation starts now whatever was stamped before.
		expect(
			startingWatermark(undefined, 'activate', 'sinceLastActive', T0, activatedAtMs).createdAt,
		).toBe(new Date(T0).toISOString());
		expect(startingWatermark(undefined, 'init', 'sinceLastActive', T0).createdAt).toBe(
			new Date(T0).toISOString(),
		);
	});
	it('"Nothing From Before": a user activation starts now; a restart of n8n still carries on', () => {
		expect(startingWatermark(saved, 'activate', 'fromActivation', T0).createdAt).toBe(
			new Date(T0).toISOString(),
		);
		expect(startingWatermark(saved, 'init', 'fromActivation', T0)).toBe(saved);
	});
	it('never more than 7 days back', () => {
		const ancient = { createdAt: at(-30 * 86_400), ids: [] };
		expect(startingWatermark(ancient, 'init', 'sinceLastActive', T0).createdAt).toBe(
			new Date(T0 - 7 * 86_400_000).toISOString(),
		);
	});
	it('options: defaults, and bounds on interval and count', () => {
		expect(catchUpSettings({})).toEqual({
			intervalMs: 60_000,
			onActivation: 'sinceLastActive',
			maxRecovered: 500,
		});
		expect(
			catchUpSettings({
				catchUpInterval: 1,
				maxRecovered: 0,
				onActivation: 'fromActivation',
				numbers: '1, 2',
			}),
		).toEqual({
			intervalMs: 10_000,
			onActivation: 'fromActivation',
			maxRecovered: 500,
		});
		expect(catchUpSettings({ maxRecovered: 1e9 }).maxRecovered).toBe(10_000);
	});
});

describe('catch-up in n8n (TriggerContext) against the sandbox', () => {
	// The service gives up on a delivery after 1.5 s here (about 8 s for real), so a slow answer is quick to test.
	const sb = useSandbox({ reset: 'never', webhookTimeoutMs: 1500 });
	const cleanup: Array<() => Promise<void>> = [];
	afterEach(async () => {
		jest.restoreAllMocks();
		for (const fn of cleanup.splice(0).reverse()) await fn();
		sb.reset();
	});

	async function setup(parameters: Record<string, unknown>): Promise<ServedTrigger> {
		const running = await servedTrigger(sb, parameters);
		cleanup.push(async () => await running.close());
		return running;
	}

	const historyReads = () =>
		sb.state().requests.filter((r: { path: string }) => r.path.startsWith('/v1/messages/inbound'))
			.length;
	/** trigger() started, its first run (the webhook watch, then the first read) done. */
	async function started(
		harness: WebhookHarness,
		activation: 'activate' | 'init' | 'update',
		firstRead = true,
	): Promise<StartedTrigger> {
		const reads = historyReads();
		const run = await harness.startTrigger(activation);
		cleanup.push(async () => await run.close());
		const until = Date.now() + 5_000;
		while (firstRead && historyReads() === reads && Date.now() < until)
			await new Promise((resolve) => setTimeout(resolve, 20));
		return run;
	}

	async function emittedAtLeast(
		run: StartedTrigger,
		count: number,
		ms = 10_000,
	): Promise<INodeExecutionData[]> {
		const until = Date.now() + ms;
		while (run.emitted.length < count && Date.now() < until)
			await new Promise((resolve) => setTimeout(resolve, 50));
		return run.emitted.map((data) => data.flat()).flat();
	}

	const inbound = async (text: string) =>
		(
			await control(sb, 'POST', '/inbound', {
				from: CONTACT,
				contact_name: 'Ada',
				number: sb.numbers[0].phone_number_id,
				text,
			})
		).body as Json;
	const echo = async (text: string) =>
		(
			await control(sb, 'POST', '/echo', {
				to: CONTACT,
				number: sb.numbers[0].phone_number_id,
				text,
			})
		).body as Json;
	/** webhook() runs `ms` after each event arrives (a busy n8n): its clock reads that much later than the service's, during webhook() only. */
	const webhookRunsLate = (harness: WebhookHarness, ms: number) => {
		const receive = harness.receive.bind(harness);
		harness.receive = async (input) => {
			const spy = jest
				.spyOn(Date, 'now')
				.mockImplementation(() => performance.timeOrigin + performance.now() + ms);
			try {
				return await receive(input);
			} finally {
				spy.mockRestore();
			}
		};
	};
	/** n8n's clock `seconds` later than the service's (the settle time has passed for what is stored now). */
	const later = (seconds: number) => {
		const now = Date.now();
		jest
			.spyOn(Date, 'now')
			.mockImplementation(() => now + seconds * 1000 + (performance.now() % 1));
	};

	it("a delivery log's failure reason reaches delivery_failure as one short printable line, without tags", async () => {
		const { harness, up, down } = await setup({ events: ['message.inbound'] });
		const first = await started(harness, 'activate');
		await first.close();
		await down();
		expect((await inbound('while down')).delivery).toMatchObject({ delivered: false });
		await up();
		// The service's own log, its reasons rewritten as a broken or hostile service might write them.
		const log = (await api(sb, 'GET', '/v1/logs?category=webhook')).body as Json;
		const forged = `refused\n2026-11-28T00:00:00Z INFO forged\u001b[2J \u202e<b>bold</b>${'z'.repeat(5000)}`;
		for (const entry of log.data as Json[]) entry.reason = forged;
		await control(sb, 'POST', '/faults', {
			count: 20,
			kind: 'json_body',
			path_prefix: '/v1/logs',
			body: log,
		});
		later(SETTLE_MS / 1000 + 5);
		const run = await started(harness, 'init');
		const [item] = await emittedAtLeast(run, 1);
		const failure = String(item?.json.delivery_failure);
		expect(failure).toMatch(/^refused 2026-11-28T00:00:00Z INFO forged \[2J bold z+…$/);
		expect(failure.length).toBeLessThanOrEqual(301);
	});

	it('n8n down: what arrived meanwhile is emitted once, oldest first, marked recovered; a delivered message is not emitted again', async () => {
		const { harness, results, up, down } = await setup({
			events: ['message.inbound', 'message.echo'],
		});
		const first = await started(harness, 'activate');
		await first.close();

		await down();
		for (const text of ['one', 'two', 'three'])
			expect((await inbound(text)).delivery).toMatchObject({
				delivered: false,
				reason: 'connection refused',
			});
		expect((await echo('from the app')).delivery.delivered).toBe(false);
		await up();
		expect((await inbound('delivered live')).delivery.delivered).toBe(true);
		expect(results.filter((r) => r.workflowData)).toHaveLength(1);

		later(SETTLE_MS / 1000 + 5);
		const run = await started(harness, 'init');
		const items = await emittedAtLeast(run, 4);
		expect(run.emitted).toHaveLength(4); // one execution per message, as the webhook
		expect(
			items.map((item) => [
				item.json.event,
				(item.json.data as IDataObject).text,
				item.json.recovered,
			]),
		).toEqual([
			['message.inbound', 'one', true],
			['message.inbound', 'two', true],
			['message.inbound', 'three', true],
			['message.echo', 'from the app', true],
		]);
		expect(items[0].json.delivery_failure).toBe('connection refused');
		// n8n saved the watermark with the last emit: a restart from it emits nothing again.
		await run.close();
		const again = await started(harness, 'init');
		await new Promise((resolve) => setTimeout(resolve, 1500));
		expect(again.emitted).toHaveLength(0);
		expect(first.emitted).toHaveLength(0);
	});

	it("n8n down before the trigger's first emit, its catch-up state saved away by a webhook request's older copy: what arrived meanwhile is still recovered", async () => {
		const { harness, up, down } = await setup({});
		const first = await started(harness, 'activate');
		await first.close();
		// A webhook request (a Reply and Wait registration, an event) saves the static data it loaded,
		// from before trigger() wrote its state (n8n saves it whole).
		delete harness.staticData.catchUp;
		expect(harness.staticData.activatedAtMs).toEqual(expect.any(Number));

		await down();
		for (const text of ['while down 1', 'while down 2'])
			expect((await inbound(text)).delivery.delivered).toBe(false);
		await up();
		later(SETTLE_MS / 1000 + 5);
		const run = await started(harness, 'init');
		const items = await emittedAtLeast(run, 2);
		expect(items.map((item) => (item.json.data as IDataObject).text)).toEqual([
			'while down 1',
			'while down 2',
		]);
	});

	it('a delivery that reaches webhook() too late is answered 503, not run, and recovered once', async () => {
		const { harness, results } = await setup({});
		const run = await started(harness, 'activate');
		webhookRunsLate(harness, 6_000);
		const sent = await inbound('late');
		expect(sent.delivery).toMatchObject({ delivered: false, status: 503, reason: 'HTTP 503' });
		expect(results[results.length - 1].workflowData).toBeUndefined();
		later(SETTLE_MS / 1000 + 5);
		const restarted = await started(harness, 'init');
		const items = await emittedAtLeast(restarted, 1);
		expect(
			items.map((item) => [(item.json.data as IDataObject).text, item.json.delivery_failure]),
		).toEqual([['late', 'HTTP 503']]);
		expect(run.emitted).toHaveLength(0);
	});

	it('a delivery webhook() accepted but n8n answered after the service gave up runs once: the catch-up does not recover it', async () => {
		const { harness, results } = await setup({});
		const receive = harness.receive.bind(harness);
		harness.receive = async (input) => {
			const result = await receive(input);
			await new Promise((resolve) => setTimeout(resolve, 2_000)); // n8n storing the execution, slowly
			return result;
		};
		const sent = await inbound('answered too late');
		expect(sent.delivery).toMatchObject({ delivered: false, reason: 'timeout after 1500 ms' });
		await new Promise((resolve) => setTimeout(resolve, 600));
		expect(results.filter((r) => r.workflowData)).toHaveLength(1);
		later(SETTLE_MS / 1000 + 5);
		const run = await started(harness, 'init');
		await new Promise((resolve) => setTimeout(resolve, 1500));
		expect(run.emitted).toHaveLength(0);
	});

	it('a delivery a starting n8n answered 200 "n8n is starting up" (logged delivered, never run) is recovered by the new process once, with no sign of another process serving the URL; what ran before it began is not', async () => {
		const running = await setup({ events: ['message.inbound'] });
		const port = Number(new URL(running.served.url).port);
		const first = await started(running.harness, 'activate');
		const ran = await inbound('ran before the restart');
		expect(ran.delivery).toMatchObject({ delivered: true });
		await first.close();
		const saved = JSON.parse(JSON.stringify(running.harness.staticData)) as IDataObject;
		await running.down();
		// n8n 2.41.1 starting: it listens before it migrates and answers every request 200.
		cleanup.push(await startingN8n(port));
		await new Promise((resolve) => setTimeout(resolve, 1_000));
		const unseen = await inbound('answered while n8n was starting');
		expect(unseen.delivery).toMatchObject({ delivered: true });
		// The new process began between the two.
		const ranAtMs = Date.parse(String((ran.record as Json).created_at));
		jest.spyOn(recoveries, 'processStartedMs').mockReturnValue(ranAtMs + 500);

		later(SETTLE_MS / 1000 + 5);
		const next = await trigger(sb, { events: ['message.inbound'] } as never, { staticData: saved });
		const run = await next.startTrigger('init');
		cleanup.push(async () => await run.close());
		// No delivery since the start says who serves the URL (here, or queue mode's processors): after
		// 30 s this process is taken to (catch-up-holes.test.ts has the signs). Set before the first run.
		later(SETTLE_MS / 1000 + 5 + 31);
		const items = await emittedAtLeast(run, 1);
		await new Promise((resolve) => setTimeout(resolve, 500));
		expect(run.emitted).toHaveLength(1);
		expect(
			items.map((item) => [(item.json.data as IDataObject).text, item.json.delivery_failure]),
		).toEqual([['answered while n8n was starting', TAKEN_BEFORE_RESTART]]);

		// The same node started again in this process (n8n retrying, the workflow saved): no second look back.
		await run.close();
		const again = await started(next, 'update');
		await new Promise((resolve) => setTimeout(resolve, 1_000));
		expect(again.emitted).toHaveLength(0);
	});

	/**
	 * The trigger activated, then an n8n answered a delivery 2xx (a dying one after storing the
	 * execution, or a starting one) and was killed. Returns the static data saved before, and the
	 * message's time.
	 */
	async function answeredThenKilled() {
		const running = await setup({ events: ['message.inbound'] });
		const port = Number(new URL(running.served.url).port);
		await (await started(running.harness, 'activate')).close();
		const saved = JSON.parse(JSON.stringify(running.harness.staticData)) as IDataObject;
		await running.down();
		const dying = await startingN8n(port);
		const answered = await inbound('answered, then n8n was killed');
		expect(answered.delivery).toMatchObject({ delivered: true });
		await dying();
		return { saved, answeredAtMs: Date.parse(String((answered.record as Json).created_at)) };
	}
	/** n8n started at `beganAtMs`; a sign of who serves the URL `signAfterS` after its first run. */
	async function restartedAt(beganAtMs: number, staticData: IDataObject, signAfterS: number) {
		jest.spyOn(recoveries, 'processStartedMs').mockReturnValue(beganAtMs);
		later(SETTLE_MS / 1000 + 5);
		const next = await trigger(sb, { events: ['message.inbound'] } as never, { staticData });
		const run = await next.startTrigger('init');
		cleanup.push(async () => await run.close());
		later(SETTLE_MS / 1000 + 5 + signAfterS);
		await new Promise((resolve) => setTimeout(resolve, 2_000));
		await run.close();
		const items = run.emitted.flat(2);
		return {
			saved: JSON.parse(JSON.stringify(next.staticData)) as IDataObject,
			recovered: items.map((item) => (item.json.data as IDataObject).text),
			failures: items.map((item) => item.json.delivery_failure),
		};
	}

	it('a message the process before answered 2xx just before it died, before this process began, is not recovered: n8n stored its execution before the answer (receiving/answerDelivery.ts)', async () => {
		const { saved, answeredAtMs } = await answeredThenKilled();
		// The next n8n began 5 s later (a restart policy), and is the one serving the URL.
		const next = await restartedAt(answeredAtMs + 5_000, saved, 31);
		expect(next.recovered).toEqual([]);
	});

	it('n8n killed again and again while it starts: a start that could not tell who serves the URL leaves its window saved, and a later start still recovers what the starting n8n answered', async () => {
		const first = await answeredThenKilled();
		const { answeredAtMs } = first;
		// The process began 2 s before the message (n8n answers "starting up"), was killed before any sign:
		// nothing emitted, its window kept in what n8n saves.
		const second = await restartedAt(answeredAtMs - 2_000, first.saved, 0);
		expect(second.recovered).toEqual([]);
		expect((second.saved.catchUp as IDataObject).windowFromMs).toBeLessThanOrEqual(answeredAtMs);

		// The next process began 70 s after the message: its own window does not reach it.
		const forgotten = JSON.parse(JSON.stringify(second.saved)) as IDataObject;
		delete (forgotten.catchUp as IDataObject).windowFromMs;
		expect((await restartedAt(answeredAtMs + 70_000, forgotten, 31)).recovered).toEqual([]);
		// With the saved window it does.
		const carried = await restartedAt(answeredAtMs + 70_000, second.saved, 31);
		expect(carried.recovered).toEqual(['answered, then n8n was killed']);
		expect(carried.failures).toEqual([TAKEN_BEFORE_RESTART]);
		// A window saved more than 10 minutes before the process began is not carried.
		expect((await restartedAt(answeredAtMs + 11 * 60_000, second.saved, 31)).recovered).toEqual([]);
	});

	it("hand over applies to recovered messages: an inbound after a person's echo goes to the Hand Over output", async () => {
		const { harness, down, up } = await setup({
			events: ['message.inbound', 'message.echo'],
			options: { handOver: 'output' },
		});
		await (await started(harness, 'activate')).close();
		await down();
		await echo('a person answers from the app');
		await inbound('thanks, person');
		await up();
		later(SETTLE_MS / 1000 + 5);
		const run = await started(harness, 'init');
		await emittedAtLeast(run, 2);
		// One main output (events share it) + Hand Over; the echo on main, the inbound on Hand Over.
		const [echoRun, inboundRun] = run.emitted;
		expect(echoRun[0].map((item) => item.json.event)).toEqual(['message.echo']);
		expect(inboundRun[0]).toEqual([]);
		expect(
			inboundRun[1].map((item) => [
				(item.json.data as IDataObject).text,
				item.json.recovered,
				(item.json.hand_over as IDataObject).active,
			]),
		).toEqual([['thanks, person', true, true]]);
	});

	it('the Receiving Numbers option and the selected events apply to recovered messages', async () => {
		const { harness, down, up } = await setup({
			events: ['message.inbound'],
			options: { numbers: sb.numbers[1].phone_number_id },
		});
		await (await started(harness, 'activate')).close();
		await down();
		await inbound('number 0: not for this workflow');
		await echo('echo: not selected');
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: sb.numbers[1].phone_number_id,
			text: 'number 1',
		});
		await up();
		later(SETTLE_MS / 1000 + 5);
		const run = await started(harness, 'init');
		const items = await emittedAtLeast(run, 1);
		await new Promise((resolve) => setTimeout(resolve, 500));
		expect(items.map((item) => (item.json.data as IDataObject).text)).toEqual(['number 1']);
	});

	it('"Recover Missed Messages" off: trigger() starts nothing, and late deliveries run as before', async () => {
		const { harness, results } = await setup({ catchUp: false });
		const run = await started(harness, 'activate', false);
		webhookRunsLate(harness, 6_000);
		expect((await inbound('late but run')).delivery.delivered).toBe(true);
		expect(results[results.length - 1].workflowData).toBeDefined();
		expect(run.emitted).toHaveLength(0);
		expect(
			sb.state().requests.filter((r: { path: string }) => r.path.startsWith('/v1/logs')),
		).toHaveLength(0);
	});
});
