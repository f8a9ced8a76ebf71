/**
 * Reply and Wait for Answer, both ends in one place: the waiting execution's side (register
 * what it waits for, the resume token it will accept) and the trigger's side (take a
 * registration, find the entry for a contact's message, resume the execution).
 *
 * WHERE ENTRIES LIVE, AND WHY
 *
 * An entry says: execution E waits for contact C on number N; post the answer to E's resume
 * URL with this token. The execution that waits and the trigger that receives the answer may
 * be different workflows and, in queue mode, different n8n processes (a worker asks, a webhook
 * processor receives). n8n gives a node two stores it saves for it: memory (one process) and
 * the workflow's static data (database, saved whole after each execution and webhook request).
 *
 * 1. This process's memory: every workflow of the process; gone on restart.
 * 2. The trigger's workflow's static data, written by the waiting execution itself only when
 *    its copy carries the trigger's marker (TRIGGER_MARKER_KEY): n8n 2.x in queue mode gives a
 *    worker's new execution an EMPTY copy and saves it whole, so writing there without the
 *    marker wiped the trigger's sealed secret and watermark.
 * 3. Through the trigger (REGISTRATION_HEADER): the waiting execution posts its entries,
 *    signed with a key derived from the API key, to the account's webhook when it is this n8n;
 *    the trigger stores them in the static data n8n loaded for that request. This is what
 *    works across processes and for a trigger in another workflow.
 *
 * Saves of static data at the same instant may overwrite each other's entries. Every loss
 * fails safe: the trigger finds nothing (or the resume is refused), the message starts a
 * normal execution, and the waiting execution times out. The answer itself is never lost.
 * The resume URL is guessable on n8n 1.x (/webhook-waiting/<sequential id>), so the waiting
 * node accepts only a body carrying a resume token, which the trigger makes when it sends the
 * answer (resumeToken): static data holds resume URLs, never what it takes to use them.
 * docs/conversations.md has the measurements behind these choices.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { sleep } from 'n8n-workflow';

import { isPlainObject, parseJsonBody } from './json';
import { ReplayGuard } from './replayGuard';
import {
	ACCOUNT_ID_LABEL,
	RESUME_KEY_LABEL,
	WAIT_REGISTRATION_LABEL,
	deriveKey,
	verifyWithDerivedKey,
} from './credentialKeys';
import { postSigned, signWithDerivedKey } from './signedPost';
import { apiRequest } from './transport';

export const STATIC_DATA_KEY = 'businessMessagingWaiting';
/**
 * Set by the Business Messaging Trigger in its workflow's global static data when the workflow is
 * activated. Its presence in an execution's copy of the static data means two things: the trigger
 * that will receive the answer reads this workflow's static data (an entry in another workflow's
 * is never read), and the copy was loaded from the database, so saving it keeps what is there.
 * n8n 2.x in queue mode runs a new execution on a worker with an EMPTY copy and, when a node
 * changed it, saves that copy whole: the trigger's sealed signing secret and catch-up watermark
 * were wiped (every event refused with 401) by the first Reply and Wait. Without the marker the
 * entry stays in this process's memory only.
 */
export const TRIGGER_MARKER_KEY = 'businessMessagingTrigger';

/** The trigger's side: marks its workflow's static data (only when missing, so nothing else is saved for it). */
export function markTriggerWorkflow(globalStaticData: IDataObject): void {
	if (globalStaticData[TRIGGER_MARKER_KEY] !== true) globalStaticData[TRIGGER_MARKER_KEY] = true;
}

/**
 * Workflows whose Business Messaging Trigger n8n runs in this process (trigger(): the main in
 * regular mode). A Reply and Wait in such a workflow keeps its entry in memory, where the trigger
 * finds it, and in the workflow's static data, saved with its execution: posting it to the trigger
 * as well would only cost the busy n8n another request per question.
 */
const triggersHere = new Map<string, number>();

