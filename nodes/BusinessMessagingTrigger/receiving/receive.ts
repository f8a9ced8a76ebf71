/**
 * Receiving one webhook request: verify, accept, route. Nothing else lives here. Besides the
 * service's events: Reply and Wait registrations, joins of other triggers of this n8n, this
 * trigger's own heartbeat claim, and events a holder forwards to this trigger as a member
 * (docs/several-workflows.md). A holder forwards each verified event before its own filters.
 *
 * Order matters: the signature is checked over the raw bytes before the body is looked at,
 * and nothing is executed for a rejected (401/400, answered here) or filtered-out request
 * (200 with the reason). An accepted event is answered 200 {received: true} by n8n itself
 * once it has started the execution (on 2.x once it has stored it), so a 2xx means the event
 * is in n8n; the workflow itself is never waited for (responseMode onReceived). The one
 * exception is Download Media: the 200 is sent here before the download starts, because the
 * service waits only about 8 s.
 */
import type { IDataObject, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';

import { REGISTRATION_HEADER, receiveWaitRegistration } from '../../shared/replyAndWait';
import { SIGNATURE_HEADER, SIGNATURE_MISMATCH } from '../../shared/signature';
import { signingSecret } from '../registration/signingSecrets';
import { HAND_OVER_IGNORED } from '../routing/handOver';
import { eventItem, routeEvent } from '../routing/route';
import type { TriggerIdentity, WaitFilter } from '../../shared/replyAndWait';
import { identityOf } from '../../shared/credentialKeys';
import { CLAIM_HEADER, receiveClaim } from '../registration/heartbeat';
import { HANDOFF_HEADER, receiveHandOff } from '../registration/handOff';
import { JOIN_HEADER, currentMembers, receiveJoin } from '../registration/join';
import { holderRole, ownWaits, resumeForMember } from '../routing/whoseWait';
import {
	checkDelivery,
	checkForwarded,
	filterDelivery,
	type Delivery,
	type EventParameters,
} from './accept';
import {
	DELIVERY_HEADER,
	FORWARD_HEADER,
	forwardEvent,
	parseResumed,
	verifyForward,
} from './forward';
import { attachMedia } from './eventMedia';
import { reject } from './rejection';
import { ReplayGuard } from '../../shared/replayGuard';
import { rememberAccepted } from './acceptedHere';

const LOG_PREFIX = 'Business Messaging Trigger';

/** Shared by every trigger of this n8n process. */
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
 * form parser consumed, say): any failure is a 400 with no execution instead.
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
	// Not an event: Reply and Wait for Answer registering what it waits for (signed with the API key).
	const registration = headers[REGISTRATION_HEADER];
	if (registration !== undefined) {
		const body = await rawBodyOf.call(this).catch(() => undefined);
		const outcome = await receiveWaitRegistration.call(this, body, registration);
		if ('reason' in outcome)
			return reject.call(this, outcome.status, `waiting registration refused: ${outcome.reason}`);
		return { webhookResponse: outcome };
	}
	// Not an event: another trigger of this n8n joining (or leaving) this holder (signed with the API key).
	const join = headers[JOIN_HEADER];
	if (join !== undefined) {
		const body = await rawBodyOf.call(this).catch(() => undefined);
		const outcome = await receiveJoin.call(this, body, join);
		if ('reason' in outcome)
			return reject.call(this, outcome.status, `join refused: ${outcome.reason}`);
		return { webhookResponse: outcome };
	}
	// Not an event: this trigger's own heartbeat asking it to register (the holder is gone).
	const claim = headers[CLAIM_HEADER];
	if (claim !== undefined) {
		const body = await rawBodyOf.call(this).catch(() => undefined);
		const outcome = await receiveClaim.call(this, body, claim);
		if ('status' in outcome && typeof outcome.status === 'number' && 'reason' in outcome)
			return reject.call(
				this,
				outcome.status as 400 | 401,
				`claim refused: ${String(outcome.reason)}`,
			);
		return { webhookResponse: outcome };
	}
	// Not an event: the holder, deactivated, handing the account's webhook off to this member (§6).
	const handOff = headers[HANDOFF_HEADER];
	if (handOff !== undefined) {
		const body = await rawBodyOf.call(this).catch(() => undefined);
		const outcome = await receiveHandOff.call(this, body, handOff);
		if ('status' in outcome && typeof outcome.status === 'number' && 'reason' in outcome)
			return reject.call(
				this,
				outcome.status as 400 | 401 | 409,
				`hand-off refused: ${String(outcome.reason)}`,
			);
		return { webhookResponse: outcome };
	}
	// An event the holder passed on: this trigger is a member.
	if (headers[FORWARD_HEADER] !== undefined) return await receiveForwarded.call(this, headers);

	// 1. Verify: without a secret nothing is accepted (fail closed). A member holds none.
	const found = await signingSecret.call(this);
	if ('problem' in found) {
		return reject.call(
			this,
			401,
			'no signing secret is configured for this receiver',
			found.problem,
		);
	}
	// n8n's form parser has already consumed a multipart body: then there are no raw bytes to verify.
	const rawBody = await rawBodyOf.call(this).catch(() => undefined);
	if (!rawBody)
		return reject.call(
			this,
			401,
			'the raw request body is not available, so the signature cannot be checked',
		);

	// 2. Check: signature, envelope, replay window, Late Delivery Cutoff.
	const check = (secret: string) =>
		checkDelivery(rawBody, headers[SIGNATURE_HEADER], secret, Date.now(), () =>
			parametersOf.call(this),
		);
	let delivery = check(found.secret);
	let identity = found.identity;
	if (delivery.kind === 'reject' && delivery.reason === SIGNATURE_MISMATCH && found.reread) {
		const fresh = await found.reread();
		if ('secret' in fresh && fresh.secret !== found.secret) {
			delivery = check(fresh.secret);
			identity = fresh.identity;
		}
	}
	if (delivery.kind === 'reject') return reject.call(this, delivery.status, delivery.reason);
	if (delivery.kind === 'late') return reject.call(this, 503, delivery.reason);
	const expiresAtMs = delivery.timestampMs + delivery.options.maxAgeSeconds * 1000 + 1000;
	if (
		!replays.firstSighting(replayKey.call(this, headers[SIGNATURE_HEADER]), expiresAtMs, Date.now())
	) {
		this.logger.debug(
			`${LOG_PREFIX}: a delivery received before was acknowledged and not executed again`,
		);
		return {
			webhookResponse: { received: true, ignored: 'this delivery was already received (replay)' },
		};
	}
	// 3. Pass it on to the members, before this node's own filters (they never stop a forward).
	// A contact's answer to a member's Reply and Wait is resumed here, once, and that member told.
	const role = holderRole.call(
		this,
		currentMembers(
			this.getWorkflowStaticData('global') as IDataObject,
			this.getWorkflow().id ?? '',
		),
	);
	const resumedFor = resumeForMember.call(this, delivery.envelope, identity, role);
	await forwardEvent
		.call(this, rawBody, delivery.envelope.event, headers[SIGNATURE_HEADER], resumedFor)
		.catch((error: unknown) =>
			this.logger.warn(
				`${LOG_PREFIX}: the event could not be passed on to the members: ${(error as Error).message}`,
			),
		);
	return await filterAndRoute.call(this, delivery, identity, ownWaits(role));
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

