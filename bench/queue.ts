/**
 * Benchmark Q: benchmark 2 (signed events, our trigger vs n8n's Webhook node, side by side)
 * through n8n 2.41.1 in queue mode behind haproxy (test/queue/lib/topology.ts): first with
 * 1 webhook processor + 1 worker, then with 2 + 2 (the second pair started and put in rotation
 * in the same topology, so Postgres, Redis, main and the balancer are the same).
 */
import { cpus, loadavg } from 'node:os';

import type { Installation } from '../test/real-n8n/n8n';
import { CREDENTIAL_TYPE } from '../test/support/constants';
import { log } from '../test/real-n8n/util';
import { recordPidsIn } from '../test/queue/lib/infra';
import { Topology } from '../test/queue/lib/topology';
import type { BenchEnvironment } from './lib/env';
import { spread, type Spread } from './lib/stats';
import { runWebhookBench, type WebhookOptions, type WebhookResult } from './queue-webhooks';

export interface QueueBenchResult {
	cores: number;
	/** Webhook processors (= workers) → benchmark 2's result through the balancer. */
	runs: Array<{ processors: number; workers: number; loadavg: number[]; result: WebhookResult }>;
	/** Per concurrency: events/s with 2 processors + 2 workers over 1 + 1, ours and theirs. */
	scaling: Array<{ concurrency: number; ours: Spread; theirs: Spread }>;
}

let running: Topology | undefined;

/** Stops the topology of a run in progress (npm run bench's SIGINT/SIGTERM handler). */
export async function stopQueueBench(): Promise<void> {
	await running?.stop();
	running = undefined;
}

export async function runQueueBench(options: {
	installation: Installation;
	tarball: string;
	outDir: string;
	keep: boolean;
	webhook: WebhookOptions;
}): Promise<QueueBenchResult> {
	recordPidsIn(`${options.outDir}/queue-pids`);
	const topology = new Topology({
		installation: options.installation,
		tarball: options.tarball,
		outDir: options.outDir,
		webhookProcessors: 2,
		workers: 2,
		startWebhookProcessors: 1,
		startWorkers: 1,
		keep: options.keep,
	});
	const runs: QueueBenchResult['runs'] = [];
	running = topology;
	try {
		await topology.start();
		const credential = await topology.client.createCredential(
			'Business Messaging (bench, queue)',
			CREDENTIAL_TYPE,
			{
				apiKey: topology.sandbox.keys.all,
				baseUrl: topology.sandbox.baseUrl,
				webhookSecret: '',
			},
		);
		const env = {
			installation: options.installation,
			n8n: topology.main.process,
			sandbox: topology.sandbox,
			control: topology.control,
			client: topology.client,
			credential,
			userFolder: topology.main.userFolder,
			parseExecutionData: topology.flatted(),
			stop: async () => undefined,
		} satisfies BenchEnvironment;
		for (const processors of [1, 2]) {
			if (processors === 2) {
				log('Q. starting the second webhook processor and worker');
				await Promise.all([topology.addWebhookProcessor(1), topology.addWorker(1)]);
			}
			log(
				`Q. queue mode, ${processors} webhook processor(s) + ${processors} worker(s) behind haproxy`,
			);
			const result = await runWebhookBench(env, { ...options.webhook, baseUrl: topology.url });
			runs.push({
				processors,
				workers: processors,
				loadavg: loadavg().map((v) => Math.round(v * 100) / 100),
				result,
			});
		}
	} finally {
		running = undefined;
		await topology.stop();
	}
	const scaling = options.webhook.concurrencies.map((concurrency) => {
		const ratios = (side: 'ours' | 'theirs') => {
			const of = (processors: number) =>
				runs
					.find((r) => r.processors === processors)
					?.result.runs.filter((x) => x.side === side && x.concurrency === concurrency) ?? [];
			const two = of(2);
			return spread(
				of(1).map((one, i) => (two[i] ? two[i].events_per_s / one.events_per_s : Number.NaN)),
			);
		};
		return { concurrency, ours: ratios('ours'), theirs: ratios('theirs') };
	});
	return { cores: cpus().length, runs, scaling };
}
