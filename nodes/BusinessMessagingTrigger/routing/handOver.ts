/**
 * Hand over to a person: while someone answers a contact from the business app (an echo within the
 * last N minutes), its inbound messages go to a Hand Over output or are not emitted. The service's
 * echo history is asked, not state kept in n8n, so every n8n process decides the same way.
 */
import type { INodeExecutionData } from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';
import {
	apiRequest,
	checkedCredential,
	type ApiContext,
	type CheckedCredential,
} from '../../shared/transport';
import type { HandOverSettings } from '../options';

export const HAND_OVER_IGNORED =
	'a person is answering this contact (While a Person Answers: Do Not Emit)';
/** An echo stamped up to this far in the future (service clock ahead of n8n's) still counts. */
const FUTURE_SKEW_MS = 60 * 1000;

export interface HandOverDecision {
	handedOver: boolean;
	lastEchoAt?: string;
}

/**
 * The credential as read for the echo-history read, per node, for a minute: a credential read
 * outside an execution costs n8n 2.x an expression isolate, and every inbound message (an answer
 * to Reply and Wait too) makes this read. In this process's memory only; dropped when a read
 * fails, so a changed or revoked API key is read again at once.
 */
const CREDENTIAL_FOR_MS = 60_000;
const credentialReads = new Map<string, { credential: CheckedCredential; readAtMs: number }>();

async function credentialFor(this: ApiContext, cacheKey: string): Promise<CheckedCredential> {
	const cached = credentialReads.get(cacheKey);
	if (cached && Date.now() - cached.readAtMs < CREDENTIAL_FOR_MS) return cached.credential;
	const credential = await checkedCredential.call(this);
	if (credentialReads.size >= 1000) credentialReads.clear();
	credentialReads.set(cacheKey, { credential, readAtMs: Date.now() });
	return credential;
}

/** Pure: did an echo (any order) go to `contact` from `number` within the last `minutes`? */
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
 * The item's outputs with hand over applied: the Hand Over output appended (mode output), the item
 * moved to it, or null (mode drop). When the service cannot be asked, the item goes where it would
 * have gone, marked hand_over.checked false: a message is never lost.
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
	const cacheKey = `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
	try {
		const answer = await apiRequest.call(this, 'GET', '/v1/messages/inbound', {
			qs: { direction: 'echo', contact, number, limit: 20 },
			context: { operation: 'Trigger → While a Person Answers', scope: 'messages:read' },
			credential: await credentialFor.call(this, cacheKey),
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
		credentialReads.delete(cacheKey);
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
