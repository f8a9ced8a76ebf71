/**
 * The sandbox's chat page with real n8n behind it, in headless Chromium: a contact writes on the page and the
 * auto-reply example's answer appears; a delivery n8n refuses shows its reason in the page's log and Resend
 * delivers it once the workflow is active again; a status set on the page runs the delivery-status example.
 * Runs at the end of test/e2e/run.e2e.ts (one n8n start per line), after the Polling Trigger check.
 */
import { join } from 'node:path';

import type { Browser, Page } from 'playwright-core';

import { launchChromium } from '../../browser/lib/chromium';
import type { Imported } from '../../real-n8n/examples';
import type { Execution, N8nClient, SavedWorkflow } from '../../real-n8n/n8n';
import { TRIGGER_TYPE } from '../../support/constants';
import type { Sandbox, SandboxControl } from '../../real-n8n/sandbox';
import { log, waitFor } from '../../real-n8n/util';

export interface ChatContext {
	check(name: string, body: () => Promise<string>): Promise<boolean>;
	client: N8nClient;
	control: SandboxControl;
	sandbox: Sandbox;
	imported: Imported;
	activate(workflow: SavedWorkflow): Promise<void>;
	nextExecution(workflowId: string, timeoutMs?: number): Promise<Execution>;
	outDir: string;
	line: number;
}

const NEW_CONTACT = '+447700900555';
const NAME = 'Margaret';

function must(condition: unknown, message: string): asserts condition {
	if (!condition) throw new Error(message);
}