/** The trigger's side: marks its workflow while trigger() runs; returns what unmarks it. */
export function triggerRunsHere(workflowId: string): () => void {
	triggersHere.set(workflowId, (triggersHere.get(workflowId) ?? 0) + 1);
	let left = false;
	return () => {
		if (left) return;
		left = true;
		const count = (triggersHere.get(workflowId) ?? 1) - 1;
		if (count > 0) triggersHere.set(workflowId, count);
		else triggersHere.delete(workflowId);
	};
}

export function isTriggerRunningHere(workflowId: string | undefined): boolean {
	return workflowId !== undefined && triggersHere.has(workflowId);
}

/** The static data to register in: the execution's copy when it carries the trigger's marker, else none (memory only). */
export function persistableStaticData(
	globalStaticData: IDataObject | undefined,
): IDataObject | undefined {
	return globalStaticData?.[TRIGGER_MARKER_KEY] === true ? globalStaticData : undefined;
}
/** Entries kept in static data at most (oldest dropped): a bound on what every execution saves. */
const MAX_STATIC_ENTRIES = 200;
const MAX_MEMORY_ENTRIES = 10_000;

export interface WaitingEntry {
	resumeUrl: string;
	executionId: string;
	/** When the wait ends anyway (its time limit), ms since epoch. */
	expiresAtMs: number;
	/** Also start the trigger's own execution for the answer. */
	alsoStart: boolean;
	/** The waiting node (its name): the resume token is made for it. */
	node: string;
	/** Whose wait it is (accountId of the API key): only a trigger with the same key resumes it. */
	account: string;
	/** The workflow whose static data keeps the entry (the trigger's); none: this process's memory only. */
	home?: string;
	/** The waiting execution's workflow (informational). */
	workflowId?: string;
}

/**
 * An identifier of the API key, safe to store: a trigger resumes only waits registered with its own
 * key, so one account's customer message never reaches another account's waiting execution.
 */
export function accountId(apiKey: string): string {
	return deriveKey(apiKey, ACCOUNT_ID_LABEL).slice(0, 32);
}

const memory = new Map<string, WaitingEntry>();

/**
 * What the trigger sends with an answer so the waiting execution can tell it from a forged one.
 * n8n 1.x's resume URLs are /webhook-waiting/<execution id> with nothing secret in them (ids are
 * sequential), so anyone who can reach n8n could otherwise post an "answer". The token is made
 * when the answer is sent, from a key derived from the API key (resumeKey, held in memory only)
 * and the one wait it answers: the execution, the waiting node and the contact on the number.
 * Nothing stored (static data, the execution) lets anyone make one.
 */
export function resumeKey(apiKey: string): string {
	return deriveKey(apiKey, RESUME_KEY_LABEL);
}

export function resumeToken(
	key: string,
	executionId: string,
	node: string,
	waitKey: string,
): string {
	return createHmac('sha256', key)
		.update(`business-messaging resume token v2|${executionId}|${node}|${waitKey}`)
		.digest('base64url');
}

/**
 * Whether `candidate` is the token of a wait of this execution's node for one of `waitKeys` (the
 * answer's contact on its number, or on any number); constant time, false for anything but a string.
 */
export function isResumeToken(
	key: string,
	executionId: string,
	node: string,
	waitKeys: string[],
	candidate: unknown,
): boolean {
	if (typeof candidate !== 'string' || key === '' || executionId === '') return false;
	const given = Buffer.from(candidate);
	let valid = false;
	for (const waitKey of waitKeys) {
		const expected = Buffer.from(resumeToken(key, executionId, node, waitKey));
		if (given.length === expected.length && timingSafeEqual(given, expected)) valid = true;
	}
	return valid;
}

/** Who a trigger is, for Reply and Wait: whose waits it may resume, and the key it makes their tokens with. */
export interface TriggerIdentity {
	account: string;
	resumeKey: string;
}