/**
 * A member's webhook(): an event the holder forwarded. The forward's signature (a key derived
 * from the API key) and time, the event's age against this node's Max Event Age, the replay
 * guard on the delivery (absorbs the holder's retries), then its own filters and route. A
 * member never forwards.
 */
async function receiveForwarded(
	this: IWebhookFunctions,
	headers: Record<string, string | string[] | undefined>,
): Promise<IWebhookResponseData> {
	const rawBody = await rawBodyOf.call(this).catch(() => undefined);
	if (!rawBody) return reject.call(this, 401, 'the raw request body is not available');
	const verified = await verifyForward.call(this, rawBody, headers, Date.now());
	if (typeof verified === 'string') return reject.call(this, 401, `forward refused: ${verified}`);
	const delivery = checkForwarded(rawBody, Date.now(), () => parametersOf.call(this));
	if (delivery.kind === 'reject') return reject.call(this, delivery.status, delivery.reason);
	const expiresAtMs = delivery.timestampMs + delivery.options.maxAgeSeconds * 1000 + 1000;
	if (
		!replays.firstSighting(
			`forward:${replayKey.call(this, headers[DELIVERY_HEADER])}`,
			expiresAtMs,
			Date.now(),
		)
	) {
		return {
			webhookResponse: { received: true, ignored: 'this delivery was already received (replay)' },
		};
	}
	// The answer to this workflow's Reply and Wait, resumed by the holder (§8): it plays that part.
	const workflowId = this.getWorkflow().id ?? '';
	const resumed = parseResumed(verified.resumed);
	if (resumed?.workflowId === workflowId) {
		const waMessageId = delivery.envelope.data.wa_message_id;
		if (typeof waMessageId === 'string')
			rememberAccepted(`${workflowId}:${this.getNode().id}`, waMessageId, Date.now());
		if (!resumed.alsoStart)
			return { webhookResponse: { received: true, ignored: RESUMED_BY_HOLDER } };
		return await filterAndRoute.call(this, delivery, undefined);
	}
	// A wait of its own the holder did not find (kept only in this workflow's static data): resumed here.
	const ownIdentity = await identityOf.call(this);
	return await filterAndRoute.call(this, delivery, ownIdentity, ownWaits({ workflowId }));
}

