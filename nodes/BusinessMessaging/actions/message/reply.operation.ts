import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { apiRequest } from '../../../shared/transport';
import { isPlainObject } from '../../../shared/json';
import { optionalId, requireText } from '../../../shared/fields';
import { closedWindow } from '../../../shared/replyWindow';
import { updateDisplayOptions } from '../../helpers/descriptions';
import { asJsonObject } from '../../helpers/output';
import { deliveryOptions, waitForDelivery } from './waitForDelivery';

/** After a trigger: the event fills To and From. */
const NOT_TOOL = { hide: { '@tool': [true] } };
/** As an AI Agent tool there is no event: the model decides the contact and the text. */
const AS_TOOL = { show: { '@tool': [true] } };

/** To, Text and From, shared by Reply and Reply and Wait for Answer. */
export const replyFields: INodeProperties[] = [
	{
		displayName: 'To',
		name: 'to',
		type: 'string',
		required: true,
		default: '={{ $json.data?.from }}',
		placeholder: 'e.g. +33612345678',
		description:
			'Phone number of the contact, in international format with a leading plus. By default the sender of the inbound event coming from the trigger node.',
		displayOptions: NOT_TOOL,
	},
	{
		displayName: 'To',
		name: 'to',
		type: 'string',
		required: true,
		default:
			"={{ $fromAI('to', 'Phone number of the contact to reply to, in international format with a leading plus, e.g. +33612345678', 'string') }}",
		placeholder: 'e.g. +33612345678',
		description:
			'Phone number of the contact, in international format with a leading plus. By default the model fills it in.',
		displayOptions: AS_TOOL,
	},
	{
		displayName: 'Text',
		name: 'text',
		type: 'string',
		required: true,
		default: '',
		typeOptions: { rows: 4 },
		placeholder: 'e.g. Thanks, we are on it!',
		description:
			"Free text of the reply. Allowed only within 24 hours of the contact's last message to this number; after that a template message is needed.",
		displayOptions: NOT_TOOL,
	},
	{
		displayName: 'Text',
		name: 'text',
		type: 'string',
		required: true,
		default:
			"={{ $fromAI('text', 'The text of the reply message to send to the contact', 'string') }}",
		typeOptions: { rows: 4 },
		description:
			"Free text of the reply. By default the model writes it. Allowed only within 24 hours of the contact's last message to this number.",
		displayOptions: AS_TOOL,
	},
	{
		displayName: 'From (Phone Number ID)',
		name: 'from',
		type: 'string',
		default: '={{ $json.data?.number }}',
		placeholder: 'e.g. 109876543210',
		description:
			'The phone_number_id the reply leaves from: the number field of the inbound event, so the reply comes from the number the contact wrote to. Leave empty when the key is limited to exactly one number. Required when the key is limited to several numbers.',
		displayOptions: NOT_TOOL,
	},
	{
		displayName: 'From (Phone Number ID)',
		name: 'from',
		type: 'string',
		default: '',
		placeholder: 'e.g. 109876543210',
		description:
			'The phone_number_id the reply leaves from (the number the contact wrote to). Leave empty when the key is limited to exactly one number, or set it with an expression.',
		displayOptions: AS_TOOL,
	},
];

const properties: INodeProperties[] = [
	...replyFields,
	{
		displayName: 'Options',
		name: 'replyOptions',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: deliveryOptions,
	},
];

const displayOptions = { show: { resource: ['message'], operation: ['reply'] } };

export const description = updateDisplayOptions(displayOptions, properties);

/** Sends one item's reply, once; refused first when the input item says its window closed. */
export async function sendReply(
	this: IExecuteFunctions,
	itemIndex: number,
	operation: string,
): Promise<IDataObject> {
	const node = this.getNode();
	const to = requireText(
		node,
		this.getNodeParameter('to', itemIndex),
		'To',
		itemIndex,
		"After the trigger node it is the event's data.from; elsewhere enter the contact's number, e.g. +33612345678.",
	).trim();
	const text = requireText(node, this.getNodeParameter('text', itemIndex), 'Text', itemIndex);
	const from = optionalId(
		node,
		this.getNodeParameter('from', itemIndex, ''),
		'From (Phone Number ID)',
		itemIndex,
	);

	const input = this.getInputData()[itemIndex]?.json;
	const closedAt = closedWindow(isPlainObject(input) ? input : undefined, to, from, Date.now());
	if (closedAt !== undefined) {
		throw new NodeOperationError(
			node,
			`The 24-hour reply window is closed for this contact (it closed at ${closedAt}): send a template message instead`,
			{
				itemIndex,
				description:
					"Nothing was sent. The input item's reply_window_closes_at says the contact's message is more than 24 hours old, so the service would refuse a free-text reply. Send an approved template message (HTTP Request node with this credential), or wait until the contact writes again.",
			},
		);
	}

	const response = await apiRequest.call(this, 'POST', '/v1/messages/reply', {
		body: { to, text, ...(from !== undefined && { from }) },
		context: { operation, scope: 'messages:send', itemIndex, reply: { from } },
	});
	return asJsonObject(response);
}

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData> {
	const sent = await sendReply.call(this, itemIndex, 'Message → Reply');
	const options = this.getNodeParameter('replyOptions', itemIndex, {}) as IDataObject;
	if (options.waitForDelivery !== true) return { json: sent };
	const delivery = await waitForDelivery.call(this, itemIndex, sent, options);
	return { json: { ...sent, delivery } };
}
