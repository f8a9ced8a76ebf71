/**
 * The catch-up's decisions, pure: where it starts, and which stored messages it recovers. A
 * message is recovered when the service's webhook log shows no successful delivery of it,
 * once its one delivery attempt is over (SETTLE_MS).
 */
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import {
	MESSAGE_EVENTS,
	storedMessageItem,
	type MessageEvent,
	type WebhookAttempt,
} from '../../shared/history';
import { byAge, isAfter, selectNew, type Watermark } from '../../shared/watermark';
import { MAX_CATCH_UP_DAYS, type OnActivation } from '../options';

/** The service's delivery timeout (about 8 s) plus margin for the answer and clock skew: older messages have had their one delivery. */
export const SETTLE_MS = 15_000;

export interface CatchUpState extends IDataObject {
	/** Per event: the newest stored message the catch-up has looked at. */
	watermarks: Partial<Record<MessageEvent, Watermark>>;
}

/**
 * Where the catch-up starts when the trigger starts. A user's activation with "from
 * activation", or no watermark yet (first activation), starts now: nothing from before.
 * Otherwise (n8n restarted, the workflow was updated or reactivated) it carries on from the
 * saved watermark, bounded to MAX_CATCH_UP_DAYS.
 */
export function startingWatermark(
	saved: Watermark | undefined,
	activation: string,
	onActivation: OnActivation,
	nowMs: number,
): Watermark {
	const now = { createdAt: new Date(nowMs).toISOString(), ids: [] };
	if (!saved || (activation === 'activate' && onActivation === 'fromActivation')) return now;
	const oldest = {
		createdAt: new Date(nowMs - MAX_CATCH_UP_DAYS * 86_400_000).toISOString(),
		ids: [],
	};
	return isAfter({ created_at: saved.createdAt, id: '' }, oldest) ? saved : oldest;
}

export interface Recovery {
	event: MessageEvent;
	record: IDataObject;
	/** The failure the service logged, or null when no delivery was logged at all. */
	reason: string | null;
}

/**
 * One catch-up decision, pure. `stored` are the messages after each watermark; those younger
 * than the settle time wait. A message with a successful delivery was run by the webhook;
 * every other one is recovered, oldest first, at most `max`; the watermarks move past what
 * was looked at (and no further than the last recovery when the bound cuts).
 */
export function decideRecoveries(
	stored: Array<{ event: MessageEvent; records: IDataObject[] }>,
	watermarks: Partial<Record<MessageEvent, Watermark>>,
	attempts: Map<string, WebhookAttempt>,
	settledBeforeMs: number,
	max: number,
	keep: (record: IDataObject) => boolean = () => true,
): { recover: Recovery[]; watermarks: Partial<Record<MessageEvent, Watermark>>; left: number } {
	const settled = stored.flatMap(({ event, records }) => {
		const watermark = watermarks[event] as Watermark;
		const fresh = selectNew(records, watermark, Number.MAX_SAFE_INTEGER).emit;
		return fresh
			.filter((record) => Date.parse(String(record.created_at)) <= settledBeforeMs)
			.map((record) => ({ event, record }));
	});
	// Inbound messages and echoes in the order they were stored, as the conversation happened.
	settled.sort((a, b) => byAge(a.record, b.record));

	const recover: Recovery[] = [];
	let looked = 0;
	for (const { event, record } of settled) {
		const attempt = attempts.get(String(record.wa_message_id));
		if (attempt?.success !== true && keep(record)) {
			if (recover.length === max) break;
			recover.push({ event, record, reason: attempt?.reason ?? null });
		}
		looked++;
	}
	const next = { ...watermarks };
	for (const event of MESSAGE_EVENTS) {
		const seen = settled
			.slice(0, looked)
			.filter((entry) => entry.event === event)
			.map((entry) => entry.record);
		if (seen.length > 0 && next[event])
			next[event] = selectNew(seen, next[event] as Watermark, seen.length).watermark;
	}
	const left = settled
		.slice(looked)
		.filter(
			({ record }) => attempts.get(String(record.wa_message_id))?.success !== true && keep(record),
		).length;
	return { recover, watermarks: next, left };
}

/** The item of a recovered message: the webhook's `{event, data, timestamp}`, marked. */
export function recoveredItem(recovery: Recovery): INodeExecutionData {
	return storedMessageItem(recovery.event, recovery.record, {
		recovered: true,
		delivery_failure: recovery.reason ?? 'no delivery was logged',
	});
}
