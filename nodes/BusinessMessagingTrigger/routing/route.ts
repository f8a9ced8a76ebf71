/**
 * Where an accepted event goes: the one sequence that every path which emits an event runs
 * (the webhook, the catch-up of missed messages). Hand over first (a person answering the
 * contact may take the message, or drop it), then a waiting Reply and Wait for Answer (which
 * takes the answer instead of a new execution), then the trigger's own outputs.
 */
import type {
	IDataObject,
	INodeExecutionData,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import {
	keepWaitingEntriesCurrent,
	resumeWaitingExecution,
	type TriggerIdentity,
	type WaitFilter,
} from '../../shared/replyAndWait';
import { withReplyWindow } from '../../shared/replyWindow';
import type { HandOverSettings } from '../options';
import type { EventEnvelope, EventType } from '../receiving/envelope';
import { routeHandOver } from './handOver';

export type Route =
	/** Start an execution with these outputs. */
	| { kind: 'start'; workflowData: INodeExecutionData[][] }
	/** A person is answering the contact (While a Person Answers: Do Not Emit): nothing runs. */
	| { kind: 'handedOver' }
	/** The answer a waiting execution expected: it was resumed, and nothing else starts. */
	| { kind: 'resumed'; executionId: string };

/** The item an accepted event becomes: the envelope as the service sent it. */
export function eventItem(envelope: EventEnvelope): INodeExecutionData {
	return { json: withReplyWindow({ ...(envelope as IDataObject) }) };
}

/** The node's outputs for one item: one output, or the item on its event's output and the others empty. */
export function workflowDataFor(
	item: INodeExecutionData,
	event: EventType,
	layout: EventType[] | null,
): INodeExecutionData[][] {
	if (layout === null) return [[item]];
	return layout.map((type) => (type === event ? [item] : []));
}

export async function routeEvent(
	this: IWebhookFunctions | ITriggerFunctions,
	item: INodeExecutionData,
	event: EventType,
	layout: EventType[] | null,
	handOver: HandOverSettings,
	/** The trigger's API key, as Reply and Wait knows it: only its account's waits are resumed (none without). */
	identity: TriggerIdentity | undefined,
	/** Called once if resuming a waiting execution is slow: the webhook then answers the service first. */
	onSlowResume?: () => void,
	/** The waits this trigger plays the part of when several share the account (routing/whoseWait.ts). */
	mayResume?: WaitFilter,
): Promise<Route> {
	try {
		const outputs = await routeHandOver.call(
			this,
			item,
			workflowDataFor(item, event, layout),
			handOver,
		);
		if (!outputs) return { kind: 'handedOver' };
		const resume = await resumeWaitingExecution.call(this, item, identity, onSlowResume, mayResume);
		if (resume.resumed && !resume.alsoStart)
			return { kind: 'resumed', executionId: resume.executionId };
		return { kind: 'start', workflowData: outputs };
	} finally {
		// n8n saves this copy of the static data whole after the request (the catch-up's at its emit):
		// it must carry every waiting entry this process knows, or it drops those saved since it was loaded.
		keepWaitingEntriesCurrent(
			this.getWorkflowStaticData('global') as IDataObject,
			this.getWorkflow().id ?? undefined,
		);
	}
}
