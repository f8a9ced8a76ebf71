/**
 * Benchmark "combine" (issue 33): Combine a Contact's Messages on against off, side by side in ONE
 * n8n 2.41.1 (default settings). Two accounts (two sandboxes, one credential each), one active
 * workflow on each: the auto-reply example (examples/auto-reply.json) with Reply "got: <text>",
 * catch-up every 10 s, and on one of them the trigger's combine option (Quiet Period 5 s, the
 * default; test/real-n8n/bursts.ts). Per run, `contacts` contacts each send `perContact` messages
 * at once to one of them; runs alternate on, off, off, on, ... Per run:
 *  - executions per message (n8n's count for the workflow before and after);
 *  - service reads per message: GET /v1/messages/inbound in the sandbox's request log during the
 *    run (the catch-up reads the list too, every 10 s, on and off alike: off's reads are its);
 *  - replies, messages in them, lost, twice (the sandbox's sent messages);
 *  - on: the time from a burst's last message (its stored created_at) to its item (the trigger's
 *    run in the execution: startTime + executionTime) and to its reply, p50 / p95 / max;
 *    off: from each message to its reply.
 */
import { loadavg } from 'node:os';

import { CREDENTIAL_NAME, mapExample } from '../test/real-n8n/examples';
import {
	combineAutoReply,
	latencyText,
	tallyBursts,
	type SentMessage,
} from '../test/real-n8n/bursts';
import { launchSandbox, SandboxControl, type Sandbox } from '../test/real-n8n/sandbox';
import { log, sleep } from '../test/real-n8n/util';
import { CREDENTIAL_TYPE } from '../test/support/constants';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { awaitExecutionCount, executionCount } from './lib/n8n';
import { quantile } from './lib/stats';

export interface CombineOptions {
	contacts: number;
	perContact: number;
	quietS: number;
	catchUpIntervalS: number;
	/** Runs of each variant (alternating, on first). */
	reps: number;
}

export const DEFAULT_COMBINE_OPTIONS: CombineOptions = {
	contacts: 50,
	perContact: 3,
	quietS: 5,
	catchUpIntervalS: 10,
	reps: 2,
};

export const QUICK_COMBINE_OPTIONS: CombineOptions = { ...DEFAULT_COMBINE_OPTIONS, reps: 1 };

export type CombineVariant = 'on' | 'off';

export interface Latency {
	p50_ms: number;
	p95_ms: number;
	max_ms: number;
	n: number;
}

export interface CombineRun {
	variant: CombineVariant;
	rep: number;
	messages: number;
	delivered_2xx: number;
	executions: number;
	executions_with_an_item: number;
	executions_per_message: number;
	inbound_reads: number;
	reads_per_message: number;
	replies: number;
	in_replies: number;
	lost: number;
	twice: number;
	out_of_order: number;
	/** on: last message of a burst → its item (ms, each burst); off: none. */
	to_item_ms: number[];
	/** on: last message of a burst → its reply; off: each message → its reply (ms). */
	to_reply_ms: number[];
	/** on: last message of a burst → the trigger's execute() starting in its execution (n8n's intake), ms. */
	to_start_ms: number[];
	/** First message sent → every message in a reply. */
	all_replied_s: number;
	load_average_1m: number;
}

export interface CombineResult {
	options: CombineOptions;
	n8n: string;
	runs: CombineRun[];
	/** Medians over the runs of each variant, and on/off. */
	summary: {
		on: { executions_per_message: number; reads_per_message: number; replies: number };
		off: { executions_per_message: number; reads_per_message: number; replies: number };
		ratio: { executions_per_message: number; reads_per_message: number; replies: number };
		/** Every on run's bursts together. */
		to_item: Latency;
		to_reply: Latency;
		to_start: Latency;
		off_to_reply: Latency;
		all_clean: boolean;
	};
}

export function latency(values: number[]): Latency {
	return {
		p50_ms: quantile(values, 0.5),
		p95_ms: quantile(values, 0.95),
		max_ms: values.length ? Math.max(...values) : Number.NaN,
		n: values.length,
	};
}

export interface Target {
	variant: CombineVariant;
	sandbox: Sandbox;
	control: SandboxControl;
	workflowId: string;
	triggerName: string;
}

