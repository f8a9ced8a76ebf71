/**
 * n8n in queue mode, as its users scale it: one main (editor, REST, activation: it registers the
 * trigger's webhook with the service), webhook processors (`n8n webhook`: they take production
 * webhook requests, verify them with our node and put the execution on the queue), workers
 * (`n8n worker`: they run executions), Redis (the queue), Postgres (the database; queue mode
 * does not support SQLite), and haproxy in front (round robin over the webhook processors for
 * /webhook/, the rest to main). One N8N_ENCRYPTION_KEY for all. Each n8n process has its own
 * user folder with our packed package installed into its .n8n/nodes, as on separate machines.
 *
 * Everything listens on 127.0.0.1 and lives in a throwaway folder; stop() ends exactly what
 * start() started, by pid.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
	ENCRYPTION_KEY,
	installPackage,
	N8nClient,
	N8nProcess,
	type Installation,
} from '../../real-n8n/n8n';
import { launchSandbox, SandboxControl, type Sandbox } from '../../real-n8n/sandbox';
import { freePort, log } from '../../real-n8n/util';
import {
	recordPid,
	startBalancer,
	startPostgres,
	startRedis,
	type Balancer,
	type Postgres,
	type Service,
} from './infra';

/**
 * n8n settings every process of the topology gets. The lock and stalled-check timings are shorter
 * than n8n's defaults (lock 60 s, stalled check 30 s) so that what n8n does with a killed worker's
 * executions shows within the suite's minutes; the sequence is the same. Main's queue recovery
 * keeps n8n's default (every 180 min): at 1 min it raced the webhook processors under a burst
 * (docs/scaling.md, "n8n's queue recovery") and marked a just-queued execution crashed.
 */
export const QUEUE_TIMINGS: Record<string, string> = {
	QUEUE_WORKER_LOCK_DURATION: '20000',
	QUEUE_WORKER_LOCK_RENEW_TIME: '5000',
	QUEUE_WORKER_STALLED_INTERVAL: '5000',
};

export interface TopologyOptions {
	installation: Installation;
	tarball: string;
	/** Logs go here. */
	outDir: string;
	webhookProcessors?: number;
	workers?: number;
	/** Processors/workers started later with addWebhookProcessor/addWorker (benchmark: 1, then 2). */
	startWebhookProcessors?: number;
	startWorkers?: number;
	/** Worker --concurrency (n8n's default is 10). */
	workerConcurrency?: number;
	env?: Record<string, string>;
	keep?: boolean;
	/** The sandbox's webhook delivery timeout (default: the service's ~8 s). */
	webhookTimeoutMs?: number;
}

export interface N8nRole {
	name: string;
	process: N8nProcess;
	port: number;
	userFolder: string;
}

export class Topology {
	readonly webhooks: Array<N8nRole | undefined> = [];
	readonly workers: Array<N8nRole | undefined> = [];
	main!: N8nRole;
	balancer!: Balancer;
	postgres!: Postgres;
	redis!: Service;
	sandbox!: Sandbox;
	control!: SandboxControl;
	client!: N8nClient;
	private webhookPorts: number[] = [];
	private root: string;
	private pgDir: string;
	private env: Record<string, string> = {};

	constructor(readonly options: TopologyOptions) {
		this.root = mkdtempSync(join(tmpdir(), 'bm-queue-'));
		// Postgres runs as the postgres user when we are root: its folder must be its own.
		this.pgDir = mkdtempSync(join(tmpdir(), 'bm-queue-pg-'));
		chmodSync(this.pgDir, 0o755);
	}

	/** The balancer's URL: where the service delivers, the editor opens, WEBHOOK_URL points. */
	get url(): string {
		return this.balancer.url;
	}

	async start(): Promise<void> {
		const { options } = this;
		const processors = options.webhookProcessors ?? 2;
		const workers = options.workers ?? 2;
		const t0 = Date.now();
		this.sandbox = await launchSandbox(0, 0, this.options.webhookTimeoutMs);
		this.control = new SandboxControl(this.sandbox.baseUrl);
		this.postgres = await startPostgres(this.pgDir);
		this.redis = await startRedis(join(this.root, 'redis'));
		const mainPort = await freePort();
		for (let i = 0; i < processors; i++)
			this.webhookPorts.push(await freePort([mainPort, ...this.webhookPorts]));
		const startProcessors = options.startWebhookProcessors ?? processors;
		this.balancer = await startBalancer(
			join(this.root, 'haproxy'),
			mainPort,
			this.webhookPorts,
			this.webhookPorts.map((_, i) => i).filter((i) => i >= startProcessors),
		);
		this.env = {
			EXECUTIONS_MODE: 'queue',
			QUEUE_BULL_REDIS_HOST: '127.0.0.1',
			QUEUE_BULL_REDIS_PORT: String(this.redis.port),
			DB_TYPE: 'postgresdb',
			DB_POSTGRESDB_HOST: '127.0.0.1',
			DB_POSTGRESDB_PORT: String(this.postgres.port),
			DB_POSTGRESDB_DATABASE: this.postgres.database,
			DB_POSTGRESDB_USER: this.postgres.user,
			DB_POSTGRESDB_PASSWORD: '',
			N8N_ENCRYPTION_KEY: ENCRYPTION_KEY,
			// The public URL is the balancer's: main registers it with the service on activation.
			WEBHOOK_URL: `${this.balancer.url}/`,
			N8N_EDITOR_BASE_URL: `${this.balancer.url}/`,
			// Production webhooks only on the webhook processors (n8n's advice for this layout).
			N8N_DISABLE_PRODUCTION_MAIN_PROCESS: 'true',
			// Every execution is kept: the checks count them.
			EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'all',
			EXECUTIONS_DATA_SAVE_ON_ERROR: 'all',
			EXECUTIONS_DATA_PRUNE: 'false',
			...QUEUE_TIMINGS,
			...options.env,
		};
		// Main first: it creates the schema the others need.
		this.main = await this.startN8n('main', 'start', mainPort);
		log(`main ready (${((Date.now() - t0) / 1000).toFixed(1)} s since the topology started)`);
		await Promise.all([
			...Array.from({ length: startProcessors }, (_, i) => this.addWebhookProcessor(i)),
			...Array.from({ length: options.startWorkers ?? workers }, (_, i) => this.addWorker(i)),
		]);
		this.client = new N8nClient(this.balancer.url, 2, options.installation.dir);
		await this.client.setupOwner();
		log(
			`queue mode up in ${((Date.now() - t0) / 1000).toFixed(1)} s: main, ${this.webhooks.filter(Boolean).length} webhook processor(s), ${this.workers.filter(Boolean).length} worker(s) behind ${this.balancer.url}`,
		);
	}

