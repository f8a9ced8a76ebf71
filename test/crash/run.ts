/**
 * n8n killed hard (kill -9), regular mode, both n8n lines (npm run test:crash; scripts/crash.sh
 * builds and packs first):
 *
 *   ts-node --transpile-only test/crash/run.ts --tarball <tgz> [--out dir] [--line 1|2]
 *     [--rounds N] [--kills N] [--second-kills N] [--seed N]
 *
 * The schedule comes from a seeded PRNG (plan.ts): the seed is printed, and `CRASH_SEED=<n>` or
 * `--seed <n>` replays it. Both lines (default) run one after the other, each with its own n8n,
 * sandboxes and ports, with the same seed. Prints a table per line and writes
 * <out>/crash-summary.json. Exit code 1 when anything is lost or doubled outside the allowed
 * exception (a message whose execution n8n records as crashed), or a line could not run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { LINES, type Line } from '../real-n8n/n8n';
import { log } from '../real-n8n/util';
import {
	CATCH_UP_S,
	CLOCK_STEP_WARN_MS,
	QUIET_S,
	runLine,
	SECOND_KILL_MS,
	type LineSummary,
} from './line';
import { DEFAULT_PLAN, freshSeed, makePlan } from './plan';
import { conversationFailures, type Holder } from './tally';

const USAGE =
	'usage: test/crash/run.ts --tarball <tgz> [--out dir] [--line 1|2] [--rounds N] [--kills N] [--second-kills N] [--seed N]';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) {
	const name = process.argv[i];
	const value = process.argv[i + 1];
	if (!name.startsWith('--') || value === undefined) {
		console.error(USAGE);
		process.exit(2);
	}
	args.set(name.slice(2), value);
}
const known = ['tarball', 'out', 'line', 'rounds', 'kills', 'second-kills', 'seed'];
for (const name of args.keys())
	if (!known.includes(name)) {
		console.error(`unknown option --${name}\n${USAGE}`);
		process.exit(2);
	}

function integer(name: string, fallback: number, min: number): number {
	const raw = args.get(name);
	if (raw === undefined) return fallback;
	const value = Number(raw);
	if (!Number.isInteger(value) || value < min) {
		console.error(`--${name} must be a whole number of at least ${min}`);
		process.exit(2);
	}
	return value;
}

const tarball = args.get('tarball');
if (!tarball) {
	console.error(USAGE);
	process.exit(2);
}
const outDir = resolve(args.get('out') ?? '/tmp/business-messaging-crash');
const lineArg = args.get('line');
if (lineArg !== undefined && lineArg !== '1' && lineArg !== '2') {
	console.error('--line must be 1 or 2');
	process.exit(2);
}
const lines: Line[] = lineArg ? [Number(lineArg) as Line] : [2, 1];
const rounds = integer('rounds', DEFAULT_PLAN.rounds, 1);
const kills = integer('kills', Math.max(DEFAULT_PLAN.kills, rounds), 1);
const secondKills = integer(
	'second-kills',
	Math.min(kills - 1, Math.max(DEFAULT_PLAN.secondKills, Math.round(kills / 5))),
	0,
);
const seedText = args.get('seed') ?? process.env.CRASH_SEED;
const seed = seedText !== undefined ? Number(seedText) : freshSeed();
if (!Number.isInteger(seed) || seed < 0) {
	console.error('the seed (--seed or CRASH_SEED) must be a whole number of at least 0');
	process.exit(2);
}

/** The n8n pids alive now (one a line), for scripts/crash.sh's trap if this process dies. */
const pidFile = process.env.CRASH_PID_FILE ?? join(outDir, 'crash-pids');
const alive = new Set<number>();
const pids = {
	started(pid: number) {
		alive.add(pid);
		writeFileSync(pidFile, [...alive].map((p) => `${p} n8n\n`).join(''));
	},
	ended(pid: number) {
		alive.delete(pid);
		writeFileSync(pidFile, [...alive].map((p) => `${p} n8n\n`).join(''));
	},
};

