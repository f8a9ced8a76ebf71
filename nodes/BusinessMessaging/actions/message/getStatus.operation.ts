import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { apiRequest } from '../../../shared/transport';
import { pathSegment } from '../../../shared/fields';
import { updateDisplayOptions } from '../../helpers/descriptions';
import { asJsonObject } from '../../helpers/output';

const properties: INodeProperties[] = [
	{
		displayName: 'Message ID',
		name: 'messageId',
		type: 'string',
		required: true,
		default: '',
		placeholder: 'e.g. msg_01HZX3',
		description:
			'ID of the message in the service: the ID returned when it was sent, or the data.ID field of a message.status event',
	},
];

const displayOptions = { show: { resource: ['message'], operation: ['getStatus'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData> {
	const id = pathSegment(
		this.getNode(),
		this.getNodeParameter('messageId', itemIndex),
		'Message ID',
		itemIndex,
	);
	const response = await apiRequest.call(this, 'GET', `/v1/messages/${id}`, {
		context: { operation: 'Message → Get Status', scope: 'messages:read', itemIndex },
	});
	return { json: asJsonObject(response) };
}
