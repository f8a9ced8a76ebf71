/**
 * One n8n line under kill -9 (npm run test:crash): two sandboxes (two accounts: the account has
 * one webhook, and one Business Messaging Trigger receives it), one n8n in regular mode on SQLite
 * with the packed package installed as users do, and on it
 * - the Combine workflow (examples/auto-reply.json, Combine a Contact's Messages on, Quiet Period
 *   QUIET_S, its Reply "got: <the burst's texts, one a line>": test/real-n8n/bursts.ts), on
 *   account A;
 * - the conversation example (examples/conversation.json: Reply and Wait for Answer asks for the
 *   order number, the answer is confirmed), on account B;
 * both with Catch-Up Interval CATCH_UP_S. Then the plan's waves (plan.ts), each ended by SIGKILL
 * to n8n's process group and a start on the same port and user folder; then the catch-up's time;
 * then the count (tally.ts) at the sandboxes, the executions over REST, and n8n's log (logScan.ts).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { combineAutoReply, tallyBursts, type SentMessage } from '../real-n8n/bursts';
import { CREDENTIAL_NAME, mapExample, readExample } from '../real-n8n/examples';
import {
	installN8n,
	installPackage,
	LINES,
	N8nClient,
	N8nProcess,
	type Line,
	type WorkflowJson,
} from '../real-n8n/n8n';
import {
	launchSandbox,
	SandboxControl,
	type DeliveryOutcomeView,
	type Sandbox,
	type SandboxState,
} from '../real-n8n/sandbox';
import { errorText, freePort, log, sleep, waitFor } from '../real-n8n/util';
import { CREDENTIAL_TYPE } from '../support/constants';
import { scanLog, type LogCount } from './logScan';
import type { Plan, Wave } from './plan';
import {
	answerText,
	combineText,
	conversationFailures,
	countCombine,
	countConversations,
	greetingText,
	QUESTION,
	CONFIRMATION,
	repliesByContact,
	type CombineCount,
	type Conversation,
	type ConversationCount,
	type ExecutionHolding,
} from './tally';

/** The Combine workflow's Quiet Period (s). */
export const QUIET_S = 3;
/** Both triggers' Catch-Up Interval (s; its minimum). */
export const CATCH_UP_S = 10;
/**
 * After the last restart the run is done once every outcome is in and this long has passed
 * (a double would come meanwhile), and each trigger's catch-up ran CATCH_UP_RUNS times ...
 */
const DOUBLES_WATCH_MS = 15_000;
/** ... or once nothing changed this long (four catch-up intervals) ... */
const STALL_MS = 4 * CATCH_UP_S * 1000;
/** ... with this many catch-up runs of each trigger meanwhile ... */
const CATCH_UP_RUNS = 3;
/** ... at the latest this long after the last restart. */
const SETTLE_CAP_MS = 240_000;
/** A clock step larger than this makes the run's figures unreliable (said in the table). */
export const CLOCK_STEP_WARN_MS = 2_000;
/** A kill this soon after n8n was ready counts as a second kill. */
export const SECOND_KILL_MS = 2_000;

export interface KillRecord {
	/** When (ISO), to read beside the executions' times. */
	at: string;
	wave: number;
	round: number;
	planned: 'normal' | 'quick';
	/** From n8n ready (the start before) to the SIGKILL, ms. */
	afterReadyMs: number;
	second: boolean;
	/** Combine messages sent and in no reply yet, at the kill. */
	unreplied: number;
	/** Answers sent and not confirmed yet, at the kill. */
	owed: number;
	/** The start after it: spawn to "Editor is now accessible", ms. */
	restartMs: number;
}

export interface LineSummary {
	line: Line;
	version: string;
	seed: number;
	ok: boolean;
	error?: string;
	durationS: number;
	rounds: number;
	kills: number;
	secondKills: number;
	restartMs: { p50: number; max: number };
	combine?: CombineCount;
	conversations?: ConversationCount;
	executions?: {
		total: number;
		byStatus: Record<string, Record<string, number>>;
		crashed: number;
		stuck: Array<{ id: string; status: string; workflow: string; startedAt?: string }>;
		/** The first errors of executions with status error. */
		errors: string[];
		/**
		 * Executions not successful whose stored data holds no message of the run (a row n8n stored
		 * without its data, say): a message lost "in no execution" could have been in one of these.
		 * (A successful one holds none when run-once dropped its messages: its trigger passed nothing on.)
		 */
		holdingNothing: Array<{ id: string; status: string; workflow: string; mode: string }>;
	};
	log?: LogCount;
	/**
	 * How far the machine's wall clock (n8n's) moved against the sandboxes' monotonic clock during
	 * the run, ms: a paused or forked VM steps the wall clock, and n8n then takes every event for
	 * late (Late Delivery Cutoff 5 s). Above CLOCK_STEP_WARN_MS the line's figures are not a baseline.
	 */
	clockStepMs: number;
	/** After the last restart: how long, and the catch-up runs each trigger made meanwhile. */
	settle?: { seconds: number; catchUpRuns: { combine: number; conversation: number } };
	killLog: KillRecord[];
	/** Where the n8n log of this line is. */
	logFile: string;
}

