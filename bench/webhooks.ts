/**
 * Benchmark 2: signed events through real n8n 2.41.1 (1.123.81 with BENCH_LINES=1), in n8n
 * instances started side by side (default settings, N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true,
 * N8N_EXPRESSION_ENGINE=legacy), each
 * with the same active workflows, every one ending in a No Operation node:
 *
 *   webhook      n8n's Webhook node (POST, respond immediately; verifies nothing)
 *   pipeline     Webhook → Crypto (HMAC-SHA256 of the re-serialized body) → IF (equals the
 *                X-Service-Signature header): signature checking as users build it by hand
 *   minimal      a minimal community trigger (bench/minimal-trigger: webhook() returns the body,
 *                no checks, version 2), packed and installed like ours: the floor
 *   ours-auto    Business Messaging Trigger v2, Automatic registration (sealed secret)
 *   ours-manual  Business Messaging Trigger v2, Manual registration (the credential's secret)
 *   ours-v1      Business Messaging Trigger v1, Manual registration (what existing workflows run)
 *
 * Rounds are interleaved: for each repetition and concurrency, every instance runs every variant
 * (orders rotate), so ratios compare runs measured moments apart. Per run: events/s (events /
 * wall time from the first request to the last answer), p50/p99 of the time to the answer, 2xx
 * count and the executions n8n recorded (waited for before the next run), CPU time of the n8n
 * process per event (/proc, user + system, from the first request until the executions are
 * stored), expression isolates per event (n8n's /metrics counter
 * n8n_expression_pool_acquired_total; the legacy engine has none), and the load average.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

import { REPO_ROOT, type Line } from '../test/real-n8n/n8n';
import { CREDENTIAL_TYPE, TRIGGER_TYPE } from '../test/support/constants';
import { log } from '../test/real-n8n/util';
import { inboundEnvelope, serviceTimestamp, SIGNING_SECRET } from '../test/support/fixtures';
import { signBody } from '../test/support/signature';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import {
	awaitExecutionCount,
	createManualCredential,
	executionCount,
	node,
	readExecution,
} from './lib/n8n';
import { median, quantile, spread, type Spread } from './lib/stats';

export const INSTANCES = {
	default: { label: 'default settings', env: {} as Record<string, string> },
	lazy: {
		label: 'N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true',
		env: { N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE: 'true' },
	},
	legacy: { label: 'N8N_EXPRESSION_ENGINE=legacy', env: { N8N_EXPRESSION_ENGINE: 'legacy' } },
	/** Default settings with the build of BENCH_BEFORE (BENCH_INSTANCES=default,before): before against after. */
	before: { label: 'default settings, the BENCH_BEFORE build', env: {} },
} as const;
export type Instance = keyof typeof INSTANCES;

export const VARIANTS = {
	webhook: "n8n's Webhook node (verifies nothing)",
	pipeline: 'Webhook → Crypto (HMAC) → IF, by hand',
	minimal: 'minimal community trigger (floor)',
	'ours-auto': 'Business Messaging Trigger v2, Automatic',
	'ours-manual': 'Business Messaging Trigger v2, Manual',
	'ours-v1': 'Business Messaging Trigger v1, Manual',
} as const;
export type Variant = keyof typeof VARIANTS;

/** What every run of signed events through n8n measures (this benchmark's and the queue-mode one's). */
export interface EventRunMeasures {
	concurrency: number;
	rep: number;
	events: number;
	ok_2xx: number;
	non_2xx: number;
	errors: number;
	wall_ms: number;
	events_per_s: number;
	p50_ms: number;
	p99_ms: number;
	max_ms: number;
	executions_recorded: number;
	failed_executions: number;
}

export interface WebhookRun extends EventRunMeasures {
	instance: Instance;
	variant: Variant;
	cpu_ms_per_event: number;
	isolates_per_event: number | null;
	load_average_1m: number;
}

export interface VariantSummary {
	instance: Instance;
	variant: Variant;
	concurrency: number;
	events_per_run: number;
	events_per_s: number;
	/** Per repetition: this variant / the minimal trigger, and / the Webhook node, in the same round. */
	vs_floor: Spread;
	vs_webhook: Spread;
	cpu_ms_per_event: Spread;
	isolates_per_event: number | null;
	p50_ms: number;
	p99_ms: number;
	load_average_1m: Spread;
}