export async function activate(
	env: BenchEnvironment,
	variant: CombineVariant,
	sandbox: Sandbox,
	credentialId: string,
	options: CombineOptions,
): Promise<Target> {
	const json = combineAutoReply({
		quietS: variant === 'on' ? options.quietS : undefined,
		catchUpIntervalS: options.catchUpIntervalS,
		name: `bench: auto-reply, combine ${variant}`,
	});
	const workflow = await env.client.createWorkflow(
		mapExample(json, { [CREDENTIAL_NAME]: credentialId }, {}),
	);
	const outcome = await env.client.activateAndSettle(workflow.id);
	if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
	if (!sandbox.state().webhook.configured)
		throw new Error(`"${workflow.name}" did not register its webhook with its sandbox`);
	const trigger = workflow.nodes.find((n) => n.type.endsWith('.businessMessagingTrigger'));
	return {
		variant,
		sandbox,
		control: new SandboxControl(sandbox.baseUrl),
		workflowId: workflow.id,
		triggerName: String(trigger?.name),
	};
}

export type RunData = Record<
	string,
	Array<{
		startTime?: number;
		executionTime?: number;
		data?: { main?: Array<Array<{ json: Record<string, unknown> }> | null> };
	}>
>;

/** Per execution of the workflow since `afterId`: when the trigger emitted, and its items. */
export async function triggerRuns(
	env: BenchEnvironment,
	target: Target,
	afterId: number,
): Promise<Array<{ startMs: number; atMs: number; items: Array<Record<string, unknown>> }>> {
	// n8n lists at most 100 a page (with a cursor): execution ids are sequential, read them one by one.
	const newest = await lastExecutionId(env, target.workflowId);
	const out: Array<{ startMs: number; atMs: number; items: Array<Record<string, unknown>> }> = [];
	for (let id = afterId + 1; id <= newest; id++) {
		const execution = await env.client
			.request<{ data: string; workflowId: string }>('GET', `/rest/executions/${id}`)
			.catch(() => undefined);
		if (execution?.workflowId !== target.workflowId) continue;
		const data = env.parseExecutionData(execution.data) as {
			resultData: { runData?: RunData };
		};
		const run = data.resultData.runData?.[target.triggerName]?.[0];
		if (!run) continue;
		out.push({
			startMs: run.startTime ?? Number.NaN,
			atMs: (run.startTime ?? Number.NaN) + (run.executionTime ?? 0),
			items: (run.data?.main ?? []).flatMap((items) => (items ?? []).map((item) => item.json)),
		});
	}
	return out;
}

export async function lastExecutionId(env: BenchEnvironment, workflowId: string): Promise<number> {
	const list = await env.client.executions(workflowId);
	return Math.max(0, ...list.map((e) => Number(e.id)));
}

async function oneRun(
	env: BenchEnvironment,
	target: Target,
	options: CombineOptions,
	rep: number,
	group: number,
): Promise<CombineRun> {
	const { sandbox, control } = target;
	const number = sandbox.numbers[0].phone_number_id;
	const sent: SentMessage[] = [];
	for (let c = 0; c < options.contacts; c++) {
		const from = `+3365${String(group).padStart(2, '0')}${String(10_000 + c).slice(1)}`;
		for (let i = 1; i <= options.perContact; i++)
			sent.push({ from, number, text: `${target.variant}${rep} m${i} ${from}` });
	}
	const executionsBefore = await executionCount(env.client, target.workflowId);
	const lastIdBefore = await lastExecutionId(env, target.workflowId);
	const readsBefore = sandbox.state().requests.length;
	const started = Date.now();
	const delivered = await Promise.all(
		sent.map(async (m) => {
			try {
				return (await control.inbound({ ...m, contact_name: 'Bench' })).delivery.delivered;
			} catch {
				return false;
			}
		}),
	);
	let tally = tallyBursts(sandbox.state(), sent);
	const deadline = Date.now() + 180_000;
	while (tally.lost > 0 && Date.now() < deadline) {
		await sleep(500);
		tally = tallyBursts(sandbox.state(), sent);
	}
	const allRepliedS = (Date.now() - started) / 1000;
	// A double, or an execution that emits nothing, ends within about a quiet period.
	await sleep((options.quietS + 2) * 1000);
	const executions =
		(await awaitExecutionCount(
			env.client,
			target.workflowId,
			executionsBefore + sent.length,
			30_000,
		)) - executionsBefore;
	tally = tallyBursts(sandbox.state(), sent);
	const reads = sandbox
		.state()
		.requests.slice(readsBefore)
		.filter((r) => r.method === 'GET' && r.path === '/v1/messages/inbound').length;
	const runs = await triggerRuns(env, target, lastIdBefore);
	const withItem = runs.filter((r) => r.items.length > 0);
	const [toItem, toStart]: number[][] = [[], []];
	for (const run of target.variant === 'on' ? withItem : []) {
		for (const item of run.items) {
			const records = (item.messages ?? []) as Array<{ created_at?: string }>;
			const newest = Math.max(...records.map((r) => Date.parse(String(r.created_at))));
			if (!Number.isFinite(newest)) continue;
			toItem.push(run.atMs - newest);
			toStart.push(run.startMs - newest);
		}
	}
	return {
		variant: target.variant,
		rep,
		messages: sent.length,
		delivered_2xx: delivered.filter(Boolean).length,
		executions,
		executions_with_an_item: withItem.length,
		executions_per_message: executions / sent.length,
		inbound_reads: reads,
		reads_per_message: reads / sent.length,
		replies: tally.replies,
		in_replies: tally.inReplies,
		lost: tally.lost,
		twice: tally.twice,
		out_of_order: tally.outOfOrder,
		to_item_ms: toItem,
		to_reply_ms: tally.latenciesMs,
		to_start_ms: toStart,
		all_replied_s: allRepliedS,
		load_average_1m: loadavg()[0],
	};
}

