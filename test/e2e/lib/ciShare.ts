/**
 * E2E_SHARE=1 (CI): each costly check of the end-to-end suite runs on one n8n line only, the one
 * this table names; the other line logs it as "not run on line N (E2E_SHARE: runs on line M)" and
 * counts it neither passed nor failed (summary-line<N>.json lists it under `skipped`). Without
 * E2E_SHARE (a developer's `npm run test:e2e`) every check runs on both lines.
 *
 * Listed: independent, costly measurement checks (load, bursts, restarts, the polling interval),
 * matched by the start of their name. Never listed: a check whose body sets up what later checks
 * use (an activation, a credential, the example workflows). A listed check that restarts n8n is one
 * no later check relies on (test/e2e/ciShare.test.ts checks that, and that each entry matches one
 * check).
 *
 * Kept on both lines: the cheap checks and those whose behaviour differs by n8n line: Reply and
 * Wait (its resume URLs differ between 1.x and 2.x: the conversation checks, the router's first
 * check), the catch-up's recovery across a restart, the webhook registration at activation, the
 * editor, the AI Agent tool, Combine's first two checks.
 *
 * Which line: where the check's case happens (2.x answers a delivery only once its execution is
 * stored, so under load its deliveries time out and the catch-up does the work), else balance.
 *
 * Estimates (`estimateS`): each check's time on that line in CI's run of 2026-11-27 (the lines
 * side by side on 2 cores, 100 lossy messages). With the checks kept on both lines (373 s on line
 * 1, 394 s on line 2 in that run) the table gives line 1 about 830 s of checks and line 2 about
 * 810 s: added up from that run, not measured with E2E_SHARE.
 */
import type { Line } from '../../real-n8n/n8n';

export interface SharedCheck {
	/** The start of the check's name; `#` stands for a number (a count from a constant or env var). */
	prefix: string;
	/** The line that runs it under E2E_SHARE=1. */
	line: Line;
	/** Its time on that line (s): see above. */
	estimateS: number;
}

export const SHARED_CHECKS: readonly SharedCheck[] = [
	// Line 1: balance (62 s on line 2): the rehearsal of 2026-11-27 with it on line 2 ended line 1
	// at 753 s and line 2 at 888 s.
	{ prefix: 'router (issue 32): n8n stopped', line: 1, estimateS: 57.0 },
	// Line 1: balance (53 s on line 2).
	{ prefix: 'Polling Trigger (no public address)', line: 1, estimateS: 46.5 },
	// Line 1: the proxy sets each delivery's fate, alike on both lines (63 s on 2). `#`: a count.
	{ prefix: 'catch-up: # inbound at concurrency 16', line: 1, estimateS: 46.6 },
	// Line 2: 2.x answers once the execution is stored: 435 of 500 recovered there, 38 on 1.x.
	{ prefix: 'catch-up: a burst of 500 inbound', line: 2, estimateS: 112.0 },
	// Line 2: balance (93 s on line 1); 2.x deactivates in the background (the check waits for it).
	{ prefix: 'catch-up on reactivation', line: 2, estimateS: 94.9 },
	// Line 1: balance (57 s on line 2).
	{
		prefix: "webhook watch: another tool registers the account's webhook",
		line: 1,
		estimateS: 55.8,
	},
	// Line 1: balance (32 s on line 2; the rehearsal of 2026-11-28 with it there ended line 2 at
	// 795 s and line 1 at 699 s).
	{ prefix: "webhook watch: the account's webhook deleted", line: 1, estimateS: 27.0 },
	// Line 1: 1.x's own retry passes activation-time static data (the case stoppedAt covers).
	{ prefix: 'webhook watch: On Webhook Taken: Stop', line: 1, estimateS: 58.0 },
	// Line 1: 43 s on line 2; CI's queue-mode leg has 2.x's conversations under overload.
	{ prefix: 'burst: # contacts write at once', line: 1, estimateS: 19.9 },
	// Line 1: 96 s on line 2; CI's queue-mode leg has 2.x's conversations under overload.
	{
		prefix: 'burst: # contacts at once while two processes keep both cores busy',
		line: 1,
		estimateS: 14.2,
	},
	// Line 1: 68 s on line 2; CI's queue-mode leg has 2.x's conversations under overload.
	{ prefix: 'burst: # contacts asked at once, n8n restarted', line: 1, estimateS: 47.8 },
	// Line 2: 2.x logs every answer failed: the catch-up case it is for (docs/reliability.md, goal 4).
	{
		prefix:
			'burst: # contacts answer at once while two processes keep both cores busy, n8n restarted',
		line: 2,
		estimateS: 102.5,
	},
	// Line 1: 34 s on line 2; CI's queue-mode leg has 2.x's combine under load.
	{ prefix: 'combine: # contacts each send # messages at once', line: 1, estimateS: 15.7 },
	// Line 1: where CI ran it before this table; balance.
	{ prefix: 'combine: across a graceful n8n restart (SIGTERM)', line: 1, estimateS: 49.5 },
	// Line 1: where CI ran it before this table; balance.
	{ prefix: 'combine: n8n killed (SIGKILL)', line: 1, estimateS: 44.3 },
	// Line 2: balance (80 s on line 1); the AI Agent tool check runs on both lines.
	{ prefix: 'AI agent example: examples/ai-agent-reply.json', line: 2, estimateS: 76.5 },
];

/** A prefix as a pattern: `#` a number (digits, thousands separators). */
export function prefixPattern(prefix: string): RegExp {
	const literal = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
	return new RegExp(`^${literal.replace(/#/g, '[\\d,.]+')}`);
}

const PATTERNS = SHARED_CHECKS.map((entry) => ({ entry, pattern: prefixPattern(entry.prefix) }));

/** The table's entry for the check named `name`; undefined when it runs on every line. */
export function sharedCheck(name: string): SharedCheck | undefined {
	return PATTERNS.find(({ pattern }) => pattern.test(name))?.entry;
}

export function shareEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
	return env.E2E_SHARE === '1';
}

/**
 * The line that runs the check named `name` instead of `line` (E2E_SHARE=1 and the table gives
 * it to the other line); undefined when it runs here.
 */
export function runsElsewhere(
	name: string,
	line: Line,
	env: NodeJS.ProcessEnv = process.env,
): Line | undefined {
	if (!shareEnabled(env)) return undefined;
	const entry = sharedCheck(name);
	return entry && entry.line !== line ? entry.line : undefined;
}
