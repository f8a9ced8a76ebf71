/** One event request: answered once the execution is stored (answerDelivery.ts): a 2xx means in n8n. */
import type { IDataObject, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';

import { SIGNATURE_HEADER, SIGNATURE_MISMATCH, hasSignatureShape } from '../../shared/signature';
import { nodeKeyOf } from '../../shared/credentialKeys';
import { serviceLine } from '../../shared/redact';
import { ReplayGuard, lruOf } from '../../shared/replayGuard';
import { lateAnswerGoesOnHere } from '../../shared/replyAndWait/forTrigger';
import { rawBodyOf } from '../../shared/webhookRequest';
import { signingSecret } from '../registration/signingSecrets';
import { holdForBurst, mayHoldHere } from '../routing/burstHold';
import { HAND_OVER_IGNORED } from '../routing/handOver';
import { eventItem, routeEvent } from '../routing/route';
import { acceptEvent, nodeParameters } from './accept';
import { startExecution } from './answerDelivery';
import { rememberAccepted } from './acceptedHere';
import { reject } from './rejection';

/** One replay guard per trigger node (100,000 deliveries each): one trigger's flood never pushes out another's. */
const replays = new Map<string, ReplayGuard>();
const MAX_GUARDED_TRIGGERS = 1000;

/** n8n's webhook(): never throws (n8n would answer 500 and run the Error Workflow). */
export async function receiveEvent(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	try {
		return await receive.call(this);
	} catch (error) {
		const reason = `the request could not be processed (${(error as Error)?.message ?? 'unknown error'})`;
		return reject.call(this, 400, reason);
	}
}

async function receive(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	// When the trigger took the message, before any of n8n's intake that follows (Combine's quiet period).
	const receivedAtMs = Date.now();
	const headers = this.getHeaderData() as Record<string, string | string[] | undefined>;
	// A request that cannot carry a signature costs no credential read.
	const signature = headers[SIGNATURE_HEADER];
	if (!hasSignatureShape(signature))
		return reject.call(this, 401, 'the signature header is missing or malformed');
	// n8n's form parser has already consumed a multipart body: then there are no raw bytes to verify.
	const rawBody = await rawBodyOf.call(this).catch(() => undefined);
	if (!rawBody)
		return reject.call(
			this,
			401,
			'the raw request body is not available, so the signature cannot be checked',
		);
	const found = await signingSecret.call(this);
	if ('problem' in found)
		return reject.call(this, 401, 'no signing secret is available', { problem: found.problem });

	const check = (secret: string) =>
		acceptEvent(rawBody, signature, secret, Date.now(), () => nodeParameters.call(this));
	let accepted = check(found.secret);
	if (accepted.kind === 'reject' && accepted.reason === SIGNATURE_MISMATCH) {
		const fresh = await signingSecret.call(this, found.secret);
		if ('secret' in fresh && fresh.secret !== found.secret) accepted = check(fresh.secret);
	}
	// A 400 comes after the signature checked out: the service is told why (its delivery log shows it).
	if (accepted.kind === 'reject')
		return reject.call(this, accepted.status, accepted.reason, { signed: accepted.status === 400 });
	// Late: refused (the catch-up runs it), unless it answers a wait known here (queue mode).
	const late = accepted.kind === 'late' ? accepted : undefined;
	if (accepted.kind === 'ignore') {
		this.logger.debug(`Business Messaging Trigger: event ignored: ${serviceLine(accepted.reason)}`);
		return { webhookResponse: { received: true, ignored: accepted.reason } };
	}
	const emit = accepted.kind === 'late' ? accepted.emit : accepted;
	const lateAnswer = late && emit && lateAnswerGoesOnHere.call(this, emit.envelope as IDataObject);
	// Or, Combine where trigger() runs here: held and answered at once, in time for the service.
	const lateHeld = late && emit && !lateAnswer && emit.options.combine && mayHoldHere.call(this);
	if (!emit || (late && !lateAnswer && !lateHeld))
		return reject.call(this, 503, late?.reason ?? 'late', { signed: true });
	if (lateAnswer)
		this.logger.info(
			`Business Messaging Trigger: a late answer (${late.reason.split(':')[0]}) goes to the execution waiting for it`,
		);
	const { envelope, options, layout } = emit;
	const expiresAtMs = emit.timestampMs + options.maxAgeSeconds * 1000 + 1000;
	const scope = nodeKeyOf.call(this);
	const header = String(Array.isArray(signature) ? signature[0] : signature).toLowerCase();
	// The service never retries: a second copy of a delivery (to this node) is someone replaying it.
	const guard = lruOf(replays, scope, MAX_GUARDED_TRIGGERS, () => new ReplayGuard());
	if (!guard.firstSighting(header, expiresAtMs, Date.now()))
		return reject.call(this, 401, 'this delivery was already received (replay)');
	const waMessageId = envelope.data.wa_message_id;
	if (envelope.event !== 'message.status' && typeof waMessageId === 'string')
		rememberAccepted(scope, waMessageId, Date.now());

	// n8n answers with webhookResponse (the description's empty responseData lets it through).
	const route = await routeEvent.call(
		this,
		eventItem(envelope, options.combine ? receivedAtMs : undefined),
		envelope.event,
		layout,
		options.handOver,
	);
	const received: IDataObject = { received: true };
	if (route.kind === 'handedOver')
		return { webhookResponse: { ...received, ignored: HAND_OVER_IGNORED } };
	if (route.resumed !== undefined) received.resumed = route.resumed;
	// An answer that only resumed a wait: n8n answers now, and saves the static data holding its record.
	if (route.kind === 'answered') return { webhookResponse: received };
	// Combine where trigger() runs here: held for its burst (burstHold.ts), no execution per message.
	if (options.combine && holdForBurst.call(this, route.workflowData))
		return { webhookResponse: received };
	// Let through only to be held, and not held after all: the catch-up brings it, as any late one.
	if (lateHeld && late && route.resumed === undefined)
		return reject.call(this, 503, late.reason, { signed: true });
	return startExecution.call(this, received, route.workflowData);
}
