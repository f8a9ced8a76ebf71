// Simplify on the three Get Many operations (issue 33): what a simplified record keeps, the raw
// records when it is off, version 1 nodes (existing workflows) unchanged, and the node run as an
// AI Agent's tool the way n8n runs it: n8n-core builds the tool from the node's $fromAI
// parameters and runs the node in a SupplyDataContext when the agent calls it.
import type {
	IExecuteFunctions,
	INode,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { deepCopy, getNodeParameters, NodeConnectionTypes } from 'n8n-workflow';

import { BusinessMessaging } from '../../../nodes/BusinessMessaging/BusinessMessaging.node';
import { pick } from '../../../nodes/BusinessMessaging/helpers/output';
import { MANUAL_TRIGGER_NODE_NAME, MANUAL_TRIGGER_TYPE, runNode, runWorkflow } from '../../harness';
import {
	ACTION_TYPE,
	CONTACT,
	CREDENTIAL_TYPE,
	describeWithSandbox,
	TOOL_TYPE,
} from '../../support';
import { credentialsFor, echo, inbound, run } from './helpers';

const MESSAGES = { resource: 'message', operation: 'getMany', returnAll: true };
const MESSAGE_FIELDS = [
	'from',
	'to',
	'number',
	'text',
	'type',
	'media_id',
	'wa_message_id',
	'created_at',
];
const LOG_FIELDS = ['created_at', 'category', 'event', 'success', 'reason', 'wa_message_id'];

describe('Simplify: what is kept', () => {
	it('keeps the listed fields in their order, leaves out absent ones, keeps null values', () => {
		expect(
			pick({ z: 1, b: null, a: 'x', extra: { deep: true } }, ['a', 'b', 'missing', 'z']),
		).toEqual({ a: 'x', b: null, z: 1 });
		expect(Object.keys(pick({ z: 1, a: 2 }, ['a', 'z']))).toEqual(['a', 'z']);
	});

	it('a record with none of the fields (a shape not known here) is never passed through whole', () => {
		const odd = { results: [{ id: 'log_1' }], note: 'for the model?' };
		expect(pick(odd, LOG_FIELDS)).toEqual({});
	});

	it('the description: Simplify from version 1.1 (default on, as a node and as a tool), absent in version 1', () => {
		const { description } = new BusinessMessaging();
		const simplify = description.properties.filter((p) => p.name === 'simple');
		expect(simplify).toHaveLength(3); // one per Get Many
		for (const property of simplify)
			expect(property).toMatchObject({
				displayName: 'Simplify',
				type: 'boolean',
				default: true,
				description:
					'Whether to return a simplified version of the response instead of the raw data',
			});
		const resolve = (typeVersion: number, name: string, resource: string) =>
			getNodeParameters(
				description.properties,
				{ resource, operation: 'getMany' },
				true,
				false,
				{ typeVersion },
				{ ...description, name },
			) as Record<string, unknown>;
		for (const resource of ['message', 'log', 'key']) {
			expect(resolve(1.1, 'businessMessaging', resource).simple).toBe(true);
			expect(resolve(1.1, 'businessMessagingTool', resource).simple).toBe(true);
			expect(resolve(1, 'businessMessaging', resource)).not.toHaveProperty('simple');
			expect(resolve(1, 'businessMessagingTool', resource)).not.toHaveProperty('simple');
		}
		expect(
			getNodeParameters(
				description.properties,
				{ resource: 'message', operation: 'reply' },
				true,
				false,
				{ typeVersion: 1.1 },
				description,
			),
		).not.toHaveProperty('simple');
	});
});

describeWithSandbox('Simplify on the Get Many operations', (sandbox) => {
	it('Message → Get Many: simplified by default (version 1.1), only the fields a model needs', async () => {
		await inbound(sandbox, { text: 'first' });
		await inbound(sandbox, {
			type: 'image',
			text: 'the receipt',
			media: { mime: 'image/png', data_base64: Buffer.from('png').toString('base64') },
		});
		const simplified = await run(sandbox, MESSAGES);
		const raw = await run(sandbox, { ...MESSAGES, simple: false });
		expect(simplified.error).toBeUndefined();
		expect(raw.items).toHaveLength(2);
		expect(simplified.items.map((item) => item.json)).toEqual(
			raw.items.map(({ json }) =>
				Object.fromEntries(
					MESSAGE_FIELDS.filter((f) => json[f] !== undefined).map((f) => [f, json[f]]),
				),
			),
		);
		const [image, text] = simplified.items.map((item) => item.json);
		expect(Object.keys(text)).toEqual([
			'from',
			'number',
			'text',
			'type',
			'media_id',
			'wa_message_id',
			'created_at',
		]);
		expect(text).toMatchObject({ from: CONTACT, text: 'first', type: 'text', media_id: null });
		expect(image).toMatchObject({ type: 'image', text: 'the receipt' });
		expect(image.media_id).toEqual(expect.any(String));
		// Dropped only when simplified: the record's id, direction, contact name, media URL and type.
		for (const field of ['id', 'direction', 'contact_name', 'media_url', 'media_mime']) {
			expect(image).not.toHaveProperty(field);
			expect(raw.items[0].json).toHaveProperty(field);
		}
		expect(simplified.items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 0 }]);
	});

	it('an echo keeps its contact under `to` (it has no `from`)', async () => {
		await echo(sandbox, { text: 'sent from the app' });
		const result = await run(sandbox, { ...MESSAGES, direction: 'echo' });
		expect(result.items.map((item) => item.json)).toEqual([
			{
				to: CONTACT,
				number: sandbox.numbers[0].phone_number_id,
				text: 'sent from the app',
				type: 'text',
				media_id: null,
				wa_message_id: expect.any(String),
				created_at: expect.any(String),
			},
		]);
	});

	it('version 1 (workflows made before Simplify): the records as the service sent them', async () => {
		await inbound(sandbox, { text: 'hello' });
		const v1 = await runNode({
			type: ACTION_TYPE,
			typeVersion: 1,
			parameters: MESSAGES,
			credentials: credentialsFor(sandbox, 'all'),
		});
		const raw = await run(sandbox, { ...MESSAGES, simple: false });
		expect(v1.items.map((item) => item.json)).toEqual(raw.items.map((item) => item.json));
		expect(v1.items[0].json).toHaveProperty('contact_name', 'Ada');
	});

	it('Log → Get Many: created_at, category, event, success, reason, wa_message_id', async () => {
		// A webhook nothing listens on: the delivery fails, with its reason.
		await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
			body: JSON.stringify({ url: 'http://127.0.0.1:9/hook' }),
		});
		await inbound(sandbox, { text: 'nobody listens' });
		const result = await run(sandbox, {
			resource: 'log',
			operation: 'getMany',
			category: 'webhook',
		});
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(1);
		expect(result.items[0].json).toEqual({
			created_at: expect.any(String),
			category: 'webhook',
			event: 'message.inbound',
			success: false,
			reason: expect.any(String),
			wa_message_id: expect.any(String),
		});
		// A category whose entries have few of the fields: the ones they have.
		const keys = await run(sandbox, { resource: 'log', operation: 'getMany', category: 'keys' });
		for (const { json } of keys.items)
			expect(Object.keys(json)).toEqual(['created_at', 'category']);
	});

	it('Key → Get Many: id, scopes, allowed_numbers (null: every number), revoked; never a key value', async () => {
		const result = await run(sandbox, { resource: 'key', operation: 'getMany', returnAll: true });
		expect(result.error).toBeUndefined();
		const byId = Object.fromEntries(result.items.map(({ json }) => [json.id, json]));
		expect(byId.key_all).toEqual({
			id: 'key_all',
			scopes: expect.any(Array),
			allowed_numbers: null,
			revoked: false,
		});
		expect(byId.key_one_number.allowed_numbers).toEqual([sandbox.numbers[0].phone_number_id]);
		expect(byId.key_revoked).toMatchObject({ revoked: true });
		const output = JSON.stringify(result.runData);
		for (const value of Object.values(sandbox.keys)) expect(output).not.toContain(value);
		for (const { json } of result.items) expect(json).not.toHaveProperty('last4');
	});
});

