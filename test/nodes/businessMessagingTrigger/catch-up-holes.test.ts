// The catch-up without holes: a backlog beyond the read bound, an incomplete log read, how far
// back the log is read, conversations that do not hold up a run, media on recovered messages.
// The trigger's catchUpOnce runs in n8n-core's TriggerContext against the sandbox; executions
// end when the test ends them (no timing decides a result).
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import {
	TAKEN_BEFORE_RESTART,
	catchUpOnce,
	type CatchUpRun,
} from '../../../nodes/BusinessMessagingTrigger/catchUp/catchUp';
import {
	decideRecoveries,
	SETTLE_MS,
	type CatchUpState,
} from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import {
	nodeParameters,
	readNodeSettings,
} from '../../../nodes/BusinessMessagingTrigger/receiving/accept';
import { forgetCredentialRead, nodeKeyOf } from '../../../nodes/shared/credentialKeys';
import * as history from '../../../nodes/shared/history';
import type { HeldTrigger } from '../../harness';
import { HarnessCredentialsHelper } from '../../harness/credentials';
import { CONTACT, useSandbox } from '../../support';
import { control, servedTrigger, startingN8n, type Json, type ServedTrigger } from './helpers';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const at = (seconds: number) =>
	new Date(T0 + seconds * 1000).toISOString().replace('Z', '000+00:00');
const record = (id: string, seconds: number): IDataObject => ({
	id,
	direction: 'in',
	wa_message_id: `wamid.${id}`,
	created_at: at(seconds),
	number: '100',
});
const OTHER_CONTACT = '+33600000999';
const start = { createdAt: at(0), ids: [] };

describe('decideRecoveries: what was not read decides nothing (pure)', () => {
	const records = [record('d', 4), record('c', 3), record('b', 2), record('a', 1)];
	it('a backlog read in parts got up to b: an echo newer than b waits for the inbound messages not read yet', () => {
		const decision = decideRecoveries(
			[
				{ event: 'message.inbound', records: records.slice(2) },
				{ event: 'message.echo', records: [{ ...record('e', 3), direction: 'echo' }] },
			],
			{ 'message.inbound': start, 'message.echo': start },
			new Map(),
			T0 + 60_000,
			500,
			undefined,
			{ after: record('b', 2) },
		);
		expect(decision.recover.map((r) => r.record.id)).toEqual(['a', 'b']);
		expect(decision.watermarks['message.inbound']).toEqual({ createdAt: at(2), ids: ['b'] });
		expect(decision.watermarks['message.echo']).toEqual(start);
	});
	it('the webhook log read back only to b: a and b may have been delivered, nothing is decided', () => {
		const decision = decideRecoveries(
			[{ event: 'message.inbound', records }],
			{ 'message.inbound': start },
			new Map(),
			T0 + 60_000,
			500,
			undefined,
			{ logFromMs: T0 + 2000 },
		);
		expect(decision.recover).toEqual([]);
		expect(decision.watermarks['message.inbound']).toEqual(start);
	});
	it('a message emitted before a restart is not recovered again, and the watermark passes it', () => {
		const decision = decideRecoveries(
			[{ event: 'message.inbound', records: records.slice(2) }],
			{ 'message.inbound': start },
			new Map(),
			T0 + 60_000,
			500,
			undefined,
			{ emitted: new Set(['wamid.a']) },
		);
		expect(decision.recover.map((r) => r.record.id)).toEqual(['b']);
		expect(decision.watermarks['message.inbound']?.createdAt).toBe(at(2));
	});
});

