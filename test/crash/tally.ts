/**
 * What the kill -9 test counts, from what the sandboxes recorded (every reply the package sent)
 * and what n8n recorded (its executions): pure, so the rules are unit-tested
 * (test/crash/tally.test.ts).
 *
 * - Combine: each message sent must be in exactly one reply (test/real-n8n/bursts.ts tallyBursts).
 * - Conversations: each contact wrote once, was asked once ("…order number?"), answered once,
 *   and got one confirmation quoting its answer.
 * - The allowed exception: a message whose execution n8n records as crashed (n8n runs no crashed
 *   execution again). A lost Combine message, or a conversation not confirmed (or asked again),
 *   is excused when an execution holding it is `crashed`; it is still counted and listed. Nothing
 *   excuses a message in two replies, a conversation confirmed twice, or one asked again after it
 *   was confirmed (its answer ran twice). Asked again without a confirmation, where the execution
 *   that was waiting crashed, is excused: asking again is then the recovery.
 */
import type { SandboxState } from '../real-n8n/sandbox';
import { tallyBursts, type SentMessage } from '../real-n8n/bursts';

export const QUESTION = /order number\?/;
export const CONFIRMATION = /looking up order (\S+)/;

/** A Combine message's text: unique in the run, and no text is another's prefix. */
export function combineText(contact: string, n: number): string {
	return `${contact} m${n}.`;
}
export function greetingText(contact: string): string {
	return `hello from ${contact}`;
}
export function answerText(contact: string): string {
	return `ORD-${contact.slice(1)}`;
}

/** An execution and the messages (texts) and contacts its stored data holds. */
export interface ExecutionHolding {
	id: string;
	status: string;
	workflow: 'combine' | 'conversation';
	/** How n8n started it (webhook, trigger) and when, for the report. */
	mode?: string;
	startedAt?: string;
	/** The execution's stored data (flatted text), searched for texts and contact numbers. */
	data: string;
}

export interface Holder {
	id: string;
	status: string;
	mode?: string;
	startedAt?: string;
}

/** Executions whose stored data holds `needle`. */
export function holdersOf(needle: string, executions: ExecutionHolding[]): Holder[] {
	return executions
		.filter((e) => e.data.includes(needle))
		.map(({ id, status, mode, startedAt }) => ({ id, status, mode, startedAt }));
}

export interface CombineCount {
	messages: number;
	replies: number;
	inExactlyOne: number;
	lost: number;
	/**
	 * Lost, and an execution holding it, or another message of its burst, is crashed (the allowed
	 * exception): a message's own execution leaves the burst to a later one's (execute() combines),
	 * so when that one crashed, retrying it is what runs the burst.
	 */
	lostCrashed: number;
	inTwoOrMore: number;
	foreignLines: number;
	/** Each lost or doubled message: its delivery, the executions holding it. */
	problems: Array<{
		text: string;
		replies: number;
		delivery: string;
		executions: Holder[];
		/** Lost, none of its own crashed: the crashed executions of its burst (the contact's). */
		burstCrashed?: Holder[];
	}>;
}

/** The contact a Combine text is from (combineText): one contact number per round, so one burst. */
const contactOf = (text: string) => text.split(' ')[0];

export function countCombine(
	state: SandboxState,
	sent: SentMessage[],
	deliveries: Map<string, string>,
	executions: ExecutionHolding[],
): CombineCount {
	const tally = tallyBursts(state, sent);
	const inReplies = new Map<string, number>();
	for (const replies of tally.byGroup.values())
		for (const lines of replies)
			for (const line of lines) inReplies.set(line, (inReplies.get(line) ?? 0) + 1);
	const count: CombineCount = {
		messages: sent.length,
		replies: tally.replies,
		inExactlyOne: 0,
		lost: 0,
		lostCrashed: 0,
		inTwoOrMore: 0,
		foreignLines: tally.foreign,
		problems: [],
	};
	const combineRuns = executions.filter((e) => e.workflow === 'combine');
	for (const message of sent) {
		const replies = inReplies.get(message.text) ?? 0;
		if (replies === 1) {
			count.inExactlyOne++;
			continue;
		}
		const holders = holdersOf(message.text, combineRuns);
		const crashed = (h: Holder) => h.status === 'crashed';
		const burstCrashed = holders.some(crashed)
			? []
			: holdersOf(contactOf(message.text), combineRuns).filter(crashed);
		if (replies === 0) {
			count.lost++;
			if (holders.some(crashed) || burstCrashed.length > 0) count.lostCrashed++;
		} else count.inTwoOrMore++;
		count.problems.push({
			text: message.text,
			replies,
			delivery: deliveries.get(message.text) ?? 'not sent',
			executions: holders,
			...(burstCrashed.length > 0 && { burstCrashed }),
		});
	}
	return count;
}

