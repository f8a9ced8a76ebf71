// The editor and the engine compute the trigger's outputs from OUTPUTS_EXPRESSION with
// n8n's own expression engine; webhook() routes items with outputLayout. They must agree.
import type { IExecuteFunctions, INodeExecutionData, IRunExecutionData } from 'n8n-workflow';
import { ExecuteContext } from 'n8n-core';

import { createAdditionalData } from '../../harness/additional-data';
import { HarnessCredentialTypes, HarnessCredentialsHelper } from '../../harness/credentials';
import { harnessEnvironment } from '../../harness/environment';

import { BusinessMessagingTrigger } from '../../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node';
import {
	OUTPUTS_EXPRESSION,
	outputCount,
	outputLayout,
} from '../../../nodes/BusinessMessagingTrigger/description';
import { nodeOutputs, singleNodeWorkflow } from '../../harness';
import { triggerNode } from './helpers';

const trigger = new BusinessMessagingTrigger();

/** The outputs n8n computes (the workflow fills in parameter defaults first, as n8n does). */
const outputsFor = (parameters: Record<string, unknown>) =>
	nodeOutputs(trigger, triggerNode(parameters));

const NAMES = {
	'message.inbound': 'Inbound',
	'message.status': 'Status',
	'message.echo': 'Echo',
} as const;

describe('outputs', () => {
	it('the expression contains no "{{" or "}}" that would split it', () => {
		const inner = OUTPUTS_EXPRESSION.slice(3, -2);
		expect(inner.includes('}}')).toBe(false);
		expect(inner.includes('{{')).toBe(false);
	});

	it('defaults (inbound only, no separate outputs): one main output', () => {
		expect(outputsFor({})).toEqual([{ type: 'main' }]);
	});

	it.each([
		[{ events: ['message.echo', 'message.inbound', 'message.status'] }],
		[{ events: ['message.echo', 'message.inbound', 'message.status'], separateOutputs: true }],
		[{ events: ['message.status', 'message.echo'], separateOutputs: true }],
		[{ events: ['message.echo'], separateOutputs: true }],
		[{ separateOutputs: true }],
		[{ events: [], separateOutputs: true }],
	])('engine and routing agree for %j', (parameters) => {
		const outputs = outputsFor(parameters) as Array<{ type: string; displayName?: string }>;
		const workflowParameters = {
			events: ['message.inbound'],
			separateOutputs: false,
			...parameters,
		};
		const layout = outputLayout(workflowParameters.events, workflowParameters.separateOutputs);
		if (layout === null) {
			expect(outputs).toEqual([{ type: 'main' }]);
		} else {
			expect(outputs).toEqual(layout.map((event) => ({ type: 'main', displayName: NAMES[event] })));
		}
	});

	it.each([
		[{}],
		[{ events: ['message.echo', 'message.inbound'], separateOutputs: true }],
		[{ options: { handOver: 'output' } }],
		[
			{
				events: ['message.echo', 'message.inbound', 'message.status'],
				separateOutputs: true,
				options: { handOver: 'output' },
			},
		],
		[{ options: { handOver: 'drop' } }],
	])('execute() passes on as many outputs as n8n computes for %j', (parameters) => {
		expect(outputCount(parameters)).toBe(outputsFor(parameters).length);
	});

	it("execute() (n8n's ExecuteContext) passes the Hand Over output on: an item there is not dropped", async () => {
		await harnessEnvironment();
		const parameters = { events: ['message.inbound'], options: { handOver: 'output' } };
		const node = triggerNode(parameters, 2);
		const workflow = singleNodeWorkflow(trigger, node, true);
		const item: INodeExecutionData = {
			json: { event: 'message.inbound', hand_over: { active: true } },
		};
		// What webhook() returned: nothing on the main output, the item on Hand Over.
		const inputData = { main: [[], [item]] };
		const context = new ExecuteContext(
			workflow,
			workflow.getNode(node.name)!,
			createAdditionalData({
				credentialsHelper: new HarnessCredentialsHelper(new HarnessCredentialTypes()),
			}),
			'webhook',
			{} as IRunExecutionData,
			0,
			[item],
			inputData,
			{ node, data: inputData, source: null },
			[],
		);
		const outputs = await trigger.execute!.call(context as unknown as IExecuteFunctions);
		expect(outputs).toEqual([[], [item]]);
	});

	it('lays outputs out in a fixed order whatever the selection order', () => {
		expect(outputLayout(['message.echo', 'message.inbound'], true)).toEqual([
			'message.inbound',
			'message.echo',
		]);
		expect(
			outputsFor({ events: ['message.echo', 'message.inbound'], separateOutputs: true }),
		).toEqual([
			{ type: 'main', displayName: 'Inbound' },
			{ type: 'main', displayName: 'Echo' },
		]);
	});
});
