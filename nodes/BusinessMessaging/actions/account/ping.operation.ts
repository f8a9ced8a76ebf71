import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { apiRequest } from '../../../shared/transport';
import { updateDisplayOptions } from '../../helpers/descriptions';
import { asJsonObject } from '../../helpers/output';

const properties: INodeProperties[] = [
	{
		displayName:
			"Checks that the credential's API key is active and has the balance:read scope. On success the output carries <code>valid: true</code>; a revoked key or a missing scope fails with what to do.",
		name: 'pingNotice',
		type: 'notice',
		default: '',
	},
];

const displayOptions = { show: { resource: ['account'], operation: ['ping'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData> {
	const response = await apiRequest.call(this, 'GET', '/v1/ping', {
		context: { operation: 'Account → Ping', scope: 'balance:read', itemIndex },
	});
	return { json: { ...asJsonObject(response), valid: true } };
}