export interface Conversation {
	contact: string;
	round: number;
	/** The answer's text, once the contact answered. */
	answer?: string;
	greetingDelivery?: string;
	answerDelivery?: string;
}

export interface ConversationCount {
	conversations: number;
	askedOnce: number;
	askedTwice: number;
	askedNever: number;
	answered: number;
	confirmedOnce: number;
	confirmedTwice: number;
	confirmedNever: number;
	/** Not confirmed (or asked again), and an execution holding the contact is crashed. */
	excusedCrashed: number;
	problems: Array<{
		contact: string;
		asked: number;
		confirmed: number;
		answered: boolean;
		greeting: string;
		answer: string;
		sent: string[];
		executions: Holder[];
	}>;
}

/** Per contact, the texts the workflow sent it, in order. */
export function repliesByContact(state: SandboxState): Map<string, string[]> {
	const byContact = new Map<string, string[]>();
	for (const m of state.messages) byContact.set(m.to, [...(byContact.get(m.to) ?? []), m.text]);
	return byContact;
}

export function countConversations(
	state: SandboxState,
	conversations: Conversation[],
	executions: ExecutionHolding[],
): ConversationCount {
	const sent = repliesByContact(state);
	const count: ConversationCount = {
		conversations: conversations.length,
		askedOnce: 0,
		askedTwice: 0,
		askedNever: 0,
		answered: 0,
		confirmedOnce: 0,
		confirmedTwice: 0,
		confirmedNever: 0,
		excusedCrashed: 0,
		problems: [],
	};
	const runs = executions.filter((e) => e.workflow === 'conversation');
	for (const c of conversations) {
		const texts = sent.get(c.contact) ?? [];
		const asked = texts.filter((t) => QUESTION.test(t)).length;
		const confirmations = texts.map((t) => CONFIRMATION.exec(t)?.[1]).filter((o) => o);
		const confirmed = confirmations.filter((o) => o === c.answer).length;
		if (c.answer) count.answered++;
		if (asked === 0) count.askedNever++;
		else if (asked === 1) count.askedOnce++;
		else count.askedTwice++;
		if (confirmed === 0) count.confirmedNever++;
		else if (confirmed === 1) count.confirmedOnce++;
		else count.confirmedTwice++;
		const clean = asked === 1 && confirmed === 1 && confirmations.length === 1;
		if (clean) continue;
		const holders = holdersOf(c.contact, runs);
		// Never excused: a second confirmation, or a question after the confirmation (the answer ran twice).
		const doubled = confirmations.length > 1 || (confirmed === 1 && asked > 1);
		if (!doubled && holders.some((h) => h.status === 'crashed')) count.excusedCrashed++;
		count.problems.push({
			contact: c.contact,
			asked,
			confirmed,
			answered: c.answer !== undefined,
			greeting: c.greetingDelivery ?? 'not sent',
			answer: c.answerDelivery ?? (c.answer ? 'pending' : 'not sent'),
			sent: texts.map((t) => t.slice(0, 48)),
			executions: holders,
		});
	}
	return count;
}

/** A conversation outcome that is neither clean nor excused. */
export function conversationFailures(count: ConversationCount): number {
	return count.problems.length - count.excusedCrashed;
}
