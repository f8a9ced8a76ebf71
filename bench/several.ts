/**
 * Benchmark "several" (docs/several-workflows.md §11, §13 T9): what several active triggers on one
 * account cost, in ONE n8n 2.41.1 (default settings, one process), side by side.
 *
 * Three accounts (three sandboxes, each its own API key and credential), all active at once in the
 * same n8n: account A with 1 trigger workflow, B with 2, C with 4. Every workflow is the same:
 * Trigger (Automatic registration, selects message.inbound, no catch-up) → No Operation. In each
 * account the first trigger holds the webhook and forwards every event to the others (the members).
 * Signed events go straight to each account's holder URL, signed with the secret its sandbox holds,
 * `concurrency` at a time, in interleaved rounds (1, 2, 4, then 2, 4, 1, ...). Per run:
 *  - events/s: events / time from the first request until every workflow of the account has
 *    stored its execution of every event (n8n's count), so the forwards' work is in it;
 *  - the service's view: events / time until the last 2xx (the holder does not wait for forwards);
 *  - n8n's CPU (its process and children, /proc) over the same span, per event;
 *  - forwards per event: the members' executions / events (each forward the members ran).
 * Ratios are against the 1-trigger account in the same round. The heartbeat of all 7 triggers
 * runs throughout (one GET and one join per trigger per 30 s), in every run alike.
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';

import { launchSandbox, type Sandbox } from '../test/real-n8n/sandbox';
import { log, sleep } from '../test/real-n8n/util';
import { CREDENTIAL_TYPE, TRIGGER_TYPE } from '../test/support/constants';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { executionCount, node } from './lib/n8n';
import { quantile, spread, type Spread } from './lib/stats';
import { cpuMs, fire, signedEvents } from './webhooks';

export interface SeveralOptions {
	triggers: number[];
	events: number;
	concurrency: number;
	reps: number;
}

export const DEFAULT_SEVERAL_OPTIONS: SeveralOptions = {
	triggers: [1, 2, 4],
	events: 100,
	concurrency: 8,
	reps: 3,
};

export const QUICK_SEVERAL_OPTIONS: SeveralOptions = {
	triggers: [1, 2, 4],
	events: 40,
	concurrency: 8,
	reps: 1,
};

const WARM_UP_EVENTS = 20;

export interface SeveralRun {
	triggers: number;
	rep: number;
	events: number;
	ok_2xx: number;
	/** Executions the holder's workflow stored, and the members' (all of them). */
	holder_executions: number;
	member_executions: number;
	/** member_executions / events. */
	forwards_per_event: number;
	/** Events / time until every workflow stored every event. */
	events_per_s: number;
	/** Events / time until the last 2xx answer. */
	answered_per_s: number;
	p50_ms: number;
	p99_ms: number;
	cpu_ms_per_event: number;
	cpu_ms_per_execution: number;
	load_average_1m: number;
}

export interface SeveralSummary {
	triggers: number;
	events_per_s: Spread;
	answered_per_s: Spread;
	cpu_ms_per_event: Spread;
	cpu_ms_per_execution: Spread;
	forwards_per_event: Spread;
	p99_ms: Spread;
	/** Per rep, against the 1-trigger run of the same round. */
	events_per_s_vs_1: Spread;
	cpu_per_event_vs_1: Spread;
	all_stored: boolean;
}

export interface SeveralResult {
	options: SeveralOptions;
	runs: SeveralRun[];
	summary: SeveralSummary[];
}

interface Account {
	triggers: number;
	sandbox: Sandbox;
	ownSandbox: boolean;
	workflowIds: string[];
	holderId: string;
	holderUrl: string;
	secret: string;
}

function workflowJson(name: string, credential: { id: string; name: string }) {
	const webhookId = randomUUID();
	return {
		webhookId,
		json: {
			name,
			nodes: [
				node(
					'Trigger',
					TRIGGER_TYPE,
					2,
					{ registration: 'automatic', events: ['message.inbound'], catchUp: false, options: {} },
					0,
					{ webhookId, credentials: { [CREDENTIAL_TYPE]: credential } },
				),
				node('Done', 'n8n-nodes-base.noOp', 1, {}, 220),
			],
			connections: { Trigger: { main: [[{ node: 'Done', type: 'main', index: 0 }]] } },
			settings: { executionOrder: 'v1' },
		},
	};
}

