/**
 * The kill -9 test's pure parts (npm run test:crash runs the rest in real n8n): the seeded plan,
 * what counts as lost, doubled or excused, and the log count.
 */
import type { SandboxState } from '../real-n8n/sandbox';
import type { SentMessage } from '../real-n8n/bursts';
import { scanLog } from './logScan';
import { DEFAULT_PLAN, makePlan, prng } from './plan';
import {
	answerText,
	combineText,
	conversationFailures,
	countCombine,
	countConversations,
	greetingText,
	type ExecutionHolding,
} from './tally';

const NUMBER = '100000000000001';

function state(
	inbound: Array<{ from: string; text: string }>,
	replies: Array<{ to: string; text: string }>,
): SandboxState {
	return {
		inbound: inbound.map((m, i) => ({
			direction: 'in',
			from: m.from,
			number: NUMBER,
			text: m.text,
			created_at: new Date(1_000 * i).toISOString(),
		})),
		messages: replies.map((m, i) => ({
			to: m.to,
			from: NUMBER,
			text: m.text,
			created_at: new Date(100_000 + 1_000 * i).toISOString(),
		})),
	} as unknown as SandboxState;
}

describe('plan', () => {
	const options = { seed: 42, ...DEFAULT_PLAN };

	it('is the same for the same seed, and another for another seed', () => {
		expect(makePlan(options)).toEqual(makePlan(options));
		expect(makePlan({ ...options, seed: 43 })).not.toEqual(makePlan(options));
		expect(prng(1)()).toBe(prng(1)());
	});

	it('has one kill per wave, every round a wave, the second kills after the first wave and within 2 s of the restart', () => {
		const plan = makePlan(options);
		expect(plan.waves).toHaveLength(DEFAULT_PLAN.kills);
		expect(new Set(plan.waves.map((w) => w.round)).size).toBe(DEFAULT_PLAN.rounds);
		const quick = plan.waves.filter((w) => w.quick);
		expect(quick).toHaveLength(DEFAULT_PLAN.secondKills);
		expect(plan.waves[0].quick).toBe(false);
		for (const w of quick) expect(w.startAfterReadyMs + w.killAtMs).toBeLessThanOrEqual(2_000);
	});

	it('sends every round its contacts and conversations, each contact once, answers before the kill', () => {
		const plan = makePlan(options);
		const contacts = plan.waves.flatMap((w) => w.bursts.map((b) => b.contact));
		const talks = plan.waves.flatMap((w) => w.greetings.map((g) => g.contact));
		expect(contacts).toHaveLength(DEFAULT_PLAN.rounds * DEFAULT_PLAN.combineContacts);
		expect(new Set(contacts).size).toBe(contacts.length);
		expect(talks).toHaveLength(DEFAULT_PLAN.rounds * DEFAULT_PLAN.conversations);
		expect(new Set(talks).size).toBe(talks.length);
		for (const w of plan.waves) {
			expect(w.answersAtMs).toBeLessThanOrEqual(w.killAtMs);
			for (const b of w.bursts) expect(b.offsetsMs).toHaveLength(DEFAULT_PLAN.messagesPerContact);
		}
	});

	it('refuses fewer kills than rounds', () => {
		expect(() => makePlan({ ...options, kills: 5 })).toThrow('--kills');
	});
});