export const RESUMED_BY_HOLDER =
	"the answer resumed this workflow's waiting execution (Reply and Wait for Answer)";

/** This node's own filters, then the route (hand over → resume → start). */
async function filterAndRoute(
	this: IWebhookFunctions,
	delivery: Delivery,
	identity: TriggerIdentity | undefined,
	mayResume?: WaitFilter,
): Promise<IWebhookResponseData> {
	const accepted = filterDelivery(delivery);
	if (accepted.kind === 'ignore') {
		this.logger.debug(`${LOG_PREFIX}: event ignored: ${accepted.reason}`);
		return { webhookResponse: { received: true, ignored: accepted.reason } };
	}
	if (accepted.kind !== 'emit') return reject.call(this, 400, 'the event could not be accepted');
	const { envelope, options, layout } = accepted;
	const waMessageId = envelope.data.wa_message_id;
	if (envelope.event !== 'message.status' && typeof waMessageId === 'string') {
		rememberAccepted(
			`${this.getWorkflow().id ?? ''}:${this.getNode().id}`,
			waMessageId,
			Date.now(),
		);
	}

	// 3. Route. n8n answers with webhookResponse (the description's empty responseData lets it
	// through on every line), on 2.x only once it has stored the execution: answering here
	// first would acknowledge events that a busy n8n then fails to store.
	const received: IDataObject = { received: true };
	if (!options.downloadMedia || envelope.event === 'message.status') {
		// A waiting execution slow to take its answer: the service is answered first (it waits about 8 s).
		let answeredFirst = false;
		const answerFirst = () => {
			answeredFirst = true;
			this.getResponseObject().status(200).json(received);
		};
		const route = await routeEvent.call(
			this,
			eventItem(envelope),
			envelope.event,
			layout,
			options.handOver,
			identity,
			answerFirst,
			mayResume,
		);
		if (answeredFirst)
			return route.kind === 'start'
				? { noWebhookResponse: true, workflowData: route.workflowData }
				: { noWebhookResponse: true };
		if (route.kind === 'handedOver')
			return { webhookResponse: { ...received, ignored: HAND_OVER_IGNORED } };
		if (route.kind === 'resumed')
			return { webhookResponse: { ...received, resumed: route.executionId } };
		return { webhookResponse: received, workflowData: route.workflowData };
	}
	// A download must not hold the answer back (the service waits about 8 s): answer first.
	this.getResponseObject().status(200).json(received);
	const item = await attachMedia.call(this, envelope, options);
	const route = await routeEvent.call(
		this,
		item,
		envelope.event,
		layout,
		options.handOver,
		identity,
		undefined,
		mayResume,
	);
	return route.kind === 'start'
		? { noWebhookResponse: true, workflowData: route.workflowData }
		: { noWebhookResponse: true };
}
