/**
 * What the webhook watch's end-to-end checks share (test/e2e/checks/webhookWatch*.ts): a receiver
 * standing for "another tool" that holds the account's webhook, the console calls that take or
 * delete it, the workflows (trigger → Record, and an Error Workflow), n8n's log read from a mark.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Line, N8nClient, SavedWorkflow, WorkflowJson } from '../../real-n8n/n8n';
import type { Sandbox, SandboxControl } from '../../real-n8n/sandbox';
import { waitFor } from '../../real-n8n/util';
import { CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../../support/constants';
import type { Recorder } from './delivery-proxy';

export interface WebhookWatchContext {
	line: Line;
	client: N8nClient;
	control: SandboxControl;
	sandbox: Sandbox;
	/** The credential of the example workflows (Automatic registration). */
	credentialId: string;
	n8nUrl(): string;
	/** n8n's whole log so far (the file its stdout goes to; restarts append to it). */
	n8nLog(): string;
	/** Stops n8n, runs `during` while it is down, starts it again on the same port and logs in. */
	restartWith(during: () => Promise<void>): Promise<void>;
	check(name: string, body: () => Promise<string>): Promise<boolean>;
}

/** The catch-up's (and so the watch's) interval in these workflows: the minimum. */
export const INTERVAL_S = 10;
/** The catch-up's settle time (15 s) + one interval + margin: when a missed message must have run. */
export const RECOVERY_WINDOW_MS = (15 + INTERVAL_S + 20) * 1000;

export function expect(condition: unknown, message: string): asserts condition {
	if (!condition) throw new Error(message);
}

/** A loopback HTTP server that answers 200 to everything and keeps what it got. */
export class Collector {
	private server?: http.Server;
	readonly requests: Array<{ at: number; text: string }> = [];
	url = '';

	async start(path = '/other-tool'): Promise<string> {
		this.server = http.createServer((request, response) => {
			const chunks: Buffer[] = [];
			request.on('data', (chunk: Buffer) => chunks.push(chunk));
			request.on('end', () => {
				this.requests.push({ at: Date.now(), text: Buffer.concat(chunks).toString('utf8') });
				response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
			});
		});
		await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
		this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
		return this.url;
	}

	/** How many of `ids` arrived at least once. */
	received(ids: string[]): number {
		return ids.filter((id) => this.requests.some((r) => r.text.includes(id))).length;
	}

	async close(): Promise<void> {
		this.server?.closeAllConnections();
		await new Promise<void>((resolve) =>
			this.server ? this.server.close(() => resolve()) : resolve(),
		);
	}
}

/** The account's webhook through the console API, as another tool (or a person) changes it. */
export function consoleWebhook(sandbox: Sandbox) {
	const headers = { authorization: `Bearer ${sandbox.keys.all}` };
	return {
		async take(url: string): Promise<void> {
			const response = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
				method: 'POST',
				headers: { ...headers, 'content-type': 'application/json' },
				body: JSON.stringify({ url }),
			});
			expect(response.status === 201, `registering ${url}: HTTP ${response.status}`);
		},
		async remove(): Promise<void> {
			const response = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
				method: 'DELETE',
				headers,
			});
			expect(response.status === 204, `deleting the webhook: HTTP ${response.status}`);
		},
	};
}

