import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IWebhookDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { replyAndWait } from './actions/message/Message.resource';
import { router } from './actions/router';
import { versionProperties } from './actions/versionDescription';

/** Reply and Wait's resume URL (as n8n's Wait node). Inline, lint would ask for webhookMethods. */
const RESUME_WEBHOOKS: IWebhookDescription[] = [
	{
		name: 'default',
		httpMethod: 'POST',
		responseMode: 'onReceived',
		// The node's own answer ({resumed: true}), not n8n's default 'firstEntryJson' (sent as that word):
		// the trigger counts an answer as taken only on it, never on another 2xx (n8n starting, a proxy).
		responseData: '',
		path: '',
		restartWebhook: true,
	},
];

export class BusinessMessaging implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Business Messaging',
		name: 'businessMessaging',
		icon: {
			light: 'file:../../icons/businessMessaging.svg',
			dark: 'file:../../icons/businessMessaging.dark.svg',
		},
		group: ['transform'],
		version: [1, 1.1],
		subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
		description:
			'Reply to contacts, read message status and inbound history, download media, and read logs, keys and the webhook of the business messaging service',
		defaults: { name: 'Business Messaging' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		// Reply and Wait for Answer has two: Answer and Timed Out (as n8n's Switch node, an expression).
		outputs: `={{ $parameter.resource === "message" && $parameter.operation === "replyAndWait" ? [{ type: "${NodeConnectionTypes.Main}", displayName: "Answer" }, { type: "${NodeConnectionTypes.Main}", displayName: "Timed Out" }] : ["${NodeConnectionTypes.Main}"] }}`,
		credentials: [{ name: 'businessMessagingApi', required: true }],
		webhooks: RESUME_WEBHOOKS,
		properties: versionProperties,
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		return await replyAndWait.webhook.call(this);
	}

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
