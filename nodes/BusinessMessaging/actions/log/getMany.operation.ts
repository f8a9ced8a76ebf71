import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';

import { passThroughQuery, requireOneOf } from '../../../shared/fields';
import {
	additionalQueryParameters,
	returnAllOrLimit,
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
	...returnAllOrLimit,
	additionalQueryParameters,
];

const displayOptions = { show: { resource: ['log'], operation: ['getMany'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData[]> {
	const node = this.getNode();
	const category = requireOneOf(
		node,
		this.getNodeParameter('category', itemIndex),
		LOG_CATEGORIES,
		'Category',
		itemIndex,
	);
	const qs: IDataObject = {
		category,
		...passThroughQuery(
			node,
			this.getNodeParameter('queryParameters', itemIndex, {}),
			['category', 'cursor'],
			itemIndex,
		),
	};
	const records = await getList.call(this, itemIndex, '/v1/logs', qs, {
		operation: 'Log → Get Many',
		itemIndex,
	});
	return records.map((json) => ({ json }));
}
