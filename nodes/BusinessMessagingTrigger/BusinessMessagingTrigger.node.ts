import type {
	IHookFunctions,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { CREDENTIAL_TYPE } from '../shared/transport';
import { OUTPUTS_EXPRESSION, properties } from './description';
import { deleteWebhook, registerWebhook, webhookExists } from './lifecycle';
import { receiveEvent } from './receive';

export class BusinessMessagingTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Business Messaging Trigger',
		name: 'businessMessagingTrigger',
		icon: { light: 'file:../../icons/businessMessaging.svg', dark: 'file:../../icons/businessMessaging.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{($parameter["events"] || []).join(", ")}}',
		description: 'Starts the workflow on signed webhook events: inbound messages, delivery statuses, echoes',
		defaults: {
			name: 'Business Messaging Trigger',
		},
		inputs: [],
		outputs: OUTPUTS_EXPRESSION,
		credentials: [
			{
				name: CREDENTIAL_TYPE,
				required: true,
			},
		],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				// Not n8n's default 'firstEntryJson' (2.x sends that word as the body): empty, so
				// n8n answers with the webhookResponse receive() returns, {received: true}.
				responseData: '',
				path: 'webhook',
			},
		],
		properties,
	};

	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				if (this.getNodeParameter('registration', 'automatic') === 'manual') {
					const credentials = await this.getCredentials(CREDENTIAL_TYPE);
					const secret = typeof credentials.webhookSecret === 'string' ? credentials.webhookSecret.trim() : '';
					if (!secret) {
						throw new NodeOperationError(
							this.getNode(),
							"Registration is Manual but the credential has no Webhook Signing Secret",
							{
								description:
									"Paste the signing secret shown when the webhook was registered in the console into the credential's Webhook Signing Secret. Without it every event would be rejected.",
							},
						);
					}
					// Nothing to register: the webhook is managed in the console.
					return true;
				}
				return await webhookExists(this);
			},
			async create(this: IHookFunctions): Promise<boolean> {
				if (this.getNodeParameter('registration', 'automatic') === 'manual') return true;
				return await registerWebhook(this);
			},
			async delete(this: IHookFunctions): Promise<boolean> {
				if (this.getNodeParameter('registration', 'automatic') === 'manual') return true;
				return await deleteWebhook(this);
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		return await receiveEvent(this);
	}
}
