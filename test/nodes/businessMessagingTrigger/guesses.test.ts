// The trigger when the service answers a "not shown" detail another plausible way (the sandbox's
// answers, test/sandbox/CONTRACT.md "Answering a guess differently"): it works, or it says at once
// that it cannot; it never recovers a message that ran, and never takes an unread answer for "none".
import { Logger } from '@n8n/backend-common';

import { READ_BOUNDS } from '../../../nodes/shared/history';
import type { StartedTrigger } from '../../harness';
import { useSandbox } from '../../support';
import {
	apiCalls,
	captureLogs,
	contactWrites,
	eventually,
	servedTrigger,
	storedSecret,
	trigger,
	type Json,
	type LoggedLines,
} from './helpers';

const WEBHOOK = '/v1/console/webhook';

describe('the trigger under the service’s other plausible answers', () => {
	const sb = useSandbox({ reset: 'never', webhookTimeoutMs: 1500 });
	const cleanup: Array<() => Promise<void>> = [];
	const logged: LoggedLines = { error: [], warn: [], info: [] };
	beforeEach(() => {
		captureLogs(logged, Logger);
	});
	afterEach(async () => {
		jest.restoreAllMocks();
		for (const fn of cleanup.splice(0).reverse()) await fn();
		sb.reset();
	});

	const until = eventually;
	const inbound = async (text: string) => await contactWrites(sb, text);
	const later = (seconds: number) => {
		const now = Date.now();
		jest.spyOn(Date, 'now').mockImplementation(() => now + seconds * 1000);
	};
	const reads = (path: string) =>
		sb.state().requests.filter((r: { path: string }) => r.path.startsWith(path)).length;

	describe('a webhook log whose entries do not name the message (webhook_log: event_id)', () => {
		it('said once at activation; nothing recovered, so nothing that ran is run again; the watermark moves on', async () => {
			sb.setAnswers({ webhook_log: 'event_id' });
			const served = await servedTrigger(sb, { options: { catchUpInterval: 10 } });
			cleanup.push(async () => await served.close());
			const ran = await inbound('delivered and run');
			expect(ran.delivery).toMatchObject({ delivered: true });
			await served.down();
			const missed = await inbound('sent while n8n was down');
			expect(missed.delivery).toMatchObject({ delivered: false, reason: 'connection refused' });
			// n8n back 20 s later: the message is older than the new process (a newer one counts as missed).
			later(20);
			await served.up();
			const logReads = reads('/v1/logs');
			const run: StartedTrigger = await served.harness.startTrigger('init');
			cleanup.push(async () => await run.close());
			expect(await until(() => reads('/v1/messages/inbound') > 0, 5_000)).toBe(true);
			await new Promise((resolve) => setTimeout(resolve, 500));

			const notices = logged.error.filter((line) =>
				/does not say which message each delivery carried/.test(line),
			);
			expect(notices).toHaveLength(1);
			expect(notices[0]).toMatch(/it recovers nothing/);
			expect(notices[0]).toMatch(/Polling Trigger/);
			expect(reads('/v1/logs')).toBeGreaterThan(logReads);
			expect(run.emitted).toEqual([]);
			expect(logged.info.filter((line) => /recovering/.test(line))).toEqual([]);
			// The watermark passed both messages: a later run does not look at them again.
			const saved = (served.harness.staticData.catchUp as Json).watermarks['message.inbound'];
			expect(saved.ids).toContain(missed.record.id);
		});
	});

	describe.each([
		['data_cursor', 'text_created_at'],
		['items_next_url', 'body_created'],
		['items_next_token', 'body_created'],
		['page_number', 'text_created_at'],
		['bare_array', 'body_created'],
	] as const)('lists as %s, records with %s', (listShape, recordFields) => {
		it('n8n down: every missed message recovered once, oldest first, a delivered one not again; the log read in that shape too', async () => {
			sb.setAnswers({ list_shape: listShape, record_fields: recordFields });
			const served = await servedTrigger(sb, {
				events: ['message.inbound'],
				options: { catchUpInterval: 10 },
			});
			cleanup.push(async () => await served.close());
			expect((await inbound('delivered')).delivery).toMatchObject({ delivered: true });
			await served.down();
			const missed: Json[] = [];
			for (const text of ['one', 'two', 'three', 'four', 'five'])
				missed.push((await inbound(text)).record);
			await served.up();
			later(20);
			const run = await served.harness.startTrigger('init');
			cleanup.push(async () => await run.close());
			expect(await until(() => run.emitted.length >= 5, 10_000)).toBe(true);
			await new Promise((resolve) => setTimeout(resolve, 300));
			const items = run.emitted.flatMap((data) => data.flat()).map((item) => item.json as Json);
			expect(items.map((item) => item.data.text)).toEqual(['one', 'two', 'three', 'four', 'five']);
			expect(items.map((item) => item.data.wa_message_id)).toEqual(
				missed.map((record) => record.wa_message_id),
			);
			expect(items.every((item) => item.recovered === true)).toBe(true);
			expect(logged.error).toEqual([]);
		});
	});

	it('a bare array as full as the page asked for: what it cannot reach is said (error), what it read is recovered once', async () => {
		sb.setAnswers({ list_shape: 'bare_array' });
		const pageSize = READ_BOUNDS.history.pageSize;
		READ_BOUNDS.history.pageSize = 3;
		cleanup.push(async () => void (READ_BOUNDS.history.pageSize = pageSize));
		const served = await servedTrigger(sb, { options: { catchUpInterval: 10 } });
		cleanup.push(async () => await served.close());
		await served.down();
		for (const text of ['one', 'two', 'three', 'four', 'five']) await inbound(text);
		await served.up();
		later(20);
		const run = await served.harness.startTrigger('init');
		cleanup.push(async () => await run.close());
		expect(await until(() => run.emitted.length >= 3, 10_000)).toBe(true);
		const texts = run.emitted.flatMap((data) => data.flat()).map((i) => (i.json as Json).data.text);
		expect(texts).toEqual(['three', 'four', 'five']);
		expect(logged.error).toEqual([
			expect.stringMatching(
				/list of message\.inbound messages gives no way to its next page; missed messages older than the 3 read are not recovered/,
			),
		]);
	});

	describe('the webhook configuration in another shape (webhook_config: other_shape)', () => {
		it('activation fails naming Manual, nothing registered; an active trigger’s watch never takes it for deleted', async () => {
			sb.setAnswers({ webhook_config: 'other_shape' });
			const harness = await trigger(sb);
			await expect(harness.activate()).rejects.toThrow(
				/not in the shape \{url, configured\} this node reads, so nothing was registered or deleted\. Set Registration to Manual/,
			);
			expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(0);
		});

		it('while active: the watch says it cannot tell, every run, and registers nothing', async () => {
			const served = await servedTrigger(sb, { options: { catchUpInterval: 10 } });
			cleanup.push(async () => await served.close());
			sb.setAnswers({ webhook_config: 'other_shape' });
			const run = await served.harness.startTrigger('init');
			cleanup.push(async () => await run.close());
			expect(
				await until(() => logged.error.some((line) => /webhook watch/.test(line)), 5_000),
			).toBe(true);
			expect(logged.error.find((line) => /webhook watch/.test(line))).toMatch(
				/is unknown, so nothing was registered or replaced/,
			);
			expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
			expect(sb.state().webhook.configured).toBe(true);
		});
	});

	describe('the signing secret under another name (secret_field)', () => {
		it('signing_secret: read, stored sealed, and events verify with it', async () => {
			sb.setAnswers({ secret_field: 'signing_secret' });
			const served = await servedTrigger(sb);
			cleanup.push(async () => await served.close());
			expect(storedSecret(served.harness.staticData, sb.keys.all)).toBe(sb.state().webhook.secret);
			expect((await inbound('verified')).delivery).toMatchObject({ delivered: true, status: 200 });
		});

		it('a name no service is known to use (hmac_key): activation fails naming Manual, the registration is deleted again', async () => {
			sb.setAnswers({ secret_field: 'hmac_key' });
			const harness = await trigger(sb);
			const failure = await harness.activate().then(
				() => undefined,
				(error: Error) => error,
			);
			expect(failure?.message).toMatch(
				/carried no signing secret under a name this node reads .*set Registration to Manual.*The registration was deleted again$/,
			);
			// The secret it carried under that name never reaches the error.
			expect(JSON.stringify(failure)).not.toContain('whsec_');
			expect(sb.state().webhook.configured).toBe(false);
		});
	});
});