describe('Combine count', () => {
	const a = '+33650000001';
	const b = '+33650000002';
	const sent: SentMessage[] = [1, 2, 3].flatMap((n) => [
		{ from: a, number: NUMBER, text: combineText(a, n) },
		{ from: b, number: NUMBER, text: combineText(b, n) },
	]);
	const inbound = sent.map((m) => ({ from: m.from, text: m.text }));
	const got = (to: string, ...ns: number[]) => ({
		to,
		text: `got: ${ns.map((n) => combineText(to, n)).join('\n')}`,
	});
	const run = (id: string, status: string, ...texts: string[]): ExecutionHolding => ({
		id,
		status,
		workflow: 'combine',
		data: JSON.stringify(texts),
	});

	it('counts each message in exactly one reply, whatever the bursts', () => {
		const count = countCombine(
			state(inbound, [got(a, 1, 2, 3), got(b, 1), got(b, 2, 3)]),
			sent,
			new Map(),
			[],
		);
		expect(count).toMatchObject({ messages: 6, inExactlyOne: 6, lost: 0, inTwoOrMore: 0 });
	});

	it('excuses a lost message only when an execution holding it crashed; never a double', () => {
		const count = countCombine(
			state(inbound, [got(a, 1), got(a, 1, 2), got(b, 1)]),
			sent,
			new Map([[combineText(a, 3), 'failed: connection refused']]),
			[run('7', 'crashed', combineText(a, 3)), run('8', 'success', combineText(b, 2))],
		);
		expect(count).toMatchObject({ inExactlyOne: 2, lost: 3, lostCrashed: 1, inTwoOrMore: 1 });
		expect(count.problems.find((p) => p.text === combineText(a, 3))).toMatchObject({
			delivery: 'failed: connection refused',
			executions: [{ id: '7', status: 'crashed' }],
		});
	});

	it("excuses a lost message none of whose executions crashed when one of its burst's did (its own execution left the burst to that one)", () => {
		const count = countCombine(
			state(inbound, []),
			[1, 2].map((n) => ({ from: a, number: NUMBER, text: combineText(a, n) })),
			new Map(),
			[run('9', 'success', ''), run('10', 'crashed', combineText(a, 2))],
		);
		expect(count).toMatchObject({ lost: 2, lostCrashed: 2 });
		expect(count.problems[0]).toMatchObject({
			text: combineText(a, 1),
			executions: [],
			burstCrashed: [{ id: '10', status: 'crashed' }],
		});
	});
});

describe('conversation count', () => {
	const c = (i: number) => `+3366000000${i}`;
	const asked = (i: number) => ({ to: c(i), text: 'Hi Ada! What is your order number?' });
	const confirmed = (i: number, text = answerText(c(i))) => ({
		to: c(i),
		text: `Thanks, we are looking up order ${text} and will write back shortly.`,
	});
	const talks = [1, 2, 3, 4, 5, 6].map((i) => ({
		contact: c(i),
		round: 0,
		answer: answerText(c(i)),
	}));
	const greeted = talks.map((t) => ({ from: t.contact, text: greetingText(t.contact) }));

	it('counts asked and confirmed once, twice, never; excuses only what a crashed execution held', () => {
		const count = countConversations(
			state(greeted, [
				asked(1),
				confirmed(1),
				asked(2),
				asked(2),
				asked(3),
				asked(4),
				confirmed(4),
				confirmed(4),
				asked(6),
				confirmed(6),
				asked(6),
			]),
			talks,
			[
				{ id: '1', status: 'crashed', workflow: 'conversation', data: `"${c(2)}"` },
				{ id: '2', status: 'crashed', workflow: 'conversation', data: `"${c(4)}"` },
				{ id: '3', status: 'crashed', workflow: 'combine', data: `"${c(3)}"` },
				{ id: '4', status: 'crashed', workflow: 'conversation', data: `"${c(6)}"` },
			],
		);
		expect(count).toMatchObject({
			conversations: 6,
			askedOnce: 3,
			askedTwice: 2,
			askedNever: 1,
			confirmedOnce: 2,
			confirmedTwice: 1,
			confirmedNever: 3,
			// c2 (asked again, unconfirmed, its execution crashed); not c3 (the crashed one is another
			// workflow's), c4 (confirmed twice), c5 (nothing crashed), c6 (asked again after its confirmation).
			excusedCrashed: 1,
		});
		expect(conversationFailures(count)).toBe(4);
	});
});

describe('log count', () => {
	it('counts levels, webhook errors, package lines, and sets the offline fetches apart', () => {
		const lines = [
			{ level: 'info', message: 'Business Messaging Trigger: registering' },
			{ level: 'warn', message: 'Business Messaging Trigger: execution #12 did not confirm' },
			{ level: 'error', message: 'Business Messaging Trigger (catch-up): failed' },
			{
				level: 'error',
				message:
					"Error in handling webhook request POST /webhook-waiting/12: Cannot read properties of undefined (reading 'inputOverride')",
			},
			{ level: 'error', message: 'A system task run failed', metadata: { cause: 'api.n8n.io' } },
			{ level: 'warn', message: 'Found unfinished executions: 1, 2' },
		].map((l) => JSON.stringify(l));
		const count = scanLog(['Editor is now accessible via:', ...lines].join('\n'));
		expect(count).toMatchObject({
			errorLines: 2,
			warnLines: 2,
			offlineLines: 1,
			webhookErrors: 1,
			packageWarnings: 1,
			packageErrors: 1,
			inputOverride: 1,
		});
		expect(count.top[0].message).toContain('#');
	});
});
