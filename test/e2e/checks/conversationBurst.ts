/**
 * Conversations under real traffic (issue 24): the example conversation workflow with many
 * contacts at the same moment, on a loaded machine, and across an n8n restart. Each contact
 * writes, is asked one question, answers; the answer must resume that contact's own waiting
 * execution: never a second question (a new execution), never nothing (lost).
 *
 * Outcome of one contact, read from what the sandbox received:
 * - resumed: exactly one question and one confirmation of its answer;
 * - twice: asked again (the answer started a new execution, resumed or not);
 * - lost: no confirmation and no second question.
 */
import { spawn, type ChildProcess } from 'node:child_process';

import { readExample } from '../../real-n8n/examples';
import { N8nClient, N8nProcess } from '../../real-n8n/n8n';
import { SandboxControl, webhookLogFor, type DeliveryOutcomeView } from '../../real-n8n/sandbox';
import { log, sleep, waitFor } from '../../real-n8n/util';
import { restartLoggedIn, saveAsOnlyWebhook, type ConversationContext } from './conversation';

const QUESTION = /order number\?/;
const CONFIRMATION = /looking up order (\S+)/;

/** Contacts at once: a campaign's answers. */
export const BURST_CONTACTS = 50;
/** Contacts at once while other processes keep both cores busy. */
export const LOADED_CONTACTS = 20;
/** Contacts waiting while n8n restarts. */
export const RESTART_CONTACTS = 30;
/** Contacts answering at once on a busy machine, n8n restarted right after their answers. */
export const BUSY_RESTART_CONTACTS = 50;
/** Production settings: conversations finished before the restart, and contacts waiting across it. */
const QUIET_FINISHED = 20;
const QUIET_WAITING = 5;
/** The trigger's Catch-Up Interval in that check (its minimum): the catch-up is waited for twice. */
export const BUSY_RESTART_CATCH_UP_S = 10;

interface Outcome {
	resumed: number;
	twice: number;
	lost: number;
	/** What one contact asked twice was sent, in order. */
	example?: string;
}

function deliveriesSummary(outcomes: DeliveryOutcomeView[]): string {
	const failed = outcomes.filter((o) => !o.delivered);
	const slowest = Math.max(0, ...outcomes.map((o) => o.duration_ms ?? 0));
	const reasons = [...new Set(failed.map((o) => o.reason ?? String(o.status)))].slice(0, 3);
	return `${outcomes.length - failed.length}/${outcomes.length} answered in time, slowest ${slowest} ms${failed.length ? ` (${reasons.join('; ')})` : ''}`;
}

/** What a quiet restart has none of: n8n's failed resume requests, the package's refused or unconfirmed answers. */
function restartNoise(log: string): { count: number; summary: string } {
	const lines = log.split('\n');
	const n8nErrors = lines.filter((l) =>
		/Error in handling webhook request POST \/webhook-waiting\//.test(l),
	);
	const packageLines = lines.filter((l) =>
		/Business Messaging.*(refused the answer|did not confirm|never took|taken before n8n restarted)/.test(
			l,
		),
	);
	const first = [...n8nErrors, ...packageLines][0];
	return {
		count: n8nErrors.length + packageLines.length,
		summary: `${n8nErrors.length} n8n error line(s) about resume requests, ${packageLines.length} package line(s) about refused or unconfirmed answers${first ? ` (first: ${first.slice(0, 200)})` : ''}`,
	};
}

