// The webhook watch: the account's one webhook deleted or taken while the workflow is active, read
// by trigger()'s loop in n8n-core's TriggerContext against the sandbox, the trigger behind a real
// HTTP server fed by the sandbox's own deliveries.
import { Logger } from '@n8n/backend-common';
import { WebhookPathTakenError } from 'n8n-workflow';

import {
	judgeWebhook,
	lateReason,
	takenMessage,
} from '../../../nodes/BusinessMessagingTrigger/catchUp/webhookWatch';
import type { StartedTrigger } from '../../harness';
import { FOREIGN_URL, useSandbox } from '../../support';
import {
	api,
	apiCalls,
	captureLogs,
	contactWrites,
	control,
	eventually,
	registerForeign,
	servedTrigger,
	storedSecret,
	type Json,
	type LoggedLines,
} from './helpers';

const WEBHOOK = '/v1/console/webhook';
const WEBHOOK_ID = '3f0c8c4e-1b2a-4c5d-9e8f-0a1b2c3d4e5f';

describe('judgeWebhook and the words (pure)', () => {
	const ours = `https://n8n.example.org/webhook/${WEBHOOK_ID}/webhook`;
	it('none, ours (by URL, or by webhook ID when the URL is not known here), other', () => {
		expect(judgeWebhook({ configured: false, url: null }, ours, WEBHOOK_ID)).toBe('none');
		expect(judgeWebhook({ configured: true, url: `${ours}/` }, ours, WEBHOOK_ID)).toBe('ours');
		expect(judgeWebhook({ configured: true, url: ours }, undefined, WEBHOOK_ID)).toBe('ours');
		expect(judgeWebhook({ configured: true, url: FOREIGN_URL }, ours, WEBHOOK_ID)).toBe('other');
		expect(judgeWebhook({ configured: true, url: FOREIGN_URL }, undefined, WEBHOOK_ID)).toBe(
			'other',
		);
	});

	it('the taken message names the URL and the three ways out', () => {
		const message = takenMessage(FOREIGN_URL, 60, false);
		expect(message).toContain(FOREIGN_URL);
		expect(message).toContain('up to 60 s late');
		expect(message).toMatch(/delete that webhook in the console/);
		expect(message).toMatch(/Take Over Existing Webhook/);
		expect(message).toMatch(/Registration to Manual/);
		// With Recover Missed Messages off nothing reaches the workflow: the line does not promise the catch-up.
		expect(message).toContain('none while Recover Missed Messages is off');
	});

	it('late_reason: while taken, every recovered message; after a re-registration, those stored before it', () => {
		const since = Date.UTC(2026, 10, 27, 9, 0, 0);
		expect(lateReason({ kind: 'taken', url: FOREIGN_URL, sinceMs: since }, since - 5)).toContain(
			FOREIGN_URL,
		);
		expect(lateReason({ kind: 'renewed', atMs: since }, since - 5)).toMatch(/registered it again/);
		expect(lateReason({ kind: 'renewed', atMs: since }, since + 5)).toBeUndefined();
		expect(lateReason({ kind: 'ours' }, since)).toBeUndefined();
	});
});

