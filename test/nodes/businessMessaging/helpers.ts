// Shared by the Business Messaging node tests (the sandbox itself comes from test/support): the
// node run through the workflow harness (n8n-core's WorkflowExecute), and the sandbox's control API.
import type { IDataObject, INode, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import {
	MANUAL_TRIGGER_NODE_NAME,
	MANUAL_TRIGGER_TYPE,
	runNode,
	type RunNodeOptions,
} from '../../harness';
import type { Sandbox, SeededKeyLabel, FaultSpec } from '../../sandbox';
import { ACTION_NAME, ACTION_TYPE, CONTACT, CREDENTIAL_TYPE } from '../../support';

export type { Sandbox };

export function credentialsFor(sandbox: Sandbox, key: SeededKeyLabel | { value: string }) {
	return {
		[CREDENTIAL_TYPE]: {
			apiKey: typeof key === 'string' ? sandbox.keys[key] : key.value,
			baseUrl: sandbox.baseUrl,
		},
	};
}

export interface RunOptions {
	key?: SeededKeyLabel | { value: string };
	inputItems?: INodeExecutionData[];
	continueOnFail?: boolean;
	binaryDataMode?: RunNodeOptions['binaryDataMode'];
}

/** Manual trigger → Business Messaging with these parameters, against the sandbox. */
export async function run(sandbox: Sandbox, parameters: INodeParameters, options: RunOptions = {}) {
	return await runNode({
		type: ACTION_TYPE,
		parameters,
		credentials: credentialsFor(sandbox, options.key ?? 'all'),
		inputItems: options.inputItems,
		binaryDataMode: options.binaryDataMode,
		nodeSettings: options.continueOnFail ? { continueOnFail: true } : undefined,
	});
}

/** The message of the node's error (thrown when Continue On Fail is off). */
export function errorOf(result: Awaited<ReturnType<typeof run>>): {
	message: string;
	description: string;
} {
	const error = result.nodeError(ACTION_NAME) ?? result.error;
	if (!error) throw new Error(`The node did not fail; it output ${JSON.stringify(result.items)}`);
	return {
		message: error.message,
		description: String((error as { description?: unknown }).description ?? ''),
	};
}

/** Every output item is paired with an input item; returns the indexes. */
export function pairedIndexes(items: INodeExecutionData[]): number[] {
	return items.map((item) => {
		const paired = item.pairedItem;
		if (paired === undefined || paired === null)
			throw new Error(`Item without pairedItem: ${JSON.stringify(item.json)}`);
		if (typeof paired === 'number') return paired;
		if (Array.isArray(paired)) throw new Error('Expected one pairedItem per output item');
		return paired.item;
	});
}

async function control(
	sandbox: Sandbox,
	method: string,
	path: string,
	body?: unknown,
): Promise<IDataObject> {
	const response = await fetch(`${sandbox.baseUrl}${path}`, {
		method,
		headers: body === undefined ? undefined : { 'content-type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
	return text ? (JSON.parse(text) as IDataObject) : {};
}

export interface InboundInput {
	from?: string;
	contact_name?: string;
	number?: string;
	text?: string;
	type?: string;
	media?: { mime: string; data_base64: string; filename?: string };
	host_media?: boolean;
}

/** A contact writes to one of the account's numbers; returns the stored record. */
export async function inbound(sandbox: Sandbox, input: InboundInput = {}): Promise<IDataObject> {
	const result = await control(sandbox, 'POST', '/_sandbox/inbound', {
		from: CONTACT,
		contact_name: 'Ada',
		number: sandbox.numbers[0].phone_number_id,
		text: 'Hello',
		...input,
	});
	return result.record as IDataObject;
}

/**
 * A message stored before the trigger starts, and the clock past its millisecond: a trigger
 * started in that same millisecond starts at it (n8n's clock has no microseconds) and emits
 * it, on purpose (never lost; see select.test.ts).
 */
export async function storedBeforeStart(sandbox: Sandbox, text: string): Promise<IDataObject> {
	const record = await inbound(sandbox, { text });
	const storedMs = Date.parse(String(record.created_at));
	while (Date.now() <= storedMs) await new Promise((resolve) => setTimeout(resolve, 1));
	return record;
}

export async function echo(
	sandbox: Sandbox,
	input: { to?: string; number?: string; text?: string; type?: string; media_mime?: string },
): Promise<IDataObject> {
	const result = await control(sandbox, 'POST', '/_sandbox/echo', {
		to: CONTACT,
		number: sandbox.numbers[0].phone_number_id,
		text: 'Sent from the app',
		...input,
	});
	return result.record as IDataObject;
}

export async function injectFault(
	sandbox: Sandbox,
	fault: Partial<FaultSpec> & Pick<FaultSpec, 'kind'>,
): Promise<void> {
	await control(sandbox, 'POST', '/_sandbox/faults', { count: 1, ...fault });
}

export async function createKey(
	sandbox: Sandbox,
	scopes: string[],
	allowedNumbers: string[] | null = null,
): Promise<{ id: string; value: string }> {
	const created = await control(sandbox, 'POST', '/_sandbox/keys', {
		scopes,
		allowed_numbers: allowedNumbers,
	});
	return { id: String(created.id), value: String(created.key) };
}

/** /v1 requests the sandbox received, optionally only those whose path starts with a prefix. */
export function apiRequests(sandbox: Sandbox, prefix = '/v1') {
	return sandbox.state().requests.filter((request) => request.path.startsWith(prefix));
}

export const ASK = 'Ask';

/** Manual Trigger → "Ask" (Message → Reply and Wait for Answer, `parameters` over its defaults): for runWorkflow. */
export function replyAndWaitWorkflow(parameters: Record<string, unknown>, type = ACTION_TYPE) {
	const nodes: INode[] = [
		{
			id: 'm',
			name: MANUAL_TRIGGER_NODE_NAME,
			type: MANUAL_TRIGGER_TYPE,
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
		},
		{
			id: 'a',
			name: ASK,
			type,
			typeVersion: 1,
			position: [200, 0],
			parameters: {
				resource: 'message',
				operation: 'replyAndWait',
				text: 'What is your order number?',
				...parameters,
			},
			credentials: { [CREDENTIAL_TYPE]: { id: '1', name: 'sandbox' } },
		},
	];
	return {
		nodes,
		connections: {
			[MANUAL_TRIGGER_NODE_NAME]: { main: [[{ node: ASK, type: 'main' as const, index: 0 }]] },
		},
	};
}
