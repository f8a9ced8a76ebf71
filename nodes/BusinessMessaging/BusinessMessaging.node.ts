import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { router } from './actions/router';
import { versionProperties } from './actions/versionDescription';

export class BusinessMessaging implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Business Messaging',
		name: 'businessMessaging',
		icon: {
			light: 'file:../../icons/businessMessaging.svg',
			dark: 'file:../../icons/businessMessaging.dark.svg',
		},
		group: ['transform'],
		version: 1,
		subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
		description:
			'Reply to contacts, read message status and inbound history, download media, and read logs, keys and the webhook of the business messaging service',
		defaults: {
			name: 'Business Messaging',
		},
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{
				name: 'businessMessagingApi',
				required: true,
			},
		],
		properties: versionProperties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
