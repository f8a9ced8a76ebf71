import * as recoveries from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import type {
	IDataObject,
	IExecuteFunctions,
	INode,
	INodeExecutionData,
	INodeParameters,
	INodeType,
	IRunExecutionData,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { ExecuteContext, type ExecutionLifecycleHooks } from 'n8n-core';
import { request } from 'undici';

import {
	recordReceived,
	serveWebhook,
	serveWebhooks,
	webhookHarness,
	type ServedWebhook,
	type WebhookHarness,
	type WebhookHarnessOptions,
	type WebhookReceiveResult,
} from '../../harness';
import { createAdditionalData } from '../../harness/additional-data';
import { HarnessCredentialTypes, HarnessCredentialsHelper } from '../../harness/credentials';
import { singleNodeWorkflow } from '../../harness/single-node';
import { ANSWERS_KEY } from '../../../nodes/shared/replyAndWait/answeredHere';
import { RESUMED_BODY } from '../../../nodes/shared/replyAndWait/resume';
import { openSecret } from '../../../nodes/shared/seal';
import type { Sandbox } from '../../sandbox';
import { CONTACT, CREDENTIAL_TYPE, FOREIGN_URL, TRIGGER_NAME, TRIGGER_TYPE } from '../../support';

export type Json = any;

/** The trigger as a node of a workflow, for what n8n computes from the node alone (nodeOutputs, nodeWithDefaults). */
export function triggerNode(parameters: Record<string, unknown>, typeVersion = 1): INode {
	return {
		id: 'n1',
		name: TRIGGER_NAME,
		type: TRIGGER_TYPE,
		typeVersion,
		position: [0, 0],
		webhookId: '3f0c8c4e-1b2a-4c5d-9e8f-0a1b2c3d4e5f',
		parameters: parameters as INode['parameters'],
	};
}

export function credentialsFor(sb: Sandbox, extra: Record<string, unknown> = {}) {
	return { [CREDENTIAL_TYPE]: { apiKey: sb.keys.all, baseUrl: sb.baseUrl, ...extra } };
}

export async function trigger(
	sb: Sandbox,
	parameters: INodeParameters = {},
	options: Partial<WebhookHarnessOptions> & { credentialExtra?: Record<string, unknown> } = {},
): Promise<WebhookHarness> {
	const { credentialExtra, ...rest } = options;
	return await webhookHarness({
		type: TRIGGER_TYPE,
		parameters,
		credentials: credentialsFor(sb, credentialExtra),
		...rest,
	});
}

export interface ServedTrigger {
	harness: WebhookHarness;
	/** What each request the server got produced (workflowData = the execution n8n would start). */
	results: WebhookReceiveResult[];
	/** The server while it is up. */
	readonly served: ServedWebhook;
	/** n8n unreachable: the server stops (the service gets "connection refused"). */
	down(): Promise<void>;
	/** The server again, on the same port (same registered URL). */
	up(): Promise<void>;
	close(): Promise<void>;
}

/**
 * n8n starting on `port`: it listens before it migrates and answers every request 200 "n8n is
 * starting up. Please wait" (2.41.1 AbstractServer), running nothing. Returns what stops it.
 */
export async function startingN8n(port: number): Promise<() => Promise<void>> {
	const server = createServer((_request, response) => {
		response.writeHead(200, { 'content-type': 'text/plain' });
		response.end('n8n is starting up. Please wait');
	});
	await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
	return async () => await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** The trigger behind a real HTTP server, activated against the sandbox, fed by the sandbox's own deliveries. */
export async function servedTrigger(
	sb: Sandbox,
	parameters: Record<string, unknown> = {},
	options: Parameters<typeof trigger>[2] = {},
): Promise<ServedTrigger> {
	const harness = await trigger(sb, parameters as INodeParameters, options);
	const results = recordReceived(harness);
	let server: ServedWebhook | undefined = await serveWebhook(harness);
	const port = Number(new URL(server.url).port);
	await harness.activate();
	const down = async () => {
		await server?.close();
		server = undefined;
	};
	return {
		harness,
		results,
		get served() {
			if (!server) throw new Error('the server is down');
			return server;
		},
		down,
		up: async () => {
			server = await serveWebhook(harness, port);
			// n8n back up is a new process: it began now.
			const startedMs = Date.now();
			jest.spyOn(recoveries, 'processStartedMs').mockReturnValue(startedMs);
		},
		close: down,
	};
}

async function http(sb: Sandbox, method: string, path: string, body?: unknown, key?: string) {
	const headers: Record<string, string> = {};
	if (key) headers.authorization = `Bearer ${key}`;
	if (body !== undefined) headers['content-type'] = 'application/json';
	const response = await request(`${sb.baseUrl}${path}`, {
		method: method as 'GET',
		headers,
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await response.body.text();
	return { status: response.statusCode, body: (text ? JSON.parse(text) : undefined) as Json };
}

export const control = (sb: Sandbox, method: string, path: string, body?: unknown) =>
	http(sb, method, `/_sandbox${path}`, body);

/** A contact writes: the sandbox stores the message and delivers it (on the account's `numberIndex`-th number). */
export const inboundFrom = async (sb: Sandbox, from: string, text: string, numberIndex = 0) =>
	await control(sb, 'POST', '/inbound', {
		from,
		contact_name: 'Ada',
		number: sb.numbers[numberIndex].phone_number_id,
		text,
	});

/** How many times the inbound history was read. */
export const listReads = (sb: Sandbox) =>
	sb.state().requests.filter((r: { path: string }) => r.path === '/v1/messages/inbound').length;

export const api = (sb: Sandbox, method: string, path: string, body?: unknown, key?: string) =>
	http(sb, method, path, body, key ?? sb.keys.all);

/** Someone else registers a webhook (the console, another tool): returns its secret. */
export async function registerForeign(sb: Sandbox, url = FOREIGN_URL): Promise<string> {
	const result = await api(sb, 'POST', '/v1/console/webhook', { url });
	expect(result.status).toBe(201);
	return result.body.secret as string;
}

/** Calls of one method+path the sandbox counted on /v1. */
export function apiCalls(sb: Sandbox, method: string, path: string): number {
	return sb.state().requests.filter((r) => r.method === method && r.path === path).length;
}

/**
 * The signing secret the trigger stored, opened as the node opens it: the static data holds it
 * sealed under the API key, never in plain text.
 */
export function storedSecret(staticData: IDataObject, apiKey: string): string | undefined {
	return openSecret(staticData.sealedSecret, apiKey);
}

/** An event as the trigger emits it: inbound events also carry reply_window_closes_at (timestamp + 24 h). */
export function asEmitted<T extends { event?: unknown; timestamp?: unknown }>(event: T): T {
	if (event.event !== 'message.inbound') return event;
	return {
		...event,
		reply_window_closes_at: new Date(
			Date.parse(String(event.timestamp)) + 24 * 60 * 60 * 1000,
		).toISOString(),
	};
}

/** n8n's /webhook-waiting/ endpoint of one waiting execution: answers `status`, keeps each body it got. */
export interface Resumer {
	url: string;
	bodies: Json[];
	close: () => Promise<void>;
}

export async function resumer(status: number, executionId = '41'): Promise<Resumer> {
	return await scriptedResumer([{ status }], `/webhook-waiting/${executionId}?signature=t`);
}

/**
 * A stand-in for n8n's resume endpoint on 127.0.0.1 that answers each attempt as scripted (the
 * last step repeats); keeps each body it got (parsed when JSON).
 */
export async function scriptedResumer(
	steps: Array<{
		status: number;
		body?: unknown;
		delayMs?: number;
		headers?: Record<string, string>;
	}>,
	path = '/webhook-waiting/61',
	/** A fixed port (n8n started again at the same address); default any free one. */
	port = 0,
): Promise<Resumer> {
	const bodies: Json[] = [];
	const timers = new Set<NodeJS.Timeout>();
	const server = createServer((req, res) => {
		let raw = '';
		req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
		req.on('end', () => {
			const step = steps[Math.min(bodies.length, steps.length - 1)];
			try {
				bodies.push(JSON.parse(raw || 'null'));
			} catch {
				bodies.push(raw);
			}
			const timer = setTimeout(() => {
				timers.delete(timer);
				res
					.writeHead(step.status, { 'content-type': 'application/json', ...step.headers })
					// A 2xx without a body: the waiting node's own answer (RESUMED_BODY).
					.end(JSON.stringify(step.body ?? (step.status < 300 ? RESUMED_BODY : {})));
			}, step.delayMs ?? 0);
			timers.add(timer);
		});
	});
	await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
	const listening = (server.address() as AddressInfo).port;
	return {
		url: `http://127.0.0.1:${listening}${path}`,
		bodies,
		close: async () => {
			for (const timer of timers) clearTimeout(timer);
			server.closeAllConnections();
			await new Promise<void>((r) => server.close(() => r()));
		},
	};
}

/** Triggers of one n8n (one origin, one real HTTP server), each with what it received; not activated yet. */
export interface TriggersOfOneN8n {
	harnesses: WebhookHarness[];
	results: WebhookReceiveResult[][];
	server: ServedWebhook;
}

/** Makes triggers of one n8n for a test file; their server is closed after each test. */
export function useTriggersOfOneN8n(
	sb: Sandbox,
): (
	...parameters: Array<{ events?: string[]; apiKey?: string; options?: Json; catchUp?: boolean }>
) => Promise<TriggersOfOneN8n> {
	const open: TriggersOfOneN8n[] = [];
	afterEach(async () => {
		await Promise.all(open.splice(0).map(async (running) => await running.server.close()));
	});
	return async (...parameters) => {
		const harnesses = await Promise.all(
			parameters.map(
				async ({ apiKey, ...rest }) =>
					await trigger(sb, { catchUp: false, ...rest } as never, {
						webhookId: randomUUID(),
						...(apiKey && { credentialExtra: { apiKey } }),
					}),
			),
		);
		const results = harnesses.map((harness) => recordReceived(harness));
		const server = await serveWebhooks(harnesses);
		const running = { harnesses, results, server };
		open.push(running);
		return running;
	};
}

/** What a trigger ran (its webhook answers that started an execution). */
export const executionsOf = (results: WebhookReceiveResult[]) =>
	results.filter((result) => result.workflowData !== undefined);

/** What a trigger does after its answer (a registration posted again, a resume) is not awaited: wait until `done` holds. */
export async function until(done: () => boolean, ms = 5000, thenMs = 0): Promise<void> {
	const end = Date.now() + ms;
	while (!done() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20));
	if (thenMs) await new Promise((resolve) => setTimeout(resolve, thenMs));
}

/** What each execution ran: an inbound message's text, a status event as status:<status>. */
export const textsOf = (results: WebhookReceiveResult[]) =>
	executionsOf(results).map((r) => {
		const json = r.workflowData![0][0].json as Json;
		return json.event === 'message.status' ? `status:${json.data.status}` : json.data.text;
	});

/** POSTs a JSON body with extra headers; the status and the parsed answer. */
export async function postJson(
	url: string,
	headers: Record<string, string>,
	body: string | Buffer,
) {
	const response = await request(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body,
	});
	const text = await response.body.text();
	return { status: response.statusCode, body: text ? (JSON.parse(text) as Json) : undefined };
}

/** Someone registers `url` at the service directly (the console). */
export async function registerUrl(sb: Sandbox, url: string): Promise<void> {
	const registered = await request(`${sb.baseUrl}/v1/console/webhook`, {
		method: 'POST',
		headers: { authorization: `Bearer ${sb.keys.all}`, 'content-type': 'application/json' },
		body: JSON.stringify({ url }),
	});
	await registered.body.text();
	expect(registered.statusCode).toBe(201);
}

/** An inbound message from CONTACT to the sandbox's first number, delivered by the sandbox. */
export async function inboundText(sb: Sandbox, text: string) {
	return await control(sb, 'POST', '/inbound', {
		from: CONTACT,
		contact_name: 'Ada',
		number: sb.numbers[0].phone_number_id,
		text,
	});
}

/** A message from CONTACT to the account's first number, through the sandbox (its delivery included). */
export async function contactWrites(sb: Sandbox, text: string): Promise<Json> {
	const answer = await control(sb, 'POST', '/inbound', {
		from: CONTACT,
		contact_name: 'Ada',
		number: sb.numbers[0].phone_number_id,
		text,
	});
	return answer.body as Json;
}

/** Polls `what` every 50 ms for up to `ms`; its last answer. */
export async function eventually(what: () => boolean, ms: number): Promise<boolean> {
	const end = Date.now() + ms;
	while (!what() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 50));
	return what();
}

export type LoggedLines = Record<'error' | 'warn' | 'info', string[]>;

/** n8n's log lines of the test, by level (restored by jest.restoreAllMocks). */
export function captureLogs(logged: LoggedLines, logger: { prototype: object }): void {
	for (const level of ['error', 'warn', 'info'] as const) {
		logged[level] = [];
		jest.spyOn(logger.prototype as LoggerLike, level).mockImplementation((...args: unknown[]) => {
			logged[level].push(String(args[0]));
		});
	}
}
type LoggerLike = Record<'error' | 'warn' | 'info', (...args: unknown[]) => void>;

/** The answers a copy of the static data records as answered (id → until when), undefined when none. */
export function answeredIn(copy: IDataObject): Record<string, number> | undefined {
	return answerRecords(copy, (record) => typeof record === 'number') as Record<string, number>;
}

/** The answers a copy of the static data records as owed (id → the wait and the event), undefined when none. */
export function owedIn(copy: IDataObject): Record<string, Json> | undefined {
	return answerRecords(copy, (record) => typeof record === 'object');
}

function answerRecords(copy: IDataObject, kind: (record: unknown) => boolean) {
	const records = Object.entries((copy[ANSWERS_KEY] ?? {}) as IDataObject).filter(([, r]) =>
		kind(r),
	);
	return records.length === 0 ? undefined : Object.fromEntries(records);
}

/** n8n-core's ExecuteContext for the trigger (node of an active one-node workflow) with these items as its input. */
export function triggerExecuteContext(
	trigger: INodeType,
	node: INode,
	items: INodeExecutionData[],
	mode: WorkflowExecuteMode,
	options: { workflowId?: string; hooks?: ExecutionLifecycleHooks } = {},
): IExecuteFunctions {
	const workflow = singleNodeWorkflow(trigger, node, true);
	if (options.workflowId) workflow.id = options.workflowId;
	const inputData = { main: [items] };
	return new ExecuteContext(
		workflow,
		workflow.getNode(node.name)!,
		createAdditionalData({
			credentialsHelper: new HarnessCredentialsHelper(new HarnessCredentialTypes()),
			hooks: options.hooks,
		}),
		mode,
		{} as IRunExecutionData,
		0,
		items,
		inputData,
		{ node, data: inputData, source: null },
		[],
	) as unknown as IExecuteFunctions;
}
