import type { INodeProperties } from 'n8n-workflow';

import * as download from './download.operation';

export { download };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['media'] } },
		options: [
			{
				name: 'Download',
				value: 'download',
				description: 'Download the file of an inbound media message as binary data',
				action: 'Download media',
			},
		],
		default: 'download',
	},
	...download.description,
];
