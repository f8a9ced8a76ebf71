/**
 * Benchmark "combine-quiet": Combine a Contact's Messages before against after a change, side by
 * side in one run, on both n8n lines (BENCH_LINES=2 or 1 for one). "before" is a build of another
 * commit (BENCH_BEFORE, `main` by default; packed from a `git worktree` of it in /tmp, removed
 * after), "after" the package this run packed. Per line, two n8n (one per build, each with its own
 * sandbox) as production installations run them (issue 43): N8N_CONCURRENCY_PRODUCTION_LIMIT=5,
 * successful executions not saved; the auto-reply example with Combine on (Quiet Period 3 s). The
 * "after" n8n also holds the anchor: n8n's floor for the same burst, a minimal community trigger
 * (bench/minimal-trigger) → Reply, on a sandbox of its own. Runs alternate before, after, anchor,
 * anchor, after, before, ... Per run:
 *  - `contacts` contacts × `perContact` messages `spacingMs` apart (contacts side by side): the
 *    service's deliveries answered 2xx within its 8 s; a burst's last message (its stored
 *    created_at) → its reply (the anchor: each contact's last message → its reply);
 *  - n8n's executions and the time they ran (its /metrics histogram
 *    n8n_workflow_execution_duration_seconds, 2.x: the time each holds a concurrency slot), per burst;
 *  - then one contact alone, `perContact` messages 1 s apart: its last message → its reply.
 * Every message once, in order (the replies, tallied), is checked as in the combine benchmark.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { REPO_ROOT, type Line } from '../test/real-n8n/n8n';
import { COMBINED_PREFIX, tallyBursts, type SentMessage } from '../test/real-n8n/bursts';
import { launchSandbox, SandboxControl, type Sandbox } from '../test/real-n8n/sandbox';
import { log, sleep } from '../test/real-n8n/util';
import { CREDENTIAL_TYPE } from '../test/support/constants';
import { activate, latency, type Latency, type Target } from './combine';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { quantile } from './lib/stats';
import { packMinimalTrigger } from './webhooks';

export type Build = 'before' | 'after';
/** The builds and the anchor (n8n's floor for the same burst). */
export type QuietBuild = Build | 'anchor';

export interface QuietOptions {
	contacts: number;
	perContact: number;
	/** Between two messages of one contact (contacts side by side). */
	spacingMs: number;
	/** N8N_CONCURRENCY_PRODUCTION_LIMIT (successful executions then not saved); undefined: n8n's defaults. */
	concurrencyLimit?: number;
	/** More n8n settings for both builds (goal 3: N8N_EXPRESSION_ENGINE_POOL_SIZE, ...). */
	n8nEnv?: Record<string, string>;
	quietS: number;
	catchUpIntervalS: number;
	/** Runs of each build per line (alternating). */
	reps: number;
	lines: Line[];
}

export const DEFAULT_QUIET_OPTIONS: QuietOptions = {
	contacts: 30,
	perContact: 3,
	spacingMs: 300,
	concurrencyLimit: 5,
	quietS: 3,
	catchUpIntervalS: 10,
	reps: 2,
	lines: [2, 1],
};

export interface QuietRun {
	line: Line;
	build: QuietBuild;
	rep: number;
	deliveries: number;
	delivered_2xx: number;
	/** A burst's last message → its reply, ms, per contact (the anchor: the last message's reply). */
	to_reply_ms: number[];
	/** n8n's executions during the burst (until its replies), and the seconds they ran; null: no metric (1.x). */
	executions: number | null;
	execution_seconds: number | null;
	/** One contact alone: last message → reply, ms. */
	alone_ms: number[];
	replies: number;
	lost: number;
	twice: number;
	out_of_order: number;
	load_average_1m: number;
}

export interface BuildSummary {
	delivered_2xx: number;
	deliveries: number;
	to_reply: Latency;
	alone: Latency;
	executions_per_burst: number | null;
	/** Mean time an execution ran (held a slot), ms. */
	slot_ms_per_execution: number | null;
	slot_ms_per_burst: number | null;
}

export interface QuietLineSummary {
	line: Line;
	n8n: string;
	before: BuildSummary;
	after: BuildSummary;
	anchor: BuildSummary;
	/** after / before, p50 and p95 of last message → reply. */
	ratio_p50: number;
	ratio_p95: number;
	/** Per build: every run once, in order, every reply (the anchor: one per message). */
	clean: Record<QuietBuild, boolean>;
	all_clean: boolean;
}

