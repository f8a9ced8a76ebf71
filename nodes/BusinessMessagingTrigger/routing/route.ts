/** Where an accepted event goes (webhook, catch-up): hand over → resume a wait → start. */
import type {
	IDataObject,
	INodeExecutionData,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { answerWaiting, answeredAlready } from '../../shared/replyAndWait/forTrigger';
import { withReplyWindow } from '../../shared/replyWindow';
import type { HandOverSettings } from '../options';
import type { EventEnvelope, EventType } from '../receiving/envelope';
import { routeHandOver } from './handOver';

/** On an answer that resumed a waiting execution: its id, so a workflow can tell it apart. */
export const RESUMED_FIELD = 'resumed_execution';
/** The trigger's execute() records such an answer as run, then drops it (no Also Start asked). */
export const RECORD_ONLY_FIELD = '__businessMessagingRecordOnly';

export type Route =
	// A resumed answer starts one too where nothing else records it (queue mode's processors, the
	// catch-up) or when it asks to Also Start: execute() records it as run.
	| {
			kind: 'start';
			workflowData: INodeExecutionData[][];
			resumed?: string;
			/** The catch-up's owed answer: its wait resumed once this execution ran (answerLater.ts). */
			afterEmit?: () => void;
	  }
	/** A person is answering the contact (While a Person Answers: Do Not Emit): nothing runs. */
	| { kind: 'handedOver' }
	// An answer taken with no execution, owed in the static data n8n saves before it answers; the
	// trigger resumes its wait (answerLater.ts). `resumed` undefined: a copy of one taken before.
	| { kind: 'answered'; resumed?: string };

/** Combine on: when the trigger took the message, on that process's clock; quiet counts from it. */
export const RECEIVED_AT_FIELD = 'received_at';

export function stampedReceived(json: IDataObject, receivedAtMs?: number): IDataObject {
	if (receivedAtMs === undefined) return json;
	return { ...json, [RECEIVED_AT_FIELD]: new Date(receivedAtMs).toISOString() };
}

/** Fields the package sets (some steer what runs): never taken from the service's envelope. */
export const PACKAGE_FIELDS: readonly string[] = [
	RESUMED_FIELD,
	RECORD_ONLY_FIELD,
	RECEIVED_AT_FIELD,
	'hand_over',
	'reply_window_closes_at',
	'recovered',
	'delivery_failure',
	'late_reason',
	'media_download',
	'combine_problem',
];

export function eventItem(envelope: EventEnvelope, receivedAtMs?: number): INodeExecutionData {
	const json: IDataObject = { ...(envelope as IDataObject) };
	for (const field of PACKAGE_FIELDS) delete json[field];
	return { json: stampedReceived(withReplyWindow(json), receivedAtMs) };
}

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
): Promise<Route> {
	// The catch-up's copy of an answer taken here with no execution (after a restart too).
	if (answeredAlready.call(this, item.json)) return { kind: 'answered' };
	const byEvent = workflowDataFor(item, event, layout);
	const outputs = await routeHandOver.call(this, item, byEvent, handOver);
	// Reply and Wait's door: resumes the execution waiting for this contact, if any, and brings this
	// copy of the static data up to date with every waiting entry (n8n saves it whole), handed over or not.
	const resume = await answerWaiting.call(this, outputs ? item : undefined, outputs ?? []);
	if (!outputs) return { kind: 'handedOver' };
	if (!resume.resumed) return { kind: 'start', workflowData: outputs };
	if (resume.recorded) return { kind: 'answered', resumed: resume.executionId };
	const marks = {
		[RESUMED_FIELD]: resume.executionId,
		...(!resume.alsoStart && { [RECORD_ONLY_FIELD]: true }),
	};
	return {
		kind: 'start',
		// One item in all (hand over may have put a copy of it on its own output).
		workflowData: outputs.map((items) =>
			items.map((one) => ({ ...one, json: { ...one.json, ...marks } })),
		),
		resumed: resume.executionId,
		afterEmit: resume.resumeAfterEmit,
	};
}

export function dropRecordOnly(outputs: INodeExecutionData[][]): INodeExecutionData[][] {
	return outputs.map((items) => items.filter((item) => item.json[RECORD_ONLY_FIELD] !== true));
}
