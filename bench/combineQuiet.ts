/**
 * Benchmark "combine-quiet": Combine a Contact's Messages before against after a change, side by
 * side in one run, on both n8n lines. "before" is a build of another commit (BENCH_BEFORE, `main`
 * by default; packed from a `git worktree` of it in /tmp, removed after), "after" the package this
 * run packed. Per line, two n8n (one per build, each with its own sandbox, both up for the line)
 * with the auto-reply example, Combine on (Quiet Period 5 s); runs alternate before, after, after,
 * before, ... Per run:
 *  - `contacts` contacts × `perContact` messages at once: a burst's last message (its stored
 *    created_at) → its item (the trigger's run in its execution: startTime + executionTime), and
 *    → the trigger's execute() starting in that execution (n8n's intake of the last message);
 *  - then one contact alone, `perContact` messages 1 s apart: its last message → its item.
 * Every message once, in order (the replies, tallied), is checked as in the combine benchmark.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { REPO_ROOT, type Line } from '../test/real-n8n/n8n';
import { tallyBursts, type SentMessage } from '../test/real-n8n/bursts';
import { log, sleep } from '../test/real-n8n/util';
import {
	activate,
	lastExecutionId,
	latency,
	triggerRuns,
	type Latency,
	type Target,
} from './combine';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { quantile } from './lib/stats';

export type Build = 'before' | 'after';

export interface QuietOptions {
	contacts: number;
	perContact: number;
	quietS: number;
	catchUpIntervalS: number;
	/** Runs of each build per line (alternating). */
	reps: number;
	lines: Line[];
}

export const DEFAULT_QUIET_OPTIONS: QuietOptions = {
	contacts: 50,
	perContact: 3,
	quietS: 5,
	catchUpIntervalS: 10,
	reps: 2,
	lines: [2, 1],
};

export interface QuietRun {
	line: Line;
	build: Build;
	rep: number;
	/** Burst → item, ms, per contact. */
	to_item_ms: number[];
	/** Burst → the trigger's execute() in the emitting execution (n8n's intake of the last message), ms. */
	intake_ms: number[];
	/** One contact alone: last message → item, ms. */
	alone_ms: number[];
	replies: number;
	lost: number;
	twice: number;
	out_of_order: number;
	load_average_1m: number;
}