async function setUpAccount(
	env: BenchEnvironment,
	triggers: number,
	sandbox: Sandbox,
	ownSandbox: boolean,
): Promise<Account> {
	const { client } = env;
	const credential = ownSandbox
		? await client.createCredential(
				`Business Messaging (bench, ${triggers} triggers)`,
				CREDENTIAL_TYPE,
				{
					apiKey: sandbox.keys.all,
					baseUrl: sandbox.baseUrl,
					webhookSecret: '',
				},
			)
		: env.credential;
	const created: Array<{ id: string; url: string }> = [];
	for (let i = 0; i < triggers; i++) {
		const { webhookId, json } = workflowJson(
			`bench several: account of ${triggers}, trigger ${i + 1} → No Operation`,
			{ id: credential.id, name: credential.name },
		);
		const workflow = await client.createWorkflow(json as never);
		created.push({ id: workflow.id, url: `${env.n8n.url}/webhook/${webhookId}/webhook` });
	}
	// All of the account's triggers at the same moment, as a user activating them would.
	const outcomes = await Promise.all(
		created.map(async (w) => await client.activateAndSettle(w.id)),
	);
	const failed = outcomes.flatMap((o) => (o.ok ? [] : [o.message]));
	if (failed.length) throw new Error(`activating the ${triggers} triggers: ${failed.join(' | ')}`);
	const state = sandbox.state();
	const holder = created.find((w) => w.url === state.webhook.url);
	if (!holder)
		throw new Error(
			`account of ${triggers}: the webhook ${state.webhook.url} is none of its triggers`,
		);
	const members = created.filter((w) => w !== holder);
	// The members are in the holder's static data once their joins were saved (or the heartbeat's, 30 s).
	const deadline = Date.now() + 45_000;
	for (;;) {
		const saved = JSON.stringify(await client.getWorkflow(holder.id));
		if (members.every((m) => saved.includes(m.url))) break;
		if (Date.now() > deadline)
			throw new Error(
				`account of ${triggers}: the members are not in the holder's static data after 45 s`,
			);
		await sleep(500);
	}
	return {
		triggers,
		sandbox,
		ownSandbox,
		workflowIds: created.map((w) => w.id),
		holderId: holder.id,
		holderUrl: holder.url,
		secret: state.webhook.secret ?? '',
	};
}

/** Executions of all workflows (one request, whatever the number of triggers measured). */
async function totalExecutions(env: BenchEnvironment): Promise<number> {
	const data = await env.client.request<{ count: number; estimated: boolean }>(
		'GET',
		`/rest/executions?limit=1&filter=${encodeURIComponent('{}')}`,
	);
	if (data.estimated) throw new Error('n8n only estimated the execution count');
	return data.count;
}

async function counts(env: BenchEnvironment, account: Account): Promise<number[]> {
	const out: number[] = [];
	for (const id of account.workflowIds) out.push(await executionCount(env.client, id));
	return out;
}

async function runOnce(
	env: BenchEnvironment,
	pid: number,
	account: Account,
	rep: number,
	events: number,
	concurrency: number,
): Promise<SeveralRun> {
	const number = account.sandbox.numbers[0].phone_number_id;
	const before = await counts(env, account);
	const totalBefore = await totalExecutions(env);
	const expected = totalBefore + events * account.triggers;
	const cpuBefore = cpuMs(pid);
	const t0 = Date.now();
	const fired = await fire(
		account.holderUrl,
		signedEvents(events, account.secret, number),
		concurrency,
	);
	// Until every workflow stored every event, or nothing moved for 5 s past 60 s.
	let last = -1;
	let lastChange = Date.now();
	for (;;) {
		const total = await totalExecutions(env);
		if (total >= expected) break;
		if (total !== last) {
			last = total;
			lastChange = Date.now();
		}
		if (Date.now() - t0 > 60_000 && Date.now() - lastChange > 5000) break;
		await sleep(200);
	}
	const stored = Date.now();
	const cpuAfter = cpuMs(pid);
	const after = await counts(env, account);
	const delta = after.map((n, i) => n - before[i]);
	const holderIndex = account.workflowIds.indexOf(account.holderId);
	const holderExecutions = delta[holderIndex];
	const memberExecutions = delta.reduce((a, b) => a + b, 0) - holderExecutions;
	const latencies = [...fired.latencies].sort((a, b) => a - b);
	return {
		triggers: account.triggers,
		rep,
		events,
		ok_2xx: fired.ok,
		holder_executions: holderExecutions,
		member_executions: memberExecutions,
		forwards_per_event: memberExecutions / events,
		events_per_s: (events / (stored - t0)) * 1000,
		answered_per_s: (events / fired.wallMs) * 1000,
		p50_ms: quantile(latencies, 0.5),
		p99_ms: quantile(latencies, 0.99),
		cpu_ms_per_event: (cpuAfter - cpuBefore) / events,
		cpu_ms_per_execution: (cpuAfter - cpuBefore) / (events * account.triggers),
		load_average_1m: Math.round(loadavg()[0] * 100) / 100,
	};
}