export function triggerIdentity(apiKey: string): TriggerIdentity {
	return { account: accountId(apiKey), resumeKey: resumeKey(apiKey) };
}

/**
 * Registration through the trigger: a worker of n8n's queue mode cannot keep a waiting entry
 * where a webhook processor finds it (see TRIGGER_MARKER_KEY), so Reply and Wait posts its
 * entries to the account's webhook (the trigger's own URL), and the trigger stores them in its
 * workflow's static data from a copy n8n has just loaded, as with any request it receives.
 * Signed with a key derived from the API key, so only a holder of the key can register; the
 * trigger takes them only for resume URLs of its own n8n.
 */
export const REGISTRATION_HEADER = 'x-business-messaging-wait';

export interface WaitRegistration {
	key: string;
	entry: WaitingEntry;
}

/**
 * The signature header value for a registration body: signed as the service signs its events
 * (signature.ts: `sha256=<hex HMAC>` of the raw body), with a key derived from the API key
 * instead of the signing secret.
 */
export function signRegistration(apiKey: string, rawBody: string | Buffer): string {
	return signWithDerivedKey(apiKey, WAIT_REGISTRATION_LABEL, rawBody);
}

/** n8n's resume URL: [<base path>]/webhook-waiting/<execution id>, nothing after it. */
const RESUME_PATH = /^(?:\/[^/]+)*\/webhook-waiting\/[^/]+\/?$/;
/** A trigger's production URL as n8n builds it: [<base path>]/<webhook id>/webhook. */
export const TRIGGER_PATH =
	/^(?:\/[^/]+)*\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/webhook\/?$/i;

/** How old a registration may be when the trigger gets it (it is posted right after it is signed). */
const REGISTRATION_MAX_AGE_MS = 5 * 60_000;
const REGISTRATION_FUTURE_TOLERANCE_MS = 60_000;

/**
 * The registrations in a verified body, keeping only well-formed entries whose resume URL is a
 * waiting-execution URL of `ownOrigin` (this n8n): the trigger later posts the contact's answer there.
 */
export function parseRegistrations(body: unknown, ownOrigin: string): WaitRegistration[] {
	const list =
		isPlainObject(body) && Array.isArray(body.business_messaging_wait)
			? body.business_messaging_wait
			: [];
	return list.filter((item): item is WaitRegistration => {
		if (!isPlainObject(item) || typeof item.key !== 'string' || !isWaitingEntry(item.entry))
			return false;
		try {
			const url = new URL(item.entry.resumeUrl);
			return url.origin === ownOrigin && RESUME_PATH.test(url.pathname);
		} catch {
			return false;
		}
	});
}

/** The contact on the number; number '*' when the reply left from the key's only number. */
export function waitingKey(contact: string, number: string | undefined): string {
	return `${number && number.trim() !== '' ? number.trim() : '*'}|${contact.trim()}`;
}

/** A waiting entry as stored (static data, a registration, a hand-off). */
export function isWaitingEntry(value: unknown): value is WaitingEntry {
	return (
		isPlainObject(value) &&
		typeof value.resumeUrl === 'string' &&
		typeof value.executionId === 'string' &&
		typeof value.expiresAtMs === 'number' &&
		typeof value.node === 'string' &&
		typeof value.account === 'string' &&
		(value.workflowId === undefined || typeof value.workflowId === 'string')
	);
}

function staticEntries(staticData: IDataObject | undefined): IDataObject | undefined {
	if (!staticData) return undefined;
	const entries = staticData[STATIC_DATA_KEY];
	return isPlainObject(entries) ? entries : undefined;
}

/**
 * Entries answered or refused in this process, until their wait would have ended: a save of
 * static data from an older copy (another request's, an execution's) may bring one back, and
 * it must neither be resumed twice nor be kept.
 */
const forgotten = new Map<string, number>();

