/**
 * Issue 37 in real n8n: the Business Messaging Trigger notices within one catch-up interval that
 * the account's webhook is not its own any more, and acts by case. Taken by another tool (Keep
 * Running): never replaced, said in n8n's log each interval, every message run once through the
 * catch-up with late_reason. Deleted: registered again, and deliveries verified at once. On Webhook
 * Taken: Stop and a log that does not name messages: test/e2e/checks/webhookWatchStop.ts.
 * Each message a workflow runs is posted to a Recorder and counted by id.
 */
import { Recorder } from '../lib/delivery-proxy';
import {
	activateWatched,
	Collector,
	consoleWebhook,
	describeTally,
	expect,
	freeAccount,
	INTERVAL_S,
	logMark,
	recordsOf,
	settleRecords,
	watchedWorkflow,
	type WebhookWatchContext,
} from '../lib/webhook-watch-kit';
import { sleep, waitFor } from '../../real-n8n/util';
import { runWebhookWatchStopChecks } from './webhookWatchStop';

export type { WebhookWatchContext };

const CONTACT = '+4915300000001';

export async function runWebhookWatchChecks(ctx: WebhookWatchContext): Promise<void> {
	const { client, control, sandbox } = ctx;
	const number = sandbox.numbers[0].phone_number_id;
	const recorder = new Recorder();
	const recorderUrl = await recorder.start();
	const inbound = async (text: string) =>
		await control.inbound({ from: CONTACT, contact_name: 'Watch', number, text });
	const webhook = consoleWebhook(sandbox);

	try {
		await ctx.check(
			"webhook watch: another tool registers the account's webhook while the trigger is active (Keep Running): noticed within one interval, said at most once an interval, never replaced; each message runs once through the catch-up with late_reason",
			async () => {
				const freed = await freeAccount(ctx);
				const other = new Collector();
				const otherUrl = await other.start();
				const json = watchedWorkflow('Webhook watch: taken (e2e)', recorderUrl, ctx.credentialId);
				const workflow = await client.createWorkflow(json);
				try {
					await activateWatched(ctx, workflow, json.webhookId);
					const mark = logMark(ctx);
					const needle = `(webhook watch): The account's webhook now points at ${otherUrl}`;
					const takenAt = Date.now();
					await webhook.take(otherUrl);
					await waitFor(
						"n8n's log to say the webhook points at the other URL",
						() => mark.count(needle) > 0,
						(INTERVAL_S + 20) * 1000,
						200,
					);
					const noticedAt = Date.now();
					const noticeS = (noticedAt - takenAt) / 1000;
					const sent = [];
					for (let i = 0; i < 5; i++) sent.push(await inbound(`webhook watch: taken ${i}`));
					const ids = sent.map((s) => s.record.wa_message_id);
					// The error line over 30 s from the first one: at most once an interval (≤ 4).
					await sleep(Math.max(0, noticedAt + 30_000 - Date.now()));
					const linesIn30s = mark.count(needle);
					const t = await settleRecords(recorder, ids);
					const records = recordsOf(recorder, ids);
					const late = records.filter((r) => r.recovered && r.late_reason?.includes(otherUrl));
					const state = await control.state();
					const totalLines = mark.count(needle);
					const spanS = (Date.now() - noticedAt) / 1000;
					const figures =
						`noticed ${noticeS.toFixed(1)} s after the take-over (interval ${INTERVAL_S} s); the error line ${linesIn30s} times in the first 30 s (${totalLines} in ${spanS.toFixed(0)} s); ` +
						`${describeTally(t, 5)}; recovered with late_reason naming the URL: ${late.length}; the other receiver got ${other.received(ids)} of 5 ` +
						`(deliveries ${sent.map((s) => s.delivery.status).join(',')}); the account's webhook now ${state.webhook.url}` +
						(freed.length ? `; deactivated first: ${freed.join(', ')}` : '') +
						(records[0] ? `; e.g. late_reason "${records[0].late_reason}"` : '');
					expect(noticeS <= INTERVAL_S + 3, `too late: ${figures}`);
					expect(linesIn30s <= 4, `said too often: ${figures}`);
					expect(t.once === 5 && t.recovered === 5 && t.duplicated.length === 0, figures);
					expect(late.length === 5, `late_reason: ${figures}`);
					expect(other.received(ids) === 5, `the other receiver: ${figures}`);
					expect(state.webhook.url === otherUrl, `the other webhook was replaced: ${figures}`);
					return figures;
				} finally {
					await client.deactivate(workflow.id).catch(() => undefined);
					await other.close();
					await webhook.remove().catch(() => undefined);
				}
			},
		);

		await ctx.check(
			"webhook watch: the account's webhook deleted while the trigger is active: registered again within one interval, said once; each message runs once",
			async () => {
				await freeAccount(ctx);
				const json = watchedWorkflow('Webhook watch: deleted (e2e)', recorderUrl, ctx.credentialId);
				const workflow = await client.createWorkflow(json);
				try {
					const ourUrl = await activateWatched(ctx, workflow, json.webhookId);
					const mark = logMark(ctx);
					const needle = `had been deleted (none registered); registered ${ourUrl} again`;
					const deletedAt = Date.now();
					await webhook.remove();
					await waitFor(
						'the trigger to register its URL again',
						async () => (await control.state()).webhook.url === ourUrl,
						(INTERVAL_S + 20) * 1000,
						200,
					);
					const registeredS = (Date.now() - deletedAt) / 1000;
					await waitFor("n8n's log to say so", () => mark.count(needle) > 0, 5000, 200).catch(
						() => undefined,
					);
					const loggedS = (Date.now() - deletedAt) / 1000;
					const sent = [];
					for (let i = 0; i < 5; i++) sent.push(await inbound(`webhook watch: deleted ${i}`));
					const ids = sent.map((s) => s.record.wa_message_id);
					const t = await settleRecords(recorder, ids);
					const firstOk = sent.filter((s) => s.delivery.status === 200).length;
					const lines = mark.count(needle);
					const figures =
						`registered again ${registeredS.toFixed(1)} s after the delete (log line by ${loggedS.toFixed(1)} s, ${lines} time(s)); ` +
						`first deliveries answered 200: ${firstOk} of 5 (${sent.map((s) => s.delivery.status ?? s.delivery.reason).join(',')}); ${describeTally(t, 5)}`;
					expect(registeredS <= INTERVAL_S + 3, `too late: ${figures}`);
					expect(lines === 1, `log line: ${figures}`);
					expect(t.once === 5 && t.duplicated.length === 0, figures);
					return figures;
				} finally {
					await client.deactivate(workflow.id).catch(() => undefined);
				}
			},
		);

		await runWebhookWatchStopChecks(ctx, recorder, recorderUrl);
	} finally {
		await recorder.close();
		await webhook.remove().catch(() => undefined);
	}
}
