import type { INodeProperties } from 'n8n-workflow';

import * as getMany from './getMany.operation';

export { getMany };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: {
			show: {
				resource: ['key'],
			},
		},
		options: [
			{
				name: 'Get Many',
				value: 'getMany',
				description:
					'Get many API keys of the account, each with the numbers it is limited to (allowed_numbers, null for all)',
				action: 'Get many keys',
			},
		],
		default: 'getMany',
	},
	...getMany.description,
];