export interface QuietResult {
	options: QuietOptions;
	before_commit: string;
	after_commit: string;
	runs: QuietRun[];
	lines: QuietLineSummary[];
	load_average: { start: number[]; end: number[] };
}

const git = (args: string[], cwd = REPO_ROOT) => {
	const result = spawnSync('git', args, { cwd, encoding: 'utf8' });
	if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.stderr}`);
	return result.stdout.trim();
};

/** `ref` checked out in a worktree under /tmp, built with this checkout's node_modules, packed into outDir. */
export function packCommit(ref: string, outDir: string): { tarball: string; commit: string } {
	const commit = git(['rev-parse', ref]);
	const dir = `/tmp/bm-bench-before-${commit.slice(0, 10)}`;
	if (!existsSync(dir)) git(['worktree', 'add', '--detach', dir, commit]);
	try {
		if (!existsSync(join(dir, 'node_modules')))
			symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
		const build = spawnSync('npm', ['run', 'build'], { cwd: dir, encoding: 'utf8' });
		if (build.status !== 0)
			throw new Error(`build of ${ref} failed:\n${build.stdout}${build.stderr}`);
		mkdirSync(outDir, { recursive: true });
		for (const file of readdirSync(outDir)) if (file.endsWith('.tgz')) rmSync(join(outDir, file));
		const pack = spawnSync('npm', ['pack', '--silent', '--pack-destination', outDir], {
			cwd: dir,
			encoding: 'utf8',
		});
		const name = pack.stdout.trim().split('\n').pop() ?? '';
		if (pack.status !== 0 || !name.endsWith('.tgz'))
			throw new Error(`npm pack of ${ref} failed:\n${pack.stdout}${pack.stderr}`);
		return { tarball: join(outDir, name), commit };
	} finally {
		git(['worktree', 'remove', '--force', dir]);
	}
}

/** Sum and count of n8n's execution-duration histogram (every workflow); null without it (1.x). */
async function executionMetrics(
	env: BenchEnvironment,
): Promise<{ count: number; sum: number } | null> {
	const response = await fetch(`${env.n8n.url}/metrics`, { signal: AbortSignal.timeout(10_000) });
	if (!response.ok) return null;
	let count = 0;
	let sum = 0;
	let found = false;
	for (const line of (await response.text()).split('\n')) {
		const match = /^n8n_workflow_execution_duration_seconds_(count|sum)(\{[^}]*\})? (\S+)$/.exec(
			line,
		);
		if (!match) continue;
		found = true;
		if (match[1] === 'count') count += Number(match[3]);
		else sum += Number(match[3]);
	}
	// 2.x prints the histogram once an execution has ended; 1.x has none.
	return found || env.installation.version.startsWith('2.') ? { count, sum } : null;
}

/** The anchor: a minimal community trigger → Reply ("got: <text>"), on a sandbox of its own. */
async function activateAnchor(env: BenchEnvironment): Promise<Target> {
	const sandbox = await launchSandbox();
	const credential = await env.client.createCredential(
		'Business Messaging (anchor)',
		CREDENTIAL_TYPE,
		{
			apiKey: sandbox.keys.all,
			baseUrl: sandbox.baseUrl,
			webhookSecret: '',
		},
	);
	const webhookId = randomUUID();
	const workflow = await env.client.createWorkflow({
		name: 'bench: anchor, minimal trigger → Reply',
		nodes: [
			{
				id: randomUUID(),
				name: 'Trigger',
				type: 'n8n-nodes-bench-minimal-trigger.minimalTrigger',
				typeVersion: 2,
				position: [0, 0],
				webhookId,
				parameters: {},
			},
			{
				id: randomUUID(),
				name: 'Reply',
				type: 'n8n-nodes-business-messaging.businessMessaging',
				typeVersion: 1,
				position: [260, 0],
				parameters: {
					resource: 'message',
					operation: 'reply',
					to: '={{ $json.data.from }}',
					from: '={{ $json.data.number }}',
					text: `=${COMBINED_PREFIX}{{ $json.data.text }}`,
				},
				credentials: { businessMessagingApi: { id: credential.id, name: credential.name } },
			},
		],
		connections: { Trigger: { main: [[{ node: 'Reply', type: 'main', index: 0 }]] } },
	} as never);
	const outcome = await env.client.activateAndSettle(workflow.id);
	if (!outcome.ok) throw new Error(`activating the anchor failed: ${outcome.message}`);
	const registered = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
		method: 'POST',
		headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
		body: JSON.stringify({ url: `${env.n8n.url}/webhook/${webhookId}/webhook` }),
	});
	if (!registered.ok) throw new Error(`the anchor's webhook: ${registered.status}`);
	return {
		variant: 'off',
		sandbox,
		control: new SandboxControl(sandbox.baseUrl),
		workflowId: workflow.id,
		triggerName: 'Trigger',
	};
}