/** Keeps a process-memory map under MAX_MEMORY_ENTRIES: the ended first, then the oldest. */
function makeRoom<V>(map: Map<string, V>, ended: (value: V) => boolean): void {
	if (map.size < MAX_MEMORY_ENTRIES) return;
	for (const [key, value] of map) if (ended(value)) map.delete(key);
	if (map.size >= MAX_MEMORY_ENTRIES) map.delete(map.keys().next().value as string);
}
const forgottenKey = (key: string, entry: { executionId: string; node: string }) =>
	`${key}|${entry.executionId}|${entry.node}`;
const isLive = (key: string, entry: WaitingEntry, nowMs: number) =>
	entry.expiresAtMs > nowMs && !forgotten.has(forgottenKey(key, entry));

export function registerWaiting(
	staticData: IDataObject | undefined,
	key: string,
	entry: WaitingEntry,
	nowMs = Date.now(),
): void {
	makeRoom(memory, (e) => e.expiresAtMs <= nowMs);
	// The same execution waiting again at the same node (a loop) is a new wait.
	forgotten.delete(forgottenKey(key, entry));
	memory.set(key, entry);
	if (staticData) keepWaitingEntriesCurrent(staticData, entry.home, nowMs, [key, entry]);
}

/**
 * Writes into this copy of a workflow's static data every live entry it should hold: those it
 * holds, and those this process registered for that workflow (`home`), minus the answered ones.
 *
 * n8n saves static data whole, per webhook request and per execution, each from the copy it
 * loaded: two registrations at the same instant each save their own entry, and the last save
 * wins. Writing the process's memory into every copy means each save carries every entry this
 * process knows of, so a save from an older copy no longer drops the others' entries, and the
 * last save before a restart holds them all. Assigned only when something changed, so n8n
 * saves nothing for a copy that was already current.
 */
export function keepWaitingEntriesCurrent(
	staticData: IDataObject,
	home: string | undefined,
	nowMs = Date.now(),
	/** An entry to keep there whatever its home (the one being registered). */
	added?: [string, WaitingEntry],
): void {
	const stored = staticEntries(staticData) ?? {};
	const merged: Record<string, WaitingEntry> = {};
	for (const [key, entry] of Object.entries(stored)) {
		if (isWaitingEntry(entry) && isLive(key, entry, nowMs)) merged[key] = entry;
	}
	if (home !== undefined) {
		for (const [key, entry] of memory) {
			if (entry.home === home && isLive(key, entry, nowMs)) merged[key] = { ...entry };
		}
	}
	if (added && added[1].expiresAtMs > nowMs) {
		delete merged[added[0]];
		merged[added[0]] = { ...added[1] };
	}
	const bounded = Object.fromEntries(Object.entries(merged).slice(-MAX_STATIC_ENTRIES));
	if (JSON.stringify(bounded) !== JSON.stringify(stored)) {
		staticData[STATIC_DATA_KEY] = bounded as unknown as IDataObject;
	}
}

/** The live entry of this account for one of the keys, memory first; undefined when none (or only expired ones). */
export function findWaiting(
	staticData: IDataObject | undefined,
	keys: string[],
	account: string,
	nowMs = Date.now(),
): { key: string; entry: WaitingEntry } | undefined {
	const stored = staticEntries(staticData);
	for (const key of keys) {
		const inStatic =
			stored && isWaitingEntry(stored[key]) ? (stored[key] as unknown as WaitingEntry) : undefined;
		for (const entry of [memory.get(key), inStatic]) {
			if (entry && entry.account === account && isLive(key, entry, nowMs)) return { key, entry };
		}
	}
	return undefined;
}

