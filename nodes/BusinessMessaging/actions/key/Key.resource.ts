import type { INodeProperties } from 'n8n-workflow';

import * as getMany from './getMany.operation';

export { getMany };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['key'] } },
		options: [
			{
				name: 'Get Many',
				value: 'getMany',
				description: "Get the account's API keys and the numbers each is limited to",
				action: 'Get many keys',
			},
		],
		default: 'getMany',
	},
	...getMany.description,
];
