import type { INodeProperties } from 'n8n-workflow';

import * as account from './account/Account.resource';
import * as key from './key/Key.resource';
import * as log from './log/Log.resource';
import * as media from './media/Media.resource';
import * as message from './message/Message.resource';
import * as webhook from './webhook/Webhook.resource';

/** Version 1's parameters; the metadata stays a literal in the node file, for n8n's scanner. */
export const versionProperties: INodeProperties[] = [
	{
		displayName: 'Resource',
		name: 'resource',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Account', value: 'account' },
			{ name: 'Key', value: 'key' },
			{ name: 'Log', value: 'log' },
			{ name: 'Media', value: 'media' },
			{ name: 'Message', value: 'message' },
			{ name: 'Webhook', value: 'webhook' },
		],
		default: 'message',
	},
	...account.description,
	...key.description,
	...log.description,
	...media.description,
	...message.description,
	...webhook.description,
];