export interface WebhookResult {
	reps: number;
	runs: WebhookRun[];
	summary: VariantSummary[];
	totals: Array<{
		instance: Instance;
		variant: Variant;
		events: number;
		ok_2xx: number;
		executions_recorded: number;
		lost: number;
		failed_executions: number;
	}>;
}

export interface WebhookOptions {
	concurrencies: number[];
	reps: number;
	eventsFor: (instance: Instance, concurrency: number) => number;
	instances?: Instance[];
}

export const DEFAULT_WEBHOOK_OPTIONS: WebhookOptions = {
	concurrencies: [1, 8, 32],
	reps: 3,
	// The default engine takes 5-25 events/s on a shared 2-core machine, the other two several times more.
	eventsFor: (instance, c) =>
		(instance === 'default' || instance === 'before' ? 1 : 2) * (c === 1 ? 40 : c === 8 ? 80 : 100),
};

/** BENCH_LINES=1: every instance on n8n 1.123.81 (Node 20) instead of 2.41.1. */
export function webhookBenchLine(): Line {
	return process.env.BENCH_LINES?.split(',')[0] === '1' ? 1 : 2;
}

/** A signed event, built when it is sent. */
export type SignedEvent = () => { body: Buffer; signature: string };

/**
 * `count` distinct message.inbound envelopes (about 420 bytes each), each stamped and signed when
 * it is sent, as the service does: a batch built ahead would look late to the trigger's Late
 * Delivery Cutoff (5 s) by the end of a slow run and be answered 503.
 */
export function signedEvents(count: number, secret: string, number: string): SignedEvent[] {
	return Array.from({ length: count }, (_, i) => () => {
		const body = Buffer.from(
			JSON.stringify(
				inboundEnvelope(
					{
						from: `+1555${String(1_000_000 + i).padStart(7, '0')}`,
						contact_name: `Bench contact ${i}`,
						number,
						wa_message_id: `wamid.${randomBytes(24).toString('base64url')}`,
						text: `Hello, is my order ${i} on its way? Merci beaucoup !`,
					},
					serviceTimestamp(),
				),
			),
		);
		return { body, signature: signBody(body, secret) };
	});
}

interface Fired {
	latencies: number[];
	ok: number;
	non2xx: number;
	errors: number;
	wallMs: number;
	firstProblem?: string;
}

/** Sends every event once, `concurrency` at a time over as many keep-alive connections. */
/** A run's measures from what fire() saw and the executions n8n recorded for it. */
export function eventRunMeasures(
	concurrency: number,
	rep: number,
	events: number,
	fired: Fired,
	recorded: number,
	failed: number,
): EventRunMeasures {
	return {
		concurrency,
		rep,
		events,
		ok_2xx: fired.ok,
		non_2xx: fired.non2xx,
		errors: fired.errors,
		wall_ms: fired.wallMs,
		events_per_s: (events / fired.wallMs) * 1000,
		p50_ms: quantile(fired.latencies, 0.5),
		p99_ms: quantile(fired.latencies, 0.99),
		max_ms: Math.max(...fired.latencies),
		executions_recorded: recorded,
		failed_executions: failed,
	};
}

export async function fire(
	url: string,
	events: SignedEvent[],
	concurrency: number,
): Promise<Fired> {
	const target = new URL(url);
	const pool = new Pool(target.origin, {
		connections: concurrency,
		pipelining: 1,
		headersTimeout: 30_000,
		bodyTimeout: 30_000,
	});
	const latencies: number[] = [];
	let ok = 0;
	let non2xx = 0;
	let errors = 0;
	let firstProblem: string | undefined;
	let next = 0;
	const worker = async () => {
		for (;;) {
			const i = next++;
			if (i >= events.length) return;
			const event = events[i]();
			const started = performance.now();
			try {
				const response = await pool.request({
					path: target.pathname,
					method: 'POST',
					headers: { 'content-type': 'application/json', 'x-service-signature': event.signature },
					body: event.body,
				});
				const text = await response.body.text();
				latencies.push(performance.now() - started);
				if (response.statusCode >= 200 && response.statusCode < 300) ok++;
				else {
					non2xx++;
					firstProblem ??= `${response.statusCode} ${text.slice(0, 200)}`;
				}
			} catch (error) {
				errors++;
				firstProblem ??= (error as Error).message;
			}
		}
	};
	const started = performance.now();
	await Promise.all(Array.from({ length: concurrency }, worker));
	const wallMs = performance.now() - started;
	await pool.close();
	return { latencies, ok, non2xx, errors, wallMs, firstProblem };
}