export interface QuietLineSummary {
	line: Line;
	n8n: string;
	before: { to_item: Latency; intake: Latency; alone: Latency };
	after: { to_item: Latency; intake: Latency; alone: Latency };
	/** after / before, p50 and p95 of burst → item. */
	ratio_p50: number;
	ratio_p95: number;
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

/** Per emitted item of the runs since `afterId`: last message → item and → execute(). */
async function itemTimes(
	env: BenchEnvironment,
	target: Target,
	afterId: number,
	from: Set<string>,
) {
	const [toItem, intake]: number[][] = [[], []];
	for (const run of await triggerRuns(env, target, afterId)) {
		for (const item of run.items) {
			const records = (item.messages ?? []) as Array<{ created_at?: string; from?: string }>;
			if (!records.some((r) => from.has(String(r.from)))) continue;
			const newest = Math.max(...records.map((r) => Date.parse(String(r.created_at))));
			if (!Number.isFinite(newest)) continue;
			toItem.push(run.atMs - newest);
			intake.push(run.startMs - newest);
		}
	}
	return { toItem, intake };
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
	build: Build,
	rep: number,
	options: QuietOptions,
): Promise<QuietRun> {
	const number = target.sandbox.numbers[0].phone_number_id;
	const tag = `${line}${build === 'before' ? 'b' : 'a'}${rep}`;
	const sent: SentMessage[] = [];
	for (let c = 0; c < options.contacts; c++) {
		const from = `+3366${line}${build === 'before' ? 1 : 2}${String(rep).padStart(2, '0')}${String(10_000 + c).slice(1)}`;
		for (let i = 1; i <= options.perContact; i++)
			sent.push({ from, number, text: `${tag} m${i} ${from}` });
	}
	const send = async (m: SentMessage) =>
		await target.control.inbound({ ...m, contact_name: 'Bench' }).catch(() => undefined);
	let afterId = await lastExecutionId(env, target.workflowId);
	await Promise.all(sent.map(send));
	const tally = await waitForReplies(target, sent, options.quietS);
	const burst = await itemTimes(env, target, afterId, new Set(sent.map((m) => m.from)));
	await sleep(options.catchUpIntervalS * 1000);

	// One contact alone, messages 1 s apart.
	const alone: SentMessage[] = [];
	const from = `+3367${String(rep).padStart(2, '0')}${line}${build === 'before' ? 1 : 2}0000`;
	for (let i = 1; i <= options.perContact; i++)
		alone.push({ from, number, text: `${tag} alone ${i}` });
	afterId = await lastExecutionId(env, target.workflowId);
	for (const [i, m] of alone.entries()) {
		if (i > 0) await sleep(1000);
		await send(m);
	}
	const aloneTally = await waitForReplies(target, alone, options.quietS);
	const single = await itemTimes(env, target, afterId, new Set([from]));
	return {
		line,
		build,
		rep,
		to_item_ms: burst.toItem,
		intake_ms: burst.intake,
		alone_ms: single.toItem,
		replies: tally.replies + aloneTally.replies,
		lost: tally.lost + aloneTally.lost,
		twice: tally.twice + aloneTally.twice,
		out_of_order: tally.outOfOrder + aloneTally.outOfOrder,
		load_average_1m: loadavg()[0],
	};
}

const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export async function runQuietBench(
	setup: { afterTarball: string; beforeRef: string; outDir: string; keep?: boolean },
	options: QuietOptions = DEFAULT_QUIET_OPTIONS,
): Promise<QuietResult> {
	const start = loadavg();
	const before = packCommit(setup.beforeRef, join(setup.outDir, 'before'));
	log(
		`combine-quiet: before = ${setup.beforeRef} (${before.commit.slice(0, 7)}), after = this checkout`,
	);
	const tarballs: Record<Build, string> = { before: before.tarball, after: setup.afterTarball };
	const runs: QuietRun[] = [];
	const lines: QuietLineSummary[] = [];
	for (const line of options.lines) {
		const envs: Partial<Record<Build, BenchEnvironment>> = {};
		try {
			const targets: Partial<Record<Build, Target>> = {};
			for (const build of ['before', 'after'] as const) {
				const env = await startBenchEnvironment({
					tarball: tarballs[build],
					outDir: setup.outDir,
					keep: setup.keep,
					logName: `n8n-combine-quiet-${line}-${build}.log`,
					line,
				});
				envs[build] = env;
				targets[build] = await activate(env, 'on', env.sandbox, env.credential.id, options);
			}
			await sleep(3000);
			for (let rep = 1; rep <= options.reps; rep++) {
				const order: Build[] = rep % 2 ? ['before', 'after'] : ['after', 'before'];
				for (const build of order) {
					const run = await oneRun(envs[build]!, targets[build]!, line, build, rep, options);
					runs.push(run);
					log(
						`  line ${line} ${build} #${rep}: burst → item p50 ${sec(quantile(run.to_item_ms, 0.5))} p95 ${sec(quantile(run.to_item_ms, 0.95))} (${run.to_item_ms.length} items), intake of the last message p50 ${sec(quantile(run.intake_ms, 0.5))}; alone ${run.alone_ms.map(sec).join(', ')}; ${run.replies} replies, lost ${run.lost}, twice ${run.twice}, out of order ${run.out_of_order}; load ${run.load_average_1m.toFixed(1)}`,
					);
					await sleep(options.catchUpIntervalS * 1000);
				}
			}
			const of = (build: Build) => {
				const mine = runs.filter((r) => r.line === line && r.build === build);
				return {
					to_item: latency(mine.flatMap((r) => r.to_item_ms)),
					intake: latency(mine.flatMap((r) => r.intake_ms)),
					alone: latency(mine.flatMap((r) => r.alone_ms)),
				};
			};
			const [b, a] = [of('before'), of('after')];
			lines.push({
				line,
				n8n: envs.after!.installation.version,
				before: b,
				after: a,
				ratio_p50: a.to_item.p50_ms / b.to_item.p50_ms,
				ratio_p95: a.to_item.p95_ms / b.to_item.p95_ms,
				all_clean: runs
					.filter((r) => r.line === line)
					.every(
						(r) =>
							r.lost === 0 &&
							r.twice === 0 &&
							r.out_of_order === 0 &&
							r.replies === options.contacts + 1,
					),
			});
		} finally {
			for (const env of Object.values(envs)) await env?.stop();
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

/** The result as a Markdown table, one row per line and build. */
export function quietTable(result: QuietResult): string {
	const o = result.options;
	const rows = result.lines.flatMap((l) =>
		(['before', 'after'] as const).map((build) => {
			const s = l[build];
			const ratio =
				build === 'after' ? `${l.ratio_p50.toFixed(2)}x / ${l.ratio_p95.toFixed(2)}x` : '';
			return `| ${l.n8n} | ${build} (${(build === 'before' ? result.before_commit : result.after_commit).slice(0, 7)}) | ${sec(s.to_item.p50_ms)} / ${sec(s.to_item.p95_ms)} (${s.to_item.n}) | ${ratio} | ${sec(s.intake.p50_ms)} / ${sec(s.intake.p95_ms)} | ${sec(s.alone.p50_ms)} (${sec(s.alone.max_ms)}, ${s.alone.n}) | ${l.all_clean ? 'yes' : 'NO'} |`;
		}),
	);
	return [
		`${o.contacts} contacts × ${o.perContact} messages at once, Quiet Period ${o.quietS} s, ${o.reps} runs of each build per line, alternating; load average ${result.load_average.start.map((v) => v.toFixed(1)).join(' ')} at start, ${result.load_average.end.map((v) => v.toFixed(1)).join(' ')} at end`,
		'',
		"| n8n | build | last message → item p50 / p95 (items) | after / before (p50 / p95) | n8n's intake of the last message p50 / p95 | alone: last message → item p50 (max, n) | every message once, in order |",
		'|---|---|---|---|---|---|---|',
		...rows,
	].join('\n');
}