async function waitForReplies(target: Target, sent: SentMessage[], quietS: number) {
	let tally = tallyBursts(target.sandbox.state(), sent);
	const deadline = Date.now() + 180_000;
	while (tally.lost > 0 && Date.now() < deadline) {
		await sleep(500);
		tally = tallyBursts(target.sandbox.state(), sent);
	}
	// A double, or an execution that emits nothing, ends within about a quiet period.
	await sleep((quietS + 2) * 1000);
	return tallyBursts(target.sandbox.state(), sent);
}

async function oneRun(
	env: BenchEnvironment,
	target: Target,
	line: Line,
	build: QuietBuild,
	rep: number,
	options: QuietOptions,
): Promise<QuietRun> {
	const number = target.sandbox.numbers[0].phone_number_id;
	const tag = `${line}${build[0]}${rep}`;
	const code = { before: 1, after: 2, anchor: 3 }[build];
	const contacts: SentMessage[][] = [];
	for (let c = 0; c < options.contacts; c++) {
		const from = `+3366${line}${code}${String(rep).padStart(2, '0')}${String(10_000 + c).slice(1)}`;
		contacts.push(
			Array.from({ length: options.perContact }, (_, i) => ({
				from,
				number,
				text: `${tag} m${i + 1} ${from}`,
			})),
		);
	}
	const sent = contacts.flat();
	const delivered: boolean[] = [];
	const send = async (m: SentMessage) => {
		const out = await target.control
			.inbound({ ...m, contact_name: 'Bench' })
			.catch(() => undefined);
		delivered.push(out?.delivery.delivered === true);
	};
	const metricsBefore = await executionMetrics(env);
	const t0 = Date.now();
	// Each message at its time, whether or not n8n has answered the one before (as a contact writes).
	await Promise.all(
		contacts.flatMap((messages) =>
			messages.map(async (m, i) => {
				await sleep(Math.max(0, t0 + i * options.spacingMs - Date.now()));
				await send(m);
			}),
		),
	);
	const tally = await waitForReplies(target, sent, options.quietS);
	const metricsAfter = await executionMetrics(env);
	const lastTexts = new Set(contacts.map((messages) => messages[messages.length - 1].text));
	// Combine: each burst's reply (its newest message); the anchor: the reply to each last message.
	const toReply = tally.perReply
		.filter((r) => build !== 'anchor' || lastTexts.has(r.newestText))
		.map((r) => r.latencyMs);
	await sleep(options.catchUpIntervalS * 1000);

	// One contact alone, messages 1 s apart.
	const alone: SentMessage[] = [];
	const from = `+3367${String(rep).padStart(2, '0')}${line}${code}0000`;
	for (let i = 1; i <= options.perContact; i++)
		alone.push({ from, number, text: `${tag} alone ${i}` });
	for (const [i, m] of alone.entries()) {
		if (i > 0) await sleep(1000);
		await send(m);
	}
	const aloneTally = await waitForReplies(target, alone, options.quietS);
	const aloneMs = aloneTally.perReply
		.filter((r) => build !== 'anchor' || r.newestText === alone[alone.length - 1].text)
		.map((r) => r.latencyMs);
	const anchor = build === 'anchor';
	return {
		line,
		build,
		rep,
		deliveries: sent.length,
		delivered_2xx: delivered.slice(0, sent.length).filter(Boolean).length,
		to_reply_ms: toReply,
		executions: metricsBefore && metricsAfter ? metricsAfter.count - metricsBefore.count : null,
		execution_seconds: metricsBefore && metricsAfter ? metricsAfter.sum - metricsBefore.sum : null,
		alone_ms: aloneMs,
		// The anchor replies to every message: one reply per message is its "once".
		replies: tally.replies + aloneTally.replies,
		lost: tally.lost + aloneTally.lost,
		twice: tally.twice + aloneTally.twice,
		out_of_order: anchor ? 0 : tally.outOfOrder + aloneTally.outOfOrder,
		load_average_1m: loadavg()[0],
	};
}

