/**
 * Browser checks in the real n8n editor (issue #16, part 1), run inside the real-n8n e2e run (one n8n start per line):
 * Debian's Chromium driven by playwright-core signs in as the e2e owner and clicks what a user clicks.
 *
 * - HTTP Request → Authentication: Predefined Credential Type → Credential Type lists Business Messaging API; Execute
 *   step through it reaches the sandbox with the key.
 * - A refused publish (activation): the toast says the cause and the way out within 270 px of its text, in seconds.
 * - Execute step on the trigger while the workflow is active: the toast says how to test.
 * - The trigger panel shows the one-webhook notice.
 * - The credential's Test with a Base URL that answers an HTML page fails, naming the Base URL (REST and the modal).
 *
 * Screenshots of these screens go to docs/screenshots/ (E2E_SCREENSHOTS overrides the folder).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import type { Browser } from 'playwright-core';

import { chromiumInstalled, CHROMIUM_PATH, launchChromium } from '../../browser/lib/chromium';
import { N8nEditor, type ToastReading } from '../../browser/lib/n8n-editor';
import { LINES, OWNER, REPO_ROOT, type Line, type N8nClient } from '../../real-n8n/n8n';
import { CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../../support/constants';
import type { Sandbox, SandboxControl } from '../../real-n8n/sandbox';
import { log, sleep, waitFor } from '../../real-n8n/util';

export interface EditorChecksContext {
	line: Line;
	n8nUrl: string;
	client: N8nClient;
	sandbox: Sandbox;
	control: SandboxControl;
	/** The working credential (the sandbox's all-scopes key). */
	credential: { id: string; name: string };
	check: (name: string, body: () => Promise<string>) => Promise<boolean>;
	expect: (condition: unknown, message: string) => asserts condition;
}

/** n8n's toasts show about 270 px of text and scroll the rest: the essential words must end above that. */
const TOAST_TEXT_PX = 270;