/** Forgets the entry (answered, or refused), wherever it is, unless another execution took the key since. */
export function removeWaiting(
	staticData: IDataObject | undefined,
	key: string,
	executionId: string,
	nowMs = Date.now(),
): void {
	const entry = memory.get(key);
	if (entry?.executionId === executionId) memory.delete(key);
	const stored = staticEntries(staticData);
	const storedEntry =
		stored && isWaitingEntry(stored[key]) ? (stored[key] as unknown as WaitingEntry) : undefined;
	const node = entry?.executionId === executionId ? entry.node : storedEntry?.node;
	makeRoom(forgotten, (until) => until <= nowMs);
	const until = Math.max(
		entry?.executionId === executionId ? entry.expiresAtMs : 0,
		storedEntry?.executionId === executionId ? storedEntry.expiresAtMs : 0,
		nowMs + REGISTRATION_MAX_AGE_MS,
	);
	if (node !== undefined) forgotten.set(forgottenKey(key, { executionId, node }), until);
	if (stored && storedEntry?.executionId === executionId) {
		const rest = { ...stored };
		delete rest[key];
		staticData![STATIC_DATA_KEY] = rest;
	}
}

// ---------------------------------------------------------------------------
// The waiting execution's side: registering through the trigger

/**
 * Posts the entries to the account's webhook, i.e. the Business Messaging Trigger that will
 * receive the answer, wherever it runs (another workflow, a webhook processor in queue mode): it
 * keeps them in its workflow's static data. Only to this n8n (the resume URL's origin): the
 * entries carry resume URLs. Any failure leaves the entries where they are
 * (this process's memory): the answer then starts a normal execution, as the fail-safe says.
 */
export async function registerWithTrigger(
	this: IExecuteFunctions,
	apiKey: string,
	resumeUrl: string,
	registrations: WaitRegistration[],
): Promise<void> {
	const why = (reason: string) =>
		this.logger.info(
			`Business Messaging: Reply and Wait for Answer kept its waiting entry in this process only (${reason})`,
		);
	try {
		const webhook = await apiRequest.call(this, 'GET', '/v1/console/webhook', {
			context: { operation: 'Reply and Wait for Answer' },
		});
		const url =
			isPlainObject(webhook) && webhook.configured === true && typeof webhook.url === 'string'
				? webhook.url
				: undefined;
		if (!url) return why('no webhook is registered for the account');
		const target = new URL(url);
		if (target.origin !== new URL(resumeUrl).origin)
			return why("the account's webhook is not this n8n");
		if (!TRIGGER_PATH.test(target.pathname) || target.search !== '')
			return why("the account's webhook is not a Business Messaging Trigger's URL");
		const post = async () => {
			const body = JSON.stringify({
				business_messaging_wait: registrations,
				issued_at_ms: Date.now(),
			});
			const response = await postSigned.call(this, url, body, {
				header: REGISTRATION_HEADER,
				apiKey,
				label: WAIT_REGISTRATION_LABEL,
				timeoutMs: REGISTRATION_TIMEOUT_MS,
			});
			return response.statusCode;
		};
		const status = await post();
		if (status !== 200) return why(`the trigger answered ${status}`);
		// Behind a balancer (queue mode) the next request usually reaches another webhook processor.
		// Each processor writes the entries it holds into every save it makes, so an entry two of
		// them hold survives a save of the other's at the same instant. Sent later, not awaited.
		void sleep(REGISTRATION_REPEAT_MS)
			.then(post)
			.catch(() => undefined);
	} catch (error) {
		why((error as Error).message);
	}
}

/** When the registration is posted a second time (see registerWithTrigger). */
const REGISTRATION_REPEAT_MS = 1500;
/** Each post of the registration (the trigger stores it and n8n saves its static data before answering). */
const REGISTRATION_TIMEOUT_MS = 4000;

// ---------------------------------------------------------------------------
// The trigger's side: taking registrations, resuming a waiting execution

/**
 * Resuming is patient: a busy n8n may take longer than the service's 8 s to take an answer, and
 * a slow resume is not a failed one. Starting a new execution for an answer that did resume asks
 * the contact the question twice, so one starts only when n8n says definitively that the
 * execution will not take it (finished, unknown, token refused) or the request never reached n8n.
 */
