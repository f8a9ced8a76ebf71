/**
 * Hand over to a person: while someone of the business answers a contact from the business
 * app (an echo to that contact on that number within the last N minutes), that contact's
 * inbound messages go to a Hand Over output, or are not emitted, so the bot stays quiet.
 *
 * The service is asked (its echo history, GET /v1/messages/inbound?direction=echo), not state
 * kept in n8n: every n8n process, main or webhook, decides the same way. The decision is a pure
 * function; routeHandOver() applies it to an event's outputs, for the webhook and for any other
 * path that emits inbound messages (a catch-up of missed ones).
 */
import type { INodeExecutionData } from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';
import { apiRequest, type ApiContext } from '../../shared/transport';
import type { HandOverSettings } from '../options';

export const HAND_OVER_IGNORED =
	'a person is answering this contact (While a Person Answers: Do Not Emit)';
/** An echo stamped up to this far in the future (service clock ahead of n8n's) still counts. */
const FUTURE_SKEW_MS = 60 * 1000;

export interface HandOverDecision {
	handedOver: boolean;
	/** created_at of the newest echo to the contact on the number, when there is one. */
	lastEchoAt?: string;
}

/**
 * Pure: is a person answering `contact` on `number` at `nowMs`? Yes when one of the echo
 * records (any order) went to that contact from that number within the last `minutes`.
 */
export function handOverDecision(
	echoes: readonly unknown[],
	contact: string,
	number: string,
	nowMs: number,
	minutes: number,
): HandOverDecision {
	let newestMs = -Infinity;
	let newestAt: string | undefined;
	for (const echo of echoes) {
		if (!isPlainObject(echo)) continue;
		if (String(echo.to ?? '').trim() !== contact || String(echo.number ?? '').trim() !== number)
			continue;
		if (echo.direction !== undefined && echo.direction !== 'echo') continue;
		const at = typeof echo.created_at === 'string' ? Date.parse(echo.created_at) : NaN;
		if (!Number.isFinite(at) || at <= newestMs) continue;
		newestMs = at;
		newestAt = echo.created_at as string;
	}
	if (newestAt === undefined) return { handedOver: false };
	const handedOver = newestMs >= nowMs - minutes * 60 * 1000 && newestMs <= nowMs + FUTURE_SKEW_MS;
	return { handedOver, lastEchoAt: newestAt };
}

/**
 * The outputs for one emitted item, hand over applied: `outputs` are the trigger's outputs for
 * the item without hand over (one, or one per event). Returns them with the Hand Over output
 * appended (mode output), the item moved to it when a person answers, or null when the item
 * must not be emitted (mode drop). When the service cannot be asked the item goes where it
 * would have gone, marked hand_over.checked false with the reason: a message is never lost.
 */
export async function routeHandOver(
	this: ApiContext,
	item: INodeExecutionData,
	outputs: INodeExecutionData[][],
	settings: HandOverSettings,
	nowMs = Date.now(),
): Promise<INodeExecutionData[][] | null> {
	if (settings.mode === 'off') return outputs;
	const withOutput = (handOver: INodeExecutionData[]) =>
		settings.mode === 'output' ? [...outputs, handOver] : outputs;
	const json = item.json;
	const data = isPlainObject(json.data) ? json.data : {};
	const contact = typeof data.from === 'string' ? data.from.trim() : '';
	const number = typeof data.number === 'string' ? data.number.trim() : '';
	if (json.event !== 'message.inbound' || !contact || !number) return withOutput([]);

	let decision: HandOverDecision;
	try {
		const answer = await apiRequest.call(this, 'GET', '/v1/messages/inbound', {
			qs: { direction: 'echo', contact, number, limit: 20 },
			context: { operation: 'Trigger → While a Person Answers', scope: 'messages:read' },
		});
		const records = isPlainObject(answer) && Array.isArray(answer.data) ? answer.data : [];
		// Both times on the service's clock when the message carries its own (the envelope's timestamp).
		const messageMs = typeof json.timestamp === 'string' ? Date.parse(json.timestamp) : NaN;
		decision = handOverDecision(
			records,
			contact,
			number,
			Number.isFinite(messageMs) ? messageMs : nowMs,
			settings.minutes,
		);
	} catch (error) {
		json.hand_over = {
			checked: false,
			reason: `the echo history could not be read: ${(error as Error).message}`,
		};
		return withOutput([]);
	}
	if (!decision.handedOver) return withOutput([]);
	json.hand_over = { active: true, last_echo_at: decision.lastEchoAt, minutes: settings.minutes };
	if (settings.mode === 'drop') return null;
	return [...outputs.map(() => []), [item]];
}
