/**
 * The queue-mode benchmark's webhook load (bench/queue.ts), through the balancer: two active
 * workflows receiving the same signed bytes (requests sent by bench/webhooks.ts's fire()):
 *   ours   = Business Messaging Trigger (Automatic registration with the sandbox, so it holds
 *            the signing secret; it verifies every event),
 *   theirs = n8n's Webhook node (POST, Respond Immediately; it verifies nothing).
 * For each concurrency, runs alternate ours/theirs (the order flips each time) for several
 * repetitions. Per run: events/s (events / wall time from the first request to the last
 * answer), p50/p99 of the time to the answer, the 2xx count, and the executions n8n recorded
 * for that run (waited for before the next run starts, so runs do not overlap).
 */
import { randomUUID } from 'node:crypto';

import { log } from '../test/real-n8n/util';
import { CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../test/support/constants';
import { SIGNING_SECRET } from '../test/support/fixtures';
import type { BenchEnvironment } from './lib/env';
import { awaitExecutionCount, createManualCredential, executionCount, node } from './lib/n8n';
import { median, spread, type Spread } from './lib/stats';
import { eventRunMeasures, fire, signedEvents, type EventRunMeasures } from './webhooks';

export type Side = 'ours' | 'theirs';

export interface WebhookRun extends EventRunMeasures {
	side: Side;
}

export interface WebhookConcurrencySummary {
	concurrency: number;
	events_per_run: number;
	ours: { events_per_s: number; p50_ms: number; p99_ms: number; p99_max_ms: number };
	theirs: { events_per_s: number; p50_ms: number; p99_ms: number; p99_max_ms: number };
	/** ours / theirs events per second, per repetition. */
	ratio: Spread;
}

export interface WebhookResult {
	reps: number;
	runs: WebhookRun[];
	summary: WebhookConcurrencySummary[];
	totals: Record<
		Side,
		{
			ok_2xx: number;
			executions_recorded: number;
			lost: number;
			non_2xx: number;
			errors: number;
			failed_executions: number;
		}
	>;
}

export interface WebhookOptions {
	concurrencies: number[];
	reps: number;
	eventsFor: (concurrency: number) => number;
	/** Where the Webhook node's production URL lives (default: the n8n process; queue mode: the balancer). */
	baseUrl?: string;
}

export const DEFAULT_WEBHOOK_OPTIONS: WebhookOptions = {
	concurrencies: [1, 8, 32],
	reps: 3,
	eventsFor: (c) => (c === 1 ? 400 : c === 8 ? 1000 : 1500),
};

/**
 * BENCH_TRIGGER_REGISTRATION=manual measures the trigger in Manual registration instead: its
 * secret comes from the credential (a second one, with a Webhook Signing Secret), nothing is
 * registered with the sandbox, and the events are posted to the node's production URL.
 */
const REGISTRATION = process.env.BENCH_TRIGGER_REGISTRATION === 'manual' ? 'manual' : 'automatic';

export async function runWebhookBench(
	env: BenchEnvironment,
	options: WebhookOptions = DEFAULT_WEBHOOK_OPTIONS,
): Promise<WebhookResult> {
	const { client, control } = env;
	const number = env.sandbox.numbers[0].phone_number_id;
	const credential =
		REGISTRATION === 'manual' ? await createManualCredential(client, env.sandbox) : env.credential;
	const triggerWebhookId = randomUUID();
	const ours = await client.createWorkflow({
		name: `bench: Business Messaging Trigger (${REGISTRATION})`,
		nodes: [
			node(
				TRIGGER_NAME,
				TRIGGER_TYPE,
				1,
				{ registration: REGISTRATION, events: ['message.inbound'], options: {} },
				0,
				{
					webhookId: triggerWebhookId,
					credentials: { [CREDENTIAL_TYPE]: { id: credential.id, name: credential.name } },
				},
			),
		],
		connections: {},
	});
	const webhookPath = `bench-${randomUUID()}`;
	const theirs = await client.createWorkflow({
		name: "bench: n8n's Webhook node",
		nodes: [
			node(
				'Webhook',
				'n8n-nodes-base.webhook',
				2,
				{ httpMethod: 'POST', path: webhookPath, responseMode: 'onReceived', options: {} },
				0,
				{
					webhookId: randomUUID(),
				},
			),
		],
		connections: {},
	});
	for (const workflow of [ours, theirs]) {
		const outcome = await client.activateAndSettle(workflow.id);
		if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
	}
	const state = await control.state();
	if (
		REGISTRATION === 'automatic' &&
		(!state.webhook.configured || !state.webhook.url || !state.webhook.secret)
	) {
		throw new Error('the trigger did not register its webhook with the sandbox');
	}
	const secret = REGISTRATION === 'manual' ? SIGNING_SECRET : (state.webhook.secret as string);
	const base = options.baseUrl ?? env.n8n.url;
	const ourUrl =
		REGISTRATION === 'manual'
			? `${base}/webhook/${triggerWebhookId}/webhook`
			: (state.webhook.url as string);
	const targets: Record<Side, { url: string; workflowId: string }> = {
		ours: { url: ourUrl, workflowId: ours.id },
		theirs: { url: `${base}/webhook/${webhookPath}`, workflowId: theirs.id },
	};
	// Production webhooks answer a moment after activation: wait until both take a signed event.
	// Then wait for that probe's execution, so that no run counts an execution it did not cause.
	for (const side of ['ours', 'theirs'] as const) {
		const before = await executionCount(client, targets[side].workflowId);
		const deadline = Date.now() + 30_000;
		for (;;) {
			const probe = await fire(targets[side].url, signedEvents(1, secret, number), 1);
			if (probe.ok === 1) break;
			if (Date.now() > deadline)
				throw new Error(`${side}: the webhook does not answer 2xx: ${probe.firstProblem}`);
			await new Promise((resolve) => setTimeout(resolve, 500));
		}
		await awaitExecutionCount(client, targets[side].workflowId, before + 1);
	}

	const runs: WebhookRun[] = [];
	const runOne = async (
		side: Side,
		concurrency: number,
		rep: number,
		events: number,
		record: boolean,
	) => {
		const { url, workflowId } = targets[side];
		const before = await executionCount(client, workflowId);
		const failedBefore = await executionCount(client, workflowId, ['error', 'crashed']);
		const fired = await fire(url, signedEvents(events, secret, number), concurrency);
		const recorded = (await awaitExecutionCount(client, workflowId, before + fired.ok)) - before;
		const failed = (await executionCount(client, workflowId, ['error', 'crashed'])) - failedBefore;
		const run: WebhookRun = {
			side,
			...eventRunMeasures(concurrency, rep, events, fired, recorded, failed),
		};
		log(
			`  webhooks ${record ? '' : '(warm-up) '}${side.padEnd(6)} c=${String(concurrency).padEnd(2)} rep ${rep}: ${run.events_per_s.toFixed(0)} ev/s, p50 ${run.p50_ms.toFixed(1)} ms, p99 ${run.p99_ms.toFixed(1)} ms, 2xx ${run.ok_2xx}/${events}, executions ${recorded}${fired.firstProblem ? `; first problem: ${fired.firstProblem}` : ''}`,
		);
		if (record) runs.push(run);
		return run;
	};

	// Warm-up: both workflows, moderate load, not reported.
	await runOne('ours', 8, 0, 200, false);
	await runOne('theirs', 8, 0, 200, false);

	let flip = 0;
	for (let rep = 1; rep <= options.reps; rep++) {
		for (const concurrency of options.concurrencies) {
			const order: Side[] = flip++ % 2 === 0 ? ['ours', 'theirs'] : ['theirs', 'ours'];
			for (const side of order)
				await runOne(side, concurrency, rep, options.eventsFor(concurrency), true);
		}
	}

	for (const workflow of [ours, theirs]) await client.deactivate(workflow.id);

	const summary: WebhookConcurrencySummary[] = options.concurrencies.map((concurrency) => {
		const of = (side: Side) => runs.filter((r) => r.side === side && r.concurrency === concurrency);
		const side = (s: Side) => ({
			events_per_s: median(of(s).map((r) => r.events_per_s)),
			p50_ms: median(of(s).map((r) => r.p50_ms)),
			p99_ms: median(of(s).map((r) => r.p99_ms)),
			p99_max_ms: Math.max(...of(s).map((r) => r.p99_ms)),
		});
		const ratios = of('ours').map((r) => {
			const other = of('theirs').find((t) => t.rep === r.rep);
			return other ? r.events_per_s / other.events_per_s : Number.NaN;
		});
		return {
			concurrency,
			events_per_run: options.eventsFor(concurrency),
			ours: side('ours'),
			theirs: side('theirs'),
			ratio: spread(ratios),
		};
	});
	const totals = {} as WebhookResult['totals'];
	for (const s of ['ours', 'theirs'] as const) {
		const mine = runs.filter((r) => r.side === s);
		const sum = (key: keyof WebhookRun) => mine.reduce((total, r) => total + (r[key] as number), 0);
		totals[s] = {
			ok_2xx: sum('ok_2xx'),
			executions_recorded: sum('executions_recorded'),
			lost: sum('ok_2xx') - sum('executions_recorded'),
			non_2xx: sum('non_2xx'),
			errors: sum('errors'),
			failed_executions: sum('failed_executions'),
		};
	}
	return { reps: options.reps, runs, summary, totals };
}