export async function runSeveralBench(
	setup: { tarball: string; outDir: string; keep?: boolean },
	options: SeveralOptions,
): Promise<SeveralResult> {
	const env = await startBenchEnvironment({ ...setup, logName: 'n8n-several.log' });
	const extra: Sandbox[] = [];
	try {
		const pid = env.n8n.child.pid as number;
		const accounts: Account[] = [];
		for (const [i, triggers] of options.triggers.entries()) {
			let sandbox = env.sandbox;
			if (i > 0) {
				sandbox = await launchSandbox();
				extra.push(sandbox);
			}
			const account = await setUpAccount(env, triggers, sandbox, i > 0);
			log(
				`  account of ${triggers} trigger(s): holder ${account.holderId}, ${triggers - 1} member(s) in its static data`,
			);
			accounts.push(account);
		}
		for (const account of accounts)
			await runOnce(env, pid, account, 0, WARM_UP_EVENTS, options.concurrency);
		const runs: SeveralRun[] = [];
		for (let rep = 1; rep <= options.reps; rep++) {
			// Rotate the order each round: no account always runs right after the busiest one.
			const order = accounts.map((_, i) => accounts[(i + rep - 1) % accounts.length]);
			for (const account of order) {
				const run = await runOnce(env, pid, account, rep, options.events, options.concurrency);
				runs.push(run);
				log(
					`  ${account.triggers} trigger(s) rep ${rep}: ${run.events_per_s.toFixed(1)} events/s stored in all (${run.answered_per_s.toFixed(1)} answered/s), cpu ${run.cpu_ms_per_event.toFixed(1)} ms/event (${run.cpu_ms_per_execution.toFixed(1)} per execution), forwards/event ${run.forwards_per_event.toFixed(2)}, 2xx ${run.ok_2xx}/${run.events}, holder ${run.holder_executions}, members ${run.member_executions}, load ${run.load_average_1m}`,
				);
				await sleep(2000);
			}
		}
		const summary = options.triggers.map((triggers) => {
			const of = runs.filter((r) => r.triggers === triggers);
			const base = (rep: number) =>
				runs.find((r) => r.triggers === options.triggers[0] && r.rep === rep);
			const vs = (pick: (r: SeveralRun) => number) =>
				spread(
					of.flatMap((r) => {
						const b = base(r.rep);
						return b ? [pick(r) / pick(b)] : [];
					}),
				);
			return {
				triggers,
				events_per_s: spread(of.map((r) => r.events_per_s)),
				answered_per_s: spread(of.map((r) => r.answered_per_s)),
				cpu_ms_per_event: spread(of.map((r) => r.cpu_ms_per_event)),
				cpu_ms_per_execution: spread(of.map((r) => r.cpu_ms_per_execution)),
				forwards_per_event: spread(of.map((r) => r.forwards_per_event)),
				p99_ms: spread(of.map((r) => r.p99_ms)),
				events_per_s_vs_1: vs((r) => r.events_per_s),
				cpu_per_event_vs_1: vs((r) => r.cpu_ms_per_event),
				all_stored: of.every(
					(r) =>
						r.ok_2xx === r.events &&
						r.holder_executions === r.events &&
						r.member_executions === r.events * (triggers - 1),
				),
			};
		});
		return { options, runs, summary };
	} finally {
		await env.stop();
		for (const sandbox of extra) await sandbox.close();
	}
}
