/**
 * Combine a Contact's Messages in real n8n (issue 33, goals 2 and 3): the auto-reply example with
 * the trigger's combine option on (Quiet Period COMBINE_QUIET_S, catch-up every 10 s) and a Reply
 * "got: {{ $json.text }}", so every emitted item sends one reply naming the messages it holds
 * (test/real-n8n/bursts.ts). What the sandbox received is the outcome: one reply per burst, each
 * message in exactly one reply, in the order the service stored them.
 *
 * Registered in run.e2e.ts after the conversation checks (E2E_ONLY=combine runs them alone);
 * restarts n8n once (graceful: SIGTERM, n8n waits for running executions) and returns the process
 * now running.
 */
import { loadavg } from 'node:os';

import { N8nClient, N8nProcess } from '../../real-n8n/n8n';
import {
	combineAutoReply,
	latencyText,
	tallyBursts,
	tallyText,
	type BurstTally,
	type SentMessage,
} from '../../real-n8n/bursts';
import type { DeliveryOutcomeView } from '../../real-n8n/sandbox';
import { SandboxControl } from '../../real-n8n/sandbox';
import { log, sleep, waitFor } from '../../real-n8n/util';
import { saveAsOnlyWebhook, type ConversationContext } from './conversation';

/** The trigger's Quiet Period in these checks (s). */
export const COMBINE_QUIET_S = 4;
/** The trigger's Catch-Up Interval (its minimum, s). */
export const COMBINE_CATCH_UP_S = 10;
/** Contacts writing at once, and messages each. */
export const COMBINE_CONTACTS = 50;
export const COMBINE_PER_CONTACT = 3;
/** The goal: a burst's reply within the quiet period plus this after its last message. */
export const COMBINE_GOAL_MARGIN_MS = 2_000;

export interface CombineContext extends ConversationContext {
	/**
	 * Stops n8n (SIGTERM; SIGKILL after `graceMs`, default 35 s, 0 at once), runs `during` once it
	 * has exited, starts it again on the same port.
	 */
	restartWith: (during: () => Promise<void>, graceMs?: number) => Promise<N8nProcess>;
}