const CLOCK_TICKS =
	Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU time (user + system, ms) of a process and its descendants, from /proc. */
export function cpuMs(pid: number): number {
	const ticks = (p: number) => {
		try {
			// Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
			const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
			const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
			return Number(fields[11]) + Number(fields[12]);
		} catch {
			return 0;
		}
	};
	const children = (p: number): number[] => {
		try {
			return readdirSync(`/proc/${p}/task`).flatMap((task) =>
				readFileSync(`/proc/${p}/task/${task}/children`, 'utf8')
					.trim()
					.split(/\s+/)
					.filter(Boolean)
					.map(Number),
			);
		} catch {
			return [];
		}
	};
	let total = 0;
	const queue = [pid];
	while (queue.length) {
		const p = queue.shift() as number;
		total += ticks(p);
		queue.push(...children(p));
	}
	return (total * 1000) / CLOCK_TICKS;
}

/** n8n_expression_pool_acquired_total from /metrics (null when the engine exposes none: legacy). */
export async function isolatesAcquired(baseUrl: string): Promise<number | null> {
	const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
	if (!response.ok)
		throw new Error(`GET /metrics answered ${response.status}: start n8n with N8N_METRICS=true`);
	const text = await response.text();
	const line = text
		.split('\n')
		.find((l) => /^n8n_expression_pool_acquired_total(\{[^}]*\})? /.test(l));
	return line ? Number(line.split(' ').pop()) : null;
}

/** npm pack of bench/minimal-trigger into outDir. */
export function packMinimalTrigger(outDir: string): string {
	const dir = join(REPO_ROOT, 'bench', 'minimal-trigger');
	for (const file of readdirSync(outDir))
		if (file.startsWith('n8n-nodes-bench-minimal-trigger')) rmSync(join(outDir, file));
	const name =
		execFileSync('npm', ['pack', '--silent', '--pack-destination', outDir], {
			cwd: dir,
			encoding: 'utf8',
		})
			.trim()
			.split('\n')
			.pop() ?? '';
	return join(outDir, name);
}

interface Target {
	url: string;
	workflowId: string;
	secret: string;
	/** The node that runs last when the event went all the way (the pipeline's IF passed). */
	lastNode: string;
}

