/**
 * `npm run test:queue` (scripts/queue.sh): the nodes in n8n 2.41.1's queue mode, with real
 * components: Postgres, Redis, haproxy, main + 2 webhook processors + 2 workers
 * (test/queue/lib/topology.ts), our packed package installed into each one's user folder.
 *
 *   ts-node --transpile-only test/queue/run.ts --tarball <pack.tgz> [--out dir]
 *     [--only activation,load,same-delivery,auto-reply,conversation,media,kill-worker,kill-webhook,combine,webhook-lost-twice,kill-storm]
 *     [--seed N]  (kill-storm's schedule; STORM_SEED=N too)
 *     [--events 5000] [--concurrency 32] [--tampered-every 10] [--catch-up-interval 30]
 *     [--webhook-timeout-ms 8000]  (the service's delivery timeout: shorter stands for overload, answers after it)
 *     [--webhook-processors 2] [--workers 2]
 *
 * Exit code 0 only when every check holds. Summary: <out>/queue-summary.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { CREDENTIAL_NAME } from '../real-n8n/examples';
import { installN8n } from '../real-n8n/n8n';
import { CREDENTIAL_TYPE } from '../support/constants';
import { errorText, log } from '../real-n8n/util';
import { CHECKS as QUEUE_CHECKS, record, type QueueContext } from './checks';
import { recordPidsIn } from './lib/infra';
import { Topology } from './lib/topology';
import { checkKillStorm } from './storm';

/** Every check; CI names its own list (.ci/run), without kill-storm and webhook-lost-twice (minutes each). */
const CHECKS: typeof QUEUE_CHECKS = { ...QUEUE_CHECKS, 'kill-storm': checkKillStorm };

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2)
	args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const tarball = args.get('tarball');
if (!tarball) throw new Error('--tarball <npm pack output> is required');
const outDir = resolve(args.get('out') ?? join(tmpdir(), 'business-messaging-queue'));
const only = (args.get('only') ?? Object.keys(CHECKS).join(','))
	.split(',')
	.map((s) => s.trim())
	.filter(Boolean);
for (const name of only)
	if (!CHECKS[name])
		throw new Error(`Unknown check "${name}": one of ${Object.keys(CHECKS).join(', ')}`);

async function main(): Promise<number> {
	const started = Date.now();
	mkdirSync(outDir, { recursive: true });
	recordPidsIn(process.env.QUEUE_PID_FILE ?? join(outDir, 'queue-pids'));
	log(
		`== n8n 2.41.1 in queue mode; checks: ${only.join(', ')}; ${cpus().length} cores, load average ${loadavg()
			.map((v) => v.toFixed(2))
			.join(' ')}`,
	);
	const installation = installN8n(2, join(outDir, 'install.log'));
	const topology = new Topology({
		installation,
		tarball: tarball as string,
		outDir,
		keep: process.env.QUEUE_KEEP === '1',
		webhookProcessors: args.has('webhook-processors')
			? Number(args.get('webhook-processors'))
			: undefined,
		workers: args.has('workers') ? Number(args.get('workers')) : undefined,
		webhookTimeoutMs: args.has('webhook-timeout-ms')
			? Number(args.get('webhook-timeout-ms'))
			: undefined,
	});
	const stop = async () => {
		await topology.stop().catch((error) => log(`stopping: ${errorText(error)}`));
	};
	process.on('SIGINT', () => void stop().then(() => process.exit(130)));
	process.on('SIGTERM', () => void stop().then(() => process.exit(143)));

	const ctx: QueueContext = {
		topology,
		credential: { id: '', name: CREDENTIAL_NAME },
		number: '',
		options: {
			events: Number(args.get('events') ?? '5000'),
			concurrency: Number(args.get('concurrency') ?? '32'),
			tamperedEvery: Number(args.get('tampered-every') ?? '10'),
			catchUpInterval: Number(args.get('catch-up-interval') ?? '30'),
			seed: args.has('seed') ? Number(args.get('seed')) : undefined,
		},
		results: [],
		numbers: {},
	};
	const timings: Record<string, number> = {};
	try {
		const t0 = Date.now();
		await topology.start();
		timings.start_s = (Date.now() - t0) / 1000;
		ctx.number = topology.sandbox.numbers[0].phone_number_id;
		ctx.credential = await topology.client.createCredential(CREDENTIAL_NAME, CREDENTIAL_TYPE, {
			apiKey: topology.sandbox.keys.all,
			baseUrl: topology.sandbox.baseUrl,
			webhookSecret: '',
		});
		for (const name of only) {
			const t = Date.now();
			try {
				await CHECKS[name](ctx);
			} catch (error) {
				record(ctx, name, false, errorText(error));
			}
			timings[name] = (Date.now() - t) / 1000;
			log(`  (${name}: ${timings[name].toFixed(0)} s)`);
		}
	} catch (error) {
		record(ctx, 'topology', false, errorText(error));
		for (const role of [topology.main, ...topology.webhooks, ...topology.workers])
			if (role) log(`${role.name} log tail:\n${role.process.logTail(15)}`);
	} finally {
		const t = Date.now();
		await stop();
		timings.stop_s = (Date.now() - t) / 1000;
	}
	const duration = (Date.now() - started) / 1000;
	const passed = ctx.results.filter((r) => r.ok).length;
	writeFileSync(
		join(outDir, 'queue-summary.json'),
		`${JSON.stringify({ n8n: installation.version, checks: ctx.results, numbers: ctx.numbers, timings, duration_s: duration, cores: cpus().length, loadavg_end: loadavg() }, null, 2)}\n`,
	);
	log(
		`== queue mode: ${passed}/${ctx.results.length} checks passed in ${Math.floor(duration / 60)} min ${Math.round(duration % 60)} s; summary ${join(outDir, 'queue-summary.json')}`,
	);
	for (const r of ctx.results) log(`   ${r.ok ? 'PASS' : 'FAIL'}  ${r.name}`);
	return passed === ctx.results.length && ctx.results.length > 0 ? 0 : 1;
}

main()
	.then((code) => process.exit(code))
	.catch((error) => {
		console.error(error);
		process.exit(1);
	});