export async function runCombineBench(
	setup: { tarball: string; outDir: string; keep?: boolean },
	options: CombineOptions = DEFAULT_COMBINE_OPTIONS,
): Promise<CombineResult> {
	const env = await startBenchEnvironment({
		tarball: setup.tarball,
		outDir: setup.outDir,
		keep: setup.keep,
		logName: 'n8n-combine.log',
	});
	// One account each: a trigger's catch-up reads its account's messages and would recover the other's.
	const offSandbox = await launchSandbox();
	try {
		const offCredential = await env.client.createCredential(
			'Business Messaging (bench, combine off)',
			CREDENTIAL_TYPE,
			{ apiKey: offSandbox.keys.all, baseUrl: offSandbox.baseUrl, webhookSecret: '' },
		);
		const targets: Record<CombineVariant, Target> = {
			on: await activate(env, 'on', env.sandbox, env.credential.id, options),
			off: await activate(env, 'off', offSandbox, offCredential.id, options),
		};
		// The first catch-up run of each (at activation) before the first measure.
		await sleep(3000);
		const runs: CombineRun[] = [];
		let group = 0;
		for (let rep = 1; rep <= options.reps; rep++) {
			const order: CombineVariant[] = rep % 2 ? ['on', 'off'] : ['off', 'on'];
			for (const variant of order) {
				const run = await oneRun(env, targets[variant], options, rep, ++group);
				runs.push(run);
				log(
					`  combine ${variant} #${rep}: ${run.executions} executions (${run.executions_with_an_item} with an item) for ${run.messages} messages, ${run.inbound_reads} list reads, ${run.replies} replies holding ${run.in_replies}, lost ${run.lost}, twice ${run.twice}; to reply ${latencyText(run.to_reply_ms)}${variant === 'on' ? `; to item ${latencyText(run.to_item_ms)}; to its execute() ${latencyText(run.to_start_ms)}` : ''}; ${run.delivered_2xx}/${run.messages} delivered 2xx; load ${run.load_average_1m.toFixed(1)}`,
				);
				// Let the catch-up pass over this run's failed deliveries before the next one.
				await sleep(options.catchUpIntervalS * 1000);
			}
		}
		const median = (variant: CombineVariant, key: keyof CombineRun) =>
			quantile(
				runs.filter((r) => r.variant === variant).map((r) => r[key] as number),
				0.5,
			);
		const keys = ['executions_per_message', 'reads_per_message', 'replies'] as const;
		const of = (variant: CombineVariant) =>
			Object.fromEntries(keys.map((k) => [k, median(variant, k)])) as Record<
				(typeof keys)[number],
				number
			>;
		const [on, off] = [of('on'), of('off')];
		const pooled = (variant: CombineVariant, pick: (r: CombineRun) => number[]) =>
			latency(runs.filter((r) => r.variant === variant).flatMap(pick));
		return {
			options,
			n8n: env.installation.version,
			runs,
			summary: {
				on,
				off,
				ratio: Object.fromEntries(keys.map((k) => [k, on[k] / off[k]])) as typeof on,
				to_item: pooled('on', (r) => r.to_item_ms),
				to_reply: pooled('on', (r) => r.to_reply_ms),
				to_start: pooled('on', (r) => r.to_start_ms),
				off_to_reply: pooled('off', (r) => r.to_reply_ms),
				all_clean: runs.every(
					(r) =>
						r.lost === 0 &&
						r.twice === 0 &&
						r.out_of_order === 0 &&
						r.replies === (r.variant === 'on' ? options.contacts : r.messages),
				),
			},
		};
	} finally {
		await offSandbox.close();
		await env.stop();
	}
}