export interface LineOptions {
	line: Line;
	tarball: string;
	outDir: string;
	plan: Plan;
	keep: boolean;
	/** Every n8n started (pid) and ended, for scripts/crash.sh's trap. */
	pids: { started(pid: number): void; ended(pid: number): void };
}

/** Catch-up runs of the account's trigger since `sinceMs`: each run reads the webhook first. */
function catchUpRuns(state: SandboxState, sinceMs: number): number {
	return state.requests.filter(
		(r) => r.method === 'GET' && r.path === '/v1/console/webhook' && Date.parse(r.at) >= sinceMs,
	).length;
}

function deliveryText(d: DeliveryOutcomeView): string {
	return d.delivered
		? `2xx in ${d.duration_ms} ms`
		: `failed: ${d.reason ?? `HTTP ${d.status}`}${d.duration_ms !== null ? ` after ${d.duration_ms} ms` : ''}`;
}

function percentile(values: number[], p: number): number {
	if (values.length === 0) return 0;
	const s = [...values].sort((a, b) => a - b);
	return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
}

/** The conversation example: catch-up every CATCH_UP_S, the wait 30 minutes (longer than a run). */
function conversationWorkflow(): WorkflowJson {
	const workflow = readExample('conversation');
	for (const node of workflow.nodes) {
		if (node.type.endsWith('.businessMessagingTrigger'))
			node.parameters = {
				...node.parameters,
				catchUp: true,
				options: {
					...(node.parameters?.options as Record<string, unknown> | undefined),
					catchUpInterval: CATCH_UP_S,
				},
			};
		if (node.name === 'Ask for the order number')
			node.parameters = { ...node.parameters, waitAmount: 30, waitUnit: 'minutes' };
	}
	return workflow;
}

/** Saves `example` with a credential for `sandbox`'s account and activates it. */
async function install(
	client: N8nClient,
	sandbox: Sandbox,
	example: WorkflowJson,
	label: string,
): Promise<string> {
	const credential = await client.createCredential(
		`${CREDENTIAL_NAME} (${label})`,
		CREDENTIAL_TYPE,
		{ apiKey: sandbox.keys.all, baseUrl: sandbox.baseUrl, webhookSecret: '' },
	);
	const saved = await client.createWorkflow({
		...mapExample(example, { [CREDENTIAL_NAME]: credential.id }, {}),
		name: `crash: ${label}`,
	});
	const outcome = await client.activateAndSettle(saved.id);
	if (!outcome.ok) throw new Error(`activating "crash: ${label}" failed: ${outcome.message}`);
	await waitFor(
		`the ${label} trigger to register its webhook`,
		() => sandbox.state().webhook.configured,
		30_000,
		250,
	);
	return saved.id;
}

