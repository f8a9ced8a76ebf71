/** The resume token, and the trigger posting an answer to the waiting execution. */
import { createHash, randomBytes } from 'node:crypto';
import type {
	IDataObject,
	IExecuteData,
	INodeExecutionData,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import {
	ACCOUNT_ID_LABEL,
	RESUME_KEY_LABEL,
	accountIdOf,
	derivedKeys,
	verifyWithDerivedKey,
} from '../credentialKeys';
import { inboundParts } from '../history';
import { isPlainObject } from '../json';
import { serviceLine } from '../redact';
import { ReplayGuard } from '../replayGuard';
import { computeSignature } from '../signature';
import { answerKeys, removeWaiting } from './waitingEntries';
import { type WaitingEntry } from './entry';

export function newWaitId(): string {
	return randomBytes(16).toString('base64url');
}

export function resumeMessage(
	executionId: string,
	node: string,
	waitKey: string,
	waitId: string,
	answer: unknown,
): Buffer {
	const digest = createHash('sha256')
		.update(JSON.stringify(answer) ?? '')
		.digest('hex');
	return Buffer.from(
		`business-messaging resume token v3|${executionId}|${node}|${waitKey}|${waitId}|${digest}`,
	);
}

/** Tells the trigger's answer from a forged one: 1.x's resume URLs hold nothing secret. */
export function resumeToken(key: string, ...wait: Parameters<typeof resumeMessage>): string {
	return computeSignature(resumeMessage(...wait), key);
}

/**
 * The waits the node is in now (wait id → wait key), in its execute data's metadata: n8n saves it with
 * the execution and hands it to webhook() in any process, so a token for another wait or key is refused.
 */
export const WAIT_IDS_KEY = 'businessMessagingWaitIds';

export function keepWaitIds(executeData: IExecuteData, waits: Record<string, string>): void {
	executeData.metadata = {
		...executeData.metadata,
		[WAIT_IDS_KEY]: waits,
	} as IExecuteData['metadata'];
}

/** Pure: whether the execution waits now for `wait` under `key`. */
export function isCurrentWait(kept: unknown, wait: string, key: string): kept is IDataObject {
	return (
		isPlainObject(kept) && Object.prototype.hasOwnProperty.call(kept, wait) && kept[wait] === key
	);
}

/** What the waiting node answers when it takes the answer; any other 2xx is not its. */
export const RESUMED_BODY = { resumed: true } as const;

export type ResumeRequest = { answer: IDataObject; wait: string; key: string; token: string };

/** Waits this process's Reply and Wait nodes were resumed for (execution, node, wait id): each once. */
const taken = new ReplayGuard(10_000);
const TAKEN_FOR_MS = 7 * 86_400_000;

/** The waiting node's webhook(): the answer, when the trigger sent it for this wait (cheap checks first). Never throws. */
export async function takeResumeRequest(
	this: IWebhookFunctions,
): Promise<{ answer: IDataObject } | undefined> {
	const body = this.getBodyData() as Partial<Record<keyof ResumeRequest, unknown>>;
	const { answer, wait, key, token } = body;
	if (
		!isPlainObject(answer) ||
		typeof wait !== 'string' ||
		wait.length > 64 ||
		typeof key !== 'string' ||
		typeof token !== 'string' ||
		!/^[0-9a-f]{64}$/.test(token)
	)
		return undefined;
	// An inbound message, whose token names the wait it answers: its contact, on its number or on any.
	const inbound = inboundParts(answer);
	if (!inbound?.contact || !answerKeys(inbound.contact, inbound.number).includes(key))
		return undefined;
	const executionId = this.getExecutionId() ?? '';
	const node = this.getNode().name;
	const once = `${executionId}|${node}|${wait}`;
	if (executionId === '' || taken.has(once, Date.now())) return undefined;
	// executeData is not in IWebhookFunctions (n8n-core's WebhookContext has it).
	const executeData = (this as unknown as { executeData?: IExecuteData }).executeData;
	const waitingFor: unknown = (executeData?.metadata as IDataObject | undefined)?.[WAIT_IDS_KEY];
	if (!isCurrentWait(waitingFor, wait, key)) return undefined;
	const message = resumeMessage(executionId, node, key, wait, answer);
	const verified = await verifyWithDerivedKey
		.call(this, RESUME_KEY_LABEL, message, `sha256=${token}`)
		.catch(() => 'the credential could not be read');
	if (verified !== true) return undefined;
	if (!taken.firstSighting(once, Date.now() + TAKEN_FOR_MS, Date.now())) return undefined;
	// Out of the waits n8n saves as the execution runs on: 1.x resumes a killed execution from that
	// save, so the restart's second post is refused, not run twice.
	delete waitingFor[wait];
	return { answer };
}

/** Whose waits a trigger may resume, and the key it makes their tokens with. */
export type TriggerIdentity = { account: string; resumeKey: string };

/** A string: why the derived keys cannot be read. */
export async function triggerIdentity(
	this: IWebhookFunctions | ITriggerFunctions,
): Promise<TriggerIdentity | string> {
	const derived = await derivedKeys.call(this);
	if (typeof derived === 'string') return derived;
	return { account: accountIdOf(derived[ACCOUNT_ID_LABEL]), resumeKey: derived[RESUME_KEY_LABEL] };
}

/** "A slow resume is not a failed one" (docs/conversations.md, "Under real traffic"). */
export const RESUME_PATIENCE = {
	totalMs: 60_000,
	attemptTimeoutMs: 30_000,
	/** The execution has sent its question but is not waiting yet: ask again after this. */
	retryMs: 500,
};

export type ResumeOutcome =
	{ resumed: false; crashed?: true } | { resumed: true; executionId: string; alsoStart: boolean };

/** After a restart: how long an owed answer is posted again before its wait counts as ended by the crash. */
const AFTER_RESTART_MS = 8_000;

/** What n8n's answer to a resume request means (waiting-webhooks.js: 404 unknown, 409 running or finished). */
export type ResumeAnswer = 'resumed' | 'notYetWaiting' | 'notServed' | 'refused' | 'unclear';

export function classifyResumeAnswer(
	answer: { statusCode: number; body: unknown } | { error: unknown },
): ResumeAnswer {
	if ('error' in answer) {
		const error = answer.error as { code?: unknown; cause?: { code?: unknown } } | undefined;
		const code = error?.code ?? error?.cause?.code;
		// The request never reached n8n: nothing was resumed.
		return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN'
			? 'refused'
			: 'unclear';
	}
	const { statusCode } = answer;
	// Only the waiting node's answer: a starting n8n answers any request 200 "n8n is starting up".
	if (statusCode >= 200 && statusCode < 300)
		return isPlainObject(answer.body) && answer.body.resumed === RESUMED_BODY.resumed
			? 'resumed'
			: 'notServed';
	// n8n's resume URL never redirects: a 3xx is from something in front of n8n, never followed, so refused.
	if (statusCode >= 300 && statusCode < 400) return 'refused';
	const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? '');
	if (statusCode === 409) return /is running already/i.test(text) ? 'notYetWaiting' : 'refused';
	// n8n's own 404 says the execution is gone or waits elsewhere. Any other 404 is a process not ready
	// (2.41.1 answers /healthz before it serves /webhook-waiting/) or a proxy's: asked again.
	if (statusCode === 404)
		return /does not exist|does not contain a waiting webhook/i.test(text)
			? 'refused'
			: 'notServed';
	if (statusCode >= 400 && statusCode < 500) return 'refused';
	return 'unclear';
}

