import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { requireOneOf } from '../../../shared/fields';
import {
	additionalQueryParameters,
	listFields,
	updateDisplayOptions,
} from '../../helpers/descriptions';
import { getList } from '../../helpers/list';

const LOG_CATEGORIES = [
	'credits',
	'keys',
	'numbers',
	'receptions',
	'rejections',
	'sends',
	'webhook',
] as const;

const SIMPLE_FIELDS = ['created_at', 'category', 'event', 'success', 'reason', 'wa_message_id'];

const properties: INodeProperties[] = [
	{
		displayName: 'Category',
		name: 'category',
		type: 'options',
		options: [
			{ name: 'Credits', value: 'credits', description: 'Credit movements of the account' },
			{ name: 'Keys', value: 'keys', description: 'API key activity' },
			{ name: 'Numbers', value: 'numbers', description: "Activity of the account's phone numbers" },
			{ name: 'Receptions', value: 'receptions', description: 'Messages received from contacts' },
			{
				name: 'Rejections',
				value: 'rejections',
				description: 'Requests and messages that were refused',
			},
			{ name: 'Sends', value: 'sends', description: 'Messages sent by the account' },
			{
				name: 'Webhook',
				value: 'webhook',
				description: 'Deliveries to your webhook, with success or failure and its reason',
			},
		],
		default: 'webhook',
		description: 'Which of the 7 activity logs to read',
	},
	...listFields,
	additionalQueryParameters,
];

const displayOptions = { show: { resource: ['log'], operation: ['getMany'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData[]> {
	const category = requireOneOf(
		this.getNode(),
		this.getNodeParameter('category', itemIndex),
		LOG_CATEGORIES,
		'Category',
		itemIndex,
	);
	const query = { qs: { category }, reserved: ['category'] };
	return await getList.call(this, itemIndex, '/v1/logs', SIMPLE_FIELDS, query, {
		operation: 'Log → Get Many',
		itemIndex,
	});
}