function table(summaries: LineSummary[]): string {
	const rows: Array<[string, (s: LineSummary) => string | number]> = [
		['kills (SIGKILL)', (s) => s.kills],
		[`second kills (within ${SECOND_KILL_MS / 1000} s of a restart)`, (s) => s.secondKills],
		['restart to ready, p50 / max', (s) => `${sec(s.restartMs.p50)} / ${sec(s.restartMs.max)}`],
		['Combine messages sent', (s) => s.combine?.messages ?? '-'],
		['  in exactly one reply', (s) => s.combine?.inExactlyOne ?? '-'],
		['  lost', (s) => s.combine?.lost ?? '-'],
		['    of which an execution crashed (allowed)', (s) => s.combine?.lostCrashed ?? '-'],
		['  in two or more replies', (s) => s.combine?.inTwoOrMore ?? '-'],
		['conversations', (s) => s.conversations?.conversations ?? '-'],
		['  asked once / twice / never', (s) => three(s, 'askedOnce', 'askedTwice', 'askedNever')],
		[
			'  confirmed once / twice / never',
			(s) => three(s, 'confirmedOnce', 'confirmedTwice', 'confirmedNever'),
		],
		['  not clean, an execution crashed (allowed)', (s) => s.conversations?.excusedCrashed ?? '-'],
		['executions', (s) => s.executions?.total ?? '-'],
		['  crashed', (s) => s.executions?.crashed ?? '-'],
		['  stuck in new / running at the end', (s) => s.executions?.stuck.length ?? '-'],
		['n8n log after the first kill: error lines', (s) => s.log?.errorLines ?? '-'],
		["  (n8n's failed fetches of api.n8n.io, offline, apart)", (s) => s.log?.offlineLines ?? '-'],
		['  "Error in handling webhook request"', (s) => s.log?.webhookErrors ?? '-'],
		[
			'  package warnings / errors',
			(s) => (s.log ? `${s.log.packageWarnings} / ${s.log.packageErrors}` : '-'),
		],
		['  lines naming inputOverride', (s) => s.log?.inputOverride ?? '-'],
		['machine clock stepped during the run', (s) => sec(s.clockStepMs)],
		['result', (s) => (s.error ? 'ERROR' : s.ok ? 'PASS' : 'FAIL')],
		['time', (s) => `${s.durationS} s`],
	];
	const header = ['', ...summaries.map((s) => `n8n ${s.version} (line ${s.line})`)];
	const body = rows.map(([label, cell]) => [label, ...summaries.map((s) => String(cell(s)))]);
	const widths = header.map((_, i) => Math.max(...[header, ...body].map((r) => r[i].length)));
	const format = (row: string[]) =>
		row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
	return [format(header), ...body.map(format)].join('\n');
}

function sec(ms: number): string {
	return `${(ms / 1000).toFixed(1)} s`;
}

function three(
	s: LineSummary,
	a: 'askedOnce' | 'confirmedOnce',
	b: 'askedTwice' | 'confirmedTwice',
	c: 'askedNever' | 'confirmedNever',
): string {
	const t = s.conversations;
	return t ? `${t[a]} / ${t[b]} / ${t[c]}` : '-';
}

/** The lost and doubled messages, the conversations that were not clean, what the log said most. */
function holders(list: Holder[]): string {
	const time = (iso?: string) => (iso ? iso.slice(11, 23) : '?');
	return (
		list.map((e) => `#${e.id} ${e.status} (${e.mode ?? '?'} ${time(e.startedAt)})`).join(', ') ||
		'none'
	);
}

