// When the service hears back for a delivery that starts an execution (receiving/answerTiming.ts).
// n8n 1.x answers an 'onReceived' webhook before it stores the execution, so there the trigger
// answers from execute(), through n8n-core's real ExecuteContext and its 'sendResponse' hook (what
// n8n 1.123.81 resolves the webhook's response with). The kill -9 suite shows it on real 1.x.
import * as actualWorkflow from 'n8n-workflow';
import type {
	IExecuteResponsePromiseData,
	INodeExecutionData,
	INodeType,
	IWorkflowBase,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { ExecutionLifecycleHooks } from 'n8n-core';
import { DataDeduplicationService } from 'n8n-core/dist/data-deduplication-service';

import { harnessEnvironment } from '../../harness/environment';
import { triggerExecuteContext, triggerNode } from './helpers';

import { BusinessMessagingTrigger } from '../../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node';
import {
	answersBeforeStoring,
	startExecution,
} from '../../../nodes/BusinessMessagingTrigger/receiving/answerTiming';

/** What happened, in order: the answer sent, the run-once store called. */
const events: string[] = [];
const answers: IExecuteResponsePromiseData[] = [];

beforeAll(async () => {
	await harnessEnvironment();
	await DataDeduplicationService.init({
		checkProcessedAndRecord: async (items: Array<string | number>) => {
			events.push('run-once store');
			return { new: items, processed: [] };
		},
	} as never);
});
beforeEach(() => {
	events.length = 0;
	answers.length = 0;
});

type Timing = typeof import('../../../nodes/BusinessMessagingTrigger/receiving/answerTiming');

/** The trigger class and its answer timing as n8n 1.x loads them: n8n-workflow without IsolateError. */
function loadOnLine1(): { Trigger: new () => INodeType; timing: Timing } {
	let loaded = { Trigger: BusinessMessagingTrigger as new () => INodeType, timing: {} as Timing };
	jest.isolateModules(() => {
		const { IsolateError: _absent, ...line1 } = actualWorkflow as Record<string, unknown>;
		jest.doMock('n8n-workflow', () => line1);
		loaded = {
			Trigger: (
				require('../../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node') as {
					BusinessMessagingTrigger: new () => INodeType;
				}
			).BusinessMessagingTrigger,
			timing: require('../../../nodes/BusinessMessagingTrigger/receiving/answerTiming') as Timing,
		};
	});
	return loaded;
}

async function execute(
	nodeType: INodeType,
	mode: WorkflowExecuteMode,
): Promise<INodeExecutionData[][]> {
	const hooks = new ExecutionLifecycleHooks(mode, '1', { id: 'w1' } as IWorkflowBase);
	hooks.addHandler('sendResponse', (response) => {
		events.push('answered');
		answers.push(response);
	});
	const items: INodeExecutionData[] = [
		{
			json: { event: 'message.inbound', data: { wa_message_id: 'wamid.1', from: '+33612345678' } },
		},
	];
	const context = triggerExecuteContext(nodeType, triggerNode({}, 2), items, mode, { hooks });
	return (await nodeType.execute!.call(context)) as INodeExecutionData[][];
}

describe('which n8n line answers before storing', () => {
	it('reads the line from n8n-workflow: 2.x exports IsolateError, 1.x does not', () => {
		expect(answersBeforeStoring(actualWorkflow)).toBe(false);
		const { IsolateError: _absent, ...line1 } = actualWorkflow as Record<string, unknown>;
		expect(answersBeforeStoring(line1)).toBe(true);
	});

	it('on 2.x the event webhook answers on receipt (n8n stores the execution first) and execute() sends nothing', async () => {
		const trigger = new BusinessMessagingTrigger();
		expect(trigger.description.webhooks![0].responseMode).toBe('onReceived');
		expect(await execute(trigger, 'webhook')).toHaveLength(1);
		expect(answers).toEqual([]);
	});
});

describe('on 1.x the delivery is answered from execute(), once n8n stored the execution', () => {
	const { Trigger: Line1Trigger, timing: line1Timing } = loadOnLine1();

	it("sets the event webhook to 'responseNode' and leaves the registration webhook alone", () => {
		const webhooks = new Line1Trigger().description.webhooks!;
		expect(webhooks[0].responseMode).toBe('responseNode');
		expect(webhooks[1].responseMode).toBe('onReceived');
	});

	it('answers 200 {received: true} first, before the run-once store is called', async () => {
		const [output] = await execute(new Line1Trigger(), 'webhook');
		expect(output).toHaveLength(1);
		expect(answers).toHaveLength(1);
		const [{ body, headers, statusCode }] = answers as Array<Record<string, unknown>>;
		// A Buffer: n8n 1.x writes it to the open response itself (its other branch would answer twice).
		expect(Buffer.isBuffer(body)).toBe(true);
		expect(JSON.parse(String(body))).toEqual({ received: true });
		expect({ headers, statusCode }).toEqual({
			headers: { 'content-type': 'application/json' },
			statusCode: 200,
		});
		expect(events).toEqual(['answered', 'run-once store']);
	});

	it('webhook() leaves the response open (noWebhookResponse) when it starts an execution, so n8n saves its static data first', () => {
		const workflowData = [[{ json: { event: 'message.inbound' } }]];
		expect(line1Timing.startExecution(workflowData, { received: true })).toEqual({
			noWebhookResponse: true,
			workflowData,
		});
		expect(startExecution(workflowData, { received: true })).toEqual({
			webhookResponse: { received: true },
			workflowData,
		});
	});

	it('answers a test event (manual) too, and never an execution the catch-up started', async () => {
		await execute(new Line1Trigger(), 'manual');
		expect(answers).toHaveLength(1);
		answers.length = 0;
		await execute(new Line1Trigger(), 'trigger');
		expect(answers).toEqual([]);
	});
});