const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function summary(runs: QuietRun[], contacts: number): BuildSummary {
	const sum = (values: Array<number | null>) =>
		values.some((v) => v === null) ? null : values.reduce<number>((a, v) => a + (v ?? 0), 0);
	const executions = sum(runs.map((r) => r.executions));
	const seconds = sum(runs.map((r) => r.execution_seconds));
	const bursts = runs.length * contacts;
	return {
		delivered_2xx: runs.reduce((a, r) => a + r.delivered_2xx, 0),
		deliveries: runs.reduce((a, r) => a + r.deliveries, 0),
		to_reply: latency(runs.flatMap((r) => r.to_reply_ms)),
		alone: latency(runs.flatMap((r) => r.alone_ms)),
		executions_per_burst: executions === null || bursts === 0 ? null : executions / bursts,
		slot_ms_per_execution:
			executions === null || seconds === null || executions === 0
				? null
				: (seconds * 1000) / executions,
		slot_ms_per_burst: seconds === null || bursts === 0 ? null : (seconds * 1000) / bursts,
	};
}

export async function runQuietBench(
	setup: { afterTarball: string; beforeRef: string; outDir: string; keep?: boolean },
	options: QuietOptions = DEFAULT_QUIET_OPTIONS,
): Promise<QuietResult> {
	const start = loadavg();
	const before = packCommit(setup.beforeRef, join(setup.outDir, 'before'));
	const minimal = packMinimalTrigger(setup.outDir);
	log(
		`combine-quiet: before = ${setup.beforeRef} (${before.commit.slice(0, 7)}), after = this checkout`,
	);
	const tarballs = { before: before.tarball, after: setup.afterTarball };
	const limited: Record<string, string> =
		options.concurrencyLimit === undefined
			? {}
			: {
					N8N_CONCURRENCY_PRODUCTION_LIMIT: String(options.concurrencyLimit),
					EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'none',
				};
	const runs: QuietRun[] = [];
	const lines: QuietLineSummary[] = [];
	const sandboxes: Sandbox[] = [];
	for (const line of options.lines) {
		const envs: Partial<Record<'before' | 'after', BenchEnvironment>> = {};
		try {
			const targets: Partial<Record<QuietBuild, Target>> = {};
			for (const build of ['before', 'after'] as const) {
				const env = await startBenchEnvironment({
					tarball: tarballs[build],
					extraTarballs: build === 'after' ? [minimal] : [],
					outDir: setup.outDir,
					keep: setup.keep,
					logName: `n8n-combine-quiet-${line}-${build}.log`,
					line,
					env: { ...limited, N8N_METRICS: 'true', ...options.n8nEnv },
				});
				envs[build] = env;
				targets[build] = await activate(env, 'on', env.sandbox, env.credential.id, options);
			}
			targets.anchor = await activateAnchor(envs.after!);
			sandboxes.push(targets.anchor.sandbox);
			await sleep(3000);
			const envOf = (build: QuietBuild) => envs[build === 'before' ? 'before' : 'after']!;
			for (let rep = 1; rep <= options.reps; rep++) {
				const order: QuietBuild[] =
					rep % 2 ? ['before', 'after', 'anchor'] : ['anchor', 'after', 'before'];
				for (const build of order) {
					const run = await oneRun(envOf(build), targets[build]!, line, build, rep, options);
					runs.push(run);
					log(
						`  line ${line} ${build} #${rep}: deliveries 2xx ${run.delivered_2xx}/${run.deliveries}; last message → reply p50 ${sec(quantile(run.to_reply_ms, 0.5))} p95 ${sec(quantile(run.to_reply_ms, 0.95))} (${run.to_reply_ms.length}); executions ${run.executions ?? '?'} running ${run.execution_seconds?.toFixed(1) ?? '?'} s; alone ${run.alone_ms.map(sec).join(', ')}; ${run.replies} replies, lost ${run.lost}, twice ${run.twice}, out of order ${run.out_of_order}; load ${run.load_average_1m.toFixed(1)}`,
					);
					await sleep(options.catchUpIntervalS * 1000);
				}
			}
			const of = (build: QuietBuild) =>
				summary(
					runs.filter((r) => r.line === line && r.build === build),
					options.contacts,
				);
			const [b, a, anchor] = [of('before'), of('after'), of('anchor')];
			const isClean = (r: QuietRun) =>
				r.lost === 0 &&
				r.twice === 0 &&
				r.out_of_order === 0 &&
				r.replies ===
					(r.build === 'anchor'
						? (options.contacts + 1) * options.perContact
						: options.contacts + 1);
			lines.push({
				line,
				n8n: envs.after!.installation.version,
				before: b,
				after: a,
				anchor,
				ratio_p50: a.to_reply.p50_ms / b.to_reply.p50_ms,
				ratio_p95: a.to_reply.p95_ms / b.to_reply.p95_ms,
				clean: Object.fromEntries(
					(['before', 'after', 'anchor'] as const).map((build) => [
						build,
						runs.filter((r) => r.line === line && r.build === build).every(isClean),
					]),
				) as Record<QuietBuild, boolean>,
				all_clean: runs.filter((r) => r.line === line).every(isClean),
			});
		} finally {
			for (const env of Object.values(envs)) await env?.stop();
			for (const sandbox of sandboxes.splice(0)) await sandbox.close();
		}
	}
	return {
		options,
		before_commit: before.commit,
		after_commit: git(['rev-parse', 'HEAD']),
		runs,
		lines,
		load_average: { start, end: loadavg() },
	};
}