/** The trigger (catch-up every INTERVAL_S) → Record, which posts each message it runs to `recorderUrl`. */
export function watchedWorkflow(
	name: string,
	recorderUrl: string,
	credentialId: string,
	options: Record<string, unknown> = {},
	settings: Record<string, unknown> = {},
): WorkflowJson & { webhookId: string } {
	const webhookId = randomUUID();
	return {
		name,
		webhookId,
		nodes: [
			{
				id: randomUUID(),
				name: TRIGGER_NAME,
				type: TRIGGER_TYPE,
				typeVersion: 2,
				position: [0, 0],
				webhookId,
				parameters: {
					registration: 'automatic',
					events: ['message.inbound', 'message.echo'],
					options: { catchUpInterval: INTERVAL_S, ...options },
				},
				credentials: { [CREDENTIAL_TYPE]: { id: credentialId, name: 'webhook watch credential' } },
			},
			{
				id: randomUUID(),
				name: 'Record',
				type: 'n8n-nodes-base.httpRequest',
				typeVersion: 4.2,
				position: [220, 0],
				parameters: {
					method: 'POST',
					url: recorderUrl,
					sendBody: true,
					specifyBody: 'json',
					jsonBody:
						'={{ JSON.stringify({ id: $json.data.wa_message_id, recovered: $json.recovered === true, late_reason: $json.late_reason ?? null, event: $json.event, text: $json.data.text, execution: $execution.id }) }}',
				},
			},
		],
		connections: { [TRIGGER_NAME]: { main: [[{ node: 'Record', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1', ...settings },
	};
}

/** An Error Workflow: Error Trigger → an HTTP Request posting everything it got to `collectorUrl`. */
export function errorReporterWorkflow(collectorUrl: string): WorkflowJson {
	return {
		name: 'Webhook watch: Error Workflow (e2e)',
		nodes: [
			{
				id: randomUUID(),
				name: 'Error Trigger',
				type: 'n8n-nodes-base.errorTrigger',
				typeVersion: 1,
				position: [0, 0],
				parameters: {},
			},
			{
				id: randomUUID(),
				name: 'Report',
				type: 'n8n-nodes-base.httpRequest',
				typeVersion: 4.2,
				position: [220, 0],
				parameters: {
					method: 'POST',
					url: collectorUrl,
					sendBody: true,
					specifyBody: 'json',
					jsonBody: '={{ JSON.stringify({ execution: $execution.id, got: $json }) }}',
				},
			},
		],
		connections: { 'Error Trigger': { main: [[{ node: 'Report', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}

/** Records of `recorder` for these ids, with the fields the webhook watch adds. */
export function recordsOf(recorder: Recorder, ids: string[]) {
	return recorder.records
		.filter((r) => ids.includes(r.id))
		.map((r) => r as typeof r & { late_reason: string | null });
}

/** n8n's log from a mark on: `mark()` now, `since()` what came after it, `count(text)` its lines holding text. */
export function logMark(ctx: WebhookWatchContext) {
	const start = ctx.n8nLog().length;
	const since = () => ctx.n8nLog().slice(start);
	return {
		since,
		count: (text: string) =>
			since()
				.split('\n')
				.filter((line) => line.includes(text)).length,
	};
}

/**
 * One trigger per account: every active workflow of this suite holding the trigger is deactivated
 * (a second would be refused, and its catch-up would run what these checks send), and the
 * account's webhook is freed.
 */
export async function freeAccount(ctx: WebhookWatchContext): Promise<string[]> {
	const stopped: string[] = [];
	for (const listed of await ctx.client.listWorkflows()) {
		// 2.x lists a published workflow with its activeVersionId; 1.x with active.
		if (!listed.active && !listed.activeVersionId) continue;
		const workflow = await ctx.client.getWorkflow(listed.id);
		if (!workflow.nodes.some((node) => node.type === TRIGGER_TYPE)) continue;
		await ctx.client.deactivate(workflow.id);
		stopped.push(`${workflow.name} (${workflow.id})`);
	}
	await consoleWebhook(ctx.sandbox).remove();
	return stopped;
}

/** Activates the workflow and waits until the account's webhook points at its production URL. */
export async function activateWatched(
	ctx: WebhookWatchContext,
	workflow: SavedWorkflow,
	webhookId: string,
): Promise<string> {
	const outcome = await ctx.client.activateAndSettle(workflow.id);
	expect(outcome.ok, `activating "${workflow.name}": ${outcome.ok ? '' : outcome.message}`);
	const url = `${ctx.n8nUrl()}/webhook/${webhookId}/webhook`;
	await waitFor(
		`the account's webhook to point at ${url}`,
		async () => (await ctx.control.state()).webhook.url === url,
		20_000,
		300,
	);
	return url;
}

/** Waits until each id was recorded (or `timeoutMs` passed), then one more interval for duplicates. */
export async function settleRecords(
	recorder: Recorder,
	ids: string[],
	timeoutMs = RECOVERY_WINDOW_MS,
): Promise<ReturnType<Recorder['tally']>> {
	await waitFor(
		`${ids.length} messages recorded`,
		() => recorder.tally(ids).lost.length === 0,
		timeoutMs,
		500,
	).catch(() => undefined);
	await new Promise((resolve) => setTimeout(resolve, (INTERVAL_S + 5) * 1000));
	return recorder.tally(ids);
}

export const describeTally = (t: ReturnType<Recorder['tally']>, sent: number) =>
	`sent ${sent}: ran once ${t.once} (live ${t.live}, recovered ${t.recovered}), not run ${t.lost.length}, more than once ${t.duplicated.length}`;
