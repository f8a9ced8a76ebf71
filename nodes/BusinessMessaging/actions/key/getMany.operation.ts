import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { returnAllOrLimit } from '../../helpers/descriptions';
import { getList } from '../../helpers/list';
import { requirePositiveInteger, updateDisplayOptions, withoutSecrets } from '../../helpers/utils';

const properties: INodeProperties[] = [...returnAllOrLimit];

const displayOptions = {
	show: {
		resource: ['key'],
		operation: ['getMany'],
	},
};

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(this: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const node = this.getNode();
	const returnAll = this.getNodeParameter('returnAll', itemIndex, false) === true;
	const limit = returnAll
		? undefined
		: requirePositiveInteger(node, this.getNodeParameter('limit', itemIndex, 50), 'Limit', itemIndex);
	const records = await getList.call(this, '/v1/console/keys', {}, {
		returnAll,
		limit,
		context: { operation: 'Key → Get Many', itemIndex },
	});
	// allowed_numbers is always shown: null means every number of the account.
	const keys = records.map((record) => {
		const key = withoutSecrets(record);
		return { ...key, allowed_numbers: key.allowed_numbers ?? null };
	});
	return this.helpers.constructExecutionMetaData(this.helpers.returnJsonArray(keys), {
		itemData: { item: itemIndex },
	});
}