const RESUME_PATIENCE_MS = 60_000;
const RESUME_ATTEMPT_TIMEOUT_MS = 30_000;
/** The execution has sent its question but is not waiting yet: ask again after this. */
const RESUME_RETRY_MS = 500;

export type ResumeOutcome =
	{ resumed: false } | { resumed: true; executionId: string; alsoStart: boolean };

/** What n8n's answer to a resume request means (its waiting-webhooks.js: 404 unknown, 409 running or finished). */
export type ResumeAnswer = 'resumed' | 'notYetWaiting' | 'refused' | 'unclear';

/** Classifies one resume attempt: an HTTP status and body, or the error the request failed with. */
export function classifyResumeAnswer(
	answer: { statusCode: number; body: unknown } | { error: unknown },
): ResumeAnswer {
	if ('error' in answer) {
		const code =
			(answer.error as { code?: unknown; cause?: { code?: unknown } })?.code ??
			(answer.error as { cause?: { code?: unknown } })?.cause?.code;
		// The request never reached n8n: nothing was resumed.
		return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN'
			? 'refused'
			: 'unclear';
	}
	const { statusCode } = answer;
	if (statusCode >= 200 && statusCode < 300) return 'resumed';
	if (statusCode === 409) {
		const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? '');
		return /is running already/i.test(text) ? 'notYetWaiting' : 'refused';
	}
	if (statusCode >= 400 && statusCode < 500) return 'refused';
	return 'unclear';
}

/** The live entry waiting for this inbound message's contact, if any (none for a handed-over message). */
export function waitingEntryFor(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData,
	identity: TriggerIdentity | undefined,
): { key: string; entry: WaitingEntry } | undefined {
	const json = item.json;
	if (
		!identity ||
		json.event !== 'message.inbound' ||
		(isPlainObject(json.hand_over) && json.hand_over.active === true)
	) {
		return undefined;
	}
	const data = isPlainObject(json.data) ? json.data : {};
	const contact = typeof data.from === 'string' ? data.from.trim() : '';
	const number = typeof data.number === 'string' ? data.number.trim() : '';
	if (!contact) return undefined;
	return findWaiting(
		this.getWorkflowStaticData('global') as IDataObject,
		[waitingKey(contact, number), waitingKey(contact, undefined)],
		identity.account,
		Date.now(),
	);
}

/** From webhook(), and from the catch-up for an answer that arrived while n8n could not receive it. */
export async function resumeWaitingExecution(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData,
	/** The trigger's API key, as TriggerIdentity: whose waits, and their tokens; none without it. */
	identity: TriggerIdentity | undefined,
): Promise<ResumeOutcome> {
	const found = waitingEntryFor.call(this, item, identity);
	if (!found || !identity) return { resumed: false };
	return await resumeEntry.call(this, item, identity, found);
}

/**
 * Resumes one wait found for the item: the entry is forgotten first (synchronously, before any
 * request), so it is taken once, then the answer is posted patiently (RESUME_PATIENCE_MS).
 */
