/**
 * When the service hears back for a delivery that starts an execution. n8n 2.x answers an
 * 'onReceived' webhook once it has stored the execution. n8n 1.x answers first and stores after:
 * killed in between, it loses a message the service logged delivered, which no catch-up brings
 * back. There the trigger answers from execute() instead, once n8n has stored the execution and
 * marked it running: a kill leaves it recorded crashed, not lost.
 */
import * as n8nWorkflow from 'n8n-workflow';
import type { IExecuteFunctions, IWebhookResponseData } from 'n8n-workflow';

/** Pure: 2.x's n8n-workflow exports IsolateError (its expression engine); 1.x's does not. */
export function answersBeforeStoring(workflowExports: object): boolean {
	return !('IsolateError' in workflowExports);
}

export const ANSWER_FROM_EXECUTE = answersBeforeStoring(n8nWorkflow);

/** 1.x: 'responseNode' gives execute() the request's response (n8n's Respond to Webhook path). */
export const EVENT_RESPONSE_MODE = ANSWER_FROM_EXECUTE ? 'responseNode' : 'onReceived';

/** The answer webhook() gives when it starts an execution (2.x), or execute() sends (1.x). */
export const RECEIVED = { received: true };

/**
 * What webhook() returns to start an execution. 1.x: noWebhookResponse, so n8n saves the request's
 * static data and resolves the request now, as an 'onReceived' answer would (before the run), while
 * the response itself stays open for execute().
 */
export function startExecution(
	workflowData: NonNullable<IWebhookResponseData['workflowData']>,
	answer: IWebhookResponseData['webhookResponse'],
): IWebhookResponseData {
	if (ANSWER_FROM_EXECUTE) return { noWebhookResponse: true, workflowData };
	return { webhookResponse: answer, workflowData };
}

/** execute()'s first step on 1.x: the 2xx the service logs as delivered. A no-op elsewhere. */
export async function answerDelivery(this: IExecuteFunctions): Promise<void> {
	const mode = this.getMode();
	if (!ANSWER_FROM_EXECUTE || (mode !== 'webhook' && mode !== 'manual')) return;
	// A Buffer body: n8n 1.x writes it to the response itself and ends it (its other branch answers
	// through the request's callback, which noWebhookResponse has already used).
	await this.sendResponse({
		body: Buffer.from(JSON.stringify(RECEIVED)),
		headers: { 'content-type': 'application/json' },
		statusCode: 200,
	});
}
