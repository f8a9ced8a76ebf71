import type { IExecuteFunctions, INode, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import * as account from './account/Account.resource';
import * as key from './key/Key.resource';
import * as log from './log/Log.resource';
import * as media from './media/Media.resource';
import * as message from './message/Message.resource';
import type { BusinessMessagingMap, BusinessMessagingResource } from './node.type';
import * as webhook from './webhook/Webhook.resource';

type OperationExecute = (
	this: IExecuteFunctions,
	itemIndex: number,
	items: INodeExecutionData[],
) => Promise<INodeExecutionData[]>;

const resources: { [R in BusinessMessagingResource]: Record<BusinessMessagingMap[R], { execute: OperationExecute }> } = {
	account,
	key,
	log,
	media,
	message,
	webhook,
};

function findOperation(resource: string, operation: string): OperationExecute | undefined {
	if (!Object.prototype.hasOwnProperty.call(resources, resource)) return undefined;
	const operations = resources[resource as BusinessMessagingResource] as Record<string, { execute: OperationExecute }>;
	if (!Object.prototype.hasOwnProperty.call(operations, operation)) return undefined;
	return operations[operation].execute;
}

/**
 * The error to stop the node with: the transport's and the operations' own errors as
 * they are (they already say what to do), anything else wrapped, all carrying the item.
 */
function asNodeError(node: INode, error: unknown, itemIndex: number): NodeApiError | NodeOperationError {
	if (error instanceof NodeApiError || error instanceof NodeOperationError) {
		if (error.context.itemIndex === undefined) error.context.itemIndex = itemIndex;
		return error;
	}
	return new NodeOperationError(node, error as Error, { itemIndex });
}

/**
 * Runs the chosen operation once per input item. A failed item either stops the node
 * (with the item's index on the error) or, under Continue On Fail, becomes an error
 * item paired with its input while the other items go on.
 */
export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const resource = this.getNodeParameter('resource', 0) as string;
	const operation = this.getNodeParameter('operation', 0) as string;
	const execute = findOperation(resource, operation);
	if (!execute) {
		throw new NodeOperationError(this.getNode(), `The operation "${operation}" of resource "${resource}" is not supported`);
	}

	const returnData: INodeExecutionData[] = [];
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		try {
			returnData.push(...(await execute.call(this, itemIndex, items)));
		} catch (error) {
			if (this.continueOnFail()) {
				const json: { error: string; description?: string } = { error: (error as Error).message };
				const description = (error as { description?: unknown }).description;
				if (typeof description === 'string' && description) json.description = description;
				returnData.push({ json, pairedItem: { item: itemIndex } });
				continue;
			}
			throw asNodeError(this.getNode(), error, itemIndex);
		}
	}
	return [returnData];
}