/** Creates and activates the chosen workflows in one instance; returns where to post and how to sign. */
async function setUp(env: BenchEnvironment, variants: Variant[]): Promise<Record<Variant, Target>> {
	const { client, control } = env;
	const manualCredential = await createManualCredential(client, env.sandbox);
	// Only for the pipeline: n8n 1.x has no 'crypto' credential type.
	const cryptoCredential = variants.includes('pipeline')
		? await client.createCredential('HMAC (bench)', 'crypto', { hmacSecret: SIGNING_SECRET })
		: { id: '', name: '' };
	const noOp = (x: number) => node('Done', 'n8n-nodes-base.noOp', 1, {}, x);
	const toDone = (from: string) => ({
		[from]: { main: [[{ node: 'Done', type: 'main', index: 0 }]] },
	});
	const webhookNode = (path: string) =>
		node(
			'Webhook',
			'n8n-nodes-base.webhook',
			2.1,
			{ httpMethod: 'POST', path, responseMode: 'onReceived', options: {} },
			0,
			{
				webhookId: randomUUID(),
			},
		);
	const ids = { auto: randomUUID(), manual: randomUUID(), v1: randomUUID(), minimal: randomUUID() };
	const ourTrigger = (
		version: number,
		registration: string,
		webhookId: string,
		credential: { id: string; name: string },
	) =>
		node(
			'Trigger',
			TRIGGER_TYPE,
			version,
			{ registration, events: ['message.inbound'], options: {} },
			0,
			{
				webhookId,
				credentials: { [CREDENTIAL_TYPE]: { id: credential.id, name: credential.name } },
			},
		);
	const webhookPath = `bench-${randomUUID()}`;
	const pipelinePath = `bench-${randomUUID()}`;
	const definitions: Record<Variant, { nodes: unknown[]; connections: Record<string, unknown> }> = {
		webhook: { nodes: [webhookNode(webhookPath), noOp(220)], connections: toDone('Webhook') },
		pipeline: {
			nodes: [
				webhookNode(pipelinePath),
				node(
					'Crypto',
					'n8n-nodes-base.crypto',
					2,
					{
						action: 'hmac',
						type: 'SHA256',
						value: '={{ JSON.stringify($json.body) }}',
						dataPropertyName: 'hmac',
						encoding: 'hex',
					},
					220,
					{
						credentials: { crypto: { id: cryptoCredential.id, name: cryptoCredential.name } },
					},
				),
				node(
					'IF',
					'n8n-nodes-base.if',
					2.2,
					{
						conditions: {
							options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
							conditions: [
								{
									id: randomUUID(),
									leftValue: '={{ "sha256=" + $json.hmac }}',
									rightValue: '={{ $json.headers["x-service-signature"] }}',
									operator: { type: 'string', operation: 'equals' },
								},
							],
							combinator: 'and',
						},
						options: {},
					},
					440,
				),
				noOp(660),
			],
			connections: {
				Webhook: { main: [[{ node: 'Crypto', type: 'main', index: 0 }]] },
				Crypto: { main: [[{ node: 'IF', type: 'main', index: 0 }]] },
				IF: { main: [[{ node: 'Done', type: 'main', index: 0 }], []] },
			},
		},
		minimal: {
			nodes: [
				node('Trigger', 'n8n-nodes-bench-minimal-trigger.minimalTrigger', 2, {}, 0, {
					webhookId: ids.minimal,
				}),
				noOp(220),
			],
			connections: toDone('Trigger'),
		},
		'ours-auto': {
			nodes: [ourTrigger(2, 'automatic', ids.auto, env.credential), noOp(220)],
			connections: toDone('Trigger'),
		},
		'ours-manual': {
			nodes: [ourTrigger(2, 'manual', ids.manual, manualCredential), noOp(220)],
			connections: toDone('Trigger'),
		},
		'ours-v1': {
			nodes: [ourTrigger(1, 'manual', ids.v1, manualCredential), noOp(220)],
			connections: toDone('Trigger'),
		},
	};
	const workflowIds = {} as Record<Variant, string>;
	for (const variant of variants) {
		const workflow = await client.createWorkflow({
			name: `bench: ${VARIANTS[variant]}`,
			...definitions[variant],
		} as never);
		const outcome = await client.activateAndSettle(workflow.id);
		if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
		workflowIds[variant] = workflow.id;
	}
	const state = await control.state();
	if (!state.webhook.configured || !state.webhook.url || !state.webhook.secret) {
		throw new Error('the trigger did not register its webhook with the sandbox');
	}
	const base = env.n8n.url;
	const at = (webhookId: string) => `${base}/webhook/${webhookId}/webhook`;
	return {
		webhook: {
			url: `${base}/webhook/${webhookPath}`,
			workflowId: workflowIds.webhook,
			secret: SIGNING_SECRET,
			lastNode: 'Done',
		},
		pipeline: {
			url: `${base}/webhook/${pipelinePath}`,
			workflowId: workflowIds.pipeline,
			secret: SIGNING_SECRET,
			lastNode: 'Done',
		},
		minimal: {
			url: at(ids.minimal),
			workflowId: workflowIds.minimal,
			secret: SIGNING_SECRET,
			lastNode: 'Done',
		},
		'ours-auto': {
			url: state.webhook.url as string,
			workflowId: workflowIds['ours-auto'],
			secret: state.webhook.secret as string,
			lastNode: 'Done',
		},
		'ours-manual': {
			url: at(ids.manual),
			workflowId: workflowIds['ours-manual'],
			secret: SIGNING_SECRET,
			lastNode: 'Done',
		},
		'ours-v1': {
			url: at(ids.v1),
			workflowId: workflowIds['ours-v1'],
			secret: SIGNING_SECRET,
			lastNode: 'Done',
		},
	};
}

/**
 * Production webhooks answer a moment after activation: wait until each takes a signed event,
 * then for that probe's execution (so no run counts an execution it did not cause), and check
 * that the event went all the way (the pipeline's IF accepted the signature).
 */
