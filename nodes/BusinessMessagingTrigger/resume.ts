/**
 * The answer to Message → Reply and Wait for Answer: an inbound message of a contact some
 * execution is waiting for resumes that execution (posted to its resume URL) instead of
 * starting a new one. Fail safe: no entry, an expired one, or a refused resume (the execution
 * finished, timed out, was deleted) means the message starts a normal execution.
 */
import type { IDataObject, INodeExecutionData, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';

import { CREDENTIAL_TYPE } from '../shared/transport';
import { isPlainObject } from '../shared/json';
import { findWaiting, isRegistrationSignature, parseRegistrations, registerWaiting, removeWaiting, waitingKey } from '../shared/waiting';

/** How long the resume request may take: the service waits about 8 s for the trigger's answer. */
const RESUME_TIMEOUT_MS = 4000;

export type ResumeOutcome = { resumed: false } | { resumed: true; executionId: string; alsoStart: boolean };

/** From webhook(), and from the catch-up for an answer that arrived while n8n could not receive it. */
export async function resumeWaitingExecution(this: IWebhookFunctions | ITriggerFunctions, item: INodeExecutionData): Promise<ResumeOutcome> {
	const json = item.json;
	if (json.event !== 'message.inbound' || (isPlainObject(json.hand_over) && json.hand_over.active === true)) {
		return { resumed: false };
	}
	const data = isPlainObject(json.data) ? json.data : {};
	const contact = typeof data.from === 'string' ? data.from.trim() : '';
	const number = typeof data.number === 'string' ? data.number.trim() : '';
	if (!contact) return { resumed: false };
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	const found = findWaiting(staticData, [waitingKey(contact, number), waitingKey(contact, undefined)]);
	if (!found) return { resumed: false };
	const { key, entry } = found;
	removeWaiting(staticData, key, entry.executionId);
	try {
		const response = (await this.helpers.httpRequest({
			method: 'POST',
			url: entry.resumeUrl,
			body: { answer: json, token: entry.token },
			json: true,
			timeout: RESUME_TIMEOUT_MS,
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
		})) as { statusCode: number };
		if (response.statusCode >= 200 && response.statusCode < 300) {
			return { resumed: true, executionId: entry.executionId, alsoStart: entry.alsoStart };
		}
		this.logger.info(
			`Business Messaging Trigger: execution ${entry.executionId} was waiting for this contact but refused the answer (${response.statusCode}); the message starts a new execution`,
		);
	} catch (error) {
		this.logger.warn(
			`Business Messaging Trigger: execution ${entry.executionId} waiting for this contact could not be resumed (${(error as Error).message}); the message starts a new execution`,
		);
	}
	return { resumed: false };
}

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
	let apiKey = '';
	try {
		apiKey = String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
	} catch (error) {
		return { status: 401, reason: `the credential could not be read (${(error as Error).message})` };
	}
	if (!isRegistrationSignature(apiKey, rawBody, signature)) {
		return { status: 401, reason: "not signed with this trigger's API key" };
	}
	let body: unknown;
	try {
		body = JSON.parse(rawBody.toString('utf8'));
	} catch {
		return { status: 400, reason: 'the body is not JSON' };
	}
	const registrations = parseRegistrations(body, new URL(this.getNodeWebhookUrl('default') ?? 'http://invalid').origin);
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	for (const { key, entry } of registrations) registerWaiting(staticData, key, entry);
	return { registered: registrations.length };
}
