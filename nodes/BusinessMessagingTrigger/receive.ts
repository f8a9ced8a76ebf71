/**
 * Receiving one webhook request: verify, validate, filter, refuse what is too late, emit, and
 * when the answer goes out.
 *
 * Order matters: the signature is checked over the raw bytes before the body is looked at,
 * and nothing is executed for a rejected (401/400, answered here) or filtered-out request
 * (200 with the reason). An accepted event is answered 200 {received: true} by n8n itself
 * once it has started the execution (on 2.x once it has stored it), so a 2xx means the event
 * is in n8n; the workflow itself is never waited for (responseMode onReceived). The one
 * exception is Download Media: the 200 is sent here before the download starts, because the
 * service waits only about 8 s.
 */
import type {
	IBinaryKeyData,
	IDataObject,
	INodeExecutionData,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';

import { downloadMedia } from '../shared/mediaDownload';
import { REGISTRATION_HEADER } from '../shared/waiting';
import { withReplyWindow } from '../shared/replyWindow';
import { CREDENTIAL_TYPE } from '../shared/transport';
import { downloadLimits } from '../shared/mediaPolicy';
import { splitList } from '../shared/fields';
import { outputLayout } from './description';
import { HAND_OVER_IGNORED, routeHandOver } from './handover';
import { receiveWaitRegistration, resumeWaitingExecution, type ResumeOutcome } from './resume';
import {
	DEFAULT_MAX_AGE_SECONDS,
	EVENT_TYPES,
	boundedMaxAge,
	checkEventAge,
	parseEnvelope,
	type EventEnvelope,
	type EventType,
} from './envelope';
import {
	isManualRegistration,
	manualSecretKey,
	manualSecrets,
	manualSigningSecret,
	type TriggerStaticData,
} from './lifecycle';
import { DEFAULT_LATE_DELIVERY_CUTOFF_SECONDS } from './catchUpOptions';
import { LogThrottle, ReplayGuard, rememberAccepted } from './replay';
import { openSecret } from './seal';
import { SIGNATURE_HEADER, SIGNATURE_MISMATCH, verifySignature } from '../shared/signature';

const LOG_PREFIX = 'Business Messaging Trigger';

/** Shared by every trigger of this n8n process. */
const replays = new ReplayGuard();
/** Sealed secret → the secret it opens to. */
const openedSecrets = new Map<string, string>();
const MANUAL_REREAD_INTERVAL_MS = 10_000;

interface SigningSecret {
	secret: string;
	/** Reads the secret again (Manual registration, after a mismatch); undefined when read too recently. */
	reread?: () => Promise<{ secret: string } | { problem: string }>;
}
const rejectionLog = new LogThrottle(10);

interface ReceiveOptions {
	/** The Options collection as set: hand over and the download limits read it too (read from n8n once per request). */
	raw: IDataObject;
	/** Deliveries older than this are refused (503) because the catch-up recovers them; undefined without catch-up. */
	lateDeliveryCutoffMs?: number;
	downloadMedia: boolean;
	binaryPropertyName: string;
	maxAge: number;
	numbers: string[];
	statuses: string[];
}

function readOptions(raw: IDataObject, catchUp: boolean): ReceiveOptions {
	const maxAge = raw.maxAge === undefined || raw.maxAge === null || raw.maxAge === '' ? DEFAULT_MAX_AGE_SECONDS : Number(raw.maxAge);
	const cutoff = Number(raw.lateDeliveryCutoff);
	return {
		raw,
		lateDeliveryCutoffMs: catchUp ? (Number.isFinite(cutoff) && cutoff > 0 ? cutoff : DEFAULT_LATE_DELIVERY_CUTOFF_SECONDS) * 1000 : undefined,
		downloadMedia: raw.downloadMedia === true,
		binaryPropertyName:
			typeof raw.binaryPropertyName === 'string' && raw.binaryPropertyName.trim() !== ''
				? raw.binaryPropertyName.trim()
				: 'data',
		maxAge: boundedMaxAge(maxAge),
		numbers: splitList(raw.numbers),
		statuses: splitList(raw.statuses).map((status) => status.toLowerCase()),
	};
}

/** Why a verified, valid event is not for this workflow, or undefined when it is. */
function filterReason(envelope: EventEnvelope, events: string[], options: ReceiveOptions): string | undefined {
	if (!events.includes(envelope.event)) return `event ${envelope.event} is not selected`;
	const data = envelope.data;
	if (options.numbers.length > 0 && envelope.event !== 'message.status') {
		const number = typeof data.number === 'string' ? data.number.trim() : '';
		if (!options.numbers.includes(number)) return `number ${number || '(none)'} is not among the receiving numbers`;
	}
	if (options.statuses.length > 0 && envelope.event === 'message.status') {
		const status = typeof data.status === 'string' ? data.status.trim().toLowerCase() : '';
		if (!options.statuses.includes(status)) return `status ${status || '(none)'} is not among the status values`;
	}
	return undefined;
}

/**
 * Answers a refused request. Its log line (an error when the receiver itself is misconfigured,
 * `problem`) counts against the same bound as every rejection: a flood must not flood the log.
 */
function reject(this: IWebhookFunctions, status: 400 | 401 | 503, reason: string, problem?: string): IWebhookResponseData {
	const meta = { node: this.getNode().name, workflowId: this.getWorkflow().id };
	const flush = (left: number) =>
		this.logger.warn(`${LOG_PREFIX}: ${left} more rejected request(s) in the last minute were not logged`, meta);
	if (rejectionLog.allow(Date.now(), flush)) {
		if (problem) this.logger.error(`${LOG_PREFIX}: ${problem}`, meta);
		else this.logger.warn(`${LOG_PREFIX}: rejected a request (${status}): ${reason}`, meta);
	}
	const res = this.getResponseObject();
	const error = { 400: 'bad_request', 401: 'unauthorized', 503: 'too_late' }[status];
	if (!res.headersSent) res.status(status).json({ error, reason });
	return { noWebhookResponse: true };
}

/** The secret events are verified with, or why there is none (then every event is refused). */
async function signingSecret(this: IWebhookFunctions): Promise<SigningSecret | { problem: string }> {
	if (isManualRegistration.call(this)) {
		const key = manualSecretKey.call(this);
		const cached = manualSecrets.get(key);
		const found = cached ?? (await readManualSecret.call(this, key));
		if ('problem' in found) return found;
		// A secret rotated in the credential: read it again when a signature does not match, at most every 10 s.
		const stale = Date.now() - found.readAtMs >= MANUAL_REREAD_INTERVAL_MS;
		return { secret: found.secret, reread: stale ? async () => await readManualSecret.call(this, key) : undefined };
	}
	const { sealedSecret } = this.getWorkflowStaticData('node') as TriggerStaticData;
	if (typeof sealedSecret !== 'string') {
		return {
			problem:
				'no signing secret is stored for this trigger (the registration was lost): every event is rejected. Unpublish and publish (deactivate and activate) the workflow to register again',
		};
	}
	// Opening needs the credential, and reading it costs n8n an expression isolate: once per registration, not per event.
	const opened = openedSecrets.get(sealedSecret);
	if (opened) return { secret: opened };
	let secret: string | undefined;
	try {
		secret = openSecret(sealedSecret, (await this.getCredentials(CREDENTIAL_TYPE)).apiKey);
	} catch (error) {
		return { problem: `the credential could not be read (${(error as Error).message})` };
	}
	if (!secret) {
		return {
			problem:
				"the stored signing secret cannot be opened with the credential's API key (was the key changed?): every event is rejected. Unpublish and publish (deactivate and activate) the workflow to register again",
		};
	}
	if (openedSecrets.size >= 1000) openedSecrets.clear();
	openedSecrets.set(sealedSecret, secret);
	return { secret };
}

/** The credential's Webhook Signing Secret, read (an expression isolate in n8n 2.x) and kept per node. */
async function readManualSecret(this: IWebhookFunctions, key: string): Promise<{ secret: string; readAtMs: number } | { problem: string }> {
	let secret: string | undefined;
	try {
		secret = await manualSigningSecret.call(this);
	} catch (error) {
		return { problem: `the credential could not be read (${(error as Error).message})` };
	}
	if (manualSecrets.size >= 1000) manualSecrets.clear();
	if (!secret) {
		manualSecrets.delete(key);
		return {
			problem:
				'Registration is Manual but the credential has no Webhook Signing Secret, so no event can be verified: every event is rejected until it is set',
		};
	}
	const read = { secret, readAtMs: Date.now() };
	manualSecrets.set(key, read);
	return read;
}

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
	const header = Array.isArray(signatureHeader) ? String(signatureHeader[0]) : String(signatureHeader);
	return `${this.getWorkflow().id ?? ''}:${this.getNode().id}:${header.trim().toLowerCase()}`;
}

