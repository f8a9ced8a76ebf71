import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { apiRequest } from '../../../shared/transport';
import { updateDisplayOptions } from '../../helpers/descriptions';
import { asJsonObject, withoutSecrets } from '../../helpers/output';

const properties: INodeProperties[] = [
	{
		displayName:
			'Reads the webhook configuration (url, configured). Registering the endpoint is done by the Business Messaging Trigger node. The signing secret is never part of the output.',
		name: 'webhookNotice',
		type: 'notice',
		default: '',
	},
];

const displayOptions = { show: { resource: ['webhook'], operation: ['get'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData> {
	const response = await apiRequest.call(this, 'GET', '/v1/console/webhook', {
		context: { operation: 'Webhook → Get', itemIndex },
	});
	return { json: withoutSecrets(asJsonObject(response)) };
}
