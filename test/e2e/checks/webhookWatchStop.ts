/**
 * The webhook watch in real n8n, continued (test/e2e/checks/webhookWatch.ts): On Webhook Taken:
 * Stop (n8n's failing-trigger path: activation error, Error Workflow, n8n's own retry). A delivery
 * log that does not name messages is tested in test/nodes/businessMessagingTrigger/guesses.test.ts.
 */
import type { Recorder } from '../lib/delivery-proxy';
import {
	activateWatched,
	Collector,
	consoleWebhook,
	describeTally,
	errorReporterWorkflow,
	expect,
	freeAccount,
	INTERVAL_S,
	logMark,
	RECOVERY_WINDOW_MS,
	settleRecords,
	watchedWorkflow,
	type WebhookWatchContext,
} from '../lib/webhook-watch-kit';
import { sleep, waitFor } from '../../real-n8n/util';

const CONTACT = '+4915300000002';
/** How long the check waits for n8n's own retry to activate the workflow again, once the webhook is free. */
const OWN_RETRY_WAIT_MS = 60_000;
/** The message of the error the Error Workflow got (`trigger.error.message`). */
function errorMessage(text: string): string {
	try {
		const body = JSON.parse(text) as { got?: { trigger?: { error?: { message?: string } } } };
		return String(body.got?.trigger?.error?.message);
	} catch {
		return text.slice(0, 200);
	}
}

export async function runWebhookWatchStopChecks(
	ctx: WebhookWatchContext,
	recorder: Recorder,
	recorderUrl: string,
): Promise<void> {
	const { client, control, sandbox } = ctx;
	const number = sandbox.numbers[0].phone_number_id;
	const inbound = async (text: string) =>
		await control.inbound({ from: CONTACT, contact_name: 'Watch Stop', number, text });
	const webhook = consoleWebhook(sandbox);

	await ctx.check(
		'webhook watch: On Webhook Taken: Stop: the take-over is reported as a failing trigger (activation error, Error Workflow once) and nothing runs; once the webhook is free the workflow runs again and what came meanwhile runs once',
		async () => {
			await freeAccount(ctx);
			const other = new Collector();
			const errors = new Collector();
			const otherUrl = await other.start();
			const errorsUrl = await errors.start('/error-workflow');
			const errorWorkflow = await client.createWorkflow(errorReporterWorkflow(errorsUrl));
			// 2.x runs an Error Workflow only when it is published; 1.x either way (and may refuse it).
			const errorPublished = await client.activateAndSettle(errorWorkflow.id);
			expect(errorPublished.ok || client.line === 1, 'publishing the Error Workflow failed');
			const json = watchedWorkflow(
				'Webhook watch: stop (e2e)',
				recorderUrl,
				ctx.credentialId,
				{ onWebhookTaken: 'stop' },
				{ errorWorkflow: errorWorkflow.id },
			);
			const workflow = await client.createWorkflow(json);
			const activationError = async () =>
				await client.request<string | null>('GET', `/rest/active-workflows/error/${workflow.id}`);
			try {
				const ourUrl = await activateWatched(ctx, workflow, json.webhookId);
				const mark = logMark(ctx);
				const takenAt = Date.now();
				await webhook.take(otherUrl);
				await waitFor(
					'the Error Workflow to run',
					() => errors.requests.length > 0,
					(INTERVAL_S + 20) * 1000,
					200,
				);
				const errorWorkflowS = (Date.now() - takenAt) / 1000;
				const shown = await waitFor('the activation error', activationError, 10_000, 300);
				const shownS = (Date.now() - takenAt) / 1000;
				const errorText = errors.requests[0].text;
				// While stopped: messages are not run (no webhook here, no catch-up).
				const during = [];
				for (let i = 0; i < 3; i++) during.push(await inbound(`webhook watch: stopped ${i}`));
				const ids = during.map((s) => s.record.wa_message_id);
				await sleep(RECOVERY_WINDOW_MS - 15_000);
				const runWhileStopped = recorder.tally(ids).once + recorder.tally(ids).duplicated.length;
				const errorRuns = errors.requests.length;
				const retries = mark.count(`Activation of workflow "${json.name}"`);
				const stillShown = await activationError();
				// The webhook freed: n8n's own retry (with backoff) or a publish again.
				const freedAt = Date.now();
				await webhook.remove();
				const back = await waitFor(
					"n8n's own retry to register the trigger again",
					async () => (await control.state()).webhook.url === ourUrl,
					OWN_RETRY_WAIT_MS,
					500,
				).catch(() => false);
				let how: string;
				if (back)
					how = `n8n's own retry, ${((Date.now() - freedAt) / 1000).toFixed(1)} s after the delete`;
				else {
					await client.deactivate(workflow.id);
					await activateWatched(ctx, workflow, json.webhookId);
					how = `published again by hand (n8n's own retry had not come within ${OWN_RETRY_WAIT_MS / 1000} s)`;
				}
				const t = await settleRecords(recorder, ids);
				const retryLines = mark
					.since()
					.split('\n')
					.filter((l) => l.includes(`"${json.name}"`) && /retry in|successful|reactivate/.test(l))
					.map((l) =>
						l.replace(/.*(retry in \d+ seconds|was successful|Failed to reactivate).*/, '$1'),
					);
				const figures =
					`Error Workflow ran ${errorWorkflowS.toFixed(1)} s after the take-over (runs while taken: ${errorRuns}; names the URL: ${errorText.includes(otherUrl)}${errorText.includes(otherUrl) ? '' : `, its message "${errorMessage(errorText)}"`}); ` +
					`activation error shown by ${shownS.toFixed(1)} s: "${String(shown).slice(0, 120)}…" (still shown before the delete: ${stillShown !== null}); ` +
					`run while stopped: ${runWhileStopped} of 3; n8n's activation attempts logged: ${retries}, about this workflow: [${retryLines.join('; ')}]; ` +
					`running again through ${how}; the 3 sent meanwhile: ${describeTally(t, 3)}; the other receiver got ${other.received(ids)} of 3`;
				expect(errorWorkflowS <= INTERVAL_S + 5, `too late: ${figures}`);
				expect(errorRuns === 1, `the Error Workflow: ${figures}`);
				// 1.x hands the Error Workflow only its own WorkflowActivationError ("There was a problem with
				// the trigger node …"), without the trigger's message: the URL is in the activation error.
				expect(
					errorText.includes(otherUrl) || client.line === 1,
					`the Error Workflow's error: ${errorText.slice(0, 600)}`,
				);
				expect(String(shown).includes(otherUrl), `the activation error: ${figures}`);
				expect(runWhileStopped === 0, `ran while stopped: ${figures}`);
				expect(t.once === 3 && t.duplicated.length === 0, figures);
				return figures;
			} finally {
				await client.deactivate(workflow.id).catch(() => undefined);
				await client.deactivate(errorWorkflow.id).catch(() => undefined);
				await other.close();
				await errors.close();
				await webhook.remove().catch(() => undefined);
			}
		},
	);
}