/** The event's item with its media file attached, or with the reason there is none. */
async function attachMedia(
	this: IWebhookFunctions,
	envelope: EventEnvelope,
	options: ReceiveOptions,
): Promise<{ json: IDataObject; binary?: IBinaryKeyData }> {
	const json: IDataObject = withReplyWindow({ ...(envelope as IDataObject) });
	const data = envelope.data;
	if (envelope.event === 'message.echo') {
		if (data.media_id !== null && data.media_id !== undefined) {
			json.media_download = {
				downloaded: false,
				reason: 'Echo media cannot be downloaded: the platform relays only its metadata (media_id, media_mime).',
			};
		}
		return { json };
	}
	if (envelope.event !== 'message.inbound') return { json };

	const mediaUrl = data.media_url;
	if (typeof mediaUrl !== 'string' || mediaUrl.trim() === '') {
		const reason =
			data.media_id === null || data.media_id === undefined || data.media_id === ''
				? 'The message has no media (media_id and media_url are null).'
				: 'media_url is null: the media is not hosted (yet), or media hosting is disabled for the account. Nothing was downloaded.';
		json.media_download = { downloaded: false, reason };
		return { json };
	}
	try {
		const { mediaId, binary, mimeTypeAsSent } = await downloadMedia.call(this, mediaUrl, {
			fieldName: 'media_url',
			operation: 'Trigger → Download Media',
			limits: downloadLimits(this.getNode(), options.raw),
		});
		json.media_download = {
			downloaded: true,
			media_id: mediaId,
			binary_field: options.binaryPropertyName,
			file_name: binary.fileName ?? null,
			mime_type: binary.mimeType,
			...(mimeTypeAsSent !== undefined && { mime_type_as_sent: mimeTypeAsSent }),
		};
		return { json, binary: { [options.binaryPropertyName]: binary } };
	} catch (error) {
		const reason = (error as Error).message || 'the download failed';
		this.logger.warn(`${LOG_PREFIX}: media download failed, the event is emitted without the file: ${reason}`);
		json.media_download = { downloaded: false, reason };
		return { json };
	}
}