export async function runEditorChecks(ctx: EditorChecksContext): Promise<number> {
	const { line, n8nUrl, client, sandbox, control, credential, check } = ctx;
	const expect: EditorChecksContext['expect'] = ctx.expect;
	const version = LINES[line].version;
	const shots = process.env.E2E_SCREENSHOTS ?? join(REPO_ROOT, 'docs', 'screenshots');
	const shot = (name: string) => join(shots, `${name}-n8n-${version}.png`);
	const started = Date.now();
	if (!chromiumInstalled()) {
		await check('editor (browser): Chromium present', async () => {
			throw new Error(`no Chromium at ${CHROMIUM_PATH}: apt-get install -y chromium`);
		});
		return 0;
	}
	let browser: Browser | undefined;
	let editor: N8nEditor | undefined;
	const webhookCalls = async (since: number) =>
		(await control.state()).requests.slice(since).filter((r) => r.path === '/v1/console/webhook');
	const setWebhook = async (url: string | null) => {
		const response = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
			method: url ? 'POST' : 'DELETE',
			headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
			body: url ? JSON.stringify({ url }) : undefined,
		});
		expect(
			response.status < 300 || (!url && response.status === 404),
			`${url ? 'registering' : 'deleting'} the webhook: ${response.status}`,
		);
	};
	const triggerWorkflow = async (name: string) =>
		await client.createWorkflow({
			name,
			settings: { executionOrder: 'v1' },
			nodes: [
				{
					name: TRIGGER_NAME,
					type: TRIGGER_TYPE,
					typeVersion: 1,
					position: [0, 0],
					parameters: {},
					webhookId: crypto.randomUUID(),
					credentials: { [CREDENTIAL_TYPE]: credential },
				},
				{
					name: 'No Operation',
					type: 'n8n-nodes-base.noOp',
					typeVersion: 1,
					position: [220, 0],
					parameters: {},
				},
			],
			connections: {
				[TRIGGER_NAME]: { main: [[{ node: 'No Operation', type: 'main', index: 0 }]] },
			},
		});
	const describeToast = (t: ToastReading) =>
		`toast after ${(t.ms / 1000).toFixed(1)} s: "${t.text}" (${Object.entries(t.phraseBottoms)
			.map(([p, px]) => `"${p}" ends at ${px} px`)
			.join(', ')}; ${t.visibleHeight} px shown)`;
	const expectReadable = (t: ToastReading, phrases: string[]) => {
		for (const phrase of phrases) {
			const bottom = t.phraseBottoms[phrase];
			expect(bottom !== undefined, `the toast does not say "${phrase}": ${describeToast(t)}`);
			expect(
				bottom <= TOAST_TEXT_PX && bottom <= t.visibleHeight,
				`"${phrase}" is below what the toast shows: ${describeToast(t)}`,
			);
		}
	};

	try {
		browser = await launchChromium();
		await check('editor (browser): sign in as the owner', async () => {
			editor = await N8nEditor.signIn(browser as Browser, n8nUrl, line, OWNER);
			return `signed in at ${n8nUrl}`;
		});
		if (!editor) return Date.now() - started;
		const ui = editor;

		await check(
			'editor (browser): HTTP Request → Predefined Credential Type lists Business Messaging API; Execute step reaches the sandbox with the key',
			async () => {
				const workflow = await client.createWorkflow({
					name: 'HTTP Request with the credential (editor)',
					settings: { executionOrder: 'v1' },
					connections: {},
					nodes: [
						{
							name: 'HTTP Request',
							type: 'n8n-nodes-base.httpRequest',
							typeVersion: 4.2,
							position: [0, 0],
							parameters: { url: `${sandbox.baseUrl}/v1/ping`, options: {} },
						},
					],
				});
				await ui.openWorkflow(workflow.id);
				await ui.openNode('HTTP Request');
				await ui.choose('authentication', 'Predefined Credential Type');
				const types = await ui.openOptions('nodeCredentialType', 'Business');
				expect(
					types.includes('Business Messaging API'),
					`Credential Type lists ${JSON.stringify(types)}`,
				);
				await ui.page
					.locator('[data-test-id=credential-select-option]')
					.filter({ visible: true, hasText: 'Business Messaging API' })
					.first()
					.click();
				await ui.chooseCredential(credential.name);
				const before = (await control.state()).requests.length;
				await ui.executeStep();
				const output = ui.page.locator('[data-test-id=ndv] [data-test-id=output-panel]');
				await output.getByText('key_all', { exact: true }).first().waitFor({ timeout: 60_000 });
				const pings = (await control.state()).requests
					.slice(before)
					.filter((r) => r.path === '/v1/ping');
				expect(
					pings.length === 1 && pings[0].status === 200,
					`the sandbox saw ${JSON.stringify(pings.map((r) => r.status))}`,
				);
				await ui.screenshot(shot('http-request-credential'));
				await ui.closeNode();
				return `Credential Type options for "Business": ${types.join(', ')}; Execute step: GET /v1/ping ${pings[0].status}, output shows key_id key_all`;
			},
		);

		await check(
			'editor (browser): publish with another webhook on the account: the toast says the cause and the way out within 270 px, in seconds, one try',
			async () => {
				const foreign = 'https://crm.example.com/hooks/messaging';
				await setWebhook(foreign);
				const workflow = await triggerWorkflow('Refused publish (editor)');
				await ui.openWorkflow(workflow.id);
				const since = (await control.state()).requests.length;
				const toast = await ui.toastAfter(
					async () => await ui.publish(),
					[
						'Another webhook is registered',
						'Take Over Existing Webhook',
						'set Registration to Manual',
					],
				);
				await sleep(500);
				await ui.screenshot(shot('publish-refused'));
				await sleep(3000); // n8n 2.x retried for ~15 s before: any retry would show here
				const calls = await webhookCalls(since);
				expectReadable(toast, [
					'Another webhook is registered',
					'Take Over Existing Webhook',
					'set Registration to Manual',
				]);
				expect(toast.text.includes(foreign), `the toast does not name ${foreign}: ${toast.text}`);
				expect(toast.ms < 10_000, `the toast took ${toast.ms} ms`);
				expect(
					calls.length <= 3 && calls.every((c) => c.method === 'GET'),
					`the webhook endpoint was called ${calls.length} times: ${calls.map((c) => c.method).join(', ')}`,
				);
				expect((await control.state()).webhook.url === foreign, 'the foreign webhook changed');
				if ((await client.getWorkflow(workflow.id)).active) await client.deactivate(workflow.id);
				await setWebhook(null);
				return `${describeToast(toast)}; GET /v1/console/webhook ${calls.length}x`;
			},
		);

		await check(
			'editor (browser): trigger panel shows the one-webhook notice; Execute step while the workflow is active says how to test',
			async () => {
				await setWebhook(null);
				const workflow = await triggerWorkflow('Active, then Execute step (editor)');
				const outcome = await client.activateAndSettle(workflow.id);
				expect(outcome.ok, `activating: ${outcome.ok ? '' : outcome.message}`);
				await waitFor(
					'the production webhook',
					async () => (await control.state()).webhook.configured,
					20_000,
				);
				await ui.openWorkflow(workflow.id);
				const ndv = await ui.openNode(TRIGGER_NAME);
				const notice = ndv.getByText('One trigger per account', { exact: false }).first();
				await notice.waitFor();
				const noticeText = (await notice.textContent())?.trim() ?? '';
				expect(
					/Execute Workflow/.test(noticeText) && /Take Over Existing Webhook/.test(noticeText),
					`notice: ${noticeText}`,
				);
				await ui.screenshot(shot('trigger-notice'), ndv);
				const production = (await control.state()).webhook.url;
				const toast = await ui.toastAfter(
					async () => await ui.executeStep(),
					['This workflow is active', 'deactivate (unpublish) it first'],
				);
				await sleep(500);
				await ui.screenshot(shot('execute-step-while-active'));
				expectReadable(toast, ['This workflow is active', 'deactivate (unpublish) it first']);
				expect(
					(await control.state()).webhook.url === production,
					'the production webhook changed',
				);
				await ui.closeNode().catch(() => undefined);
				await client.deactivate(workflow.id);
				await waitFor(
					'the webhook to be removed',
					async () => !(await control.state()).webhook.configured,
					20_000,
				);
				return `notice: "${noticeText}"; ${describeToast(toast)}`;
			},
		);

		await check(
			'credential Test with a Base URL that answers an HTML page: fails naming the Base URL (REST, and in the credential modal)',
			async () => {
				const site = createServer((_request, response) => {
					response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
					response.end('<!doctype html><html><body><h1>Welcome</h1></body></html>');
				});
				await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
				try {
					const baseUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
					const data = { apiKey: sandbox.keys.all, baseUrl, webhookSecret: '' };
					const saved = await client.createCredential('Wrong Base URL (e2e)', CREDENTIAL_TYPE, {
						...data,
						baseUrl: sandbox.baseUrl,
					});
					const result = await client.testCredential({
						id: saved.id,
						name: saved.name,
						type: CREDENTIAL_TYPE,
						data,
					});
					expect(
						result.status === 'Error' && /Check the Base URL/.test(result.message),
						`REST test: ${JSON.stringify(result)}`,
					);
					// In the editor: the user types a web site's address into Base URL and saves.
					const shown = await ui.saveCredentialField(
						saved.id,
						'Base URL',
						baseUrl,
						'Check the Base URL',
					);
					await ui.screenshot(shot('credential-wrong-base-url'));
					await ui.page.keyboard.press('Escape');
					return `REST: ${result.status} "${result.message}"; modal shows: "${shown}"`;
				} finally {
					site.close();
				}
			},
		);
	} finally {
		await browser?.close();
	}
	const ms = Date.now() - started;
	log(`browser checks (Chromium, playwright-core) took ${(ms / 1000).toFixed(1)} s`);
	return ms;
}