export async function resumeEntry(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData,
	identity: TriggerIdentity,
	found: { key: string; entry: WaitingEntry },
): Promise<ResumeOutcome> {
	const { key, entry } = found;
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	removeWaiting(staticData, key, entry.executionId);
	const body = {
		answer: item.json,
		token: resumeToken(identity.resumeKey, entry.executionId, entry.node, key),
	};
	const deadline = Date.now() + RESUME_PATIENCE_MS;
	const resumed: ResumeOutcome = {
		resumed: true,
		executionId: entry.executionId,
		alsoStart: entry.alsoStart,
	};
	// Once an attempt may have reached n8n, "running" or "finished" afterwards is that attempt's doing.
	let mayHaveResumed = false;
	let last = '';
	while (Date.now() < deadline) {
		let answer: ResumeAnswer;
		try {
			const response = (await this.helpers.httpRequest({
				method: 'POST',
				url: entry.resumeUrl,
				body,
				json: true,
				timeout: Math.min(RESUME_ATTEMPT_TIMEOUT_MS, Math.max(1000, deadline - Date.now())),
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				// The answer goes to n8n's resume URL and nowhere else.
				disableFollowRedirect: true,
			})) as { statusCode: number; body: unknown };
			answer = classifyResumeAnswer(response);
			last = `${response.statusCode}`;
		} catch (error) {
			answer = classifyResumeAnswer({ error });
			last = (error as Error).message;
		}
		if (answer === 'resumed') return resumed;
		if (answer === 'unclear') mayHaveResumed = true;
		else if (mayHaveResumed) return resumed;
		else if (answer === 'refused') {
			this.logger.info(
				`Business Messaging Trigger: execution ${entry.executionId} was waiting for this contact but refused the answer (${last}); the message starts a new execution`,
			);
			return { resumed: false };
		}
		await sleep(RESUME_RETRY_MS);
	}
	// Never a second execution on a doubt: the message stays in the service's history.
	this.logger.warn(
		`Business Messaging Trigger: execution ${entry.executionId} waiting for this contact did not confirm the answer within ${RESUME_PATIENCE_MS / 1000} s (${last}); no new execution is started for it`,
	);
	return resumed;
}

/** Registrations taken in this process, by signature, while they are fresh. */
const registrationsSeen = new ReplayGuard(10_000);

/**
 * A Reply and Wait for Answer registering its waiting entries (REGISTRATION_HEADER): stored in
 * this workflow's static data, which n8n loaded for this request and saves after it, so a
 * webhook processor receiving the answer later finds them. Starts no execution. A refusal is
 * answered (and logged, within the bound on rejections) by the caller.
 */
export async function receiveWaitRegistration(
	this: IWebhookFunctions,
	rawBody: Buffer | undefined,
	signature: string | string[] | undefined,
): Promise<{ registered: number } | { status: 400 | 401; reason: string }> {
	if (!rawBody) return { status: 400, reason: 'the raw request body is not available' };
	const verified = await verifyWithDerivedKey.call(
		this,
		WAIT_REGISTRATION_LABEL,
		rawBody,
		signature,
	);
	if (verified !== true) return { status: 401, reason: verified };
	const parsed = parseJsonBody(rawBody);
	if (!parsed) return { status: 400, reason: 'the body is not JSON' };
	const body = parsed.json;
	// A captured registration replayed later would put back an answered wait: each is taken once, while fresh.
	const nowMs = Date.now();
	const issuedAtMs = isPlainObject(body) ? body.issued_at_ms : undefined;
	if (
		typeof issuedAtMs !== 'number' ||
		nowMs - issuedAtMs > REGISTRATION_MAX_AGE_MS ||
		issuedAtMs - nowMs > REGISTRATION_FUTURE_TOLERANCE_MS
	) {
		return { status: 401, reason: 'the registration is not fresh (replayed, or its clock is off)' };
	}
	const header = String(Array.isArray(signature) ? signature[0] : signature).toLowerCase();
	if (!registrationsSeen.firstSighting(header, issuedAtMs + REGISTRATION_MAX_AGE_MS, nowMs)) {
		return { status: 401, reason: 'this registration was already received (replay)' };
	}
	const registrations = parseRegistrations(
		body,
		new URL(this.getNodeWebhookUrl('default') ?? 'http://invalid').origin,
	);
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	const home = this.getWorkflow().id ?? undefined;
	// A registration slower than the answer it waits for must not bring the answered wait back.
	const fresh = registrations.filter(({ key, entry }) => !forgotten.has(forgottenKey(key, entry)));
	for (const { key, entry } of fresh) registerWaiting(staticData, key, { ...entry, home });
	keepWaitingEntriesCurrent(staticData, home);
	return { registered: fresh.length };
}
