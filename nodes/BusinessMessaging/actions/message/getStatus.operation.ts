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
		context: {
			operation: 'Message → Get Status',
			scope: 'messages:read',
			itemIndex,
			// The usual mistake: a platform wa_message_id, or a message sent from the business app.
			notFound:
				'the service has no message with this ID. Use the "id" a Reply returned (the service\'s message ID), not a wa_message_id: only messages sent through the API have a status',
		},
	});
	return { json: asJsonObject(response) };
}
