/** Hand over: the service's echo history decides (no n8n state), so every n8n process agrees. */
import type { INodeExecutionData, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';

import { inboundParts } from '../../shared/history';
import { isPlainObject } from '../../shared/json';
import { apiRequest } from '../../shared/transport';
import type { HandOverSettings } from '../options';

export const HAND_OVER_IGNORED =
	'a person is answering this contact (While a Person Answers: Do Not Emit)';
/** An echo stamped up to this far in the future (service clock ahead of n8n's) still counts. */
const FUTURE_SKEW_MS = 60 * 1000;

/** Pure: did an echo (any order) go to `contact` from `number` within the last `minutes`? */
export function handOverDecision(
	echoes: readonly unknown[],
	contact: string,
	number: string,
	nowMs: number,
	minutes: number,
): { handedOver: boolean; lastEchoAt?: string } {
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

/** Echo history unreadable: the item goes where it would have, hand_over.checked false. */
export async function routeHandOver(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData,
	outputs: INodeExecutionData[][],
	settings: HandOverSettings,
	nowMs = Date.now(),
): Promise<INodeExecutionData[][] | null> {
	if (settings.mode === 'off') return outputs;
	const notHandedOver = settings.mode === 'output' ? [...outputs, []] : outputs;
	const json = item.json;
	const { contact = '', number = '' } = inboundParts(json) ?? {};
	if (!contact || !number) return notHandedOver;

	let answer: unknown;
	try {
		// Every inbound message asks: the transport uses the node's cached credential read.
		answer = await apiRequest.call(this, 'GET', '/v1/messages/inbound', {
			qs: { direction: 'echo', contact, number, limit: 20 },
			context: { operation: 'Trigger → While a Person Answers', scope: 'messages:read' },
		});
	} catch (error) {
		json.hand_over = {
			checked: false,
			reason: `the echo history could not be read: ${(error as Error).message}`,
		};
		return notHandedOver;
	}
	const records = isPlainObject(answer) && Array.isArray(answer.data) ? answer.data : [];
	// Both times on the service's clock when the message carries its own (the envelope's timestamp).
	const messageMs = typeof json.timestamp === 'string' ? Date.parse(json.timestamp) : NaN;
	const atMs = Number.isFinite(messageMs) ? messageMs : nowMs;
	const decision = handOverDecision(records, contact, number, atMs, settings.minutes);
	if (!decision.handedOver) return notHandedOver;
	json.hand_over = { active: true, last_echo_at: decision.lastEchoAt, minutes: settings.minutes };
	if (settings.mode === 'drop') return null;
	return [...outputs.map(() => []), [item]];
}
