/**
 * Receiving one webhook request: verify, accept, route. The public URL takes two things: the
 * service's signed events, and Reply and Wait for Answer registering what it waits for (signed
 * with a key derived from the API key). Anything else is refused with one generic reason
 * (rejection.ts; the details go to n8n's log) before any credential is read.
 *
 * Order matters: the signature is checked over the raw bytes before the body is looked at,
 * and nothing is executed for a rejected (401/400, answered here) or filtered-out request
 * (200 with the reason). An accepted event is answered 200 {received: true} by n8n itself
 * once it has started the execution (on 2.x once it has stored it), so a 2xx means the event
 * is in n8n; the workflow itself is never waited for (responseMode onReceived). Nothing is
 * answered earlier: Download Media runs in the trigger's execute(), inside that execution.
 */
import type { IDataObject, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';

import { REGISTRATION_HEADER, receiveWaitRegistration } from '../../shared/replyAndWait';
import { SIGNATURE_HEADER, SIGNATURE_MISMATCH, hasSignatureShape } from '../../shared/signature';
import { ReplayGuard } from '../../shared/replayGuard';
import { signingSecret } from '../registration/signingSecrets';
import { HAND_OVER_IGNORED } from '../routing/handOver';
import { eventItem, routeEvent } from '../routing/route';
import { acceptEvent, type EventParameters } from './accept';
import { rememberAccepted } from './acceptedHere';
import { reject } from './rejection';

const LOG_PREFIX = 'Business Messaging Trigger';

/** Shared by every trigger of this n8n process (bounded: ReplayGuard's capacity). */
const replays = new ReplayGuard();

/** The request body exactly as it arrived, read now if n8n has not read it yet. */
async function rawBodyOf(this: IWebhookFunctions): Promise<Buffer | undefined> {
	const req = this.getRequestObject();
	if (!Buffer.isBuffer(req.rawBody) && typeof req.readRawBody === 'function') {
		await req.readRawBody();
	}
	return Buffer.isBuffer(req.rawBody) ? req.rawBody : undefined;
}

/** The same delivery to the same node, whatever else differs. */
function replayKey(this: IWebhookFunctions, signatureHeader: unknown): string {
	const header = Array.isArray(signatureHeader)
		? String(signatureHeader[0])
		: String(signatureHeader);
	return `${this.getWorkflow().id ?? ''}:${this.getNode().id}:${header.trim().toLowerCase()}`;
}

/**
 * n8n's webhook(): never throws. A throw would make n8n answer 500, store an error execution
 * and run the Error Workflow, for a request nobody signed (a multipart POST whose body n8n's
 * form parser consumed, say): any failure is a refusal with no execution instead.
 */
export async function receiveEvent(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	try {
		return await receive.call(this);
	} catch (error) {
		const reason = `the request could not be processed (${(error as Error)?.message ?? 'unknown error'})`;
		return reject.call(this, 400, reason);
	}
}

async function receive(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const headers = this.getHeaderData() as Record<string, string | string[] | undefined>;
	// Not an event: Reply and Wait for Answer registering what it waits for.
	const registration = headers[REGISTRATION_HEADER];
	if (registration !== undefined) {
		if (!hasSignatureShape(registration))
			return reject.call(this, 401, 'waiting registration refused: not signed');
		const body = await rawBodyOf.call(this).catch(() => undefined);
		const outcome = await receiveWaitRegistration.call(this, body, registration);
		if ('reason' in outcome)
			return reject.call(this, outcome.status, `waiting registration refused: ${outcome.reason}`);
		return { webhookResponse: outcome };
	}

	// 1. Verify. A request that cannot carry a signature costs no credential read.
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
	// Without a secret nothing is accepted (fail closed).
	const found = await signingSecret.call(this);
	if ('problem' in found)
		return reject.call(this, 401, 'no signing secret is available', { problem: found.problem });

	// 2. Check: signature, envelope, replay window, Late Delivery Cutoff, this node's filters.
	const check = (secret: string) =>
		acceptEvent(rawBody, signature, secret, Date.now(), () => parametersOf.call(this));
	let accepted = check(found.secret);
	let identity = found.identity;
	if (accepted.kind === 'reject' && accepted.reason === SIGNATURE_MISMATCH && found.reread) {
		const fresh = await found.reread();
		if ('secret' in fresh && fresh.secret !== found.secret) {
			accepted = check(fresh.secret);
			identity = fresh.identity;
		}
	}
	// A 400 comes after the signature checked out: the service is told why (its delivery log shows it).
	if (accepted.kind === 'reject')
		return reject.call(this, accepted.status, accepted.reason, { signed: accepted.status === 400 });
	if (accepted.kind === 'late') return reject.call(this, 503, accepted.reason, { signed: true });
	if (accepted.kind === 'ignore') {
		this.logger.debug(`${LOG_PREFIX}: event ignored: ${accepted.reason}`);
		return { webhookResponse: { received: true, ignored: accepted.reason } };
	}
	const { envelope, options, layout } = accepted;
	const expiresAtMs = accepted.timestampMs + options.maxAgeSeconds * 1000 + 1000;
	// The service never retries: a second copy of a delivery is someone replaying it.
	if (!replays.firstSighting(replayKey.call(this, signature), expiresAtMs, Date.now()))
		return reject.call(this, 401, 'this delivery was already received (replay)');
	const waMessageId = envelope.data.wa_message_id;
	if (envelope.event !== 'message.status' && typeof waMessageId === 'string') {
		rememberAccepted(
			`${this.getWorkflow().id ?? ''}:${this.getNode().id}`,
			waMessageId,
			Date.now(),
		);
	}

	// 3. Route: hand over → resume a waiting execution → start. n8n answers with webhookResponse
	// (the description's empty responseData lets it through on every line), on 2.x only once it has
	// stored the execution: an answer that resumed a wait starts one too, so that it is recorded as run.
	const route = await routeEvent.call(
		this,
		eventItem(envelope),
		envelope.event,
		layout,
		options.handOver,
		identity,
	);
	const received: IDataObject = { received: true };
	if (route.kind === 'handedOver')
		return { webhookResponse: { ...received, ignored: HAND_OVER_IGNORED } };
	if (route.resumed !== undefined) received.resumed = route.resumed;
	return { webhookResponse: received, workflowData: route.workflowData };
}

/** What receiving reads from the node's parameters; read only once a request is verified. */
function parametersOf(this: IWebhookFunctions): EventParameters {
	return {
		events: this.getNodeParameter('events', ['message.inbound']) as unknown,
		catchUp: this.getNodeParameter('catchUp', true) as unknown,
		options: this.getNodeParameter('options', {}) as IDataObject,
		separateOutputs: this.getNodeParameter('separateOutputs', false) as unknown,
	};
}
