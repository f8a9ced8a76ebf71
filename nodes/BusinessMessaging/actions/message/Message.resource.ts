import type { INodeProperties } from 'n8n-workflow';

import * as getMany from './getMany.operation';
import * as getStatus from './getStatus.operation';
import * as reply from './reply.operation';
import * as replyAndWait from './replyAndWait.operation';

export { getMany, getStatus, reply, replyAndWait };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['message'] } },
		options: [
			{
				name: 'Get Many',
				value: 'getMany',
				description: 'Get stored inbound messages, or echoes from the business app',
				action: 'Get many messages',
			},
			{
				name: 'Get Status',
				value: 'getStatus',
				description: 'Get the delivery status of a sent message by its message ID',
				action: 'Get message status',
			},
			{
				name: 'Reply',
				value: 'reply',
				description: 'Reply with free text to a contact who wrote in the last 24 hours',
				action: 'Reply to a message',
			},
			{
				name: 'Reply and Wait for Answer',
				value: 'replyAndWait',
				description:
					'Send a reply, then wait until the contact answers (the workflow continues with the answer) or a time limit passes',
				action: 'Reply and wait for the answer',
			},
		],
		default: 'reply',
	},
	...getMany.description,
	...getStatus.description,
	...reply.description,
	...replyAndWait.description,
];