	private async startN8n(
		name: string,
		command: 'start' | 'webhook' | 'worker',
		port?: number,
		{ reinstall = true }: { reinstall?: boolean } = {},
	): Promise<N8nRole> {
		const userFolder = join(this.root, name);
		mkdirSync(userFolder, { recursive: true });
		if (reinstall) installPackage(userFolder, this.options.tarball);
		const env = { ...this.env };
		if (command === 'worker') env.QUEUE_HEALTH_CHECK_ACTIVE = 'false';
		const n8n = await N8nProcess.start({
			installation: this.options.installation,
			userFolder,
			port,
			logFile: join(this.options.outDir, `n8n-${name}.log`),
			env,
			command,
			readyTimeoutMs: 240_000,
		});
		recordPid(n8n.child.pid, `n8n-${name}`);
		log(
			`  n8n ${command} "${name}" ready (pid ${n8n.child.pid}${command === 'worker' ? '' : `, 127.0.0.1:${n8n.port}`})`,
		);
		return { name, process: n8n, port: n8n.port, userFolder };
	}

	/** Starts webhook processor `index` (0-based) on its port and puts it in the balancer's rotation. */
	async addWebhookProcessor(index: number): Promise<N8nRole> {
		const role = await this.startN8n(`webhook${index + 1}`, 'webhook', this.webhookPorts[index]);
		this.webhooks[index] = role;
		await this.balancer.setServer(`w${index + 1}`, true);
		return role;
	}

	async addWorker(index: number): Promise<N8nRole> {
		const role = await this.startN8n(`worker${index + 1}`, 'worker');
		this.workers[index] = role;
		return role;
	}

	/**
	 * Main stopped (SIGTERM, as an operator's restart: n8n closes its triggers and calls no delete()),
	 * down for `downMs`, then started again on its port with the same user folder and database.
	 */
	async restartMain(downMs: number): Promise<void> {
		const { port } = this.main;
		await this.main.process.stop();
		await new Promise((resolve) => setTimeout(resolve, downMs));
		this.main = await this.startN8n('main', 'start', port, { reinstall: false });
	}

	/**
	 * A role killed with kill() started again once its process is gone: same user folder, the
	 * package not reinstalled, main and a processor on their port (a processor back in the
	 * balancer's rotation; its health check takes it back anyway). Returns the new role.
	 */
	async restart(role: N8nRole): Promise<N8nRole> {
		while (role.process.running) await new Promise((resolve) => setTimeout(resolve, 50));
		const processor = this.webhooks.indexOf(role);
		const worker = this.workers.indexOf(role);
		if (role === this.main) {
			this.main = await this.startN8n('main', 'start', role.port, { reinstall: false });
			return this.main;
		}
		if (processor >= 0) {
			const started = await this.startN8n(role.name, 'webhook', role.port, { reinstall: false });
			this.webhooks[processor] = started;
			await this.balancer.setServer(`w${processor + 1}`, true);
			return started;
		}
		if (worker < 0) throw new Error(`${role.name} is not a role of this topology`);
		this.workers[worker] = await this.startN8n(role.name, 'worker', undefined, {
			reinstall: false,
		});
		return this.workers[worker] as N8nRole;
	}

	/** SIGKILL to one n8n process group (a crash: no shutdown, no cleanup). */
	kill(role: N8nRole): void {
		try {
			process.kill(-(role.process.child.pid as number), 'SIGKILL');
		} catch {
			/* already gone */
		}
	}

	/** flatted.parse from n8n's own dependencies (execution data is stored flattened). */
	flatted(): (text: string) => unknown {
		const requireFromN8n = createRequire(
			join(this.options.installation.dir, 'node_modules', 'n8n', 'package.json'),
		);
		return (requireFromN8n('flatted') as { parse: (text: string) => unknown }).parse;
	}

	async stop(): Promise<void> {
		const n8n = [...this.workers, ...this.webhooks, this.main].filter((r): r is N8nRole =>
			Boolean(r),
		);
		// Everything is thrown away after: no need to wait out n8n's graceful shutdown (CI saw 20 s).
		await Promise.all(n8n.map((r) => r.process.stop(5_000)));
		await this.balancer?.stop();
		await this.redis?.stop();
		await this.postgres?.stop();
		await this.sandbox?.close();
		if (!this.options.keep) {
			rmSync(this.root, { recursive: true, force: true });
			rmSync(this.pgDir, { recursive: true, force: true });
		} else log(`kept ${this.root} and ${this.pgDir}`);
	}
}