function details(s: LineSummary): string {
	const out: string[] = [];
	for (const p of s.combine?.problems ?? [])
		out.push(
			`  Combine ${p.replies === 0 ? 'LOST' : `IN ${p.replies} REPLIES`} "${p.text}": delivery ${p.delivery}; executions holding it: ${holders(p.executions)}`,
		);
	for (const p of s.conversations?.problems ?? [])
		out.push(
			`  conversation ${p.contact}: asked ${p.asked}, confirmed ${p.confirmed}, ${p.answered ? 'answered' : 'never answered'}; greeting ${p.greeting}; answer ${p.answer}; sent it: ${p.sent.join(' | ') || 'nothing'}; executions: ${holders(p.executions)}`,
		);
	for (const e of s.executions?.stuck ?? [])
		out.push(`  stuck execution #${e.id} (${e.workflow}): ${e.status} since ${e.startedAt ?? '?'}`);
	for (const e of s.executions?.errors ?? []) out.push(`  execution error ${e}`);
	const empty = s.executions?.holdingNothing ?? [];
	if (empty.length)
		out.push(
			`  executions not successful holding no message of the run: ${empty.map((e) => `#${e.id} ${e.status} (${e.workflow}, ${e.mode})`).join(', ')}`,
		);
	if (s.log?.top.length) {
		out.push('  n8n log after the first kill, most frequent warn/error lines:');
		for (const t of s.log.top)
			out.push(`    ${String(t.count).padStart(5)} ${t.level}: ${t.message}`);
	}
	return out.join('\n');
}

async function main(): Promise<void> {
	mkdirSync(outDir, { recursive: true });
	writeFileSync(pidFile, '');
	const plan = makePlan({
		seed,
		rounds,
		kills,
		secondKills,
		combineContacts: DEFAULT_PLAN.combineContacts,
		messagesPerContact: DEFAULT_PLAN.messagesPerContact,
		conversations: DEFAULT_PLAN.conversations,
	});
	const { combineContacts, messagesPerContact, conversations } = plan.options;
	log(
		`kill -9 test, seed ${seed} (CRASH_SEED=${seed} replays the schedule): ${rounds} rounds of ${combineContacts} contacts × ${messagesPerContact} messages to the Combine workflow (Quiet Period ${QUIET_S} s) and ${conversations} conversations; ${kills} kills, ${secondKills} of them planned within ${SECOND_KILL_MS / 1000} s of the restart before; catch-up every ${CATCH_UP_S} s; lines ${lines.join(', ')}`,
	);
	const summaries: LineSummary[] = [];
	for (const line of lines) {
		log(`================ n8n ${LINES[line].version} (line ${line}) ================`);
		const summary = await runLine({
			line,
			tarball: tarball as string,
			outDir,
			plan,
			keep: process.env.CRASH_KEEP === '1',
			pids,
		});
		summaries.push(summary);
		const detail = details(summary);
		if (detail) log(`line ${line}:\n${detail}`);
	}
	const file = join(outDir, 'crash-summary.json');
	writeFileSync(
		file,
		JSON.stringify(
			{
				seed,
				date: new Date().toISOString(),
				rounds,
				kills,
				secondKillsPlanned: secondKills,
				quietPeriodS: QUIET_S,
				catchUpIntervalS: CATCH_UP_S,
				perRound: { combineContacts, messagesPerContact, conversations },
				lines: summaries,
			},
			null,
			2,
		),
	);
	console.log(`\n${table(summaries)}\n\nseed ${seed}; summary: ${file}`);
	for (const s of summaries)
		if (Math.abs(s.clockStepMs) > CLOCK_STEP_WARN_MS)
			console.log(
				`line ${s.line}: the machine's clock stepped by ${sec(s.clockStepMs)} during the run (a paused or forked VM?): n8n took events for that much older than the sandbox stamped them; these figures are not a baseline, run it again`,
			);
	const failed = summaries.filter((s) => !s.ok);
	for (const s of failed)
		console.log(
			`line ${s.line}: ${s.error ? `did not run to the end: ${s.error}` : `${(s.combine?.lost ?? 0) - (s.combine?.lostCrashed ?? 0)} Combine messages lost and ${s.combine?.inTwoOrMore ?? 0} in two or more replies, ${s.conversations ? conversationFailures(s.conversations) : 0} conversations not clean, outside the allowed exception`}`,
		);
	process.exitCode = failed.length ? 1 : 0;
}

main().catch((error) => {
	console.error(error);
	process.exitCode = 1;
});
