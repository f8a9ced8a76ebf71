/** The catch-up's decisions, pure: where it starts, and which stored messages it recovers. */
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import type { WebhookAttempt } from './deliveryLog';
import { MESSAGE_EVENTS, storedMessageItem, type MessageEvent } from '../../shared/history';
import { byAge, isAfter, selectNew, type Watermark } from '../../shared/watermark';
import { MAX_CATCH_UP_DAYS, type OnActivation } from '../options';

/** The service's delivery timeout (~8 s) plus margin: older messages had their one delivery. */
export const SETTLE_MS = 15_000;

/** When this process began (Node's time origin): a starting n8n answers deliveries it never runs. */
export const processStartedMs = (): number => performance.timeOrigin;

export type Watermarks = Partial<Record<MessageEvent, Watermark>>;
export type Stored = Array<{ event: MessageEvent; records: IDataObject[] }>;

export interface CatchUpState extends IDataObject {
	watermarks: Watermarks;
	/** wa_message_ids emitted after the watermark while an older recovery still waited its turn. */
	emitted?: string[];
	/** A start's window not resolved yet (start.ts): where the next start's begins at the latest. */
	windowFromMs?: number;
}

/**
 * Now on a first or "from activation" activation; else the saved watermark, at most
 * MAX_CATCH_UP_DAYS back, or the user's last activation when an older copy was saved over it.
 */
export function startingWatermark(
	saved: Watermark | undefined,
	activation: string,
	onActivation: OnActivation,
	nowMs: number,
	activatedAtMs?: number,
): Watermark {
	const at = (ms: number): Watermark => ({ createdAt: new Date(ms).toISOString(), ids: [] });
	if (activation === 'activate' && (!saved || onActivation === 'fromActivation')) return at(nowMs);
	const from =
		saved ?? (activatedAtMs !== undefined && activatedAtMs < nowMs ? at(activatedAtMs) : undefined);
	if (!from) return at(nowMs);
	const oldest = at(nowMs - MAX_CATCH_UP_DAYS * 86_400_000);
	return isAfter({ created_at: from.createdAt, id: '' }, oldest) ? from : oldest;
}

export interface Recovery {
	event: MessageEvent;
	record: IDataObject;
	/** The failure the service logged, or null when no delivery was logged at all. */
	reason: string | null;
	/** Its event's watermark just before it: as far as it may move while this is not emitted. */
	before: Watermark;
	/** Why it came late beyond a failed delivery (the account's webhook not this trigger's). */
	late?: string;
	/** In a start's window while who serves the URL is not known: emitted once it is, if here. */
	window?: { servedHere?: boolean };
}

/** What a run could not read, so it must not decide about. */
export interface Unread {
	/** The newest record read of a backlog read in parts: what is newer waits. */
	after?: IDataObject;
	/** The webhook log was read back only to here: a message stored then or earlier waits. */
	logFromMs?: number;
	emitted?: ReadonlySet<string>;
}

const settledAfter = (stored: Stored, watermarks: Watermarks, settledBeforeMs: number) =>
	stored
		.flatMap(({ event, records }) => {
			const watermark = watermarks[event] as Watermark;
			const fresh = selectNew(records, watermark, Number.MAX_SAFE_INTEGER).emit;
			return fresh
				.filter((record) => Date.parse(String(record.created_at)) <= settledBeforeMs)
				.map((record) => ({ event, record }));
		})
		// Inbound messages and echoes in the order they were stored, as the conversation happened.
		.sort((a, b) => byAge(a.record, b.record));

/** Settled, undelivered messages are recovered oldest first, up to `max`; never past `unread`. */
export function decideRecoveries(
	stored: Stored,
	watermarks: Watermarks,
	attempts: Map<string, WebhookAttempt>,
	settledBeforeMs: number,
	max: number,
	keep: (record: IDataObject, event: MessageEvent) => boolean = () => true,
	unread: Unread = {},
): { recover: Recovery[]; watermarks: Watermarks; left: number } {
	const settled = settledAfter(stored, watermarks, settledBeforeMs);
	const recover: Recovery[] = [];
	const next = { ...watermarks };
	let looked = 0;
	for (const { event, record } of settled) {
		if (unread.after && byAge(record, unread.after) > 0) break;
		if (unread.logFromMs !== undefined && Date.parse(String(record.created_at)) <= unread.logFromMs)
			break;
		const id = String(record.wa_message_id);
		const attempt = attempts.get(id);
		const before = next[event] as Watermark;
		if (attempt?.success !== true && keep(record, event) && !unread.emitted?.has(id)) {
			if (recover.length === max) break;
			recover.push({ event, record, reason: attempt?.reason ?? null, before });
		}
		if (before) next[event] = selectNew([record], before, 1).watermark;
		looked++;
	}
	const left = settled
		.slice(looked)
		.filter(
			({ event, record }) =>
				attempts.get(String(record.wa_message_id))?.success !== true && keep(record, event),
		).length;
	return { recover, watermarks: next, left };
}

/** The watermarks that may be saved: each before its event's oldest recovery not emitted yet. */
export function savedWatermarks(planned: Watermarks, notEmitted: Recovery[]): Watermarks {
	const saved = { ...planned };
	for (const event of MESSAGE_EVENTS) {
		const oldest = notEmitted.find((recovery) => recovery.event === event);
		if (oldest) saved[event] = oldest.before;
	}
	return saved;
}

export function recoveredItem(
	recovery: Pick<Recovery, 'event' | 'record' | 'reason' | 'late'>,
): INodeExecutionData {
	return storedMessageItem(recovery.event, recovery.record, {
		recovered: true,
		delivery_failure: recovery.reason ?? 'no delivery was logged',
		...(recovery.late && { late_reason: recovery.late }),
	});
}
