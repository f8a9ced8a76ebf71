import type { INodeProperties } from 'n8n-workflow';

import * as getMany from './getMany.operation';

export { getMany };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['log'] } },
		options: [
			{
				name: 'Get Many',
				value: 'getMany',
				description: "Get many entries of one of the account's activity logs",
				action: 'Get many log entries',
			},
		],
		default: 'getMany',
	},
	...getMany.description,
];