const perBurst = (value: number | null, digits = 1) =>
	value === null ? 'n/a' : value.toFixed(digits);

/** The result as a Markdown table, one row per line and build. */
export function quietTable(result: QuietResult): string {
	const o = result.options;
	const rows = result.lines.flatMap((l) =>
		(['before', 'after', 'anchor'] as const).map((build) => {
			const s = l[build];
			const ratio =
				build === 'after' ? `${l.ratio_p50.toFixed(2)}x / ${l.ratio_p95.toFixed(2)}x` : '';
			const name =
				build === 'anchor'
					? 'anchor (minimal trigger → Reply)'
					: `${build} (${(build === 'before' ? result.before_commit : result.after_commit).slice(0, 7)})`;
			const share = s.deliveries ? ((100 * s.delivered_2xx) / s.deliveries).toFixed(0) : '?';
			return `| ${l.n8n} | ${name} | ${s.delivered_2xx}/${s.deliveries} (${share}%) | ${sec(s.to_reply.p50_ms)} / ${sec(s.to_reply.p95_ms)} (${s.to_reply.n}) | ${ratio} | ${perBurst(s.executions_per_burst, 2)} | ${perBurst(s.slot_ms_per_execution, 0)} ms / ${perBurst(s.slot_ms_per_burst, 0)} ms | ${sec(s.alone.p50_ms)} (${sec(s.alone.max_ms)}, ${s.alone.n}) | ${l.clean[build] ? 'yes' : 'NO'} |`;
		}),
	);
	const limit =
		o.concurrencyLimit === undefined
			? "n8n's defaults"
			: `N8N_CONCURRENCY_PRODUCTION_LIMIT=${o.concurrencyLimit}, successful executions not saved`;
	const more = Object.entries(o.n8nEnv ?? {})
		.map(([key, value]) => `, ${key}=${value}`)
		.join('');
	return [
		`${o.contacts} contacts × ${o.perContact} messages ${o.spacingMs} ms apart, Quiet Period ${o.quietS} s, ${limit}${more}; ${o.reps} runs of each per line, alternating; load average ${result.load_average.start.map((v) => v.toFixed(1)).join(' ')} at start, ${result.load_average.end.map((v) => v.toFixed(1)).join(' ')} at end. Goal (issue 43): ≥ 95% of deliveries 2xx within 8 s, last message → item ≤ quiet period + 2 s (p50); the anchor replies to every message (its figure: the last message's reply)`,
		'',
		'| n8n | build | deliveries 2xx within 8 s | last message → reply p50 / p95 (n) | after / before (p50 / p95) | executions per burst | time an execution runs (holds a slot) / per burst | alone: last message → reply p50 (max, n) | every message once, in order |',
		'|---|---|---|---|---|---|---|---|---|',
		...rows,
	].join('\n');
}
