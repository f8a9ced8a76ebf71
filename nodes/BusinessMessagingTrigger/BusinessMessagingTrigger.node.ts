import {
	NodeOperationError,
	type IExecuteFunctions,
	type IHookFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	type ITriggerResponse,
	type IWebhookFunctions,
	type IWebhookResponseData,
} from 'n8n-workflow';

import {
	REGISTRATION_WEBHOOK,
	onTriggerActivated,
	takeRegistration,
} from '../shared/replyAndWait/forTrigger';
import { CREDENTIAL_TYPE } from '../shared/transport';
import { EVENT_PATH } from '../shared/triggerUrls';
import { startCatchUp } from './catchUp/start';
import { OUTPUTS_EXPRESSION, optionsOf, outputCount, properties } from './description';
import { combineProblem, combineSettings } from './options';
import { nodeParameters, readNodeSettings } from './receiving/accept';
import { answerHeld } from './receiving/answerDelivery';
import { withMediaFiles } from './receiving/eventMedia';
import { receiveEvent } from './receiving/receive';
import { reject } from './receiving/rejection';
import { deleteWebhook, registerWebhook, webhookExists } from './registration/webhookMethods';
import { combineBursts } from './routing/burst';
import { holdBurstsHere } from './routing/burstHold';
import { dropRecordOnly, workflowDataFor } from './routing/route';
import { runOnce } from './routing/runOnce';

export class BusinessMessagingTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Business Messaging Trigger',
		name: 'businessMessagingTrigger',
		icon: {
			light: 'file:../../icons/businessMessaging.svg',
			dark: 'file:../../icons/businessMessaging.dark.svg',
		},
		group: ['trigger'],
		// v2 changes only the number: n8n evaluates a v1 start node's options.binaryData per request.
		version: [1, 2],
		defaultVersion: 2,
		subtitle: '={{($parameter["events"] || []).join(", ")}}',
		description:
			'Starts the workflow on signed webhook events: inbound messages, delivery statuses, echoes',
		defaults: { name: 'Business Messaging Trigger' },
		inputs: [],
		outputs: OUTPUTS_EXPRESSION,
		credentials: [{ name: CREDENTIAL_TYPE, required: true }],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				// Not n8n's default 'firstEntryJson' (2.x sends that word as the body).
				responseData: '',
				path: EVENT_PATH,
			},
			// Reply and Wait for Answer's registrations, on <webhook id>/wait-registration.
			REGISTRATION_WEBHOOK,
		],
		properties,
	};

	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				return await webhookExists.call(this);
			},
			async create(this: IHookFunctions): Promise<boolean> {
				return await registerWebhook.call(this);
			},
			async delete(this: IHookFunctions): Promise<boolean> {
				return await deleteWebhook.call(this);
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		if (this.getWebhookName() === REGISTRATION_WEBHOOK.name)
			// A full list (507) is told to the signed caller: Reply and Wait logs it.
			return await takeRegistration.call(this, (status, reason) =>
				reject.call(this, status, reason, { signed: status === 507 }),
			);
		return await receiveEvent.call(this);
	}

	/** The catch-up (catchUp/): n8n runs it while the workflow is active, on the leader main only. */
	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const options = optionsOf(this.getNode().parameters);
		const problem = combineProblem(options);
		if (problem) throw new NodeOperationError(this.getNode(), problem);
		if (this.getMode() === 'manual') return {};
		const parameters = nodeParameters.call(this);
		const { layout } = readNodeSettings(parameters);
		const leave = await onTriggerActivated.call(this, (item) =>
			workflowDataFor(item, 'message.inbound', layout),
		);
		const combine = combineSettings(options);
		// Held messages are in memory only: held where the catch-up recovers them after a crash.
		const holding = holdBurstsHere.call(this, parameters.catchUp === true ? combine : undefined);
		const catchUp = await startCatchUp.call(
			this,
			holding?.recoverSinceMs === undefined
				? undefined
				: { sinceMs: holding.recoverSinceMs, done: holding.recovered },
		);
		return {
			...catchUp,
			closeFunction: async () => {
				leave();
				await Promise.all([catchUp.closeFunction?.(), holding?.close()]);
			},
		};
	}

	/** Needed: without it n8n runs trigger() again for a test event (it checks trigger() first). */
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		// The raw parameters: no expression is evaluated.
		const parameters = this.getNode().parameters;
		const outputs = outputCount(parameters);
		const items = Array.from({ length: outputs }, (_, index) => this.getInputData(index));
		answerHeld.call(this, items);
		const toRun = dropRecordOnly(await runOnce.call(this, items));
		const combined = await combineBursts.call(this, toRun, combineSettings(optionsOf(parameters)));
		return await withMediaFiles.call(this, combined);
	}
}
