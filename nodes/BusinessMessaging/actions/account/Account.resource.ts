import type { INodeProperties } from 'n8n-workflow';

import * as ping from './ping.operation';

export { ping };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['account'] } },
		options: [
			{
				name: 'Ping',
				value: 'ping',
				description: 'Check that the API key is active and attached to the account',
				action: 'Ping account',
			},
		],
		default: 'ping',
	},
	...ping.description,
];
