import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { asNodeError } from '../../shared/errors';

import * as account from './account/Account.resource';
import * as key from './key/Key.resource';
import * as log from './log/Log.resource';
import * as media from './media/Media.resource';
import * as message from './message/Message.resource';
import * as webhook from './webhook/Webhook.resource';

type OperationExecute = (
	this: IExecuteFunctions,
	itemIndex: number,
	item: INodeExecutionData,
) => Promise<INodeExecutionData | INodeExecutionData[]>;

type Operations = Partial<Record<string, { execute?: OperationExecute }>>;
const RESOURCES: Record<string, object> = { account, key, log, media, message, webhook };

/** Runs the operation per input item: pairedItem, the item index on errors, Continue On Fail. */
export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const resource = String(this.getNodeParameter('resource', 0));
	const operation = String(this.getNodeParameter('operation', 0));
	// Two outputs and a wait for the whole execution: not an operation per item.
	if (resource === 'message' && operation === 'replyAndWait')
		return await message.replyAndWait.execute.call(this);
	// An expression or an old workflow can name an operation that does not exist.
	const operations = (Object.hasOwn(RESOURCES, resource) ? RESOURCES[resource] : {}) as Operations;
	const execute = operations[operation]?.execute;
	if (typeof execute !== 'function') {
		throw new NodeOperationError(
			this.getNode(),
			`The operation "${operation}" of resource "${resource}" is not supported: pick another operation, or update the Business Messaging package`,
		);
	}

	const returnData: INodeExecutionData[] = [];
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		try {
			const output = await execute.call(this, itemIndex, items[itemIndex]);
			returnData.push(
				...this.helpers.constructExecutionMetaData(Array.isArray(output) ? output : [output], {
					itemData: { item: itemIndex },
				}),
			);
		} catch (error) {
			if (!this.continueOnFail()) throw asNodeError(this.getNode(), error, itemIndex);
			const { message, description } = error as { message: string; description?: unknown };
			const json: IDataObject = { error: message };
			if (typeof description === 'string' && description) json.description = description;
			returnData.push({ json, pairedItem: { item: itemIndex } });
		}
	}
	return [returnData];
}