/** The item an accepted event becomes: the envelope as the service sent it. */
export function eventItem(envelope: EventEnvelope): INodeExecutionData {
	return { json: withReplyWindow({ ...(envelope as IDataObject) }) };
}

/** The node's outputs for one item: one output, or the item on its event's output and the others empty. */
export function workflowDataFor(item: INodeExecutionData, event: EventType, layout: EventType[] | null): INodeExecutionData[][] {
	if (layout === null) return [[item]];
	return layout.map((type) => (type === event ? [item] : []));
}

/** What receiving reads from the node's parameters; read only once the signature is valid. */
export interface EventParameters {
	events: unknown;
	/** Recover Missed Messages; absent counts as on, its default. */
	catchUp?: unknown;
	options: IDataObject;
	separateOutputs: unknown;
}

export type Acceptance =
	| { kind: 'reject'; status: 400 | 401; reason: string }
	| { kind: 'ignore'; reason: string }
	| { kind: 'late'; reason: string }
	| { kind: 'emit'; envelope: EventEnvelope; timestampMs: number; options: ReceiveOptions; layout: EventType[] | null };

/**
 * Steps 2 to 4 of receiving, without n8n's context: the signature over the raw bytes first,
 * then the envelope, the replay window and the filters. The node's parameters are read
 * (readParameters) only for a verified, well-formed envelope.
 */
export function acceptEvent(
	rawBody: Buffer,
	signatureHeader: string | string[] | undefined,
	secret: string,
	nowMs: number,
	readParameters: () => EventParameters,
): Acceptance {
	// 2. The signature, over the bytes exactly as they arrived.
	const verdict = verifySignature(rawBody, signatureHeader, secret);
	if (!verdict.valid) return { kind: 'reject', status: 401, reason: verdict.reason };

	// 3. Only now look at the body.
	const parsed = parseEnvelope(rawBody);
	if (!parsed.ok) return { kind: 'reject', status: 400, reason: `not a valid event envelope: ${parsed.reason}` };
	const { envelope } = parsed;

	const parameters = readParameters();
	const options = readOptions(parameters.options ?? {}, parameters.catchUp !== false);
	const age = checkEventAge(parsed.timestampMs, nowMs, options.maxAge);
	if (!age.ok) return { kind: 'reject', status: 401, reason: `replay protection: ${age.reason}` };

	// 4. Filters: acknowledged (200), no execution.
	const selected = parameters.events;
	const events = (Array.isArray(selected) ? selected : ['message.inbound']).filter((value): value is string =>
		(EVENT_TYPES as readonly string[]).includes(value as string),
	);
	const ignored = filterReason(envelope, events, options);
	if (ignored) return { kind: 'ignore', reason: ignored };

	// 5. Too late to be acknowledged within the service's ~8 s: not run, so that the service's
	// "failed" and "not run" agree and the catch-up runs it once (catchUp.ts).
	const ageMs = nowMs - parsed.timestampMs;
	if (options.lateDeliveryCutoffMs !== undefined && ageMs > options.lateDeliveryCutoffMs) {
		return {
			kind: 'late',
			reason: `the event is ${(ageMs / 1000).toFixed(1)} s old (Late Delivery Cutoff ${options.lateDeliveryCutoffMs / 1000} s): not run here, the catch-up recovers it`,
		};
	}

	return {
		kind: 'emit',
		envelope,
		timestampMs: parsed.timestampMs,
		options,
		layout: outputLayout(events, parameters.separateOutputs),
	};
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
		return reject.call(this, 400, `the request could not be processed (${(error as Error)?.message ?? 'unknown error'})`);
	}
}

