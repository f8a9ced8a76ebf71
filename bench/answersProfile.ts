/**
 * Benchmark "answers-profile": where n8n's CPU goes while it takes a burst of Reply and Wait answers
 * (the answers-on-time scene, "after" build only: this checkout). One n8n 2.41.1 started with its
 * inspector on a loopback port; one warm-up, then `contacts` contacts greet at once and, once every
 * execution waits, answer at once. Over the answer phase only (the first answer posted until every
 * answer has its outcome and no execution runs):
 *  - the V8 CPU profile of n8n's main thread (the inspector's Profiler, 1 ms sampling), self time
 *    by package and the functions with the most self and total time;
 *  - the CPU of each of n8n's threads by name (/proc/<pid>/task), so the main thread's share is seen
 *    beside SQLite's, the expression isolates' and the garbage collector's;
 *  - expression isolates n8n acquired per answer (its /metrics counter, N8N_METRICS=true).
 * A diagnostic: the inspector and the sampling slow n8n a little; its latencies are not compared.
 * BENCH_N8N_ENV=KEY=VALUE,... starts n8n with those settings too (e.g. N8N_EXPRESSION_ENGINE=legacy:
 * what the same burst takes without expression isolates).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WebSocket } from 'undici';

import { freePort, log } from '../test/real-n8n/util';
import {
	activateConversation,
	oneRun,
	runLine,
	timelineLine,
	type AnswersRun,
} from './answersOnTime';
import { startBenchEnvironment } from './lib/env';
import { isolatesAcquired } from './webhooks';

interface ProfileNode {
	id: number;
	callFrame: { functionName: string; url: string; lineNumber: number };
	hitCount?: number;
	children?: number[];
}
export interface CpuProfile {
	nodes: ProfileNode[];
	startTime: number;
	endTime: number;
	samples: number[];
	timeDeltas: number[];
}

export interface ProfileEntry {
	name: string;
	ms: number;
	share: number;
}

export interface CategoryEntry extends ProfileEntry {
	/** Where it was called from: the nearest frame of n8n's own code or of this package. */
	callers: ProfileEntry[];
}

export interface AnswersProfileResult {
	/** n8n settings beyond the bench's (BENCH_N8N_ENV). */
	n8n_settings: Record<string, string>;
	run: AnswersRun;
	window_s: number;
	/** Main-thread time by what it was for (first matching: credentials, isolates, evaluation, database …). */
	by_category: CategoryEntry[];
	/** Main-thread samples, ms of self time, by package (or V8's own entries: GC, idle, program). */
	self_by_package: ProfileEntry[];
	top_self: ProfileEntry[];
	/** Total (self and callees) time of functions, by name and file; a function counted once per stack. */
	top_total: ProfileEntry[];
	/** CPU ms over the answer phase by thread name. */
	threads: ProfileEntry[];
	n8n_cpu_ms: number;
	/** n8n_expression_pool_acquired_total over the answer phase ÷ answers; null without the counter (legacy). */
	isolates_per_answer: number | null;
}

/** A minimal Chrome DevTools Protocol session over the inspector's WebSocket. */
class Inspector {
	private next = 1;
	private readonly pending = new Map<number, (result: unknown) => void>();
	private constructor(private readonly socket: WebSocket) {
		socket.addEventListener('message', (event) => {
			const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
			if (message.id !== undefined) this.pending.get(message.id)?.(message.result);
		});
	}

	static async connect(port: number): Promise<Inspector> {
		const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
			webSocketDebuggerUrl: string;
		}>;
		const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
		await new Promise<void>((resolve, reject) => {
			socket.addEventListener('open', () => resolve());
			socket.addEventListener('error', () => reject(new Error('inspector: no connection')));
		});
		return new Inspector(socket);
	}

	async send<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
		const id = this.next++;
		return await new Promise<T>((resolve) => {
			this.pending.set(id, (result) => resolve(result as T));
			this.socket.send(JSON.stringify({ id, method, params }));
		});
	}

	close(): void {
		this.socket.close();
	}
}