describe('catch-up without holes, against the sandbox', () => {
	const sb = useSandbox({ reset: 'never', webhookTimeoutMs: 1500 });
	const cleanup: Array<() => Promise<void>> = [];
	const bounds = JSON.parse(JSON.stringify(history.READ_BOUNDS ?? {})) as IDataObject;
	afterEach(async () => {
		jest.restoreAllMocks();
		Object.assign(history.READ_BOUNDS ?? {}, JSON.parse(JSON.stringify(bounds)));
		for (const fn of cleanup.splice(0).reverse()) await fn();
		sb.reset();
	});

	/** The watermark of an activation just before the test's messages. */
	let since = start;
	async function setup(parameters: Record<string, unknown>): Promise<ServedTrigger> {
		since = { createdAt: sb.now().toISOString(), ids: [] };
		const running = await servedTrigger(sb, parameters);
		cleanup.push(async () => await running.close());
		return running;
	}
	const inbound = async (text: string, from = CONTACT, extra: IDataObject = {}) =>
		(
			await control(sb, 'POST', '/inbound', {
				from,
				contact_name: 'Ada',
				number: sb.numbers[0].phone_number_id,
				text,
				...extra,
			})
		).body as Json;
	/** n8n's clock `seconds` later than the service's (the settle time has passed for what is stored now). */
	const later = (seconds = SETTLE_MS / 1000 + 5) => {
		jest.restoreAllMocks();
		const now = Date.now();
		jest
			.spyOn(Date, 'now')
			.mockImplementation(() => now + seconds * 1000 + (performance.now() % 1));
	};
	const texts = (items: INodeExecutionData[][][]) =>
		items.map((data) => String(((data.flat()[0]?.json.data ?? {}) as IDataObject).text));
	const logReads = () =>
		sb.state().requests.filter((r: { path: string }) => r.path.startsWith('/v1/logs')).length;

	/** catchUpOnce as trigger() runs it, from `state`, in a context whose executions the test ends. */
	function runner(
		served: ServedTrigger,
		parameters: IDataObject = {},
		state: CatchUpState = { watermarks: { 'message.inbound': since, 'message.echo': since } },
		recovery?: CatchUpRun['recovery'],
	) {
		const held: HeldTrigger = served.harness.triggerContext('init');
		let closed = false;
		const saved: { data?: IDataObject } = {};
		const once = async () =>
			await catchUpOnce.call(held.context, {
				scope: nodeKeyOf.call(held.context),
				state,
				settings: readNodeSettings({ ...nodeParameters.call(held.context), options: parameters }),
				isClosed: () => closed,
				webhook: { kind: 'ours' },
				recovery,
				persist: () => (saved.data = JSON.parse(JSON.stringify(state)) as IDataObject),
			});
		cleanup.push(async () => {
			closed = true;
			for (const execution of held.executions) execution?.resolve({} as never);
		});
		return { held, state, saved, once, close: () => (closed = true) };
	}
	/** Ends every execution as it starts until no new one starts for a while (a chain emits its next one within 100 ms). */
	async function endAll(held: HeldTrigger): Promise<void> {
		let quiet = 0;
		let ended = 0;
		while (quiet < 10) {
			await new Promise((resolve) => setTimeout(resolve, 50));
			if (held.executions.length > ended) {
				for (const execution of held.executions.slice(ended)) execution?.resolve({} as never);
				ended = held.executions.length;
				quiet = 0;
			} else quiet++;
		}
	}
	async function emitted(held: HeldTrigger, count: number): Promise<void> {
		for (let i = 0; i < 200 && held.emitted.length < count; i++)
			await new Promise((resolve) => setTimeout(resolve, 50));
	}

	it('a backlog beyond the read bound: every one of N > bound messages is recovered exactly once, in order, over several runs', async () => {
		history.READ_BOUNDS.history = { pageSize: 10, maxPages: 2 }; // 20 records a read
		const served = await setup({});
		await served.down();
		const N = 45;
		const sent: string[] = [];
		for (let i = 0; i < N; i++) sent.push(String((await inbound(`m${i}`)).record.text));
		await served.up();
		later();
		const { held, once } = runner(served);
		let runs = 0;
		while (held.emitted.length < N && runs < 10) {
			await once();
			await endAll(held);
			runs++;
		}
		expect(texts(held.emitted)).toEqual(sent);
		expect(runs).toBeGreaterThan(1);
		// Nothing more, and nothing again.
		await once();
		await endAll(held);
		expect(held.emitted).toHaveLength(N);
	});

	it('a webhook log read the bound cut short recovers nothing whose delivery may be in the unread part', async () => {
		history.READ_BOUNDS.log = { pageSize: 5, maxPages: 1 };
		const served = await setup({});
		expect((await inbound('delivered')).delivery.delivered).toBe(true);
		await served.down();
		for (let i = 0; i < 6; i++) await inbound(`missed ${i}`);
		later();
		const { held, once } = runner(served);
		await once();
		await endAll(held);
		// "delivered" ran live; its success lies beyond the 5 entries read: it must not run again.
		expect(texts(held.emitted)).not.toContain('delivered');
		expect(held.emitted).toHaveLength(0);
		// With the whole log readable, the missed ones (only) are recovered.
		history.READ_BOUNDS.log = { pageSize: 100, maxPages: 1000 };
		await once();
		await endAll(held);
		expect(texts(held.emitted)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `missed ${i}`));
	});

	it('Echo selected and no recent echo: one new message reads the log back only to it, not to the echo watermark', async () => {
		const served = await setup({ events: ['message.inbound', 'message.echo'] });
		for (let i = 0; i < 450; i++) await inbound(`live ${i}`);
		later();
		const { held, once } = runner(served, { events: ['message.inbound', 'message.echo'] });
		await once(); // the inbound watermark moves past what was delivered; the echo watermark stays
		jest.restoreAllMocks();
		await new Promise((resolve) => setTimeout(resolve, 1200));
		await inbound('one more');
		// The in-process sandbox's clock never goes back: it read n8n's clock above, 20 s ahead.
		later(60);
		const before = logReads();
		await once();
		const reads = logReads() - before;
		expect(reads).toBe(1);
		expect(held.emitted).toHaveLength(0);
	});

	it("a contact's recovered messages stay in order without holding back the run, other contacts or a restart", async () => {
		const served = await setup({});
		await served.down();
		for (const text of ['a1', 'a2', 'a3']) await inbound(text);
		await inbound('b1', '+15557770002');
		await served.up();
		later();
		const first = runner(served);
		// Returns while a1 and b1 still run (each of a2, a3 waits for the previous execution, up to 30 s).
		await first.once();
		await emitted(first.held, 2);
		expect(texts(first.held.emitted)).toEqual(['a1', 'b1']);
		// The next run does not decide again what is scheduled.
		await first.once();
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(first.held.emitted).toHaveLength(2);
		// a1 ends: a2 starts.
		first.held.executions[0]?.resolve({} as never);
		await emitted(first.held, 3);
		expect(texts(first.held.emitted)).toEqual(['a1', 'b1', 'a2']);
		// n8n restarts now, from what it saved: a3 is recovered; a1, a2 and b1 are not run again.
		first.close();
		const saved = first.saved.data as CatchUpState;
		expect(saved.emitted).toHaveLength(1);
		const restarted = runner(served, {}, JSON.parse(JSON.stringify(saved)) as CatchUpState);
		await restarted.once();
		await endAll(restarted.held);
		expect(texts(restarted.held.emitted)).toEqual(['a3']);
	}, 20_000);

	it('a restart with nothing new changes nothing n8n would save (queue mode: main saving its copy over the waits processors wrote)', async () => {
		const served = await setup({});
		const historyReads = () =>
			sb.state().requests.filter((r: { path: string }) => r.path.startsWith('/v1/messages')).length;
		const first = await served.harness.startTrigger('activate');
		for (let i = 0; i < 100 && historyReads() === 0; i++)
			await new Promise((resolve) => setTimeout(resolve, 50));
		await new Promise((resolve) => setTimeout(resolve, 300));
		await first.close();
		const root = served.harness.workflowStaticData;
		root.__dataChanged = false;
		const reads = historyReads();
		const again = await served.harness.startTrigger('init');
		cleanup.push(async () => await again.close());
		for (let i = 0; i < 100 && historyReads() === reads; i++)
			await new Promise((resolve) => setTimeout(resolve, 50));
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(historyReads()).toBeGreaterThan(reads);
		expect(root.__dataChanged).toBe(false);
	});

	describe("a start's window (deliveries n8n answered while starting): applied only where this process serves the URL", () => {
		/** The trigger's URL answered 200 by a starting n8n, which runs nothing (its port, the server down). */
		async function answeredWhileStarting(served: ServedTrigger) {
			const port = Number(new URL(served.served.url).port);
			await served.down();
			const starting = await startingN8n(port);
			const unseen = await inbound('answered while n8n was starting');
			expect(unseen.delivery).toMatchObject({ delivered: true });
			return { unseen, starting };
		}
		/** The process began a second before `record`; its trigger() ran `activeAfterMs` after it. */
		const windowAround = (record: Json, activeAfterMs = 1) => {
			const atMs = Date.parse(String(record.created_at));
			return { fromMs: atMs - 1000, untilMs: atMs + activeAfterMs, done: jest.fn() };
		};

		it('regular mode: the next message reaches this process; the one answered while starting is recovered then; messages after it, of its contact or another, do not wait for that sign', async () => {
			const served = await setup({});
			const { unseen, starting } = await answeredWhileStarting(served);
			await starting();
			const failed = await inbound('failed while n8n was down');
			const otherFailed = await inbound('another contact, failed while down', OTHER_CONTACT);
			expect([failed.delivery.delivered, otherFailed.delivery.delivered]).toEqual([false, false]);
			// n8n serves webhooks before it runs trigger(): the next delivery may come before the window ends.
			const window = windowAround(unseen.record as Json, 60_000);
			later();
			const { held, once } = runner(served, {}, undefined, window);
			await once();
			await endAll(held);
			// No sign yet who serves the URL: the window's message waits, alone.
			expect(texts(held.emitted)).toEqual([
				'failed while n8n was down',
				'another contact, failed while down',
			]);
			await served.up();
			jest.restoreAllMocks();
			expect((await inbound('delivered here after the start')).delivery.delivered).toBe(true);
			// The delivery this process took is the sign: the waiting message goes before the next run.
			await emitted(held, 3);
			await endAll(held);
			expect(texts(held.emitted)).toEqual([
				'failed while n8n was down',
				'another contact, failed while down',
				'answered while n8n was starting',
			]);
			later();
			await once();
			await endAll(held);
			expect(texts(held.emitted)).toEqual([
				'failed while n8n was down',
				'another contact, failed while down',
				'answered while n8n was starting',
			]);
			expect(held.emitted[2].flat()[0].json.delivery_failure).toBe(TAKEN_BEFORE_RESTART);
			// A run past the window's end, everything in it decided and emitted: it is dropped.
			later(90);
			await once();
			expect(window.done).toHaveBeenCalled();
		});

		it('queue mode: the next message was taken by another process (a webhook processor): nothing in the window is recovered, the window is dropped', async () => {
			const served = await setup({});
			const { unseen, starting } = await answeredWhileStarting(served);
			const window = windowAround(unseen.record as Json);
			// Another process answers the URL now (the stand-in takes any request without running it here).
			await new Promise((resolve) => setTimeout(resolve, 20));
			expect((await inbound('taken by a webhook processor')).delivery.delivered).toBe(true);
			await starting();
			later();
			const { held, once } = runner(served, {}, undefined, window);
			await once();
			await endAll(held);
			expect(held.emitted).toHaveLength(0);
			expect(window.done).toHaveBeenCalled();
		});

		it('queue mode, the sign after the first run: the waiting message of the window is dropped, not emitted, and the watermark passes it', async () => {
			const served = await setup({});
			const { unseen, starting } = await answeredWhileStarting(served);
			const window = windowAround(unseen.record as Json, 100);
			later();
			const { held, once, state } = runner(served, {}, undefined, window);
			await once();
			await endAll(held);
			expect(held.emitted).toHaveLength(0);
			// Then another process takes the next delivery (the stand-in still answers the URL).
			await new Promise((resolve) => setTimeout(resolve, 200));
			expect((await inbound('taken by a webhook processor')).delivery.delivered).toBe(true);
			await starting();
			later();
			await once();
			await new Promise((resolve) => setTimeout(resolve, 1_500));
			await endAll(held);
			expect(held.emitted).toHaveLength(0);
			expect(window.done).toHaveBeenCalled();
			await once();
			const unseenMs = Date.parse(String((unseen.record as Json).created_at));
			expect(Date.parse(state.watermarks['message.inbound']?.createdAt ?? '')).toBeGreaterThan(
				unseenMs,
			);
		});
	});

	/** One message came while n8n was down and it is back: the catch-up's runner, some time on. */
	const missedWhileDown = async () => {
		const served = await setup({});
		await served.down();
		await inbound('missed');
		await served.up();
		later();
		return runner(served);
	};

	it("runs read the node's cached credential, not one read per request (n8n 2.x builds an isolate for each); the key changed and refused 401: the next run reads it again", async () => {
		const { held, once } = await missedWhileDown();
		const original = HarnessCredentialsHelper.prototype.getDecrypted;
		let apiKey = sb.keys.all;
		const reads = jest
			.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted')
			.mockImplementation(async function (this: HarnessCredentialsHelper, ...args) {
				return { ...(await original.apply(this, args)), apiKey };
			});
		for (let run = 0; run < 3; run++) {
			await once();
			await endAll(held);
		}
		expect(texts(held.emitted)).toEqual(['missed']);
		// 3 runs of 2 history reads and a log read: one credential read at most (the activation's may serve).
		expect(reads.mock.calls.length).toBeLessThanOrEqual(1);

		// The user put a new key in the credential and revoked the old one at the service.
		expect((await control(sb, 'POST', '/keys/key_all/revoke')).status).toBe(204);
		apiKey = sb.keys.twoNumbers;
		await expect(once()).rejects.toThrow(/401/);
		const before = reads.mock.calls.length;
		await once();
		expect(reads.mock.calls.length).toBe(before + 1);
	});

	it('a credential n8n cannot decrypt: the run fails naming why, and the next run within 10 s reads it no more (an isolate each); after 10 s it is read again', async () => {
		const { held, once } = await missedWhileDown();
		forgetCredentialRead.call(held.context);
		const reads = jest
			.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted')
			.mockRejectedValue(new Error('Credentials could not be decrypted'));
		await expect(once()).rejects.toThrow(
			/the credential could not be read \(Credentials could not be decrypted\)/,
		);
		await expect(once()).rejects.toThrow(/could not be decrypted/);
		expect(reads).toHaveBeenCalledTimes(1);
		// later() restores every mock: the credential reads again, 11 s on.
		later(SETTLE_MS / 1000 + 5 + 11);
		await once();
		await endAll(held);
		expect(texts(held.emitted)).toEqual(['missed']);
	});

	it('Download Media: a recovered inbound message carries its file, as the webhook does', async () => {
		const served = await setup({ options: { downloadMedia: true } });
		await (await served.harness.startTrigger('activate')).close();
		await served.down();
		await inbound('', CONTACT, {
			media: { mime: 'image/png', data_base64: Buffer.from('png bytes').toString('base64') },
		});
		await served.up();
		later();
		const run = await served.harness.startTrigger('init');
		cleanup.push(async () => await run.close());
		for (let i = 0; i < 200 && run.emitted.length < 1; i++)
			await new Promise((resolve) => setTimeout(resolve, 50));
		expect(run.emitted[0].flat()[0].binary).toBeUndefined();
		// Downloaded in the execution the catch-up started (the trigger's execute()), as for a live event.
		const [item] = (await served.harness.execute(run.emitted[0], 'trigger')).flat();
		expect(item.json.recovered).toBe(true);
		expect(item.json.media_download).toMatchObject({ downloaded: true, mime_type: 'image/png' });
		expect(item.binary?.data?.mimeType).toBe('image/png');
		expect(
			sb.state().media_requests.filter((r: { status: number }) => r.status === 200),
		).toHaveLength(1);
	});
});