/** Resumes one wait: the entry is forgotten first (before any request), so it is taken once; then posted patiently. */
export async function resumeEntry(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData,
	identity: TriggerIdentity,
	found: { key: string; entry: WaitingEntry },
	/** What a refusal means for the message (logged). */
	refusal = 'the message starts a new execution',
	/** Posted again after a restart: a wait whose execution n8n answers only 5xx was ended by the crash. */
	afterRestart = false,
): Promise<ResumeOutcome> {
	const { key, entry } = found;
	const { executionId, alsoStart } = entry;
	// Anyone's code may write static data: one safe line in logs.
	const execution = serviceLine(executionId);
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	removeWaiting(staticData, key, executionId);
	const wait = entry.waitId;
	const body: ResumeRequest = {
		answer: item.json,
		wait,
		key,
		token: resumeToken(identity.resumeKey, executionId, entry.node, key, wait, item.json),
	};
	const { attemptTimeoutMs, retryMs } = RESUME_PATIENCE;
	const totalMs = afterRestart ? AFTER_RESTART_MS : RESUME_PATIENCE.totalMs;
	const deadline = Date.now() + totalMs;
	const resumed: ResumeOutcome = { resumed: true, executionId, alsoStart };
	// Once an attempt may have reached n8n, "running" or "finished" afterwards is that attempt's doing.
	let mayHaveResumed = false;
	let last = '';
	let serverErrors = 0;
	while (Date.now() < deadline) {
		const response = await this.helpers
			.httpRequest({
				method: 'POST',
				url: entry.resumeUrl,
				body,
				json: true,
				timeout: Math.min(attemptTimeoutMs, Math.max(1000, deadline - Date.now())),
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				// The answer goes to n8n's resume URL and nowhere else.
				disableFollowRedirect: true,
			})
			.then(
				(full: { statusCode: number; body: unknown }) => full,
				(error: Error) => ({ error }),
			);
		const answer = classifyResumeAnswer(response);
		last = 'error' in response ? `${response.error?.message}` : `${response.statusCode}`;
		if (answer === 'resumed') return resumed;
		serverErrors = last === '500' ? serverErrors + 1 : 0;
		// n8n 2.41.1 answers 500 to every resume of an execution a kill ended (its run data is gone):
		// three in a row say so (one that took the answer would answer "running" or "finished" next).
		if (serverErrors >= 3) break;
		if (answer === 'unclear') mayHaveResumed = true;
		// A process that does not serve resume URLs yet says nothing of an earlier attempt.
		else if (mayHaveResumed && answer !== 'notServed') return resumed;
		else if (answer === 'refused') {
			this.logger.info(
				`Business Messaging Trigger: execution ${execution} was waiting for this contact but refused the answer (${serviceLine(last)}); ${refusal}`,
			);
			return { resumed: false };
		}
		await sleep(retryMs);
	}
	if (serverErrors >= 3 || (afterRestart && last === '500')) {
		// Said by the caller after a restart, which does not run it again (it was taken before).
		if (!afterRestart)
			this.logger.warn(
				`Business Messaging Trigger: execution ${execution} waiting for this contact cannot take the answer: n8n answers 500 (a restart ended it; n8n lists it Waiting or Crashed); message ${serviceLine(String(inboundParts(item.json)?.id ?? '?'))}: ${refusal}`,
			);
		return { resumed: false, crashed: true };
	}
	// n8n said "running" every time: it never took the answer (the wait was answered already and
	// the execution runs on, or n8n is slow to put it to wait). Never lose it: it starts anew.
	if (!mayHaveResumed) {
		this.logger.warn(
			`Business Messaging Trigger: execution ${execution} was still running (or not served yet) after ${totalMs / 1000} s and never took this contact's answer (last: ${serviceLine(last)}); ${refusal}`,
		);
		return { resumed: false };
	}
	// Never a second execution on a doubt: the message stays in the service's history.
	this.logger.warn(
		`Business Messaging Trigger: execution ${execution} waiting for this contact did not confirm the answer within ${totalMs / 1000} s (${serviceLine(last)}); no new execution is started for it`,
	);
	return resumed;
}
