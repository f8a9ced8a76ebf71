/**
 * The kill -9 test's schedule (npm run test:crash), drawn once from a seed: pure, so a seed
 * printed by one run gives the same schedule again (`CRASH_SEED=<n>`, or `--seed <n>`). What n8n
 * then does is timing, not the schedule: a replay repeats the plan, not necessarily the outcome.
 *
 * The run is a sequence of waves, one SIGKILL each. A round (at least 10) is a group of waves that
 * together send that round's Combine bursts (contacts × messages) and start its conversations.
 * A wave:
 * - starts a moment after n8n is ready (a "normal" wave), or at once (a "quick" wave: its kill
 *   comes within 2 s of the restart before it, the second kill of the issue's losses);
 * - sends its Combine contacts' messages (each contact's first at a random offset, the next ones
 *   a random gap apart: held while the Quiet Period runs), its greetings (the conversation
 *   workflow asks each contact a question and waits), and, 0.02-2 s before its kill (a quick
 *   wave: at its start), the answers of every contact asked so far and not yet answering (owed
 *   until the waiting execution confirms);
 * - kills n8n (its whole process group, SIGKILL) at a random moment while those are in flight,
 *   then starts it again on the same port and user folder.
 */

/** mulberry32: a small seeded PRNG, enough for a schedule (not for secrets). */
export function prng(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

export interface PlanOptions {
	seed: number;
	rounds: number;
	/** SIGKILLs in the run: one per wave. */
	kills: number;
	/** Waves killed within 2 s of the restart before them. */
	secondKills: number;
	/** Per round: Combine contacts, messages each, conversations. */
	combineContacts: number;
	messagesPerContact: number;
	conversations: number;
}

export const DEFAULT_PLAN = {
	rounds: 10,
	kills: 24,
	secondKills: 5,
	combineContacts: 8,
	messagesPerContact: 3,
	conversations: 8,
};

/** Times in ms; a wave's offsets count from its start. */
export interface Wave {
	index: number;
	round: number;
	/** Started at once after the restart and killed within 2 s of it. */
	quick: boolean;
	/** From n8n ready (the previous restart) to the wave's start. */
	startAfterReadyMs: number;
	/** From the wave's start to the SIGKILL. */
	killAtMs: number;
	/** Per Combine contact: each message's offset. */
	bursts: Array<{ contact: string; offsetsMs: number[] }>;
	/** Conversations started here: the contact and when it writes. */
	greetings: Array<{ contact: string; offsetMs: number }>;
	/** When the contacts asked so far answer. */
	answersAtMs: number;
}

export interface Plan {
	options: PlanOptions;
	waves: Wave[];
}

/** Waves start 1-3 s after n8n is ready; a quick one within 0.1 s. */
const NORMAL_START_MS: [number, number] = [1_000, 3_000];
const QUICK_START_MS: [number, number] = [0, 100];
/** A normal wave's kill: from its first messages to past the Quiet Period (3 s) and the emit. */
const NORMAL_KILL_MS: [number, number] = [300, 6_000];
/** A quick wave's kill, counted from n8n ready: within 2 s of the restart. */
const QUICK_KILL_AFTER_READY_MS: [number, number] = [200, 2_000];
const FIRST_MESSAGE_MS: [number, number] = [0, 800];
const MESSAGE_GAP_MS: [number, number] = [300, 1_000];
/**
 * A normal wave's answers come this long before its kill (owed meanwhile), drawn towards the short
 * end: n8n 1.x resumes and confirms an answer within about 0.2 s, 2.x within 1-2 s. A quick
 * wave's answers come at its start.
 */
const ANSWERS_BEFORE_KILL_MS: [number, number] = [20, 2_000];
const QUICK_ANSWERS_MS: [number, number] = [0, 300];

/** Contact numbers: +3365… Combine, +3366… conversations; unique across waves and lines. */
export function combineContact(round: number, i: number): string {
	return `+3365${String(round).padStart(3, '0')}${String(i).padStart(4, '0')}`;
}
export function conversationContact(round: number, i: number): string {
	return `+3366${String(round).padStart(3, '0')}${String(i).padStart(4, '0')}`;
}

/** Splits `total` into `parts` counts that differ by at most one, larger first. */
function split(total: number, parts: number): number[] {
	return Array.from(
		{ length: parts },
		(_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0),
	);
}

export function makePlan(options: PlanOptions): Plan {
	const { rounds, kills, secondKills } = options;
	if (rounds < 1) throw new Error('--rounds must be at least 1');
	if (kills < rounds) throw new Error(`--kills (${kills}) must be at least --rounds (${rounds})`);
	if (secondKills > kills - 1)
		throw new Error(`second kills (${secondKills}) must be fewer than kills (${kills})`);
	const random = prng(options.seed);
	const between = ([low, high]: [number, number]) => Math.round(low + random() * (high - low));
	/** Like between, but about half the draws fall in the lowest tenth of the range. */
	const towardsLow = ([low, high]: [number, number]) =>
		Math.round(low + random() ** 3 * (high - low));

	// Which waves are quick: any but the first (it follows n8n's first start, not a restart).
	const quick = new Set<number>();
	while (quick.size < secondKills) quick.add(1 + Math.floor(random() * (kills - 1)));

	const waves: Wave[] = [];
	const wavesPerRound = split(kills, rounds);
	for (let round = 0; round < rounds; round++) {
		const count = wavesPerRound[round];
		const contacts = split(options.combineContacts, count);
		const talks = split(options.conversations, count);
		let contact = 0;
		let talk = 0;
		for (let w = 0; w < count; w++) {
			const index = waves.length;
			const isQuick = quick.has(index);
			const startAfterReadyMs = between(isQuick ? QUICK_START_MS : NORMAL_START_MS);
			const killAtMs = isQuick
				? Math.max(50, between(QUICK_KILL_AFTER_READY_MS) - startAfterReadyMs)
				: between(NORMAL_KILL_MS);
			const bursts = Array.from({ length: contacts[w] }, () => {
				const offsetsMs = [between(FIRST_MESSAGE_MS)];
				while (offsetsMs.length < options.messagesPerContact)
					offsetsMs.push(offsetsMs[offsetsMs.length - 1] + between(MESSAGE_GAP_MS));
				return { contact: combineContact(round, contact++), offsetsMs };
			});
			const greetings = Array.from({ length: talks[w] }, () => ({
				contact: conversationContact(round, talk++),
				offsetMs: between(FIRST_MESSAGE_MS),
			}));
			waves.push({
				index,
				round,
				quick: isQuick,
				startAfterReadyMs,
				killAtMs,
				bursts,
				greetings,
				answersAtMs: isQuick
					? Math.min(killAtMs, between(QUICK_ANSWERS_MS))
					: Math.max(0, killAtMs - towardsLow(ANSWERS_BEFORE_KILL_MS)),
			});
		}
	}
	return { options, waves };
}

/** A seed for a run that was given none: printed, so the run can be replayed. */
export function freshSeed(): number {
	return Math.floor(Math.random() * 2 ** 31);
}
