/**
 * The pieces of n8n's queue mode that are not n8n: Postgres, Redis and a load balancer
 * (haproxy), each from Debian's packages, started on 127.0.0.1 in a throwaway folder and
 * stopped by the pid this module started. Every pid is also appended to `<out>/queue-pids`,
 * so scripts/queue.sh can end what is left if this process itself dies.
 *
 * Binaries: Postgres from /usr/lib/postgresql/<version>/bin (the newest there), redis-server
 * and haproxy from PATH (or /usr/sbin). scripts/queue.sh installs them with apt-get when missing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
	appendFileSync,
	chownSync,
	closeSync,
	existsSync,
	mkdirSync,
	openSync,
	readdirSync,
	readFileSync,
	writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

import { freePort, log, sleep, waitFor } from '../../real-n8n/util';

export interface Service {
	name: string;
	child: ChildProcess;
	port: number;
	logFile: string;
	stop(): Promise<void>;
}

let pidFile: string | undefined;

/** Where started pids are recorded (one "<pid> <name>" a line) for scripts/queue.sh's trap. */
export function recordPidsIn(file: string): void {
	pidFile = file;
}

export function recordPid(pid: number | undefined, name: string): void {
	if (pidFile && pid) appendFileSync(pidFile, `${pid} ${name}\n`);
}

function which(name: string, extra: string[] = []): string | undefined {
	for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin', ...extra]) {
		const path = join(dir, name);
		if (dir && existsSync(path)) return path;
	}
	return undefined;
}

export function postgresBinDir(): string | undefined {
	const root = '/usr/lib/postgresql';
	if (!existsSync(root)) return undefined;
	const versions = readdirSync(root)
		.filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
		.sort((a, b) => Number(b) - Number(a));
	return versions.length ? join(root, versions[0], 'bin') : undefined;
}

/** What is missing, by Debian package name. */
export function missingPackages(): string[] {
	const missing: string[] = [];
	if (!postgresBinDir()) missing.push('postgresql');
	if (!which('redis-server')) missing.push('redis-server');
	if (!which('haproxy')) missing.push('haproxy');
	return missing;
}

/** Starts a long-running child in its own process group, output to `logFile`; records its pid. */
function launch(
	name: string,
	command: string,
	args: string[],
	logFile: string,
	options: { uid?: number; gid?: number; cwd?: string } = {},
): Service & { exited: () => boolean } {
	const fd = openSync(logFile, 'a');
	const child = spawn(command, args, {
		detached: true,
		stdio: ['ignore', fd, fd],
		cwd: options.cwd,
		uid: options.uid,
		gid: options.gid,
	});
	closeSync(fd);
	recordPid(child.pid, name);
	let exited = false;
	child.on('exit', () => (exited = true));
	const service = {
		name,
		child,
		port: 0,
		logFile,
		exited: () => exited,
		async stop(graceMs = 15_000) {
			if (exited || child.pid === undefined) return;
			const signal = (s: NodeJS.Signals) => {
				try {
					process.kill(-(child.pid as number), s);
				} catch {
					/* gone */
				}
			};
			signal('SIGTERM');
			const deadline = Date.now() + graceMs;
			while (!exited && Date.now() < deadline) await sleep(100);
			if (!exited) {
				signal('SIGKILL');
				while (!exited) await sleep(100);
			}
		},
	};
	return service;
}

function tail(file: string, lines = 20): string {
	try {
		return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
	} catch {
		return '';
	}
}

// ---- Postgres ---------------------------------------------------------------------------------

export interface Postgres extends Service {
	database: string;
	user: string;
	/** Runs SQL with psql; returns its unaligned output. */
	psql(sql: string, database?: string): string;
}

/**
 * initdb into `<dir>/pgdata` (as the `postgres` system user when run as root: Postgres refuses
 * root), trust authentication on 127.0.0.1 only, then a database `n8n` owned by user `n8n`.
 */
