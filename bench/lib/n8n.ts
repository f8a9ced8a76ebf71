/** What the benchmarks need from n8n beyond test/real-n8n's client: counting and reading executions. */
import { randomUUID } from 'node:crypto';

import type { N8nClient } from '../../test/real-n8n/n8n';
import type { Sandbox } from '../../test/real-n8n/sandbox';
import { sleep } from '../../test/real-n8n/util';
import { CREDENTIAL_TYPE } from '../../test/support/constants';
import { SIGNING_SECRET } from '../../test/support/fixtures';

/**
 * The credential of the Manual-registration runs: the sandbox's key and a Webhook Signing Secret,
 * SIGNING_SECRET, which the events for those runs are signed with.
 */
export async function createManualCredential(
	client: N8nClient,
	sandbox: Pick<Sandbox, 'keys' | 'baseUrl'>,
): Promise<{ id: string; name: string }> {
	return await client.createCredential('Business Messaging (bench, manual)', CREDENTIAL_TYPE, {
		apiKey: sandbox.keys.all,
		baseUrl: sandbox.baseUrl,
		webhookSecret: SIGNING_SECRET,
	});
}

/** Executions of a workflow n8n has recorded (exact on SQLite), optionally only with these statuses. */
export async function executionCount(
	client: N8nClient,
	workflowId: string,
	status?: string[],
): Promise<number> {
	const filter = encodeURIComponent(JSON.stringify({ workflowId, ...(status ? { status } : {}) }));
	// A loaded n8n (SQLite busy) answers 503 "Database is not ready!" now and then: ask again for up to a minute.
	const deadline = Date.now() + 60_000;
	let data: { count: number; estimated: boolean };
	for (;;) {
		try {
			data = await client.request<{ count: number; estimated: boolean }>(
				'GET',
				`/rest/executions?limit=1&filter=${filter}`,
			);
			break;
		} catch (error) {
			if (Date.now() > deadline || !/-> 503|fetch failed|timeout/i.test((error as Error).message))
				throw error;
			await sleep(1000);
		}
	}
	if (data.estimated) throw new Error('n8n only estimated the execution count');
	return data.count;
}

/**
 * Waits until the workflow has `expected` executions, or until the count has not moved for
 * `quietMs` after `timeoutMs`. Returns the count it saw last.
 */
export async function awaitExecutionCount(
	client: N8nClient,
	workflowId: string,
	expected: number,
	timeoutMs = 60_000,
	quietMs = 3_000,
): Promise<number> {
	const deadline = Date.now() + timeoutMs;
	let last = -1;
	let lastChange = Date.now();
	for (;;) {
		const count = await executionCount(client, workflowId);
		if (count >= expected) return count;
		if (count !== last) {
			last = count;
			lastChange = Date.now();
		}
		if (Date.now() > deadline && Date.now() - lastChange > quietMs) return count;
		await sleep(300);
	}
}

export interface ExecutionSummary {
	id: string;
	status: string;
	startedAt: string;
	stoppedAt: string;
	/** Node name -> executionTime (ms) of its first run. */
	nodeTimes: Record<string, number>;
	/** Node name -> number of output items of its first run (all outputs). */
	nodeItems: Record<string, number>;
	/** Node name -> the binary of its first output item, if any. */
	nodeBinary: Record<
		string,
		| Record<string, { fileSize?: string; bytes?: number; mimeType?: string; id?: string }>
		| undefined
	>;
	error?: unknown;
}

type RunData = Record<
	string,
	Array<{
		executionTime?: number;
		data?: {
			main?: Array<Array<{
				json: unknown;
				binary?: ExecutionSummary['nodeBinary'][string];
			}> | null>;
		};
	}>
>;

export async function readExecution(
	client: N8nClient,
	parse: (text: string) => unknown,
	executionId: string,
): Promise<ExecutionSummary> {
	const execution = await client.request<{
		id: string;
		data: string;
		status: string;
		startedAt: string;
		stoppedAt: string;
	}>('GET', `/rest/executions/${executionId}`);
	const data = parse(execution.data) as { resultData: { runData: RunData; error?: unknown } };
	const nodeTimes: Record<string, number> = {};
	const nodeItems: Record<string, number> = {};
	const nodeBinary: ExecutionSummary['nodeBinary'] = {};
	for (const [name, runs] of Object.entries(data.resultData.runData ?? {})) {
		nodeTimes[name] = runs[0]?.executionTime ?? Number.NaN;
		const outputs = runs[0]?.data?.main ?? [];
		nodeItems[name] = outputs.reduce((sum, items) => sum + (items?.length ?? 0), 0);
		nodeBinary[name] = outputs.find((items) => items && items.length > 0)?.[0]?.binary;
	}
	return {
		id: execution.id,
		status: execution.status,
		startedAt: execution.startedAt,
		stoppedAt: execution.stoppedAt,
		nodeTimes,
		nodeItems,
		nodeBinary,
		error: data.resultData.error,
	};
}

/** Starts a manual run of a workflow whose first node is a Manual Trigger; returns the execution id. */
export async function runManually(
	client: N8nClient,
	workflowId: string,
	triggerName: string,
): Promise<string> {
	const started = await client.request<{ executionId?: string }>(
		'POST',
		`/rest/workflows/${workflowId}/run`,
		{
			triggerToStartFrom: { name: triggerName },
		},
	);
	if (!started.executionId)
		throw new Error(`n8n did not start workflow ${workflowId}: ${JSON.stringify(started)}`);
	return started.executionId;
}

/** Polls until the execution is no longer new/running. */
export async function awaitExecution(
	client: N8nClient,
	executionId: string,
	timeoutMs = 300_000,
	intervalMs = 100,
): Promise<{ status: string }> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const execution = await client
			.request<{ status: string } | null>('GET', `/rest/executions/${executionId}`)
			.catch(() => null);
		if (execution && !['new', 'running', 'waiting', 'unknown'].includes(execution.status))
			return execution;
		if (Date.now() > deadline)
			throw new Error(`execution ${executionId} did not finish within ${timeoutMs / 1000} s`);
		await sleep(intervalMs);
	}
}

export const MANUAL_TRIGGER = {
	name: 'Start',
	type: 'n8n-nodes-base.manualTrigger',
	typeVersion: 1,
	position: [0, 0],
	parameters: {},
};

export function node(
	name: string,
	type: string,
	typeVersion: number,
	parameters: Record<string, unknown>,
	x: number,
	extra: Record<string, unknown> = {},
) {
	return { id: randomUUID(), name, type, typeVersion, position: [x, 0], parameters, ...extra };
}

/** main connections of a straight chain a -> b -> c. */
export function chain(...names: string[]): Record<string, unknown> {
	const connections: Record<string, unknown> = {};
	for (let i = 0; i + 1 < names.length; i++) {
		connections[names[i]] = { main: [[{ node: names[i + 1], type: 'main', index: 0 }]] };
	}
	return connections;
}