/** CPU ms of each thread of `pid`, by thread name. */
function threadCpu(pid: number): Map<string, number> {
	const out = new Map<string, number>();
	const tick = 1000 / 100;
	for (const tid of readdirSync(`/proc/${pid}/task`)) {
		try {
			const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
			const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+$/, 'N');
			const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
			const ms = (Number(fields[11]) + Number(fields[12])) * tick;
			out.set(name, (out.get(name) ?? 0) + ms);
		} catch {
			/* the thread ended */
		}
	}
	return out;
}

/** Which package a script belongs to: node_modules/<name> (the last one), or what else it is. */
function packageOf(node: ProfileNode): string {
	const { url, functionName } = node.callFrame;
	if (!url) return functionName.startsWith('(') ? functionName : '(native)';
	if (url.startsWith('node:')) return 'node: (Node.js internals)';
	const parts = url.split('node_modules/');
	if (parts.length < 2) return url;
	const rest = parts[parts.length - 1].split('/');
	return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
}

function functionOf(node: ProfileNode): string {
	const { functionName, url, lineNumber } = node.callFrame;
	const file =
		url
			.split('node_modules/')
			.pop()
			?.replace(/^file:\/\//, '') ?? '';
	return `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
}

function entries(map: Map<string, number>, total: number, top = Infinity): ProfileEntry[] {
	return [...map.entries()]
		.sort((a, b) => b[1] - a[1])
		.slice(0, top)
		.map(([name, ms]) => ({ name, ms: Math.round(ms), share: ms / total }));
}

const PACKAGE = 'n8n-nodes-business-messaging';

/** What a sample's stack (leaf first) was doing, first match wins. */
function categoryOf(stack: ProfileNode[]): string {
	const names = stack.map((n) => n.callFrame.functionName);
	const packages = stack.map(packageOf);
	const leaf = packages[0];
	if (leaf === '(idle)' || leaf === '(garbage collector)' || leaf === '(program)') return leaf;
	if (
		stack.some(
			(n) =>
				n.callFrame.url.endsWith('credentials-helper.js') &&
				['getDecrypted', 'applyDefaultsAndOverwrites'].includes(n.callFrame.functionName),
		)
	)
		return 'credential read (decrypt, defaults and expressions)';
	if (names.some((n) => n === 'acquireIsolate' || n === 'releaseIsolate'))
		return 'expression isolate created / disposed';
	if (packages.includes('@n8n/expression-runtime') || names.includes('evalClosureSync'))
		return 'expression evaluated';
	if (packages.some((p) => p === '@n8n/typeorm' || p === 'sqlite3' || p === '@n8n/db'))
		return 'database (TypeORM, SQLite)';
	if (packages.includes('flatted')) return 'execution data (flatted)';
	if (packages.includes(PACKAGE)) return 'this package (its own code)';
	if (packages.includes('axios')) return 'HTTP requests (axios)';
	return 'other (n8n, Node.js)';
}

/** The nearest frame (leaf first) of this package or of n8n's own code, not the category's machinery. */
function callerOf(stack: ProfileNode[]): string {
	for (const node of stack) {
		const { url, functionName } = node.callFrame;
		if (url.includes(`node_modules/${PACKAGE}/`)) return functionOf(node);
		if (
			url.includes('node_modules/n8n/dist/') &&
			!url.endsWith('credentials-helper.js') &&
			functionName
		)
			return functionOf(node);
	}
	const root = [...stack].reverse().find((n) => n.callFrame.url && n.callFrame.functionName);
	return root ? functionOf(root) : '(unknown)';
}

export function analyse(profile: CpuProfile) {
	const byId = new Map(profile.nodes.map((n) => [n.id, n]));
	const parent = new Map<number, number>();
	for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
	const selfMs = new Map<number, number>();
	profile.samples.forEach((id, i) => {
		const dt = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
		selfMs.set(id, (selfMs.get(id) ?? 0) + dt);
	});
	const total = [...selfMs.values()].reduce((a, b) => a + b, 0);
	const byPackage = new Map<string, number>();
	const bySelf = new Map<string, number>();
	const byTotal = new Map<string, number>();
	const byCategory = new Map<string, { ms: number; callers: Map<string, number> }>();
	for (const [id, ms] of selfMs) {
		const node = byId.get(id);
		if (!node) continue;
		const stack: ProfileNode[] = [];
		for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
			const frame = byId.get(at);
			if (frame && frame.callFrame.functionName !== '(root)') stack.push(frame);
		}
		const category = categoryOf(stack);
		const entry = byCategory.get(category) ?? { ms: 0, callers: new Map<string, number>() };
		entry.ms += ms;
		const caller = category.startsWith('(') ? '' : callerOf(stack);
		if (caller) entry.callers.set(caller, (entry.callers.get(caller) ?? 0) + ms);
		byCategory.set(category, entry);
		byPackage.set(packageOf(node), (byPackage.get(packageOf(node)) ?? 0) + ms);
		bySelf.set(functionOf(node), (bySelf.get(functionOf(node)) ?? 0) + ms);
		const seen = new Set<string>();
		for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
			const frame = byId.get(at);
			if (!frame || frame.callFrame.functionName === '(root)') continue;
			const name = functionOf(frame);
			if (seen.has(name)) continue;
			seen.add(name);
			byTotal.set(name, (byTotal.get(name) ?? 0) + ms);
		}
	}
	const by_category: CategoryEntry[] = [...byCategory.entries()]
		.sort((a, b) => b[1].ms - a[1].ms)
		.map(([name, { ms, callers }]) => ({
			name,
			ms: Math.round(ms),
			share: ms / total,
			callers: entries(callers, ms, 5),
		}));
	return {
		total,
		by_category,
		self_by_package: entries(byPackage, total),
		top_self: entries(bySelf, total, 30),
		top_total: entries(byTotal, total, 40),
	};
}

export async function runAnswersProfile(setup: {
	tarball: string;
	outDir: string;
	keep?: boolean;
	contacts: number;
	settings?: Record<string, string>;
}): Promise<AnswersProfileResult> {
	const inspectPort = await freePort();
	const settings = setup.settings ?? {};
	const env = await startBenchEnvironment({
		tarball: setup.tarball,
		outDir: setup.outDir,
		keep: setup.keep,
		logName: 'n8n-answers-profile.log',
		line: 2,
		env: { N8N_METRICS: 'true', ...settings, NODE_OPTIONS: `--inspect=127.0.0.1:${inspectPort}` },
	});
	let inspector: Inspector | undefined;
	try {
		const scene = {
			build: 'after' as const,
			env,
			workflowId: await activateConversation(env, env.sandbox),
			database: `${env.userFolder}/.n8n/database.sqlite`,
		};
		inspector = await Inspector.connect(inspectPort);
		await inspector.send('Profiler.enable');
		await inspector.send('Profiler.setSamplingInterval', { interval: 1000 });
		const contactsOf = (group: number, count: number) =>
			Array.from({ length: count }, (_, i) => `+33695${group}${String(10_000 + i).slice(1)}`);
		await oneRun(scene, 0, contactsOf(0, 3), 'W', 8000);
		const pid = env.n8n.child.pid as number;
		let threadsBefore = new Map<string, number>();
		let threadsAfter = new Map<string, number>();
		let profile: CpuProfile | undefined;
		let startedAt = 0;
		let isolatesBefore: number | null = null;
		let isolatesAfter: number | null = null;
		let windowMs = 0;
		const session = inspector;
		const run = await oneRun(scene, 1, contactsOf(1, setup.contacts), 'P', 8000, {
			started: async () => {
				isolatesBefore = await isolatesAcquired(env.n8n.url);
				await session.send('Profiler.start');
				threadsBefore = threadCpu(pid);
				startedAt = Date.now();
			},
			ended: async () => {
				threadsAfter = threadCpu(pid);
				windowMs = Date.now() - startedAt;
				profile = (await session.send<{ profile: CpuProfile }>('Profiler.stop')).profile;
				isolatesAfter = await isolatesAcquired(env.n8n.url);
			},
		});
		log(`  profiled: ${runLine(run)}`);
		log(`    ${timelineLine(run)}`);
		if (!profile) throw new Error('no profile');
		// The raw profile, for Chrome DevTools or a closer look (not committed: run.tmp/).
		writeFileSync(join(setup.outDir, 'answers-profile.cpuprofile'), JSON.stringify(profile));
		const threads = new Map<string, number>();
		for (const [name, ms] of threadsAfter) threads.set(name, ms - (threadsBefore.get(name) ?? 0));
		const cpu = [...threads.values()].reduce((a, b) => a + b, 0);
		const analysed = analyse(profile);
		return {
			n8n_settings: settings,
			run,
			window_s: windowMs / 1000,
			by_category: analysed.by_category,
			self_by_package: analysed.self_by_package,
			top_self: analysed.top_self,
			top_total: analysed.top_total,
			threads: entries(threads, cpu).filter((t) => t.ms > 0),
			n8n_cpu_ms: Math.round(cpu),
			isolates_per_answer:
				isolatesBefore === null || isolatesAfter === null
					? null
					: (isolatesAfter - isolatesBefore) / setup.contacts,
		};
	} finally {
		inspector?.close();
		await env.stop();
	}
}

export function answersProfileText(result: AnswersProfileResult): string {
	const pct = (share: number) => `${(share * 100).toFixed(1)}%`;
	const table = (title: string, rows: ProfileEntry[]) => [
		`| ${title} | ms | share |`,
		'|---|---|---|',
		...rows.map((r) => `| ${r.name.replace(/\|/g, '\\|')} | ${r.ms} | ${pct(r.share)} |`),
	];
	return [
		`n8n settings beyond the bench's: ${
			Object.entries(result.n8n_settings)
				.map(([k, v]) => `${k}=${v}`)
				.join(', ') || 'none'
		}. Answer phase of ${result.run.contacts} answers at once, ${result.window_s.toFixed(1)} s: ${runLine(result.run)}`,
		'',
		`${timelineLine(result.run)}`,
		'',
		`Expression isolates n8n acquired per answer: ${result.isolates_per_answer === null ? 'none counted (no counter)' : result.isolates_per_answer.toFixed(2)}. n8n's CPU by thread over the answer phase (${result.n8n_cpu_ms} ms in all, ${(result.n8n_cpu_ms / result.run.contacts).toFixed(0)} ms per answer):`,
		'',
		...table('thread', result.threads),
		'',
		'Main thread by what the time was for (a sample counts for the first that matches, in this order: credential read, isolate, evaluation, database, flatted, this package, axios); called from: the nearest frame of n8n or of this package, share of the row:',
		'',
		'| for | ms | share | called from (share of the row) |',
		'|---|---|---|---|',
		...result.by_category.map(
			(c) =>
				`| ${c.name} | ${c.ms} | ${pct(c.share)} | ${c.callers.map((k) => `${k.name.replace(/[|]/g, '/')} ${pct(k.share)}`).join('; ')} |`,
		),
		'',
		'Main thread, self time by package (V8 sampling profile; (idle) is the event loop waiting):',
		'',
		...table('package', result.self_by_package),
		'',
		'Main thread, functions with the most total time (self and callees):',
		'',
		...table('function', result.top_total),
		'',
		'Main thread, functions with the most self time:',
		'',
		...table('function', result.top_self),
	].join('\n');
}