/**
 * The tool variant n8n makes of a usableAsTool node (n8n's tool-generation/ai-tools.ts,
 * convertNodeToAiTool, read in n8n 2.41.1): the same node and execute(), its type name + "Tool",
 * no main input, one ai_tool output, and the Tool Description fields.
 */
function asAiTool(nodeType: INodeType): INodeType {
	const description = deepCopy(nodeType.description) as INodeTypeDescription;
	description.name += 'Tool';
	description.displayName += ' Tool';
	description.inputs = [];
	description.outputs = [NodeConnectionTypes.AiTool];
	delete description.usableAsTool;
	description.properties.unshift(
		{
			displayName: 'Tool Description',
			name: 'descriptionType',
			type: 'options',
			noDataExpression: true,
			options: [
				{ name: 'Set Automatically', value: 'auto' },
				{ name: 'Set Manually', value: 'manual' },
			],
			default: 'auto',
		},
		{
			displayName: 'Description',
			name: 'toolDescription',
			type: 'string',
			default: nodeType.description.description,
			displayOptions: { show: { descriptionType: ['manual'] } },
		},
	);
	return Object.create(nodeType, { description: { value: description } }) as INodeType;
}

interface CalledTool {
	name: string;
	description: string;
	arguments: string[];
	/** What the tool returned to the agent (n8n hands it the JSON text). */
	answer: unknown;
}