async function probe(
	env: BenchEnvironment,
	variant: Variant,
	target: Target,
	number: string,
): Promise<void> {
	const before = await executionCount(env.client, target.workflowId);
	const deadline = Date.now() + 30_000;
	for (;;) {
		const fired = await fire(target.url, signedEvents(1, target.secret, number), 1);
		if (fired.ok === 1) break;
		if (Date.now() > deadline)
			throw new Error(`${variant}: the webhook does not answer 2xx: ${fired.firstProblem}`);
		await new Promise((resolve) => setTimeout(resolve, 500));
	}
	await awaitExecutionCount(env.client, target.workflowId, before + 1);
	const filter = encodeURIComponent(JSON.stringify({ workflowId: target.workflowId }));
	const list = await env.client.request<{ results: Array<{ id: string }> }>(
		'GET',
		`/rest/executions?limit=1&filter=${filter}`,
	);
	const execution = await readExecution(
		env.client,
		(text) => env.parseExecutionData(text),
		list.results[0].id,
	);
	if (!(execution.nodeItems[target.lastNode] > 0)) {
		throw new Error(
			`${variant}: the probe event did not reach "${target.lastNode}" (status ${execution.status})`,
		);
	}
}

export async function runWebhookBench(
	setup: {
		tarball: string;
		minimalTarball: string;
		outDir: string;
		keep?: boolean;
		/** The build the `before` instance runs (BENCH_BEFORE, packed by run.ts). */
		beforeTarball?: string;
	},
	options: WebhookOptions = DEFAULT_WEBHOOK_OPTIONS,
): Promise<WebhookResult> {
	// BENCH_INSTANCES=default,lazy measures only those n8n instances (a shorter run); `before` only
	// when asked, with BENCH_BEFORE's build.
	const chosen = (process.env.BENCH_INSTANCES ?? '')
		.split(',')
		.filter((name): name is Instance => name in INSTANCES);
	const instances =
		options.instances ??
		(chosen.length
			? chosen
			: (Object.keys(INSTANCES) as Instance[]).filter((name) => name !== 'before'));
	if (instances.includes('before') && !setup.beforeTarball)
		throw new Error('the before instance needs BENCH_BEFORE (a commit to pack)');
	const envs = {} as Record<Instance, BenchEnvironment>;
	const targets = {} as Record<Instance, Record<Variant, Target>>;
	// BENCH_VARIANTS=minimal,ours-auto measures only those workflows (a focused run).
	const chosenVariants = (process.env.BENCH_VARIANTS ?? '')
		.split(',')
		.filter((name): name is Variant => name in VARIANTS);
	const variants = chosenVariants.length ? chosenVariants : (Object.keys(VARIANTS) as Variant[]);
	const line = webhookBenchLine();
	try {
		for (const instance of instances) {
			envs[instance] = await startBenchEnvironment({
				tarball: instance === 'before' ? (setup.beforeTarball as string) : setup.tarball,
				extraTarballs: [setup.minimalTarball],
				outDir: setup.outDir,
				keep: setup.keep,
				line,
				env: { ...INSTANCES[instance].env, N8N_METRICS: 'true' },
				logName: `n8n-${instance}.log`,
			});
			targets[instance] = await setUp(envs[instance], variants);
			const number = envs[instance].sandbox.numbers[0].phone_number_id;
			for (const variant of variants)
				await probe(envs[instance], variant, targets[instance][variant], number);
			log(
				`  ${instance}: ${variants.length} workflows active and answering (${INSTANCES[instance].label})`,
			);
		}

		const runs: WebhookRun[] = [];
		const runOne = async (
			instance: Instance,
			variant: Variant,
			concurrency: number,
			rep: number,
			events: number,
			record: boolean,
		) => {
			const env = envs[instance];
			const { url, workflowId, secret } = targets[instance][variant];
			const signed = signedEvents(events, secret, env.sandbox.numbers[0].phone_number_id);
			const before = await executionCount(env.client, workflowId);
			const failedBefore = await executionCount(env.client, workflowId, ['error', 'crashed']);
			const isolatesBefore = await isolatesAcquired(env.n8n.url);
			const pid = env.n8n.child.pid as number;
			const cpuBefore = cpuMs(pid);
			const fired = await fire(url, signed, concurrency);
			const recorded =
				(await awaitExecutionCount(env.client, workflowId, before + fired.ok)) - before;
			const cpuAfter = cpuMs(pid);
			const isolatesAfter = await isolatesAcquired(env.n8n.url);
			const failed =
				(await executionCount(env.client, workflowId, ['error', 'crashed'])) - failedBefore;
			const run: WebhookRun = {
				instance,
				variant,
				...eventRunMeasures(concurrency, rep, events, fired, recorded, failed),
				cpu_ms_per_event: (cpuAfter - cpuBefore) / events,
				isolates_per_event:
					isolatesBefore === null || isolatesAfter === null
						? null
						: (isolatesAfter - isolatesBefore) / events,
				load_average_1m: Math.round(loadavg()[0] * 100) / 100,
			};
			log(
				`  ${record ? '' : '(warm-up) '}${instance.padEnd(7)} ${variant.padEnd(11)} c=${String(concurrency).padEnd(2)} rep ${rep}: ${run.events_per_s.toFixed(1)} ev/s, cpu ${run.cpu_ms_per_event.toFixed(1)} ms/ev, isolates ${run.isolates_per_event === null ? '-' : run.isolates_per_event.toFixed(2)}/ev, p50 ${run.p50_ms.toFixed(0)} ms, p99 ${run.p99_ms.toFixed(0)} ms, 2xx ${run.ok_2xx}/${events}, executions ${recorded}, load ${run.load_average_1m}${fired.firstProblem ? `; first problem: ${fired.firstProblem}` : ''}`,
			);
			if (record) runs.push(run);
		};

		// Warm-up: every workflow once, moderate load, not reported.
		for (const instance of instances)
			for (const variant of variants) await runOne(instance, variant, 8, 0, 40, false);

		let turn = 0;
		const rotate = <T>(list: T[], by: number) => list.map((_, i) => list[(i + by) % list.length]);
		for (let rep = 1; rep <= options.reps; rep++) {
			for (const concurrency of options.concurrencies) {
				for (const instance of rotate(instances, turn)) {
					for (const variant of rotate(variants, turn)) {
						await runOne(
							instance,
							variant,
							concurrency,
							rep,
							options.eventsFor(instance, concurrency),
							true,
						);
					}
				}
				turn++;
			}
		}

		const summary: VariantSummary[] = [];
		const totals: WebhookResult['totals'] = [];
		for (const instance of instances) {
			for (const concurrency of options.concurrencies) {
				const of = (variant: Variant) =>
					runs.filter(
						(r) =>
							r.instance === instance && r.variant === variant && r.concurrency === concurrency,
					);
				for (const variant of variants) {
					const mine = of(variant);
					const ratioTo = (baseline: Variant) =>
						spread(
							mine.map((r) => {
								const other = of(baseline).find((o) => o.rep === r.rep);
								return other ? r.events_per_s / other.events_per_s : Number.NaN;
							}),
						);
					const isolates = mine
						.map((r) => r.isolates_per_event)
						.filter((v): v is number => v !== null);
					summary.push({
						instance,
						variant,
						concurrency,
						events_per_run: options.eventsFor(instance, concurrency),
						events_per_s: median(mine.map((r) => r.events_per_s)),
						vs_floor: ratioTo('minimal'),
						vs_webhook: ratioTo('webhook'),
						cpu_ms_per_event: spread(mine.map((r) => r.cpu_ms_per_event)),
						isolates_per_event: isolates.length ? median(isolates) : null,
						p50_ms: median(mine.map((r) => r.p50_ms)),
						p99_ms: median(mine.map((r) => r.p99_ms)),
						load_average_1m: spread(mine.map((r) => r.load_average_1m)),
					});
				}
			}
			for (const variant of variants) {
				const mine = runs.filter((r) => r.instance === instance && r.variant === variant);
				const sum = (key: keyof WebhookRun) =>
					mine.reduce((total, r) => total + (r[key] as number), 0);
				totals.push({
					instance,
					variant,
					events: sum('events'),
					ok_2xx: sum('ok_2xx'),
					executions_recorded: sum('executions_recorded'),
					lost: sum('ok_2xx') - sum('executions_recorded'),
					failed_executions: sum('failed_executions'),
				});
			}
		}
		return { reps: options.reps, runs, summary, totals };
	} finally {
		for (const instance of instances) await envs[instance]?.stop();
	}
}
