import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { listFields, updateDisplayOptions } from '../../helpers/descriptions';
import { getList } from '../../helpers/list';
import { withoutSecrets } from '../../helpers/output';

/** What Simplify keeps of a key (`name` if the service has one; the sandbox has none). */
const SIMPLE_FIELDS = ['id', 'name', 'scopes', 'allowed_numbers', 'revoked'];

const displayOptions = { show: { resource: ['key'], operation: ['getMany'] } };

export const description = updateDisplayOptions(displayOptions, listFields);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData[]> {
	const query = { qs: {}, reserved: [] };
	const items = await getList.call(this, itemIndex, '/v1/console/keys', SIMPLE_FIELDS, query, {
		operation: 'Key → Get Many',
		itemIndex,
	});
	// allowed_numbers is always shown: null means every number of the account.
	return items.map(({ json }) => ({
		json: { ...withoutSecrets(json), allowed_numbers: json.allowed_numbers ?? null },
	}));
}
