import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { apiRequest } from '../../../shared/transport';
import { optionalId, requireText } from '../../../shared/validate';
import { updateDisplayOptions } from '../../helpers/descriptions';
import { asJsonObject } from '../../helpers/output';

const properties: INodeProperties[] = [
	{
		displayName: 'To',
		name: 'to',
		type: 'string',
		required: true,
		default: '={{ $json.data?.from }}',
		placeholder: 'e.g. +33612345678',
		description:
			'Phone number of the contact, in international format with a leading plus. By default the sender of the inbound event coming from the trigger node.',
	},
	{
		displayName: 'Text',
		name: 'text',
		type: 'string',
		required: true,
		default: '',
		typeOptions: {
			rows: 4,
		},
		placeholder: 'e.g. Thanks, we are on it!',
		description:
			'Free text of the reply. Allowed only within 24 hours of the contact\'s last message to this number; after that a template message is needed.',
	},
	{
		displayName: 'From (Phone Number ID)',
		name: 'from',
		type: 'string',
		default: '={{ $json.data?.number }}',
		placeholder: 'e.g. 109876543210',
		description:
			'The phone_number_id the reply leaves from: the number field of the inbound event, so the reply comes from the number the contact wrote to. Leave empty when the key is limited to exactly one number. Required when the key is limited to several numbers.',
	},
];

const displayOptions = {
	show: {
		resource: ['message'],
		operation: ['reply'],
	},
};

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(this: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData> {
	const node = this.getNode();
	const to = requireText(
		node,
		this.getNodeParameter('to', itemIndex),
		'To',
		itemIndex,
		'After the trigger node it is the event\'s data.from; elsewhere enter the contact\'s number, e.g. +33612345678.',
	).trim();
	const text = requireText(node, this.getNodeParameter('text', itemIndex), 'Text', itemIndex);
	const from = optionalId(node, this.getNodeParameter('from', itemIndex, ''), 'From (Phone Number ID)', itemIndex);

	const body: IDataObject = { to, text };
	if (from !== undefined) body.from = from;

	const response = await apiRequest.call(this, 'POST', '/v1/messages/reply', {
		body,
		context: { operation: 'Message → Reply', scope: 'messages:send', itemIndex, reply: { from } },
	});
	return { json: asJsonObject(response) };
}
