/** Reply and Wait as the trigger sees it, the one module it imports from this folder: every copy n8n may save is brought up to date. */
import type {
	IDataObject,
	INodeExecutionData,
	ITriggerFunctions,
	IWebhookDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { WAIT_REGISTRATION_LABEL, nodeKeyOf, verifyWithDerivedKey } from '../credentialKeys';
import { inboundParts } from '../history';
import { isPlainObject, parseJsonBody } from '../json';
import { ReplayGuard } from '../replayGuard';
import { hasSignatureShape } from '../signature';
import { REGISTRATION_PATH } from '../triggerUrls';
import { rawBodyOf } from '../webhookRequest';
import {
	MAX_ENTRIES_PER_REGISTRATION,
	REGISTRATION_HEADER,
	isEntryInBounds,
	ownOrigin,
	type WaitRegistration,
} from './registration';
import { MAX_OWED, owedCount, wasAnswered } from './answeredHere';
import { answerOwed, isRequest, resumeOwedFromBefore, type AnswerOutcome } from './answerLater';
import { resumeEntry, triggerIdentity, type TriggerIdentity } from './resume';
import {
	NO_ROOM,
	REGISTRATION_MAX_AGE_MS,
	answerKeys,
	answersAfterAsking,
	findWaiting,
	isForgotten,
	keepWaitingEntriesCurrent,
	markTriggerWorkflow,
	registerWaiting,
	triggerNodeRunningHere,
	triggerOfWorkflow,
	triggerRunsHere,
} from './waitingEntries';
import { isWaitingEntry, type WaitingEntry } from './entry';

/** The trigger's second webhook, Reply and Wait's registrations: named `setup`, n8n's only other webhook name. */
export const REGISTRATION_WEBHOOK: IWebhookDescription = {
	name: 'setup',
	httpMethod: 'POST',
	responseMode: 'onReceived',
	responseData: '',
	path: REGISTRATION_PATH,
	ndvHideUrl: true,
};

/** How long trigger() waits for the owed answers a restart left: n8n's save after activation then says how each ended. */
const OWED_AT_START_WAIT_MS = 10_000;

/** trigger(), when it starts: marks the workflow for Reply and Wait; returns what unmarks it. */
export async function onTriggerActivated(
	this: ITriggerFunctions,
	/** What runs an answer no execution takes any more: the trigger's item on its outputs. */
	outputsFor: (item: INodeExecutionData) => INodeExecutionData[][],
): Promise<() => void> {
	markTriggerWorkflow(this.getWorkflowStaticData('global'));
	// n8n saves trigger()'s copy once activation returns: the next restart does not post them again.
	const leave = triggerRunsHere(this);
	await Promise.race([resumeOwedFromBefore.call(this, outputsFor), sleep(OWED_AT_START_WAIT_MS)]);
	return leave;
}

/** The trigger that takes this production request's answer with no execution: this node's, when its trigger() runs here. */
function triggerTakingAnswers(
	this: IWebhookFunctions | ITriggerFunctions,
): ITriggerFunctions | undefined {
	if (!isRequest(this) || this.getMode() !== 'webhook') return undefined;
	return triggerNodeRunningHere(nodeKeyOf.call(this));
}

/** Whether this inbound message already resumed a wait with no execution (a catch-up copy is not run again). */
export function answeredAlready(
	this: IWebhookFunctions | ITriggerFunctions,
	json: IDataObject,
): boolean {
	const id = inboundParts(json)?.id;
	if (!id) return false;
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	return wasAnswered(staticData, this.getWorkflow().id ?? undefined, id);
}

/**
 * An accepted event: resumes the execution waiting for its contact, if any (`item` undefined: handed
 * over); this copy is brought up to date either way. `outputs`: what runs if an answer taken first is refused.
 */
export async function answerWaiting(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData | undefined,
	outputs: INodeExecutionData[][] = item ? [[item]] : [],
): Promise<AnswerOutcome> {
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	const home = this.getWorkflow().id ?? undefined;
	try {
		const target = item ? await waitAnswered.call(this, staticData, item) : undefined;
		if (!item || !target) return { resumed: false };
		const messageId = inboundParts(item.json)?.id;
		if (messageId && home && !target.found.entry.alsoStart && owedCount(home) < MAX_OWED) {
			const owed = { home, messageId, item, outputs, ...target };
			return await answerOwed.call(this, triggerTakingAnswers.call(this), owed);
		}
		// At MAX_OWED or Also Start: resumed first, then recorded by its own execution.
		return await resumeEntry.call(this, item, target.identity, target.found);
	} finally {
		// Written either way: which requests' copies n8n saves differs by line (docs/n8n-internals.md).
		keepCurrent.call(this, staticData, home);
	}
}

/** trigger()'s copy before it emits (n8n saves it then). */
export function keepTriggerCopyCurrent(this: ITriggerFunctions): void {
	keepCurrent.call(this, this.getWorkflowStaticData('global'), this.getWorkflow().id ?? undefined);
}

/** Workflows that said they wrote dropped entries back (once a minute each at most). */
const restoredSaid = new ReplayGuard(1000);

/** Brings this copy up to date; says so when another process's save had dropped waits. */
function keepCurrent(
	this: IWebhookFunctions | ITriggerFunctions,
	staticData: IDataObject,
	home: string | undefined,
): void {
	const { restored } = keepWaitingEntriesCurrent(staticData, home);
	const nowMs = Date.now();
	if (restored === 0 || !restoredSaid.firstSighting(home ?? '', nowMs + 60_000, nowMs)) return;
	this.logger.warn(
		`Business Messaging Trigger: ${restored} Reply and Wait for Answer wait(s) of this process were missing from the workflow's static data (another process saved its copy over them: in queue mode, main's catch-up) and are written back; an answer that reached another webhook processor meanwhile started a new execution, and its wait ends on Timed Out (docs/reliability.md, "a recovery by the catch-up wipes the stored waits")`,
	);
}

/** The wait keys an inbound message may answer and which waits, when a live one of any account is held (no credential read). */
function waitsFor(
	json: IDataObject,
	staticData: IDataObject,
): { keys: string[]; mayAnswer: (entry: WaitingEntry) => boolean } | undefined {
	const inbound = inboundParts(json);
	if (!inbound?.contact) return undefined;
	const keys = answerKeys(inbound.contact, inbound.number);
	const mayAnswer = (entry: WaitingEntry) => answersAfterAsking(inbound, entry);
	return findWaiting(staticData, keys, undefined, Date.now(), mayAnswer) && { keys, mayAnswer };
}

/**
 * Whether a delivery past the Late Delivery Cutoff still resumes a wait here: queue mode's catch-up on
 * main would not find a processor's waits; in regular mode it is taken with no execution. No credential read.
 */
export function lateAnswerGoesOnHere(
	this: IWebhookFunctions | ITriggerFunctions,
	event: IDataObject,
): boolean {
	if (triggerOfWorkflow(this.getWorkflow().id ?? undefined) && !triggerTakingAnswers.call(this))
		return false;
	return waitsFor(event, this.getWorkflowStaticData('global') as IDataObject) !== undefined;
}

async function waitAnswered(
	this: IWebhookFunctions | ITriggerFunctions,
	staticData: IDataObject,
	item: INodeExecutionData,
): Promise<{ identity: TriggerIdentity; found: { key: string; entry: WaitingEntry } } | undefined> {
	const json = item.json;
	const handedOver = isPlainObject(json.hand_over) && json.hand_over.active === true;
	// A message nobody waits for costs no credential read.
	const waits = handedOver ? undefined : waitsFor(json, staticData);
	if (!waits) return undefined;
	const { keys, mayAnswer } = waits;
	const identity = await triggerIdentity.call(this);
	if (typeof identity === 'string') {
		this.logger.warn(
			`Business Messaging Trigger: an execution may wait for this contact, but ${identity}; the message starts a new execution`,
		);
		return undefined;
	}
	// Static data is anyone's to write: its entries are checked as a registration's are.
	const bounds = { ownOrigin: ownOrigin.call(this), account: identity.account, nowMs: Date.now() };
	const found = findWaiting(staticData, keys, identity.account, bounds.nowMs, mayAnswer, (entry) =>
		isEntryInBounds(entry, bounds),
	);
	return found ? { identity, found } : undefined;
}

/** How far in the future a registration may be signed (clocks differ): small, as a replay is taken this much longer. */
const REGISTRATION_FUTURE_TOLERANCE_MS = 10_000;
const registrationsSeen = new ReplayGuard(10_000);

/**
 * A request to the registration webhook: signed with the account's key, fresh, seen once, each entry of
 * this n8n and account and not answered here; stored in the copy n8n saves after it. Never throws.
 */
export async function takeRegistration(
	this: IWebhookFunctions,
	refuse: (status: 400 | 401 | 507, reason: string) => IWebhookResponseData,
): Promise<IWebhookResponseData> {
	const refused = (status: 400 | 401 | 507, reason: string) =>
		refuse(status, `waiting registration refused: ${reason}`);
	try {
		const signature = this.getHeaderData()[REGISTRATION_HEADER];
		if (!hasSignatureShape(signature)) return refused(401, 'not signed');
		const rawBody = await rawBodyOf.call(this).catch(() => undefined);
		if (!rawBody) return refused(400, 'the raw request body is not available');
		const label = WAIT_REGISTRATION_LABEL;
		const verified = await verifyWithDerivedKey.call(this, label, rawBody, signature);
		if (verified !== true) return refused(401, verified);
		const body = parseJsonBody(rawBody);
		if (!isPlainObject(body)) return refused(400, 'the body is not a JSON object');
		// A captured registration replayed later would put back an answered wait: each is taken once, while fresh.
		const { issued_at_ms: issuedAtMs, business_messaging_wait: list } = body;
		const nowMs = Date.now();
		if (
			typeof issuedAtMs !== 'number' ||
			nowMs - issuedAtMs > REGISTRATION_MAX_AGE_MS ||
			issuedAtMs - nowMs > REGISTRATION_FUTURE_TOLERANCE_MS
		)
			return refused(401, 'the registration is not fresh (replayed, or its clock is off)');
		const header = String(Array.isArray(signature) ? signature[0] : signature).toLowerCase();
		if (!registrationsSeen.firstSighting(header, issuedAtMs + REGISTRATION_MAX_AGE_MS, nowMs))
			return refused(401, 'this registration was already received (replay)');
		if (!Array.isArray(list) || list.length > MAX_ENTRIES_PER_REGISTRATION)
			return refused(400, `not a list of at most ${MAX_ENTRIES_PER_REGISTRATION} entries`);
		const identity = await triggerIdentity.call(this);
		if (typeof identity === 'string') return refused(401, identity);
		const bounds = { ownOrigin: ownOrigin.call(this), account: identity.account, nowMs };
		const registrations = list.filter(
			(item): item is WaitRegistration =>
				isPlainObject(item) &&
				typeof item.key === 'string' &&
				isWaitingEntry(item.entry) &&
				isEntryInBounds(item.entry, bounds) &&
				// A registration slower than the answer it waits for must not bring the answered wait back.
				!isForgotten(item.key, item.entry),
		);
		const staticData = this.getWorkflowStaticData('global') as IDataObject;
		const home = this.getWorkflow().id ?? undefined;
		const notKept = registrations.filter(
			({ key, entry }) => !registerWaiting(undefined, key, { ...entry, home }),
		).length;
		keepCurrent.call(this, staticData, home);
		// Said out loud: Reply and Wait then logs that it kept its entries in its own process only.
		if (notKept > 0)
			return refused(507, `${notKept} of ${registrations.length} wait(s) not kept: ${NO_ROOM}`);
		return { webhookResponse: { registered: registrations.length } };
	} catch (error) {
		return refused(400, (error as Error)?.message ?? 'error');
	}
}