/** Two processes that spin, so n8n shares both cores as on a busy server. */
function loadTheMachine(): ChildProcess[] {
	return [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}

export async function conversationBurstChecks(ctx: ConversationContext): Promise<N8nProcess> {
	const { check, sandbox, line } = ctx;
	let n8n = ctx.n8n;
	const installDir = n8n.installation.dir;
	let client = new N8nClient(n8n.url, line, installDir);
	await client.login();
	const control = new SandboxControl(sandbox.baseUrl);
	const number = sandbox.numbers[0].phone_number_id;

	const example = readExample('conversation');
	const { workflow } = await saveAsOnlyWebhook(client, sandbox, example, 'burst');
	const activated = await client.activateAndSettle(workflow.id);
	if (!activated.ok) {
		await check('burst: the conversation example activates', async () => {
			throw new Error(activated.message);
		});
		return n8n;
	}

	const sentTo = async (): Promise<Map<string, string[]>> => {
		const byContact = new Map<string, string[]>();
		for (const m of (await control.state()).messages) {
			byContact.set(m.to, [...(byContact.get(m.to) ?? []), m.text]);
		}
		return byContact;
	};
	const write = async (from: string, text: string) =>
		(await control.inbound({ from, contact_name: 'Ada', number, text })).delivery;
	/** The workflow whose waiting executions are counted (the last check activates its own). */
	let watched = workflow.id;
	/** Waiting executions among the workflow's latest 100 (n8n's list filter counts are estimates on 2.x). */
	const waitingCount = async () =>
		(await client.executions(watched)).filter((e) => e.status === 'waiting').length;

	/** Every contact writes at once, and is asked; returns how the service's deliveries went. */
	const greetAll = async (contacts: string[]): Promise<string> => {
		const waitingBefore = await waitingCount();
		const deliveries = await Promise.all(contacts.map(async (c) => await write(c, 'hello')));
		await waitFor(
			`the question to all ${contacts.length} contacts`,
			async () => {
				const sent = await sentTo();
				return contacts.every((c) => (sent.get(c) ?? []).some((t) => QUESTION.test(t)));
			},
			180_000,
			1000,
		);
		const waiting = await waitFor(
			`${contacts.length} more waiting executions`,
			async () => {
				const count = (await waitingCount()) - waitingBefore;
				return count >= contacts.length ? count : undefined;
			},
			120_000,
			1000,
		).catch(async () => (await waitingCount()) - waitingBefore);
		const sent = await sentTo();
		const greetedTwice = contacts.filter(
			(c) => (sent.get(c) ?? []).filter((t) => QUESTION.test(t)).length > 1,
		).length;
		return `${deliveriesSummary(deliveries)}; ${waiting} executions waiting${greetedTwice ? `; ${greetedTwice} contacts asked twice before answering` : ''}`;
	};

	/** Every contact answers at once; waits for an outcome for each, then a little more for doubles. */
	const answerAll = async (
		contacts: string[],
		prefix: string,
	): Promise<{ outcome: Outcome; deliveries: string; seconds: number }> => {
		const started = Date.now();
		const deliveries = await Promise.all(
			contacts.map(async (c, i) => await write(c, `${prefix}-${i}`)),
		);
		const classify = async (): Promise<Outcome & { pending: number }> => {
			const sent = await sentTo();
			const outcome = { resumed: 0, twice: 0, lost: 0, pending: 0, example: '' };
			contacts.forEach((c, i) => {
				const texts = sent.get(c) ?? [];
				const asked = texts.filter((t) => QUESTION.test(t)).length;
				const confirmed = texts.filter(
					(t) => CONFIRMATION.exec(t)?.[1] === `${prefix}-${i}`,
				).length;
				if (asked > 1 || confirmed > 1) {
					outcome.twice++;
					outcome.example ||= `${c} was sent: ${texts.map((t) => t.slice(0, 40)).join(' | ')}`;
				} else if (confirmed === 1) outcome.resumed++;
				else outcome.pending++;
			});
			return outcome;
		};
		const settled = await waitFor(
			`an outcome for every answer of ${prefix}`,
			async () => {
				const o = await classify();
				return o.pending === 0 ? o : undefined;
			},
			180_000,
			1000,
		).catch(async () => await classify());
		const seconds = (Date.now() - started) / 1000;
		// A second question or confirmation would arrive within seconds: give it the time.
		await sleep(5000);
		const final = await classify();
		return {
			outcome: {
				resumed: final.resumed,
				twice: final.twice,
				lost: final.pending,
				example: final.example,
			},
			deliveries: deliveriesSummary(deliveries),
			seconds: settled.pending === 0 ? seconds : Number.NaN,
		};
	};

	const contactsOf = (group: number, count: number) =>
		Array.from({ length: count }, (_, i) => `+3362${group}${String(100_000 + i).slice(1)}`);
	const verdict = (label: string, count: number, outcome: Outcome): boolean =>
		outcome.resumed === count && outcome.twice === 0 && outcome.lost === 0
			? true
			: (log(`  ${label}: ${JSON.stringify(outcome)}`), false);
	const describe = (
		count: number,
		greeted: string,
		answered: { outcome: Outcome; deliveries: string; seconds: number },
	) =>
		`${answered.outcome.resumed}/${count} resumed their own execution, ${answered.outcome.twice} asked twice, ${answered.outcome.lost} lost${answered.outcome.example ? ` (${answered.outcome.example})` : ''}; all outcomes in ${answered.seconds.toFixed(1)} s; greetings: ${greeted}; answers: ${answered.deliveries}`;

	await check(
		`burst: ${BURST_CONTACTS} contacts write at once, are asked, answer at once: every answer resumes its own execution, none asked twice, none lost`,
		async () => {
			const contacts = contactsOf(1, BURST_CONTACTS);
			const greeted = await greetAll(contacts);
			const answered = await answerAll(contacts, 'B');
			const detail = describe(BURST_CONTACTS, greeted, answered);
			if (!verdict('burst', BURST_CONTACTS, answered.outcome)) throw new Error(detail);
			return detail;
		},
	);

	await check(
		`burst: ${LOADED_CONTACTS} contacts at once while two processes keep both cores busy: every answer resumes its own execution, none asked twice, none lost`,
		async () => {
			const contacts = contactsOf(2, LOADED_CONTACTS);
			const load = loadTheMachine();
			try {
				const greeted = await greetAll(contacts);
				const answered = await answerAll(contacts, 'L');
				const detail = describe(LOADED_CONTACTS, greeted, answered);
				if (!verdict('loaded', LOADED_CONTACTS, answered.outcome)) throw new Error(detail);
				return detail;
			} finally {
				for (const child of load) child.kill('SIGKILL');
			}
		},
	);

	await check(
		`burst: ${RESTART_CONTACTS} contacts asked at once, n8n restarted while they wait, all answer at once: every answer resumes its own execution`,
		async () => {
			const contacts = contactsOf(3, RESTART_CONTACTS);
			const greeted = await greetAll(contacts);
			const logBefore = n8n.logText().length;
			({ n8n, client } = await restartLoggedIn(ctx));
			const answered = await answerAll(contacts, 'R');
			// Issue 49 goal 4: nothing went wrong, so the restart says nothing (n8n and the package alike).
			const noise = restartNoise(n8n.logText().slice(logBefore));
			const detail = `${describe(RESTART_CONTACTS, greeted, answered)}; after the restart: ${noise.summary}`;
			if (!verdict('restart', RESTART_CONTACTS, answered.outcome) || noise.count > 0)
				throw new Error(detail);
			return detail;
		},
	);

	await client.deactivate(workflow.id).catch(() => undefined);

	// Goal 4 (issue 32): an answer that resumed a wait starts an execution the trigger's execute()
	// records as run, so after a restart the catch-up (which re-runs what the service logged as
	// failed, e.g. answered after 8 s on a busy machine) must not start the conversation again.
	await check(
		`burst: ${BUSY_RESTART_CONTACTS} contacts answer at once while two processes keep both cores busy, n8n restarted right after, two catch-up intervals (${BUSY_RESTART_CATCH_UP_S} s) waited: none asked twice, every answer resumed its own execution once`,
		async () => {
			const withCatchUp = readExample('conversation');
			const trigger = withCatchUp.nodes.find((n) => n.type.endsWith('.businessMessagingTrigger'));
			if (!trigger) throw new Error('examples/conversation.json has no Business Messaging Trigger');
			trigger.parameters = {
				...trigger.parameters,
				catchUp: true,
				options: {
					...(trigger.parameters?.options as Record<string, unknown> | undefined),
					catchUpInterval: BUSY_RESTART_CATCH_UP_S,
				},
			};
			const saved = await saveAsOnlyWebhook(client, sandbox, withCatchUp, 'busy restart');
			const activation = await client.activateAndSettle(saved.workflow.id);
			if (!activation.ok) throw new Error(`activation: ${activation.message}`);
			watched = saved.workflow.id;
			try {
				const contacts = contactsOf(4, BUSY_RESTART_CONTACTS);
				const greeted = await greetAll(contacts);
				const load = loadTheMachine();
				let answers: Array<{ waId: string; delivery: DeliveryOutcomeView }> = [];
				let restartSeconds = 0;
				try {
					const answeredAt = Date.now();
					answers = await Promise.all(
						contacts.map(async (c, i) => {
							const out = await control.inbound({
								from: c,
								contact_name: 'Ada',
								number,
								text: `Z-${i}`,
							});
							return { waId: out.record.wa_message_id, delivery: out.delivery };
						}),
					);
					log(
						`  ${BUSY_RESTART_CONTACTS} answers delivered in ${((Date.now() - answeredAt) / 1000).toFixed(1)} s (${deliveriesSummary(answers.map((a) => a.delivery))}); restarting n8n`,
					);
					const restartAt = Date.now();
					({ n8n, client } = await restartLoggedIn(ctx));
					restartSeconds = (Date.now() - restartAt) / 1000;
				} finally {
					for (const child of load) child.kill('SIGKILL');
				}
				const upAt = Date.now();
				const classify = async (): Promise<Outcome & { pending: number }> => {
					const sent = await sentTo();
					const outcome = { resumed: 0, twice: 0, lost: 0, pending: 0, example: '' };
					contacts.forEach((c, i) => {
						const texts = sent.get(c) ?? [];
						const asked = texts.filter((t) => QUESTION.test(t)).length;
						const confirmations = texts
							.map((t) => CONFIRMATION.exec(t)?.[1])
							.filter((o): o is string => o !== undefined);
						const confirmed = confirmations.filter((o) => o === `Z-${i}`).length;
						if (asked > 1 || confirmations.length > 1 || confirmations.length > confirmed) {
							outcome.twice++;
							outcome.example ||= `${c} was sent: ${texts.map((t) => t.slice(0, 40)).join(' | ')}`;
						} else if (confirmed === 1) outcome.resumed++;
						else outcome.pending++;
					});
					return outcome;
				};
				const settled = await waitFor(
					'an outcome for every answer after the restart',
					async () => {
						const o = await classify();
						return o.pending === 0 ? o : undefined;
					},
					180_000,
					1000,
				).catch(async () => await classify());
				const outcomesSeconds = (Date.now() - upAt) / 1000;
				// The catch-up runs at the start and every interval: two of them after n8n is up (and
				// after every outcome), so that whatever the service logged as failed has been seen.
				await sleep(Math.max(0, upAt + 2 * BUSY_RESTART_CATCH_UP_S * 1000 - Date.now()));
				await sleep(2 * BUSY_RESTART_CATCH_UP_S * 1000);
				const final = await classify();
				const answerIds = new Set(answers.map((a) => a.waId));
				const logged = await webhookLogFor(sandbox.baseUrl, sandbox.keys.all, answerIds);
				const outcome: Outcome = {
					resumed: final.resumed,
					twice: final.twice,
					lost: final.pending,
					example: final.example,
				};
				const detail = `${outcome.resumed}/${BUSY_RESTART_CONTACTS} resumed their own execution once, ${outcome.twice} asked twice (or confirmed twice), ${outcome.lost} lost${outcome.example ? ` (${outcome.example})` : ''}; all outcomes ${Number.isFinite(settled.pending) && settled.pending === 0 ? `${outcomesSeconds.toFixed(1)} s` : 'not all'} after n8n was up again (restart ${restartSeconds.toFixed(1)} s), then two catch-up intervals waited (${((Date.now() - upAt) / 1000).toFixed(0)} s after the restart in all); greetings: ${greeted}; answers: ${deliveriesSummary(answers.map((a) => a.delivery))}; the service logged ${logged.failed} of ${logged.entries} answers as failed${logged.failed ? ` ${JSON.stringify(logged.reasons)}` : ''}: what the catch-up saw`;
				if (!verdict('busy restart', BUSY_RESTART_CONTACTS, outcome)) throw new Error(detail);
				return detail;
			} finally {
				await client.deactivate(saved.workflow.id).catch(() => undefined);
			}
		},
	);

	// Issue 49 goal 4: with successful executions not saved, a restart used to post answers that had
	// run, and n8n logged "does not exist" for each. Nothing was owed, so nothing may be said.
	await check(
		`burst: production settings (successful executions not saved): ${QUIET_FINISHED} conversations finished, then ${QUIET_WAITING} contacts waiting across a restart: each answer resumes its own execution, and after the restart neither n8n nor the package logs a resume request or a refused answer`,
		async () => {
			const example = readExample('conversation');
			const saved = await saveAsOnlyWebhook(client, sandbox, example, 'production settings');
			await client.updateSettings(saved.workflow.id, {
				saveDataSuccessExecution: 'none',
				saveManualExecutions: false,
			});
			const activation = await client.activateAndSettle(saved.workflow.id);
			if (!activation.ok) throw new Error(`activation: ${activation.message}`);
			watched = saved.workflow.id;
			try {
				const finishing = contactsOf(5, QUIET_FINISHED);
				await greetAll(finishing);
				const finished = await answerAll(finishing, 'P');
				const waiting = contactsOf(6, QUIET_WAITING);
				const greeted = await greetAll(waiting);
				const logBefore = n8n.logText().length;
				({ n8n, client } = await restartLoggedIn(ctx));
				const answered = await answerAll(waiting, 'Q');
				const noise = restartNoise(n8n.logText().slice(logBefore));
				const detail = `finished before: ${finished.outcome.resumed}/${QUIET_FINISHED} resumed once; across the restart: ${describe(QUIET_WAITING, greeted, answered)}; after the restart: ${noise.summary}`;
				const ok =
					verdict('production settings, before', QUIET_FINISHED, finished.outcome) &&
					verdict('production settings, restart', QUIET_WAITING, answered.outcome);
				if (!ok || noise.count > 0) throw new Error(detail);
				return detail;
			} finally {
				await client.deactivate(saved.workflow.id).catch(() => undefined);
			}
		},
	);
	return n8n;
}
