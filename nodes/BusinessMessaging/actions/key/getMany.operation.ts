import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { returnAllOrLimit, updateDisplayOptions } from '../../helpers/descriptions';
import { getList } from '../../helpers/list';
import { withoutSecrets } from '../../helpers/output';

const properties: INodeProperties[] = [...returnAllOrLimit];

const displayOptions = { show: { resource: ['key'], operation: ['getMany'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData[]> {
	const records = await getList.call(
		this,
		itemIndex,
		'/v1/console/keys',
		{},
		{ operation: 'Key → Get Many', itemIndex },
	);
	// allowed_numbers is always shown: null means every number of the account.
	return records.map((record) => ({
		json: { ...withoutSecrets(record), allowed_numbers: record.allowed_numbers ?? null },
	}));
}