/**
 * Stands in for n8n's AI Agent node: asks n8n-core for the tools connected to its ai_tool
 * input (getInputConnectionData, as the agent does) and calls each with the arguments a model
 * would give, taken from its input item's `toolArguments`.
 */
class ToolCallingAgent implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Tool-Calling Agent (test)',
		name: 'toolCallingAgent',
		group: ['transform'],
		version: 1,
		description: 'Calls its tools once each',
		defaults: { name: 'Agent' },
		inputs: [
			NodeConnectionTypes.Main,
			{ type: NodeConnectionTypes.AiTool, displayName: 'Tools', required: true },
		],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const tools = (await this.getInputConnectionData(NodeConnectionTypes.AiTool, 0)) as Array<{
			name: string;
			description: string;
			schema: { shape: Record<string, unknown> };
			invoke: (args: unknown) => Promise<string>;
		}>;
		const args = this.getInputData()[0].json.toolArguments;
		const called: INodeExecutionData[] = [];
		for (const tool of tools) {
			const answer: unknown = JSON.parse(await tool.invoke(args));
			const json = {
				name: tool.name,
				description: tool.description,
				arguments: Object.keys(tool.schema.shape),
				answer,
			} satisfies CalledTool;
			called.push({ json: json as unknown as INodeExecutionData['json'] });
		}
		return [called];
	}
}

describeWithSandbox(
	'Message → Get Many as an AI Agent tool, called as the agent calls it',
	(sandbox) => {
		it("the model's arguments ($fromAI) fill the contact and the limit; the agent gets simplified records", async () => {
			const other = '+15559876543';
			for (const text of ['one', 'two', 'three']) await inbound(sandbox, { text });
			await inbound(sandbox, { from: other, contact_name: 'Bob', text: 'not this contact' });
			const toolNode: INode = {
				id: 'tool',
				name: 'Read messages',
				type: TOOL_TYPE,
				typeVersion: 1.1,
				position: [200, 200],
				// Simplify is left at its default: on.
				parameters: {
					resource: 'message',
					operation: 'getMany',
					limit: "={{ $fromAI('limit', 'How many of the latest messages to read', 'number') }}",
					filters: {
						contact: "={{ $fromAI('contact', 'Phone number of the contact, e.g. +33612345678') }}",
					},
				},
				credentials: { [CREDENTIAL_TYPE]: { id: '1', name: 'sandbox' } },
			};
			const agent: INode = {
				id: 'agent',
				name: 'Agent',
				type: 'test.toolCallingAgent',
				typeVersion: 1,
				position: [200, 0],
				parameters: {},
			};
			const trigger: INode = {
				id: 'trigger',
				name: MANUAL_TRIGGER_NODE_NAME,
				type: MANUAL_TRIGGER_TYPE,
				typeVersion: 1,
				position: [0, 0],
				parameters: {},
			};
			const result = await runWorkflow({
				nodes: [trigger, agent, toolNode],
				connections: {
					[trigger.name]: { main: [[{ node: 'Agent', type: 'main', index: 0 }]] },
					'Read messages': { ai_tool: [[{ node: 'Agent', type: 'ai_tool', index: 0 }]] },
				},
				nodeTypes: {
					'test.toolCallingAgent': new ToolCallingAgent(),
					[TOOL_TYPE]: asAiTool(new BusinessMessaging()),
				},
				credentials: credentialsFor(sandbox, 'all'),
				inputItems: [{ json: { toolArguments: { contact: CONTACT, limit: 2 } } }],
			});
			expect(result.error).toBeUndefined();
			const [called] = result.output('Agent').map((item) => item.json as unknown as CalledTool);
			expect(called.name).toBe('Read_messages');
			expect(called.arguments.sort()).toEqual(['contact', 'limit']);
			// Newest first, this contact only, two of them, simplified.
			expect(called.answer).toEqual([
				expect.objectContaining({ from: CONTACT, text: 'three' }),
				expect.objectContaining({ from: CONTACT, text: 'two' }),
			]);
			for (const record of called.answer as Array<Record<string, unknown>>)
				expect(Object.keys(record).every((key) => MESSAGE_FIELDS.includes(key))).toBe(true);
			// n8n records the tool's run as the sub-node's ai_tool output.
			const toolRun = result.runData['Read messages']?.[0];
			expect(toolRun?.data?.ai_tool?.[0]?.[0]?.json).toEqual({ response: called.answer });
			expect(toolRun?.inputOverride?.ai_tool?.[0]?.[0]?.json).toEqual({
				contact: CONTACT,
				limit: 2,
			});
		});
	},
);
