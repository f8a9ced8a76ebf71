/**
 * Combine a Contact's Messages (issue 33) in real n8n: the auto-reply example with the trigger's
 * combine option on and a Reply that quotes the combined text, and the tally of what the sandbox
 * received, shared by the e2e checks (test/e2e/checks/combine.ts), the queue check and the bench.
 *
 * Each emitted item sends one reply "got: <text>", <text> being the burst's texts joined by "\n":
 * every reply names the messages it holds, in order.
 */
import type { WorkflowJson } from './n8n';
import { readExample } from './examples';
import type { SandboxState } from './sandbox';

export const COMBINED_PREFIX = 'got: ';

export interface CombineWorkflowOptions {
	/** Quiet Period (s); undefined: the option off (each message its own item). */
	quietS?: number;
	/** Catch-Up Interval (s); the catch-up is on (the example's default) either way. */
	catchUpIntervalS?: number;
	name?: string;
}

/** examples/auto-reply.json with the trigger's combine option and the Reply text "got: {{ $json.text }}". */
export function combineAutoReply(options: CombineWorkflowOptions): WorkflowJson {
	const workflow = readExample('autoReply');
	const trigger = workflow.nodes.find((n) => n.type.endsWith('.businessMessagingTrigger'));
	const reply = workflow.nodes.find((n) => n.name === 'Reply');
	if (!trigger || !reply) throw new Error('examples/auto-reply.json: no trigger or no Reply node');
	trigger.parameters = {
		...trigger.parameters,
		catchUp: true,
		options: {
			...(options.catchUpIntervalS !== undefined && { catchUpInterval: options.catchUpIntervalS }),
			...(options.quietS !== undefined && { combineMessages: true, quietPeriod: options.quietS }),
		},
	};
	// Off, each message's item has no `text` of its own: its data.text stands for it.
	reply.parameters = {
		...reply.parameters,
		text: `=${COMBINED_PREFIX}{{ $json.text ?? $json.data.text }}`,
	};
	if (options.name) workflow.name = options.name;
	return workflow;
}

/** One message the test sent: texts are unique within a run. */
export interface SentMessage {
	from: string;
	number: string;
	text: string;
}

export interface BurstTally {
	/** Contact and number pairs written from. */
	groups: number;
	/** Pairs without any reply yet. */
	unanswered: number;
	replies: number;
	/** Pairs with more than one reply. */
	groupsRepliedMoreThanOnce: number;
	messages: number;
	/** Sent messages that appear in the replies (each counted once). */
	inReplies: number;
	lost: number;
	/** Sent messages that appear in more than one reply, or twice in one. */
	twice: number;
	/** Replies whose texts are not in the order the service stored them (to the µs). */
	outOfOrder: number;
	/** Lines of replies that are no message of their pair. */
	foreign: number;
	/** Per reply: its time (sandbox clock) minus the stored time of the newest message it holds, ms. */
	latenciesMs: number[];
	/** Per reply: its pair, the newest message it holds, the latency. */
	perReply: Array<{ group: string; newestText: string; latencyMs: number }>;
	/** Per pair, the replies' texts split into lines (for a failure's detail). */
	byGroup: Map<string, string[][]>;
}

const groupKey = (from: string, number: string) => `${number}:${from}`;

/** What the sandbox received for `sent`: one reply per burst expected, each listing its messages. */
export function tallyBursts(state: SandboxState, sent: SentMessage[]): BurstTally {
	/** Per message: its place in the store (oldest first) and its stored time. */
	const stored = new Map<string, { index: number; atMs: number }>();
	state.inbound.forEach((record, index) => {
		if (record.direction === 'in')
			stored.set(`${groupKey(record.from, record.number)}|${record.text}`, {
				index,
				atMs: Date.parse(record.created_at),
			});
	});
	const groups = new Map<string, SentMessage[]>();
	for (const message of sent) {
		const key = groupKey(message.from, message.number);
		groups.set(key, [...(groups.get(key) ?? []), message]);
	}
	const tally: BurstTally = {
		groups: groups.size,
		unanswered: 0,
		replies: 0,
		groupsRepliedMoreThanOnce: 0,
		messages: sent.length,
		inReplies: 0,
		lost: 0,
		twice: 0,
		outOfOrder: 0,
		foreign: 0,
		latenciesMs: [],
		perReply: [],
		byGroup: new Map(),
	};
	const replies = new Map<string, Array<{ lines: string[]; atMs: number }>>();
	for (const m of state.messages) {
		const key = groupKey(m.to, m.from);
		if (!groups.has(key) || !m.text.startsWith(COMBINED_PREFIX)) continue;
		const lines = m.text.slice(COMBINED_PREFIX.length).split('\n');
		replies.set(key, [...(replies.get(key) ?? []), { lines, atMs: Date.parse(m.created_at) }]);
	}
	for (const [key, messages] of groups) {
		const got = replies.get(key) ?? [];
		tally.byGroup.set(
			key,
			got.map((r) => r.lines),
		);
		tally.replies += got.length;
		if (got.length === 0) tally.unanswered++;
		if (got.length > 1) tally.groupsRepliedMoreThanOnce++;
		const texts = new Set(messages.map((m) => m.text));
		const seen = new Map<string, number>();
		for (const reply of got) {
			const held: Array<{ index: number; atMs: number; text: string }> = [];
			for (const line of reply.lines) {
				const place = texts.has(line) ? stored.get(`${key}|${line}`) : undefined;
				if (!place) {
					tally.foreign++;
					continue;
				}
				seen.set(line, (seen.get(line) ?? 0) + 1);
				held.push({ ...place, text: line });
			}
			if (held.some((m, i) => i > 0 && m.index <= held[i - 1].index)) tally.outOfOrder++;
			const newest = held.reduce<(typeof held)[number] | undefined>(
				(a, m) => (a && a.atMs >= m.atMs ? a : m),
				undefined,
			);
			if (newest) {
				tally.latenciesMs.push(reply.atMs - newest.atMs);
				tally.perReply.push({
					group: key,
					newestText: newest.text,
					latencyMs: reply.atMs - newest.atMs,
				});
			}
		}
		for (const text of texts) {
			const count = seen.get(text) ?? 0;
			if (count === 0) tally.lost++;
			else tally.inReplies++;
			if (count > 1) tally.twice++;
		}
	}
	return tally;
}

/** "p50 3.2 s, p95 …, max …" of latencies in ms. */
export function latencyText(latenciesMs: number[]): string {
	if (latenciesMs.length === 0) return 'no reply';
	const s = [...latenciesMs].sort((a, b) => a - b);
	const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
	const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
	return `p50 ${sec(q(0.5))}, p95 ${sec(q(0.95))}, max ${sec(s[s.length - 1])} (${s.length} replies)`;
}

/** The tally in one line. */
export function tallyText(t: BurstTally): string {
	return `${t.replies} replies to ${t.groups} bursts (${t.unanswered} unanswered, ${t.groupsRepliedMoreThanOnce} answered more than once), ${t.inReplies}/${t.messages} messages in them, ${t.lost} lost, ${t.twice} twice, ${t.outOfOrder} out of order${t.foreign ? `, ${t.foreign} foreign lines` : ''}`;
}
