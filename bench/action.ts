/**
 * Benchmark 3: action node throughput. 1,000 items, each a Message → Get Status of one message
 * the sandbox knows (sent by a reply first), in the same n8n:
 *   ours   = Manual Trigger → Code (1,000 items) → Business Messaging: Message → Get Status,
 *   theirs = Manual Trigger → Code (1,000 items) → HTTP Request GET {base}/v1/messages/{id}
 *            with Authentication → Predefined Credential Type → Business Messaging API.
 * Runs alternate (the order flips each repetition). Items/s = items / the node's own
 * executionTime as n8n records it in the execution's run data; the whole execution's time is
 * kept beside it.
 */
import { log } from '../test/real-n8n/util';
import type { BenchEnvironment } from './lib/env';
import { awaitExecution, chain, MANUAL_TRIGGER, node, readExecution, runManually } from './lib/n8n';
import { median, spread, type Spread } from './lib/stats';
import { ACTION_TYPE, CREDENTIAL_TYPE } from '../test/support/constants';
import { CONTACT } from '../test/support/fixtures';

type Side = 'ours' | 'theirs';

export interface ActionRun {
	side: Side;
	rep: number;
	items_out: number;
	node_ms: number;
	execution_ms: number;
	items_per_s: number;
	status: string;
}

export interface ActionResult {
	items: number;
	reps: number;
	runs: ActionRun[];
	ours_items_per_s: number;
	theirs_items_per_s: number;
	/** ours / theirs items per second, per repetition. */
	ratio: Spread;
	sandbox_requests: number;
}

const NODE_NAME: Record<Side, string> = { ours: 'Get Status', theirs: 'HTTP Request' };

/** Sends a reply through the sandbox API (after an inbound message opens the window); returns its message id. */
async function sentMessageId(env: BenchEnvironment): Promise<string> {
	const number = env.sandbox.numbers[0].phone_number_id;
	await env.control.call('POST', '/inbound', {
		from: CONTACT,
		contact_name: 'Bench',
		number,
		text: 'hello',
	});
	const response = await fetch(`${env.sandbox.baseUrl}/v1/messages/reply`, {
		method: 'POST',
		headers: {
			authorization: `Bearer ${env.sandbox.keys.all}`,
			'content-type': 'application/json',
		},
		body: JSON.stringify({ to: CONTACT, from: number, text: 'Your order is on its way.' }),
	});
	const body = (await response.json()) as { id?: string };
	if (!response.ok || !body.id)
		throw new Error(`the sandbox refused the reply: ${response.status} ${JSON.stringify(body)}`);
	return body.id;
}

export async function runActionBench(
	env: BenchEnvironment,
	options: { items: number; reps: number } = { items: 1000, reps: 5 },
): Promise<ActionResult> {
	const { client, credential } = env;
	const messageId = await sentMessageId(env);
	const credentials = { [CREDENTIAL_TYPE]: { id: credential.id, name: credential.name } };
	const items = node(
		'Items',
		'n8n-nodes-base.code',
		2,
		{ jsCode: `return Array.from({ length: ${options.items} }, (_, i) => ({ json: { i } }));` },
		220,
	);
	const workflows: Record<Side, { id: string }> = {
		ours: await client.createWorkflow({
			name: 'bench: Business Messaging Get Status × items',
			nodes: [
				{ ...MANUAL_TRIGGER },
				items,
				node(
					NODE_NAME.ours,
					ACTION_TYPE,
					1,
					{ resource: 'message', operation: 'getStatus', messageId },
					440,
					{ credentials },
				),
			],
			connections: chain(MANUAL_TRIGGER.name, 'Items', NODE_NAME.ours),
		}),
		theirs: await client.createWorkflow({
			name: 'bench: HTTP Request Get Status × items',
			nodes: [
				{ ...MANUAL_TRIGGER },
				{ ...items },
				node(
					NODE_NAME.theirs,
					'n8n-nodes-base.httpRequest',
					4.2,
					{
						method: 'GET',
						url: `${env.sandbox.baseUrl}/v1/messages/${messageId}`,
						authentication: 'predefinedCredentialType',
						nodeCredentialType: CREDENTIAL_TYPE,
						options: {},
					},
					440,
					{ credentials },
				),
			],
			connections: chain(MANUAL_TRIGGER.name, 'Items', NODE_NAME.theirs),
		}),
	};

	const requestsBefore = (await env.control.state()).requests_count;
	const runs: ActionRun[] = [];
	const runOne = async (side: Side, rep: number, record: boolean) => {
		const executionId = await runManually(client, workflows[side].id, MANUAL_TRIGGER.name);
		const { status } = await awaitExecution(client, executionId);
		const execution = await readExecution(client, env.parseExecutionData, executionId);
		const nodeMs = execution.nodeTimes[NODE_NAME[side]];
		const run: ActionRun = {
			side,
			rep,
			items_out: execution.nodeItems[NODE_NAME[side]] ?? 0,
			node_ms: nodeMs,
			execution_ms: Date.parse(execution.stoppedAt) - Date.parse(execution.startedAt),
			items_per_s: (options.items / nodeMs) * 1000,
			status,
		};
		if (status !== 'success' || run.items_out !== options.items) {
			throw new Error(
				`${side}: execution ${executionId} ended ${status} with ${run.items_out} items: ${JSON.stringify(execution.error ?? '').slice(0, 500)}`,
			);
		}
		log(
			`  action ${record ? '' : '(warm-up) '}${side.padEnd(6)} rep ${rep}: ${run.items_per_s.toFixed(0)} items/s (node ${nodeMs} ms, execution ${run.execution_ms} ms)`,
		);
		if (record) runs.push(run);
	};

	await runOne('ours', 0, false);
	await runOne('theirs', 0, false);
	for (let rep = 1; rep <= options.reps; rep++) {
		const order: Side[] = rep % 2 === 1 ? ['ours', 'theirs'] : ['theirs', 'ours'];
		for (const side of order) await runOne(side, rep, true);
	}
	const sandboxRequests = (await env.control.state()).requests_count - requestsBefore;

	const of = (side: Side) => runs.filter((r) => r.side === side);
	const ratios = of('ours').map(
		(r) => r.items_per_s / (of('theirs').find((t) => t.rep === r.rep)?.items_per_s ?? Number.NaN),
	);
	return {
		items: options.items,
		reps: options.reps,
		runs,
		ours_items_per_s: median(of('ours').map((r) => r.items_per_s)),
		theirs_items_per_s: median(of('theirs').map((r) => r.items_per_s)),
		ratio: spread(ratios),
		sandbox_requests: sandboxRequests,
	};
}
