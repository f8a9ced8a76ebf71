/**
 * Reply and Wait for Answer's resuming side: the resume token (made by the trigger when it sends
 * an answer, checked by the waiting node's webhook()), and the trigger posting a contact's answer
 * to the resume URL of the execution waiting for it (its entry: waitingEntries.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type {
	IDataObject,
	INodeExecutionData,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { RESUME_KEY_LABEL, deriveKey } from '../credentialKeys';
import { isPlainObject } from '../json';
import {
	accountId,
	answersAfterAsking,
	findWaiting,
	removeWaiting,
	waitingKey,
	type WaitingEntry,
} from './waitingEntries';

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
export type TriggerIdentity = { account: string; resumeKey: string };

export function triggerIdentity(apiKey: string): TriggerIdentity {
	return { account: accountId(apiKey), resumeKey: resumeKey(apiKey) };
}

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

/**
 * What n8n's answer to a resume request means (its waiting-webhooks.js: 404 unknown, 409 running
 * or finished); a redirect is not n8n resuming, and is refused.
 */
export type ResumeAnswer = 'resumed' | 'notYetWaiting' | 'refused' | 'unclear';

/** Classifies one resume attempt: an HTTP status and body, or the error the request failed with. */
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
	if (statusCode >= 200 && statusCode < 300) return 'resumed';
	// n8n's resume URL never redirects (the waiting node answers on receipt): a 3xx came from
	// something in front of n8n (an http-to-https rule, a login page). The answer is never posted
	// on to where it points (disableFollowRedirect), so no execution took it: refused.
	if (statusCode >= 300 && statusCode < 400) return 'refused';
	if (statusCode === 409) {
		const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? '');
		return /is running already/i.test(text) ? 'notYetWaiting' : 'refused';
	}
	if (statusCode >= 400 && statusCode < 500) return 'refused';
	return 'unclear';
}

/**
 * Resumes the wait for this inbound message's contact, if any (none for a handed-over message).
 * From webhook(), and from the catch-up for an answer that arrived while n8n could not receive it.
 */
export async function resumeWaitingExecution(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData,
	/** The trigger's API key, as TriggerIdentity: whose waits, and their tokens; none without it. */
	identity: TriggerIdentity | undefined,
): Promise<ResumeOutcome> {
	const json = item.json;
	const handedOver = isPlainObject(json.hand_over) && json.hand_over.active === true;
	if (!identity || json.event !== 'message.inbound' || handedOver) return { resumed: false };
	const data = isPlainObject(json.data) ? json.data : {};
	const contact = typeof data.from === 'string' ? data.from.trim() : '';
	const number = typeof data.number === 'string' ? data.number.trim() : '';
	if (!contact) return { resumed: false };
	const message = { id: data.wa_message_id, at: json.timestamp };
	const found = findWaiting(
		this.getWorkflowStaticData('global') as IDataObject,
		[waitingKey(contact, number), waitingKey(contact, undefined)],
		identity.account,
		Date.now(),
		(entry) => answersAfterAsking(message, entry),
	);
	return found ? await resumeEntry.call(this, item, identity, found) : { resumed: false };
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
	const { executionId, alsoStart } = entry;
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	removeWaiting(staticData, key, executionId);
	const body = {
		answer: item.json,
		token: resumeToken(identity.resumeKey, executionId, entry.node, key),
	};
	const deadline = Date.now() + RESUME_PATIENCE_MS;
	const resumed: ResumeOutcome = { resumed: true, executionId, alsoStart };
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
				`Business Messaging Trigger: execution ${executionId} was waiting for this contact but refused the answer (${last}); the message starts a new execution`,
			);
			return { resumed: false };
		}
		await sleep(RESUME_RETRY_MS);
	}
	// Never a second execution on a doubt: the message stays in the service's history.
	this.logger.warn(
		`Business Messaging Trigger: execution ${executionId} waiting for this contact did not confirm the answer within ${RESUME_PATIENCE_MS / 1000} s (${last}); no new execution is started for it`,
	);
	return resumed;
}
