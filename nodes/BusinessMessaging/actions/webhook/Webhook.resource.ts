import type { INodeProperties } from 'n8n-workflow';

import * as get from './get.operation';

export { get };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['webhook'] } },
		options: [
			{
				name: 'Get',
				value: 'get',
				description: 'Get the webhook endpoint of the account and whether it is configured',
				action: 'Get webhook',
			},
		],
		default: 'get',
	},
	...get.description,
];