export async function chatChecks(ctx: ChatContext): Promise<void> {
	const { check, client, control, sandbox, imported } = ctx;
	const { autoReply, deliveryStatus } = imported.workflows;
	const number = sandbox.numbers[0].phone_number_id;
	const webhook = async (method: 'GET' | 'POST' | 'DELETE', body?: unknown) =>
		await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
			method,
			headers: {
				authorization: `Bearer ${sandbox.keys.all}`,
				...(body ? { 'content-type': 'application/json' } : {}),
			},
			body: body ? JSON.stringify(body) : undefined,
		});
	const unregistered = async () =>
		await waitFor(
			'the webhook registration to be removed',
			async () => !(await control.state()).webhook.configured,
			20_000,
		);
	const triggerOutput = async (workflow: SavedWorkflow, executionId: string) => {
		const trigger = workflow.nodes.find((node) => node.type === TRIGGER_TYPE);
		return (await client.executionOutput(executionId)).nodes[String(trigger?.name)]?.[0] as
			{ event?: string; recovered?: boolean; data?: Record<string, unknown> } | undefined;
	};

	let browser: Browser | undefined;
	let page: Page | undefined;
	const started = Date.now();
	const outBubbles = () => page!.locator('#messages li[data-kind="out"]');
	try {
		await check(
			"chat page: a contact writes on the page; the auto-reply workflow's answer appears on it",
			async () => {
				// The Polling Trigger check leaves another system's webhook on the account: remove it, as its owner would.
				must((await webhook('DELETE')).status === 204, 'could not remove the previous webhook');
				await ctx.activate(autoReply);
				browser = await launchChromium();
				page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
				await page.goto(`${sandbox.baseUrl}/`);
				await page.locator('#connection[data-state="live"]').waitFor({ timeout: 10_000 });
				await page.selectOption('#new-number', number);
				await page.fill('#new-contact', NEW_CONTACT);
				await page.fill('#new-name', NAME);
				await page.click('#new-conversation button[type="submit"]');
				await page.fill('#text', 'Hello from the chat page');
				const sent = Date.now();
				await page.click('#send');
				await page
					.locator('#messages li[data-kind="in"]', { hasText: 'Hello from the chat page' })
					.waitFor({ timeout: 10_000 });
				const reply = outBubbles().filter({ hasText: `Thanks ${NAME}, we got your message` });
				await reply.waitFor({ timeout: 45_000 });
				const shownAfter = Date.now() - sent;
				const execution = await ctx.nextExecution(autoReply.id);
				must(execution.status === 'success', `execution ${execution.id} ended ${execution.status}`);
				const logRow = await page.locator('#deliveries tr.delivery').first().textContent();
				must(/message\.inbound.*HTTP 200/.test(logRow ?? ''), `the page's log shows: ${logRow}`);
				return `reply "${(await reply.locator('.text').textContent()) ?? ''}" on the page ${shownAfter} ms after Send (execution ${execution.id}); log: ${logRow}`;
			},
		);
		if (!page) return;

		await check(
			'chat page: a delivery n8n refuses shows its reason and answer in the log; Resend delivers it once the workflow is re-activated',
			async () => {
				// Someone registers the webhook again (same URL, new secret n8n does not have): n8n refuses the signature.
				must(
					(await webhook('POST', { url: (await control.state()).webhook.url })).status === 201,
					'could not re-register the webhook',
				);
				const repliesBefore = await outBubbles().count();
				await page!.fill('#text', 'Is anyone there?');
				const deliveriesBefore = (await control.state()).deliveries.length;
				await page!.click('#send');
				// This message's delivery (the log also holds the earlier checks' failed ones).
				const delivery = await waitFor(
					'the delivery of "Is anyone there?"',
					async () => (await control.state()).deliveries[deliveriesBefore],
					15_000,
				);
				const failed = page!.locator(
					`#deliveries tr.delivery[data-id="${delivery.id}"][data-delivered="false"]`,
				);
				await failed.waitFor({ timeout: 15_000 });
				const reason = (await failed.locator('td.result').textContent()) ?? '';
				const answer = (await failed.locator('td.answer').getAttribute('title')) ?? '';
				must(/^HTTP 401/.test(reason), `the failed delivery's reason on the page: ${reason}`);
				must(
					(await page!.locator('#send-result').textContent())?.includes('NOT delivered: HTTP 401'),
					'the composer does not say the message was not delivered',
				);

				// The fix: re-activate the workflow (it registers again and gets the new secret), then Resend.
				await client.deactivate(autoReply.id);
				await unregistered();
				await ctx.activate(autoReply);
				await failed.locator('button.resend').click();
				await page!
					.locator('#deliveries tr.delivery.resent[data-delivered="true"]')
					.waitFor({ timeout: 45_000 });
				await waitFor(
					'the reply to the resent message on the page',
					async () => (await outBubbles().count()) > repliesBefore,
					45_000,
				);
				// Re-activation also recovers what the workflow missed while it was off (the trigger's catch-up,
				// marked recovered): the resent event's execution is the one that is not.
				let execution = await ctx.nextExecution(autoReply.id);
				let event = await triggerOutput(autoReply, execution.id);
				for (let skipped = 0; event?.recovered === true && skipped < 50; skipped++) {
					execution = await ctx.nextExecution(autoReply.id);
					event = await triggerOutput(autoReply, execution.id);
				}
				must(
					execution.status === 'success',
					`execution ${execution.id} after Resend ended ${execution.status}`,
				);
				must(
					event?.data?.text === 'Is anyone there?',
					`the resent event's text in n8n: ${JSON.stringify(event?.data)}`,
				);
				return `log: "${reason}", n8n answered ${answer.slice(0, 160)}; after re-activation Resend ran execution ${execution.id} and the reply appeared`;
			},
		);

		await check(
			'chat page: setting a status on the page runs the delivery-status workflow',
			async () => {
				await client.deactivate(autoReply.id);
				await unregistered();
				await ctx.activate(deliveryStatus);
				const bubble = outBubbles().first();
				const messageId = String(await bubble.getAttribute('data-id'));
				await bubble.locator('button[data-set-status="delivered"]').click();
				await bubble.locator('.status[data-status="delivered"]').waitFor({ timeout: 10_000 });
				const row = page!.locator('#deliveries tr.delivery', { hasText: 'message.status' }).first();
				await row.locator('td.result', { hasText: 'HTTP 200' }).waitFor({ timeout: 45_000 });
				const execution = await ctx.nextExecution(deliveryStatus.id);
				must(execution.status === 'success', `execution ${execution.id} ended ${execution.status}`);
				const event = await triggerOutput(deliveryStatus, execution.id);
				must(
					event?.event === 'message.status' &&
						event.data?.id === messageId &&
						event.data.status === 'delivered',
					`trigger output: ${JSON.stringify(event)}`,
				);
				const rows = await client.dataTableRows(
					imported.projectId,
					imported.tables['Delivery status'],
				);
				const stored = rows.find((r) => r.message_id === messageId);
				must(stored?.status === 'delivered', `Delivery status row: ${JSON.stringify(stored)}`);
				await page!.screenshot({ path: join(ctx.outDir, `chat-page-line${ctx.line}.png`) });
				await client.deactivate(deliveryStatus.id);
				return `message ${messageId}: status "delivered" set on the page, execution ${execution.id}, Delivery status row ${stored.status}`;
			},
		);
	} finally {
		await browser?.close();
		log(`chat page checks: ${((Date.now() - started) / 1000).toFixed(1)} s in Chromium`);
	}
}