describe('the webhook watch in n8n (TriggerContext) against the sandbox', () => {
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

	async function activeTrigger(options: Record<string, unknown> = {}, interval = 10) {
		const served = await servedTrigger(sb, {
			options: { catchUpInterval: interval, ...options },
		});
		cleanup.push(async () => await served.close());
		const run = await served.harness.startTrigger('activate');
		cleanup.push(async () => await run.close());
		return { ...served, run };
	}
	const until = eventually;
	const inbound = async (text: string) => await contactWrites(sb, text);
	/** n8n's clock `seconds` later than the service's: the settle time has passed for what is stored now. */
	const later = (seconds: number) => {
		const now = Date.now();
		jest.spyOn(Date, 'now').mockImplementation(() => now + seconds * 1000);
	};

	it('deleted while active: registered again within one interval, said once, and the next message is accepted at once', async () => {
		const { harness, results, run } = await activeTrigger();
		const ours = sb.state().webhook.url as string;
		const oldSealed = harness.staticData.sealedSecret;
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);

		// The watch's first look (at activation) is done: the deletion comes mid-interval.
		const gets = apiCalls(sb, 'GET', WEBHOOK);
		expect(await until(() => apiCalls(sb, 'GET', WEBHOOK) > gets, 5_000)).toBe(true);
		const deletedAt = Date.now();
		const { status } = await api(sb, 'DELETE', WEBHOOK);
		expect(status).toBe(204);
		expect(await until(() => sb.state().webhook.configured === true, 12_000)).toBe(true);
		const backAfterMs = Date.now() - deletedAt;
		expect(backAfterMs).toBeLessThan(11_500);
		expect(sb.state().webhook.url).toBe(ours);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2);
		// The line comes once the registration's answer is stored (a credential read later): under load, after the POST.
		expect(
			await until(() => logged.warn.some((line) => /had been deleted/.test(line)), 5_000),
		).toBe(true);
		expect(logged.warn.filter((line) => /had been deleted/.test(line))).toEqual([
			expect.stringMatching(
				new RegExp(`registered ${ours} again.*not while Recover Missed Messages is off`),
			),
		]);

		// The watch emitted an execution with no item, so n8n saved the new secret at once: what a
		// webhook processor or this process after a restart loads opens to the service's new secret.
		expect(run.emitted).toEqual([[[]]]);
		expect(run.saved.sealedSecret).not.toBe(oldSealed);
		expect(storedSecret(run.saved, sb.keys.all)).toBe(sb.state().webhook.secret);
		// A request that read the copy saved before (the old secret): this process still verifies
		// with the secret it just got.
		harness.staticData.sealedSecret = oldSealed;
		const delivery = (await inbound('after the re-registration')).delivery;
		expect(delivery).toMatchObject({ delivered: true, status: 200 });
		expect(results[results.length - 1].workflowData?.[0][0].json).toMatchObject({
			data: { text: 'after the re-registration' },
		});
		expect(run.errors).toEqual([]);
	}, 30_000);

	it('taken by another URL: never replaced, said every run with the URL and the ways out, and what the catch-up brings meanwhile says why it came late', async () => {
		const { harness, run } = await activeTrigger();
		await run.close();
		await registerForeign(sb);
		const missed = (await inbound('sent while another receiver holds the webhook')).record as Json;
		later(20);
		const next: StartedTrigger = await harness.startTrigger('init');
		cleanup.push(async () => await next.close());
		expect(await until(() => next.emitted.length === 1, 10_000)).toBe(true);

		expect(sb.state().webhook.url).toBe(FOREIGN_URL);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2); // ours at activation, then the other tool's
		const said = logged.error.filter((line) => line.includes(FOREIGN_URL));
		expect(said).toHaveLength(1);
		expect(said[0]).toMatch(/delete that webhook in the console/);
		expect(said[0]).toMatch(/Take Over Existing Webhook/);
		expect(said[0]).toMatch(/Registration to Manual/);
		const item = next.emitted[0].flat()[0].json as Json;
		expect(item).toMatchObject({
			recovered: true,
			data: { wa_message_id: missed.wa_message_id },
			late_reason: expect.stringContaining(FOREIGN_URL),
		});
		expect(next.errors).toEqual([]);
	}, 30_000);

	it('On Webhook Taken: Stop reports it through n8n once (emitError, the activation error) and stops; taken still when n8n starts the trigger again, the start is refused (final), not failed again', async () => {
		// With Stop, trigger() takes the watch's first look before it returns: the take-over comes after.
		const { harness, run } = await activeTrigger({ onWebhookTaken: 'stop' });
		await registerForeign(sb);
		expect(await until(() => run.errors.length > 0, 12_000)).toBe(true);
		expect(run.errors).toHaveLength(1);
		expect(run.errors[0].message).toContain(FOREIGN_URL);
		expect(run.errors[0].message).toMatch(/On Webhook Taken is Stop/);
		expect(run.errors[0].message).toMatch(/Take Over Existing Webhook/);
		expect(run.emitted).toEqual([]);

		// n8n 2.x registers a trigger that failed at runtime again at once (1.x within a second): an
		// emitError there would fail it, and run the Error Workflow, every second. Refused instead, with
		// the error n8n does not retry (WebhookPathTakenError).
		const again = harness.startTrigger('activate');
		await expect(again).rejects.toBeInstanceOf(WebhookPathTakenError);
		await expect(again).rejects.toThrow(FOREIGN_URL);
		expect(run.errors).toHaveLength(1);
		expect(sb.state().webhook.url).toBe(FOREIGN_URL);

		// Meanwhile messages arrive (delivered to the other receiver); then the webhook is freed and
		// n8n 1.x retries the activation with the activation-time copy of the static data (no
		// catch-up position) and activation 'activate': what arrived while stopped still runs, once.
		const sent = [];
		for (const text of ['while stopped 1', 'while stopped 2'])
			sent.push(((await inbound(text)) as Json).record.wa_message_id as string);
		expect((await api(sb, 'DELETE', WEBHOOK)).status).toBe(204);
		await harness.activate();
		delete harness.staticData.catchUp;
		later(20);
		const back = await harness.startTrigger('activate');
		cleanup.push(async () => await back.close());
		expect(await until(() => back.emitted.length >= 2, 10_000)).toBe(true);
		const items = back.emitted.flatMap((data) => data.flat()).map((item) => item.json as Json);
		expect(items.map((item) => item.data.wa_message_id)).toEqual(sent);
	}, 30_000);

	it('an answer it cannot read is never taken for "deleted": nothing registered, the error said', async () => {
		const { harness, run } = await activeTrigger();
		await run.close();
		await control(sb, 'POST', '/faults', {
			count: 1,
			kind: 'malformed_json',
			path_prefix: WEBHOOK,
		});
		const posts = apiCalls(sb, 'POST', WEBHOOK);
		const next = await harness.startTrigger('init');
		cleanup.push(async () => await next.close());
		expect(await until(() => logged.error.some((line) => /webhook watch/.test(line)), 10_000)).toBe(
			true,
		);
		expect(logged.error.find((line) => /webhook watch/.test(line))).toMatch(
			/whether the account's webhook still points at this trigger is unknown, so nothing was registered or replaced/,
		);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(posts);
		expect(next.errors).toEqual([]);
	}, 30_000);

	it('a contradictory answer ({configured: true} without a URL) is one it cannot read: said, nothing registered or replaced', async () => {
		const { harness, run } = await activeTrigger();
		await run.close();
		await registerForeign(sb);
		await control(sb, 'POST', '/faults', {
			count: 1,
			kind: 'json_body',
			path_prefix: WEBHOOK,
			body: { configured: true, url: null },
		});
		const posts = apiCalls(sb, 'POST', WEBHOOK);
		const next = await harness.startTrigger('init');
		cleanup.push(async () => await next.close());
		expect(await until(() => logged.error.some((line) => /webhook watch/.test(line)), 10_000)).toBe(
			true,
		);
		expect(logged.error.find((line) => /webhook watch/.test(line))).toMatch(
			/is unknown, so nothing was registered or replaced.*says a webhook is configured but gives no URL/,
		);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(posts);
		expect(sb.state().webhook.url).toBe(FOREIGN_URL);
		expect(next.errors).toEqual([]);
	}, 30_000);

	it('a taken URL of a megabyte with line feeds and terminal escapes is logged as one short printable line', async () => {
		const { harness, run } = await activeTrigger();
		await run.close();
		const forged = `${FOREIGN_URL}\n2026-11-28T00:00:00Z info forged line\u001b[2J\u202e${'x'.repeat(1_000_000)}`;
		await control(sb, 'POST', '/faults', {
			count: 1,
			kind: 'json_body',
			path_prefix: WEBHOOK,
			body: { configured: true, url: forged },
		});
		const next = await harness.startTrigger('init');
		cleanup.push(async () => await next.close());
		expect(await until(() => logged.error.some((line) => line.includes(FOREIGN_URL)), 10_000)).toBe(
			true,
		);
		const line = logged.error.find((entry) => entry.includes(FOREIGN_URL)) as string;
		expect(line.length).toBeLessThan(1000);
		expect(line).not.toMatch(/[\p{Cc}\p{Cf}]/u);
		expect(line).toContain(`${FOREIGN_URL} 2026-11-28T00:00:00Z info forged line [2J`);
	}, 30_000);

	it('its own deactivation is not a deletion to repair: after delete() nothing registers the webhook again', async () => {
		const { harness, run } = await activeTrigger();
		await harness.deactivate();
		expect(sb.state().webhook.configured).toBe(false);
		const next = await harness.startTrigger('init');
		cleanup.push(async () => await next.close());
		await new Promise((resolve) => setTimeout(resolve, 1500));
		expect(sb.state().webhook.configured).toBe(false);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		await run.close();
	}, 30_000);

	it('Registration: Manual is never watched (the user manages the webhook)', async () => {
		const served = await servedTrigger(
			sb,
			{ registration: 'manual' },
			{ credentialExtra: { webhookSecret: 'whsec_manual_secret_for_the_test_000000' } },
		);
		cleanup.push(async () => await served.close());
		const next = await served.harness.startTrigger('activate');
		cleanup.push(async () => await next.close());
		await new Promise((resolve) => setTimeout(resolve, 1500));
		expect(apiCalls(sb, 'GET', WEBHOOK)).toBe(0);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(0);
	}, 30_000);
});