export async function startPostgres(dir: string): Promise<Postgres> {
	const bin = postgresBinDir();
	if (!bin)
		throw new Error(
			'No Postgres server in /usr/lib/postgresql/*/bin: apt-get install postgresql (scripts/queue.sh does)',
		);
	const data = join(dir, 'pgdata');
	mkdirSync(dir, { recursive: true });
	const asRoot = process.getuid?.() === 0;
	let uid: number | undefined;
	let gid: number | undefined;
	if (asRoot) {
		const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
		const group = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
		if (id.status !== 0)
			throw new Error('Running as root and there is no `postgres` system user to run Postgres as');
		uid = Number(id.stdout.trim());
		gid = Number(group.stdout.trim());
		chownSync(dir, uid, gid);
	}
	const logFile = join(dir, 'postgres.log');
	writeFileSync(logFile, '');
	if (asRoot) chownSync(logFile, uid as number, gid as number);
	const init = spawnSync(
		join(bin, 'initdb'),
		['-D', data, '-U', 'n8n', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
		{
			encoding: 'utf8',
			uid,
			gid,
			cwd: dir,
		},
	);
	if (init.status !== 0) throw new Error(`initdb failed:\n${init.stdout}\n${init.stderr}`);
	const port = await freePort();
	const service = launch(
		'postgres',
		join(bin, 'postgres'),
		[
			'-D',
			data,
			'-p',
			String(port),
			'-c',
			'listen_addresses=127.0.0.1',
			'-c',
			`unix_socket_directories=${dir}`,
			'-c',
			'max_connections=200',
		],
		logFile,
		{ uid, gid, cwd: dir },
	);
	service.port = port;
	const psql = (sql: string, database = 'n8n') => {
		const result = spawnSync(
			join(bin, 'psql'),
			[
				'-h',
				'127.0.0.1',
				'-p',
				String(port),
				'-U',
				'n8n',
				'-d',
				database,
				'-v',
				'ON_ERROR_STOP=1',
				'-At',
				'-c',
				sql,
			],
			{
				encoding: 'utf8',
				maxBuffer: 512 * 1024 * 1024,
			},
		);
		if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`);
		return result.stdout;
	};
	try {
		await waitFor(
			`Postgres on port ${port}`,
			() => {
				if (service.exited()) throw new Error(`postgres exited:\n${tail(logFile)}`);
				return (
					spawnSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'n8n'], {
						encoding: 'utf8',
					}).status === 0
				);
			},
			30_000,
			200,
		);
		psql('CREATE DATABASE n8n', 'postgres');
	} catch (error) {
		await service.stop();
		throw error;
	}
	log(
		`postgres ${bin.split('/').slice(-2, -1)[0]} on 127.0.0.1:${port} (pid ${service.child.pid}, data ${data})`,
	);
	return { ...service, database: 'n8n', user: 'n8n', psql };
}

// ---- Redis ------------------------------------------------------------------------------------

async function redisPing(port: number): Promise<boolean> {
	return await new Promise((resolve) => {
		const socket = connect(port, '127.0.0.1');
		let answer = '';
		socket.setTimeout(1000, () => {
			socket.destroy();
			resolve(false);
		});
		socket.on('connect', () => socket.write('PING\r\n'));
		socket.on('data', (chunk) => {
			answer += chunk.toString();
			if (answer.includes('\r\n')) {
				socket.destroy();
				resolve(answer.startsWith('+PONG'));
			}
		});
		socket.on('error', () => resolve(false));
	});
}

export async function startRedis(dir: string): Promise<Service> {
	const bin = which('redis-server');
	if (!bin)
		throw new Error('No redis-server: apt-get install redis-server (scripts/queue.sh does)');
	mkdirSync(dir, { recursive: true });
	const port = await freePort();
	const logFile = join(dir, 'redis.log');
	const service = launch(
		'redis',
		bin,
		[
			'--port',
			String(port),
			'--bind',
			'127.0.0.1',
			'--dir',
			dir,
			'--save',
			'',
			'--appendonly',
			'no',
			'--daemonize',
			'no',
		],
		logFile,
		{ cwd: dir },
	);
	service.port = port;
	await waitFor(
		`Redis on port ${port}`,
		async () => {
			if (service.exited()) throw new Error(`redis-server exited:\n${tail(logFile)}`);
			return await redisPing(port);
		},
		20_000,
		200,
	);
	log(`redis on 127.0.0.1:${port} (pid ${service.child.pid})`);
	return service;
}

// ---- haproxy ----------------------------------------------------------------------------------

export interface Balancer extends Service {
	url: string;
	/** The same processors behind a second frontend that picks the processor by the signature header. */
	bySignatureUrl: string;
	configFile: string;
	/** Sends a command to haproxy's runtime API (stats socket, admin level); returns its answer. */
	command(line: string): Promise<string>;
	/** Puts a webhook server (w1, w2, ...) in or out of rotation. */
	setServer(name: string, enabled: boolean): Promise<void>;
}

/**
 * haproxy in front of queue mode: /webhook/ paths round-robin over the webhook processors
 * (health-checked on n8n's /healthz/readiness every second, out at the first failure; a refused connection, or a 404 that a
 * processor still starting answers without taking the request, is retried once on another server, nothing else
 * is), everything else (editor, REST) to main.
 * Servers listed in `disabled` start out of rotation (benchmark: 1 processor, then 2). A second
 * frontend sends each request to the processor its X-Service-Signature hashes to (every copy of
 * one delivery to the same processor): the layout docs/scaling.md suggests against replays.
 */
export async function startBalancer(
	dir: string,
	mainPort: number,
	webhookPorts: number[],
	disabled: number[] = [],
): Promise<Balancer> {
	const bin = which('haproxy');
	if (!bin) throw new Error('No haproxy: apt-get install haproxy (scripts/queue.sh does)');
	mkdirSync(dir, { recursive: true });
	const port = await freePort([mainPort, ...webhookPorts]);
	const hashPort = await freePort([port, mainPort, ...webhookPorts]);
	const socket = join(dir, 'haproxy.sock');
	const configFile = join(dir, 'haproxy.cfg');
	const servers = webhookPorts
		.map(
			(p, i) =>
				`  server w${i + 1} 127.0.0.1:${p} check inter 1s fall 1 rise 1${disabled.includes(i) ? ' disabled' : ''}`,
		)
		.join('\n');
	const hashServers = webhookPorts
		.map((p, i) => `  server w${i + 1} 127.0.0.1:${p} check inter 1s fall 1 rise 1`)
		.join('\n');
	writeFileSync(
		configFile,
		`global
  maxconn 4096
  stats socket ${socket} mode 600 level admin

defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout http-keep-alive 10s
  # An n8n busy on 2 cores can take seconds to answer a check: a short check timeout would take
  # both processors out of rotation under load and turn slowness into 503s (seen with 2 s).
  timeout check 10s
  retries 1
  option redispatch

frontend n8n
  bind 127.0.0.1:${port}
  # Waiting executions' resume URLs too: a main with production webhooks disabled serves neither.
  acl is_webhook path_beg /webhook/ /webhook-waiting/
  use_backend webhook_processors if is_webhook
  default_backend main

backend webhook_processors
  balance roundrobin
  # A processor that is starting answers /healthz but 404s every webhook until it has mounted them
  # (n8n 2.41.1 AbstractServer: init() listens, start() mounts /webhook/): n8n took nothing, so the
  # request is sent to the other processor (docs/scaling.md, Topology).
  retry-on conn-failure 404
  # A new connection to n8n per request: n8n (Node) closes an idle connection after 5 s, the moment
  # haproxy may reuse it; haproxy then drops the sender's connection (seen in CI: 1 of 400 reset).
  option http-server-close
  # Ready only once it serves webhooks: a starting n8n answers every other request 200 "n8n is
  # starting up" (logged delivered by the service, never run). Out at the first failed check: a
  # killed processor is out before it listens again.
  option httpchk GET /healthz/readiness
${servers}

backend main
  server main 127.0.0.1:${mainPort}

frontend n8n_by_signature
  bind 127.0.0.1:${hashPort}
  default_backend webhook_processors_by_signature

backend webhook_processors_by_signature
  balance hdr(x-service-signature)
  retry-on conn-failure 404
  option http-server-close
  hash-type consistent
  option httpchk GET /healthz/readiness
${hashServers}
`,
	);
	const check = spawnSync(bin, ['-c', '-f', configFile], { encoding: 'utf8' });
	if (check.status !== 0)
		throw new Error(`haproxy rejects its configuration:\n${check.stdout}${check.stderr}`);
	const logFile = join(dir, 'haproxy.log');
	const service = launch('haproxy', bin, ['-db', '-f', configFile], logFile, { cwd: dir });
	service.port = port;
	const command = async (line: string) =>
		await new Promise<string>((resolve, reject) => {
			const client = connect(socket);
			let answer = '';
			client.on('connect', () => client.write(`${line}\n`));
			client.on('data', (chunk) => (answer += chunk.toString()));
			client.on('end', () => resolve(answer));
			client.on('error', reject);
		});
	await waitFor(
		`haproxy on port ${port}`,
		async () => {
			if (service.exited()) throw new Error(`haproxy exited:\n${tail(logFile)}`);
			return (await command('show info').catch(() => '')).includes('Name: HAProxy');
		},
		20_000,
		200,
	);
	log(
		`haproxy on 127.0.0.1:${port} (pid ${service.child.pid}): /webhook/ and /webhook-waiting/ round-robin over ${webhookPorts.map((p) => `127.0.0.1:${p}`).join(', ')}; the rest to main 127.0.0.1:${mainPort}`,
	);
	return {
		...service,
		url: `http://127.0.0.1:${port}`,
		bySignatureUrl: `http://127.0.0.1:${hashPort}`,
		configFile,
		command,
		async setServer(name: string, enabled: boolean) {
			await command(`${enabled ? 'enable' : 'disable'} server webhook_processors/${name}`);
		},
	};
}
