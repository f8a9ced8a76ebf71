/**
 * catch-up-idle: what an idle trigger with Recover Missed Messages costs n8n 2.41.1 between events,
 * this build against another commit's (BENCH_BEFORE, `main` by default), one n8n each, side by side
 * over the same windows: each catch-up run reads the account's webhook and the stored messages; the
 * expression isolates (n8n's /metrics), n8n's CPU and the service requests it took, per run.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { sleep } from '../test/real-n8n/util';
import { CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../test/support/constants';
import { packCommit } from './combineQuiet';
import { startBenchEnvironment, type BenchEnvironment } from './lib/env';
import { fixed, median } from './lib/stats';
import { cpuMs, isolatesAcquired } from './webhooks';

type Build = 'before' | 'after';
const INTERVAL_S = 10;

export interface CatchUpIdleOptions {
	/** Windows measured, each `windowS` long, both builds at once. */
	reps: number;
	windowS: number;
}
export const DEFAULT_IDLE_OPTIONS: CatchUpIdleOptions = { reps: 3, windowS: 120 };

interface Window {
	build: Build;
	runs: number;
	isolatesPerRun: number | null;
	cpuMsPerRun: number;
	requestsPerRun: number;
}

export interface CatchUpIdleResult {
	before: string;
	windows: Window[];
	load: { start: number; end: number };
}

async function publishIdleTrigger(env: BenchEnvironment): Promise<void> {
	const workflow = await env.client.createWorkflow({
		name: 'bench: idle trigger with the catch-up',
		nodes: [
			{
				name: TRIGGER_NAME,
				type: TRIGGER_TYPE,
				typeVersion: 2,
				position: [0, 0],
				webhookId: crypto.randomUUID(),
				parameters: { options: { catchUpInterval: INTERVAL_S } },
				credentials: { [CREDENTIAL_TYPE]: env.credential },
			},
			{
				name: 'Done',
				type: 'n8n-nodes-base.noOp',
				typeVersion: 1,
				position: [220, 0],
				parameters: {},
			},
		],
		connections: { [TRIGGER_NAME]: { main: [[{ node: 'Done', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	} as never);
	const outcome = await env.client.activateAndSettle(workflow.id);
	if (!outcome.ok) throw new Error(`publishing the idle trigger failed: ${outcome.message}`);
}

const reading = async (env: BenchEnvironment) => ({
	isolates: await isolatesAcquired(env.n8n.url).catch(() => null),
	cpu: cpuMs(env.n8n.child.pid ?? 0),
	requests: env.sandbox.state().requests_count,
});

export async function runCatchUpIdleBench(
	setup: { afterTarball: string; beforeRef: string; outDir: string },
	options: CatchUpIdleOptions = DEFAULT_IDLE_OPTIONS,
): Promise<CatchUpIdleResult> {
	const start = loadavg()[0];
	const before = packCommit(setup.beforeRef, join(setup.outDir, 'before'));
	const tarballs: Record<Build, string> = { before: before.tarball, after: setup.afterTarball };
	const envs: Partial<Record<Build, BenchEnvironment>> = {};
	const windows: Window[] = [];
	try {
		for (const build of ['before', 'after'] as const) {
			envs[build] = await startBenchEnvironment({
				tarball: tarballs[build],
				outDir: setup.outDir,
				logName: `n8n-catch-up-idle-${build}.log`,
				env: { N8N_METRICS: 'true' },
			});
			await publishIdleTrigger(envs[build]);
		}
		await sleep(2 * INTERVAL_S * 1000);
		for (let rep = 0; rep < options.reps; rep++) {
			const first = { before: await reading(envs.before!), after: await reading(envs.after!) };
			await sleep(options.windowS * 1000);
			for (const build of ['before', 'after'] as const) {
				const last = await reading(envs[build]!);
				const runs = options.windowS / INTERVAL_S;
				const was = first[build];
				windows.push({
					build,
					runs,
					isolatesPerRun:
						last.isolates === null || was.isolates === null
							? null
							: (last.isolates - was.isolates) / runs,
					cpuMsPerRun: (last.cpu - was.cpu) / runs,
					requestsPerRun: (last.requests - was.requests) / runs,
				});
			}
		}
	} finally {
		for (const env of Object.values(envs)) await env?.stop();
	}
	return { before: before.commit, windows, load: { start, end: loadavg()[0] } };
}

export function catchUpIdleTable(result: CatchUpIdleResult): string {
	const of = (build: Build, pick: (w: Window) => number | null) => {
		const values = result.windows
			.filter((w) => w.build === build)
			.map(pick)
			.filter((v): v is number => v !== null);
		return values.length > 0 ? median(values) : Number.NaN;
	};
	const row = (label: string, pick: (w: Window) => number | null) => {
		const [b, a] = [of('before', pick), of('after', pick)];
		return `| ${label} | ${fixed(b)} | ${fixed(a)} | ${fixed(a / b)}x |`;
	};
	return [
		`catch-up-idle: one idle trigger, Catch-Up Interval ${INTERVAL_S} s, n8n 2.41.1; before = ${result.before.slice(0, 7)}; median of ${result.windows.length / 2} windows; load ${fixed(result.load.start)} → ${fixed(result.load.end)}`,
		'',
		'| per catch-up run | before | after | after / before |',
		'|---|---|---|---|',
		row('expression isolates', (w) => w.isolatesPerRun),
		row("n8n's CPU (ms)", (w) => w.cpuMsPerRun),
		row('requests to the service', (w) => w.requestsPerRun),
	].join('\n');
}
