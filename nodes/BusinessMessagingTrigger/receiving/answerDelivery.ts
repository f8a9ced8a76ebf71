/**
 * When n8n answers a delivery. The service logs a 2xx as delivered and never sends it again, so the
 * answer must leave once n8n has stored the execution: a kill -9 before then loses nothing (the
 * delivery is logged failed and the catch-up brings it). n8n 2.x stores first, then answers. 1.x
 * answers first, so there webhook() answers itself: when the trigger's execute() runs (only in a
 * stored execution) or, where it runs in another process (queue mode), after HOLD_ANSWER_MS.
 * Not n8n's 'responseNode' mode: 1.x's shutdown cancels every execution holding such a response.
 */
import * as n8nWorkflow from 'n8n-workflow';
import { sleep } from 'n8n-workflow';
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';

import { nodeKeyOf } from '../../shared/credentialKeys';
import { runOnceKey } from '../routing/runOnce';

/** Pure: 2.x's n8n-workflow exports IsolateError (its expression engine); 1.x's does not. */
export function answersBeforeStoring(workflowExports: object): boolean {
	return !('IsolateError' in workflowExports);
}

/** Whether the n8n running this package answers a delivery before it stores the execution (1.x). */
export const n8nAnswersFirst = (): boolean => answersBeforeStoring(n8nWorkflow);

/** n8n 1.x stores an execution within milliseconds of starting it: past this it is stored. */
export const HOLD_ANSWER_MS = 2_000;

/** Held answers by node and event (run-once key), in this process: answered once. */
const held = new Map<string, () => void>();

/**
 * What webhook() returns for an event that starts an execution: n8n answers `body` (2.x, once
 * stored), or, on 1.x, this answers it itself once the execution is stored.
 */
export function startExecution(
	this: IWebhookFunctions,
	body: IDataObject,
	workflowData: INodeExecutionData[][],
): IWebhookResponseData {
	const response = this.getResponseObject();
	const first = workflowData.flat()[0];
	const key = first && runOnceKey(first.json);
	if (!n8nAnswersFirst() || this.getMode() !== 'webhook' || !key || !response)
		return { webhookResponse: body, workflowData };
	const id = `${nodeKeyOf.call(this)}|${key}`;
	const answer = () => {
		if (held.get(id) === answer) held.delete(id);
		if (!response.headersSent && !response.writableEnded) response.status(200).json(body);
	};
	held.set(id, answer);
	void sleep(HOLD_ANSWER_MS).then(answer);
	return { noWebhookResponse: true, workflowData };
}

/** In execute(): the execution is stored, so the deliveries held for its items are answered. */
export function answerHeld(this: IExecuteFunctions, outputs: INodeExecutionData[][]): void {
	if (held.size === 0) return;
	const scope = nodeKeyOf.call(this);
	for (const item of outputs.flat()) {
		const key = runOnceKey(item.json);
		if (key) held.get(`${scope}|${key}`)?.();
	}
}