export async function runLine(options: LineOptions): Promise<LineSummary> {
	const { line, plan } = options;
	const startedAt = Date.now();
	const logFile = join(options.outDir, `n8n-line${line}.log`);
	const summary: LineSummary = {
		line,
		version: LINES[line].version,
		seed: plan.options.seed,
		ok: false,
		durationS: 0,
		rounds: plan.options.rounds,
		kills: 0,
		secondKills: 0,
		restartMs: { p50: 0, max: 0 },
		clockStepMs: 0,
		killLog: [],
		logFile,
	};
	const installation = installN8n(line, join(options.outDir, `install-n8n-line${line}.log`), true);
	const userFolder = mkdtempSync(join(tmpdir(), `bm-crash-n8n${line}-`));
	installPackage(userFolder, options.tarball);
	writeFileSync(logFile, '');

	const combineSandbox = await launchSandbox();
	const talkSandbox = await launchSandbox();
	const combineControl = new SandboxControl(combineSandbox.baseUrl);
	const talkControl = new SandboxControl(talkSandbox.baseUrl);
	const number = combineSandbox.numbers[0].phone_number_id;
	const talkNumber = talkSandbox.numbers[0].phone_number_id;
	const taken = [combineSandbox, talkSandbox].flatMap((s) =>
		[s.baseUrl, s.mediaBaseUrl].map((u) => Number(new URL(u).port)),
	);
	/** Wall clock minus the sandbox's clock: constant unless the machine's clock steps. */
	const clockOffset = () => Date.now() - Date.parse(combineSandbox.state().now);
	const offsetAtStart = clockOffset();
	const noteClock = () => {
		const step = clockOffset() - offsetAtStart;
		if (Math.abs(step) > Math.abs(summary.clockStepMs)) summary.clockStepMs = step;
	};
	const port = await freePort(taken);
	const brokerPort = await freePort([port, ...taken]);

	let n8n: N8nProcess | undefined;
	let readyAt = 0;
	const restartTimes: number[] = [];
	const start = async (): Promise<number> => {
		const spawnedAt = Date.now();
		n8n = await N8nProcess.start({
			installation,
			userFolder,
			port,
			brokerPort,
			logFile,
			readyPollMs: 100,
			// Each logger line with its level (text format prints the message alone at info).
			env: { N8N_LOG_FORMAT: 'json' },
		});
		readyAt = Date.now();
		const pid = n8n.child.pid as number;
		options.pids.started(pid);
		n8n.child.once('exit', () => options.pids.ended(pid));
		await waitFor(
			'n8n to answer /healthz',
			async () => (await fetch(`${n8n!.url}/healthz`).catch(() => undefined))?.ok,
			30_000,
			100,
		);
		return readyAt - spawnedAt;
	};
	const stopSignals = () => {
		const pid = n8n?.child.pid;
		if (pid && n8n?.running) {
			try {
				process.kill(-pid, 'SIGKILL');
			} catch {
				/* gone */
			}
		}
		process.exit(130);
	};
	process.once('SIGINT', stopSignals);
	process.once('SIGTERM', stopSignals);

	const sent: SentMessage[] = [];
	const deliveries = new Map<string, string>();
	const conversations = new Map<string, Conversation>();
	const pending: Array<Promise<void>> = [];
	const at = (when: number, send: () => Promise<void>) =>
		pending.push(
			(async () => {
				await sleep(Math.max(0, when - Date.now()));
				await send();
			})(),
		);
	const writeCombine = async (message: SentMessage) => {
		sent.push(message);
		try {
			const out = await combineControl.inbound({ ...message, contact_name: 'Ada' });
			deliveries.set(message.text, deliveryText(out.delivery));
		} catch (error) {
			deliveries.set(message.text, `not stored: ${errorText(error)}`);
		}
	};
	const greet = async (contact: string, round: number) => {
		const conversation: Conversation = { contact, round };
		conversations.set(contact, conversation);
		try {
			const out = await talkControl.inbound({
				from: contact,
				contact_name: 'Ada',
				number: talkNumber,
				text: greetingText(contact),
			});
			conversation.greetingDelivery = deliveryText(out.delivery);
		} catch (error) {
			conversation.greetingDelivery = `not stored: ${errorText(error)}`;
		}
	};
	/** Every contact asked so far and not answering yet answers now (once: a second question is not answered). */
	const answerAsked = () => {
		const replies = repliesByContact(talkSandbox.state());
		for (const c of conversations.values()) {
			if (c.answer || !(replies.get(c.contact) ?? []).some((t) => QUESTION.test(t))) continue;
			c.answer = answerText(c.contact);
			pending.push(
				(async () => {
					try {
						const out = await talkControl.inbound({
							from: c.contact,
							contact_name: 'Ada',
							number: talkNumber,
							text: c.answer as string,
						});
						c.answerDelivery = deliveryText(out.delivery);
					} catch (error) {
						c.answerDelivery = `not stored: ${errorText(error)}`;
					}
				})(),
			);
		}
	};
	const inFlight = () => {
		const unreplied = tallyBursts(combineSandbox.state(), sent).lost;
		const replies = repliesByContact(talkSandbox.state());
		let owed = 0;
		for (const c of conversations.values())
			if (
				c.answer &&
				!(replies.get(c.contact) ?? []).some((t) => CONFIRMATION.exec(t)?.[1] === c.answer)
			)
				owed++;
		return { unreplied, owed };
	};
	let logOffset = 0;
	const killAndRestart = async (wave: Wave) => {
		const current = n8n as N8nProcess;
		const pid = current.child.pid as number;
		const killedAt = new Date();
		const afterReadyMs = killedAt.getTime() - readyAt;
		// What n8n's log says from the first kill on.
		if (summary.killLog.length === 0) logOffset = statSync(logFile).size;
		process.kill(-pid, 'SIGKILL');
		await waitFor('n8n to exit after SIGKILL', () => !current.running, 10_000, 20);
		const { unreplied, owed } = inFlight();
		noteClock();
		const restartMs = await start();
		restartTimes.push(restartMs);
		const record: KillRecord = {
			at: killedAt.toISOString(),
			wave: wave.index,
			round: wave.round,
			planned: wave.quick ? 'quick' : 'normal',
			afterReadyMs,
			second: wave.index > 0 && afterReadyMs <= SECOND_KILL_MS,
			unreplied,
			owed,
			restartMs,
		};
		summary.killLog.push(record);
		log(
			`  kill ${summary.killLog.length} at ${record.at.slice(11, 23)} (wave ${wave.index + 1}, round ${wave.round + 1}${record.second ? ', SECOND kill' : ''}): ${(afterReadyMs / 1000).toFixed(2)} s after ready; in flight: ${unreplied} Combine messages unreplied, ${owed} answers unconfirmed; up again in ${(restartMs / 1000).toFixed(1)} s`,
		);
	};

	try {
		log(`n8n ${installation.version} (line ${line}): starting (log ${logFile})`);
		await start();
		const client = new N8nClient((n8n as N8nProcess).url, line, installation.dir);
		await client.setupOwner();
		const combineId = await install(
			client,
			combineSandbox,
			combineAutoReply({ quietS: QUIET_S, catchUpIntervalS: CATCH_UP_S }),
			'combine',
		);
		const talkId = await install(client, talkSandbox, conversationWorkflow(), 'conversation');
		log(
			`workflows active: Combine (Quiet Period ${QUIET_S} s) on sandbox ${combineSandbox.baseUrl}, conversation on ${talkSandbox.baseUrl}; catch-up every ${CATCH_UP_S} s`,
		);

		for (const wave of plan.waves) {
			await sleep(Math.max(0, readyAt + wave.startAfterReadyMs - Date.now()));
			const t0 = Date.now();
			for (const burst of wave.bursts)
				burst.offsetsMs.forEach((offset, n) =>
					at(t0 + offset, () =>
						writeCombine({ from: burst.contact, number, text: combineText(burst.contact, n + 1) }),
					),
				);
			for (const g of wave.greetings) at(t0 + g.offsetMs, () => greet(g.contact, wave.round));
			at(t0 + wave.answersAtMs, async () => answerAsked());
			await sleep(Math.max(0, t0 + wave.killAtMs - Date.now()));
			await killAndRestart(wave);
		}

		log(
			`all ${plan.waves.length} kills done; waiting for the catch-up (every ${CATCH_UP_S} s) to bring what it brings`,
		);
		const settleStart = Date.now();
		let doneAt = 0;
		let lastChange = Date.now();
		let signature = '';
		for (;;) {
			answerAsked();
			await sleep(1000);
			const combineState = combineSandbox.state();
			const talkState = talkSandbox.state();
			const bursts = tallyBursts(combineState, sent);
			const replies = repliesByContact(talkState);
			const talksOpen = [...conversations.values()].filter((c) => {
				const texts = replies.get(c.contact) ?? [];
				return !texts.some((t) => CONFIRMATION.test(t)) && texts.length < 2;
			}).length;
			const now = Date.now();
			const current = `${combineState.messages.length}|${talkState.messages.length}`;
			if (current !== signature) {
				signature = current;
				lastChange = now;
			}
			// Everything in: the catch-up still gets its time (a copy of a message that ran would come now).
			const caughtUp =
				now - settleStart >= 3 * CATCH_UP_S * 1000 &&
				catchUpRuns(combineState, settleStart) >= CATCH_UP_RUNS &&
				catchUpRuns(talkState, settleStart) >= CATCH_UP_RUNS;
			if (bursts.lost === 0 && talksOpen === 0) {
				doneAt ||= now;
				if (now - doneAt >= DOUBLES_WATCH_MS && caughtUp) break;
			} else doneAt = 0;
			// Nothing new for STALL_MS, and each trigger's catch-up ran at least CATCH_UP_RUNS times
			// meanwhile (each run reads the account's webhook first: the webhook watch).
			const quiet =
				now - lastChange >= STALL_MS &&
				catchUpRuns(combineState, lastChange) >= CATCH_UP_RUNS &&
				catchUpRuns(talkState, lastChange) >= CATCH_UP_RUNS;
			if (now - settleStart >= 3 * CATCH_UP_S * 1000 && quiet) break;
			if (now - settleStart >= SETTLE_CAP_MS) break;
		}
		noteClock();
		summary.settle = {
			seconds: Math.round((Date.now() - settleStart) / 1000),
			catchUpRuns: {
				combine: catchUpRuns(combineSandbox.state(), settleStart),
				conversation: catchUpRuns(talkSandbox.state(), settleStart),
			},
		};
		await Promise.all(pending);
		log(
			`settled ${summary.settle.seconds} s after the last restart (catch-up runs meanwhile: Combine ${summary.settle.catchUpRuns.combine}, conversation ${summary.settle.catchUpRuns.conversation})`,
		);

		// n8n's record: every execution, and the data each one stored (its run data, not the workflow:
		// n8n 1.x copies static data, held messages included, into every execution's workflowData).
		const executions = await client.allExecutions();
		const kind = (workflowId: string) =>
			workflowId === combineId ? 'combine' : workflowId === talkId ? 'conversation' : 'other';
		const holdings: ExecutionHolding[] = [];
		for (const execution of executions) {
			const workflow = kind(execution.workflowId);
			if (workflow === 'other') continue;
			const { json } = await client.raw('GET', `/rest/executions/${execution.id}`);
			const data = (json as { data?: { data?: unknown } } | undefined)?.data?.data;
			holdings.push({
				id: execution.id,
				status: execution.status,
				workflow,
				mode: execution.mode,
				startedAt: execution.startedAt,
				data: typeof data === 'string' ? data : JSON.stringify(data ?? ''),
			});
		}
		writeFileSync(
			join(options.outDir, `executions-line${line}.json`),
			JSON.stringify(
				executions.map(({ id, workflowId, mode, status, startedAt, stoppedAt }) => ({
					id,
					workflow: kind(workflowId),
					mode,
					status,
					startedAt,
					stoppedAt,
				})),
				null,
				1,
			),
		);
		// With their stored data, for reading a loss by hand (each message's text is in it).
		writeFileSync(
			join(options.outDir, `executions-data-line${line}.json`),
			JSON.stringify(holdings),
		);
		const byStatus: Record<string, Record<string, number>> = {};
		for (const execution of executions) {
			const k = kind(execution.workflowId);
			byStatus[k] ??= {};
			byStatus[k][execution.status] = (byStatus[k][execution.status] ?? 0) + 1;
		}
		const errors: string[] = [];
		for (const execution of executions.filter((e) => e.status === 'error').slice(0, 5)) {
			const run = await client.executionRunData(execution.id).catch(() => undefined);
			const message = (run?.error as { message?: string } | undefined)?.message;
			errors.push(`#${execution.id} (${kind(execution.workflowId)}): ${message ?? '?'}`);
		}
		summary.executions = {
			total: executions.length,
			byStatus,
			crashed: executions.filter((e) => e.status === 'crashed').length,
			stuck: executions
				.filter((e) => e.status === 'new' || e.status === 'running')
				.map((e) => ({
					id: e.id,
					status: e.status,
					workflow: kind(e.workflowId),
					startedAt: e.startedAt,
				})),
			errors,
			holdingNothing: holdings
				.filter((h) => h.status !== 'success')
				.filter((h) =>
					h.workflow === 'combine'
						? !sent.some((m) => h.data.includes(m.text))
						: ![...conversations.keys()].some((contact) => h.data.includes(contact)),
				)
				.map(({ id, status, workflow, mode }) => ({ id, status, workflow, mode: mode ?? '?' })),
		};
		summary.combine = countCombine(combineSandbox.state(), sent, deliveries, holdings);
		summary.conversations = countConversations(
			talkSandbox.state(),
			[...conversations.values()],
			holdings,
		);
	} catch (error) {
		summary.error = errorText(error);
		log(`line ${line} stopped: ${summary.error}`);
	} finally {
		await Promise.allSettled(pending);
		process.removeListener('SIGINT', stopSignals);
		process.removeListener('SIGTERM', stopSignals);
		await n8n?.stop();
		await combineSandbox.close();
		await talkSandbox.close();
		if (!options.keep) rmSync(userFolder, { recursive: true, force: true });
		else log(`n8n user folder kept: ${userFolder}`);
	}

	if (existsSync(logFile))
		summary.log = scanLog(readFileSync(logFile).subarray(logOffset).toString('utf8'));
	summary.kills = summary.killLog.length;
	summary.secondKills = summary.killLog.filter((k) => k.second).length;
	summary.restartMs = { p50: percentile(restartTimes, 0.5), max: Math.max(0, ...restartTimes) };
	summary.durationS = Math.round((Date.now() - startedAt) / 1000);
	const combine = summary.combine;
	const talks = summary.conversations;
	summary.ok =
		!summary.error &&
		!!combine &&
		!!talks &&
		combine.lost - combine.lostCrashed === 0 &&
		combine.inTwoOrMore === 0 &&
		conversationFailures(talks) === 0;
	return summary;
}