async function receive(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const headers = this.getHeaderData() as Record<string, string | string[] | undefined>;
	// Not an event: Reply and Wait for Answer registering what it waits for (signed with the API key).
	const registration = headers[REGISTRATION_HEADER];
	if (registration !== undefined) {
		const outcome = await receiveWaitRegistration.call(this, await rawBodyOf.call(this).catch(() => undefined), registration);
		if ('reason' in outcome) return reject.call(this, outcome.status, `waiting registration refused: ${outcome.reason}`);
		return { webhookResponse: outcome };
	}

	// 1. The secret: without one nothing is accepted (fail closed).
	const found = await signingSecret.call(this);
	if ('problem' in found) {
		return reject.call(this, 401, 'no signing secret is configured for this receiver', found.problem);
	}

	// n8n's form parser has already consumed a multipart body: then there are no raw bytes to verify.
	const rawBody = await rawBodyOf.call(this).catch(() => undefined);
	if (!rawBody) return reject.call(this, 401, 'the raw request body is not available, so the signature cannot be checked');

	// 2 to 4: signature, envelope, replay window, filters.
	const accept = (secret: string) =>
		acceptEvent(rawBody, headers[SIGNATURE_HEADER], secret, Date.now(), () => ({
			events: this.getNodeParameter('events', ['message.inbound']) as unknown,
			catchUp: this.getNodeParameter('catchUp', true) as unknown,
			options: this.getNodeParameter('options', {}) as IDataObject,
			separateOutputs: this.getNodeParameter('separateOutputs', false) as unknown,
		}));
	let accepted = accept(found.secret);
	if (accepted.kind === 'reject' && accepted.reason === SIGNATURE_MISMATCH && found.reread) {
		const fresh = await found.reread();
		if ('secret' in fresh && fresh.secret !== found.secret) accepted = accept(fresh.secret);
	}
	if (accepted.kind === 'reject') return reject.call(this, accepted.status, accepted.reason);
	if (accepted.kind === 'late') return reject.call(this, 503, accepted.reason);
	if (accepted.kind === 'ignore') {
		this.logger.debug(`${LOG_PREFIX}: event ignored: ${accepted.reason}`);
		return { webhookResponse: { received: true, ignored: accepted.reason } };
	}
	const { envelope, options, layout } = accepted;
	const expiresAtMs = accepted.timestampMs + options.maxAge * 1000 + 1000;
	if (!replays.firstSighting(replayKey.call(this, headers[SIGNATURE_HEADER]), expiresAtMs, Date.now())) {
		this.logger.debug(`${LOG_PREFIX}: a delivery received before was acknowledged and not executed again`);
		return { webhookResponse: { received: true, ignored: 'this delivery was already received (replay)' } };
	}

	const waMessageId = envelope.data.wa_message_id;
	if (envelope.event !== 'message.status' && typeof waMessageId === 'string') {
		rememberAccepted(`${this.getWorkflow().id ?? ''}:${this.getNode().id}`, waMessageId, Date.now());
	}

	// 6. Emit. n8n answers with webhookResponse (the description's empty responseData lets it
	// through on every line), on 2.x only once it has stored the execution: answering here
	// first would acknowledge events that a busy n8n then fails to store.
	const received: IDataObject = { received: true };
	if (!options.downloadMedia || envelope.event === 'message.status') {
		const item = eventItem(envelope);
		const workflowData = await routeHandOver.call(this, item, workflowDataFor(item, envelope.event, layout), options.raw);
		if (!workflowData) return { webhookResponse: { ...received, ignored: HAND_OVER_IGNORED } };
		const resume = await resumeWaitingExecution.call(this, item);
		if (resume.resumed && !resume.alsoStart) return { webhookResponse: { ...received, resumed: resume.executionId } };
		return { webhookResponse: received, workflowData };
	}
	// A download must not hold the answer back (the service waits about 8 s): answer first.
	this.getResponseObject().status(200).json(received);
	const item = await attachMedia.call(this, envelope, options);
	const workflowData = await routeHandOver.call(this, item, workflowDataFor(item, envelope.event, layout), options.raw);
	const resume: ResumeOutcome = workflowData ? await resumeWaitingExecution.call(this, item) : { resumed: false };
	return workflowData && !(resume.resumed && !resume.alsoStart) ? { noWebhookResponse: true, workflowData } : { noWebhookResponse: true };
}