export async function combineChecks(ctx: CombineContext): Promise<N8nProcess> {
	const { check, sandbox, line } = ctx;
	let n8n = ctx.n8n;
	let client = new N8nClient(n8n.url, line, n8n.installation.dir);
	await client.login();
	const control = new SandboxControl(sandbox.baseUrl);
	const [first, second] = sandbox.numbers.map((n) => n.phone_number_id);
	const quietMs = COMBINE_QUIET_S * 1000;
	const goalMs = quietMs + COMBINE_GOAL_MARGIN_MS;

	const example = combineAutoReply({
		quietS: COMBINE_QUIET_S,
		catchUpIntervalS: COMBINE_CATCH_UP_S,
	});
	const { workflow } = await saveAsOnlyWebhook(client, sandbox, example, 'combine');
	const activated = await client.activateAndSettle(workflow.id);
	if (!activated.ok) {
		await check('combine: the auto-reply example with Combine on activates', async () => {
			throw new Error(activated.message);
		});
		return n8n;
	}

	const deliveries: Map<string, DeliveryOutcomeView> = new Map();
	const write = async (message: SentMessage): Promise<SentMessage> => {
		const out = await control.inbound({ ...message, contact_name: 'Ada' });
		deliveries.set(message.text, out.delivery);
		return message;
	};
	const deliveriesText = (sent: SentMessage[]) => {
		const outcomes = sent.map((m) => deliveries.get(m.text)).filter((d) => d !== undefined);
		const failed = outcomes.filter((d) => !d.delivered);
		const reasons = [...new Set(failed.map((d) => d.reason ?? String(d.status)))].slice(0, 3);
		return `deliveries ${outcomes.length - failed.length}/${outcomes.length} answered 2xx${failed.length ? ` (${reasons.join('; ')})` : ''}`;
	};
	/** Until every message is in a reply (or `timeoutMs`), then `extraMs` more for a late double. */
	const settle = async (sent: SentMessage[], timeoutMs: number, extraMs: number) => {
		const started = Date.now();
		let tally = tallyBursts(sandbox.state(), sent);
		while ((tally.lost > 0 || tally.unanswered > 0) && Date.now() - started < timeoutMs) {
			await sleep(500);
			tally = tallyBursts(sandbox.state(), sent);
		}
		const seconds = (Date.now() - started) / 1000;
		await sleep(extraMs);
		return { tally: tallyBursts(sandbox.state(), sent), seconds };
	};
	const clean = (t: BurstTally, replies: number) =>
		t.replies === replies &&
		t.lost === 0 &&
		t.twice === 0 &&
		t.outOfOrder === 0 &&
		t.foreign === 0 &&
		t.unanswered === 0;
	const contact = (group: number, i: number) => `+3364${group}${String(100_000 + i).slice(1)}`;
	/** A double would come from another execution of the same burst, reading within a second of it. */
	const doubleWatchMs = quietMs + 1000;

	await check(
		`combine: a contact sends 5 messages 1 s apart (Quiet Period ${COMBINE_QUIET_S} s): exactly one reply holding the 5 in order`,
		async () => {
			const from = contact(1, 1);
			const sent: SentMessage[] = [];
			const t0 = Date.now();
			for (let i = 1; i <= 5; i++) {
				await sleep(Math.max(0, t0 + (i - 1) * 1000 - Date.now()));
				sent.push(await write({ from, number: first, text: `a${i} ${from}` }));
			}
			const { tally } = await settle(sent, 60_000, doubleWatchMs);
			const lines = tally.byGroup.get(`${first}:${from}`) ?? [];
			const detail = `${tallyText(tally)}; reply after the last message: ${latencyText(tally.latenciesMs)} (goal ${goalMs / 1000} s); ${deliveriesText(sent)}; replies ${JSON.stringify(lines)}`;
			if (!clean(tally, 1)) throw new Error(detail);
			return detail;
		},
	);

	await check(
		'combine: one contact writes to two of the account numbers, interleaved: one reply per number, from that number, each holding only its messages',
		async () => {
			const from = contact(2, 1);
			const sent: SentMessage[] = [];
			const t0 = Date.now();
			for (let i = 1; i <= 4; i++) {
				await sleep(Math.max(0, t0 + (i - 1) * 700 - Date.now()));
				const number = i % 2 ? first : second;
				sent.push(await write({ from, number, text: `d${i} to ${number}` }));
			}
			const { tally } = await settle(sent, 60_000, doubleWatchMs);
			const detail = `${tallyText(tally)}; ${latencyText(tally.latenciesMs)}; ${deliveriesText(sent)}; replies per number ${JSON.stringify(Object.fromEntries(tally.byGroup))}`;
			if (!clean(tally, 2)) throw new Error(detail);
			return detail;
		},
	);

	await check(
		`combine: ${COMBINE_CONTACTS} contacts each send ${COMBINE_PER_CONTACT} messages at once: ${COMBINE_CONTACTS} replies, ${COMBINE_CONTACTS * COMBINE_PER_CONTACT} messages in them, none lost, none twice`,
		async () => {
			const sent: SentMessage[] = [];
			for (let c = 0; c < COMBINE_CONTACTS; c++)
				for (let i = 1; i <= COMBINE_PER_CONTACT; i++)
					sent.push({ from: contact(3, c), number: first, text: `b${i} of ${contact(3, c)}` });
			const started = Date.now();
			await Promise.all(sent.map(async (m) => await write(m)));
			const sentSeconds = (Date.now() - started) / 1000;
			// A delivery the service gave up on is recovered by the catch-up 15 s later, then its burst waits again.
			const { tally, seconds } = await settle(sent, 120_000, doubleWatchMs);
			const overGoal = tally.latenciesMs.filter((ms) => ms > goalMs).length;
			// A burst whose newest message's delivery was not answered in 8 s: run late (n8n took it) or
			// recovered by the catch-up (15 s after, then its interval).
			const [inTime, recovered] = [true, false].map((ok) =>
				tally.perReply
					.filter((r) => (deliveries.get(r.newestText)?.delivered ?? false) === ok)
					.map((r) => r.latencyMs),
			);
			const detail = `${tallyText(tally)}; reply after each burst's last message: ${latencyText(tally.latenciesMs)}, ${overGoal} over the goal of ${goalMs / 1000} s (quiet period + 2 s); newest message delivered 2xx: ${latencyText(inTime)}; newest message's delivery not answered 2xx: ${latencyText(recovered)}; all replies ${seconds.toFixed(1)} s after the deliveries ended (sending took ${sentSeconds.toFixed(1)} s); ${deliveriesText(sent)}; load average ${loadText()}`;
			if (!clean(tally, COMBINE_CONTACTS)) throw new Error(detail);
			return detail;
		},
	);

	// The restart and kill checks: on one line each in CI (E2E_SHARE, test/e2e/lib/ciShare.ts).
	await check(
		`combine: across a graceful n8n restart (SIGTERM): X sends 2, n8n stops, X sends 2 more within the quiet period while it stops: one reply holding all 4; Y sends 2, then 2 more while n8n is down (after the quiet period): [y1, y2] before the stop and [y3, y4] from the catch-up (every ${COMBINE_CATCH_UP_S} s)`,
		async () => {
			const x = contact(4, 1);
			const y = contact(4, 2);
			const xs: SentMessage[] = [1, 2, 3, 4].map((i) => ({
				from: x,
				number: first,
				text: `x${i}`,
			}));
			const ys: SentMessage[] = [1, 2, 3, 4].map((i) => ({
				from: y,
				number: first,
				text: `y${i}`,
			}));
			await Promise.all([write(xs[0]), write(ys[0])]);
			await sleep(1000);
			await Promise.all([write(xs[1]), write(ys[1])]);
			const secondAt = Date.now();
			// X's last two while n8n shuts down: it closes its server at once, then waits for the
			// running executions (x2's and y2's, each waiting out the quiet period).
			const xLate = (async () => {
				await sleep(1000);
				await write(xs[2]);
				await sleep(1000);
				await write(xs[3]);
			})();
			const stopAt = Date.now();
			let stoppedAfterS = 0;
			n8n = await ctx.restartWith(async () => {
				stoppedAfterS = (Date.now() - stopAt) / 1000;
				await xLate;
				// Y's last two a full quiet period after y2, n8n down.
				await sleep(Math.max(0, secondAt + quietMs + 2000 - Date.now()));
				await write(ys[2]);
				await sleep(1000);
				await write(ys[3]);
			});
			const upAt = Date.now();
			client = new N8nClient(n8n.url, line, n8n.installation.dir);
			await client.login();
			const beforeUp = tallyBursts(sandbox.state(), [...xs, ...ys]);
			const { tally, seconds } = await settle(
				[...xs, ...ys],
				120_000,
				COMBINE_CATCH_UP_S * 1000 + doubleWatchMs,
			);
			const byGroup = Object.fromEntries(tally.byGroup);
			const xReplies = tally.byGroup.get(`${first}:${x}`) ?? [];
			const yReplies = tally.byGroup.get(`${first}:${y}`) ?? [];
			const detail = `X: ${JSON.stringify(xReplies)}; Y: ${JSON.stringify(yReplies)}; ${tallyText(tally)}; n8n stopped ${stoppedAfterS.toFixed(1)} s after SIGTERM (replies then: ${JSON.stringify(Object.fromEntries(beforeUp.byGroup))}), up again ${((upAt - stopAt) / 1000).toFixed(1)} s after it; every message in a reply ${seconds.toFixed(1)} s after n8n was up; ${deliveriesText([...xs, ...ys])} (${[...xs, ...ys].map((m) => `${m.text} ${deliveries.get(m.text)?.delivered ? 'ok' : (deliveries.get(m.text)?.reason ?? '?')}`).join(', ')})`;
			log(`  restart: ${JSON.stringify(byGroup)}`);
			const ok =
				JSON.stringify(xReplies) === JSON.stringify([['x1', 'x2', 'x3', 'x4']]) &&
				JSON.stringify(yReplies) ===
					JSON.stringify([
						['y1', 'y2'],
						['y3', 'y4'],
					]) &&
				clean(tally, 3);
			if (!ok) throw new Error(detail);
			return detail;
		},
	);

	await check(
		`combine: n8n killed (SIGKILL) while a burst waits: Z sends 2, n8n is killed, Z sends 2 more within the quiet period while it is down: the catch-up's copy of z4 emits one reply holding all 4; W sends 2, then 2 more after the quiet period: measured (w1 and w2 ran in executions the kill ended)`,
		async () => {
			const z = contact(5, 1);
			const w = contact(5, 2);
			const zs: SentMessage[] = [1, 2, 3, 4].map((i) => ({
				from: z,
				number: first,
				text: `z${i}`,
			}));
			const ws: SentMessage[] = [1, 2, 3, 4].map((i) => ({
				from: w,
				number: first,
				text: `w${i}`,
			}));
			await Promise.all([write(zs[0]), write(ws[0])]);
			await sleep(1000);
			await Promise.all([write(zs[1]), write(ws[1])]);
			const secondAt = Date.now();
			const killAt = Date.now();
			n8n = await ctx.restartWith(async () => {
				await sleep(Math.max(0, secondAt + 1000 - Date.now()));
				await write(zs[2]);
				await sleep(1000);
				await write(zs[3]);
				await sleep(Math.max(0, secondAt + quietMs + 2000 - Date.now()));
				await write(ws[2]);
				await sleep(1000);
				await write(ws[3]);
			}, 0);
			const upAt = Date.now();
			client = new N8nClient(n8n.url, line, n8n.installation.dir);
			await client.login();
			const all = [...zs, ...ws];
			// W's first two are in no reply by design: wait for Z's four and W's last two only.
			const { seconds } = await settle([...zs, ws[2], ws[3]], 120_000, 0);
			await sleep(COMBINE_CATCH_UP_S * 1000 + doubleWatchMs);
			const tally = tallyBursts(sandbox.state(), all);
			const zReplies = tally.byGroup.get(`${first}:${z}`) ?? [];
			const wReplies = tally.byGroup.get(`${first}:${w}`) ?? [];
			const detail = `Z: ${JSON.stringify(zReplies)}; W: ${JSON.stringify(wReplies)}; ${tallyText(tally)}; n8n up again ${((upAt - killAt) / 1000).toFixed(1)} s after the kill; Z's and W's last replies ${seconds.toFixed(1)} s after; ${deliveriesText(all)} (${all.map((m) => `${m.text} ${deliveries.get(m.text)?.delivered ? 'ok' : (deliveries.get(m.text)?.reason ?? '?')}`).join(', ')})`;
			log(`  kill: ${detail}`);
			if (
				JSON.stringify(zReplies) !== JSON.stringify([['z1', 'z2', 'z3', 'z4']]) ||
				tally.twice > 0
			)
				throw new Error(detail);
			return detail;
		},
	);

	await client.deactivate(workflow.id).catch(() => undefined);
	// n8n 2.x deregisters in the background: the next check's trigger must find the webhook free.
	await waitFor(
		'the combine workflow to deregister the webhook',
		() => !sandbox.state().webhook.configured,
		30_000,
		500,
	).catch((error: unknown) => log(String(error)));
	return n8n;
}

function loadText(): string {
	return loadavg()
		.map((v) => v.toFixed(2))
		.join(' ');
}
