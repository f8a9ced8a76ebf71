// When n8n answers a delivery (receiving/answerDelivery.ts): the service logs a 2xx as delivered and
// never sends it again, so the answer leaves only once n8n stored the execution. Deliveries go from
// the sandbox to the trigger over HTTP; execute() runs in n8n-core's ExecuteContext.
import type { INodeExecutionData } from 'n8n-workflow';

import { BusinessMessagingTrigger } from '../../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node';
import * as answerDelivery from '../../../nodes/BusinessMessagingTrigger/receiving/answerDelivery';
import { useSandbox } from '../../support';
import {
	contactWrites,
	servedTrigger,
	triggerExecuteContext,
	triggerNode,
	type Json,
	type ServedTrigger,
} from './helpers';

const sb = useSandbox({ reset: 'afterEach' });
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
	for (const close of cleanup.splice(0)) await close();
	jest.restoreAllMocks();
});

const trigger = new BusinessMessagingTrigger();
const pause = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));

async function served(): Promise<ServedTrigger> {
	const running = await servedTrigger(sb, {}, { nodeId: 'n1' });
	cleanup.push(async () => await running.close());
	return running;
}

/** The contact writes; resolves with the sandbox's delivery once the trigger answered (or failed). */
function writes(text: string): { settled: () => boolean; delivery: Promise<Json> } {
	let done = false;
	const delivery = contactWrites(sb, text).then((answer) => {
		done = true;
		return (answer as { delivery: Json }).delivery;
	});
	return { settled: () => done, delivery };
}

async function webhookReturned(running: ServedTrigger): Promise<INodeExecutionData[][]> {
	for (let waited = 0; waited < 5_000; waited += 20) {
		const started = running.results.find((result) => result.workflowData);
		if (started?.workflowData) return started.workflowData;
		await pause(20);
	}
	throw new Error('webhook() returned no execution');
}

/** The trigger's execute() in the execution n8n stored for `items` (mode 'webhook'). */
async function executionRuns(running: ServedTrigger, items: INodeExecutionData[][]) {
	const node = triggerNode({}, 2);
	const context = triggerExecuteContext(trigger, node, items[0], 'webhook', {
		workflowId: running.harness.workflowId,
	});
	return await trigger.execute!.call(context);
}

describe('answersBeforeStoring (pure): which n8n line answers a delivery before it stores the execution', () => {
	it("reads it from n8n-workflow's exports: 2.x exports IsolateError, 1.x does not", () => {
		expect(answerDelivery.answersBeforeStoring({ IsolateError: class {} })).toBe(false);
		expect(answerDelivery.answersBeforeStoring({ NodeApiError: class {} })).toBe(true);
		// The n8n-workflow these tests run with is 2.x.
		expect(answerDelivery.n8nAnswersFirst()).toBe(false);
	});
});

describe('n8n 1.x (it answers before it stores the execution): the trigger answers once the execution is stored', () => {
	beforeEach(() => {
		jest.spyOn(answerDelivery, 'n8nAnswersFirst').mockReturnValue(true);
	});

	it("the delivery is not answered when webhook() returns, and is answered 200 {received: true} when the execution's trigger runs", async () => {
		const running = await served();
		const sent = writes('hello');
		const items = await webhookReturned(running);
		expect(running.results[0].noWebhookResponse).toBe(true);
		await pause(300);
		expect(sent.settled()).toBe(false);

		const outputs = await executionRuns(running, items);
		expect(outputs[0].map((item) => (item.json.data as Json).text)).toEqual(['hello']);
		// Answered by execute(), not by the fallback a second and a half later.
		await pause(200);
		expect(sent.settled()).toBe(true);
		expect(await sent.delivery).toMatchObject({ delivered: true, status: 200 });
		const [delivery] = sb.state().deliveries;
		expect(delivery).toMatchObject({ delivered: true, status: 200 });
		expect(JSON.parse(String(delivery.answer))).toEqual({ received: true });
	});

	it('n8n killed before it stored the execution: no 2xx, the service logs the delivery failed (the catch-up brings it)', async () => {
		const running = await served();
		const sent = writes('killed before stored');
		await webhookReturned(running);
		await running.down();
		expect(await sent.delivery).toMatchObject({ delivered: false });
	});

	it(`the execution runs in another process (queue mode): answered after ${answerDelivery.HOLD_ANSWER_MS} ms, by when n8n stored it`, async () => {
		await served();
		const sent = writes('queue mode');
		await pause(answerDelivery.HOLD_ANSWER_MS - 500);
		expect(sent.settled()).toBe(false);
		expect(await sent.delivery).toMatchObject({ delivered: true, status: 200 });
	});
});

describe('n8n 2.x (it stores the execution, then answers): webhook() leaves the answer to n8n', () => {
	it('the delivery is answered with {received: true} without waiting for execute()', async () => {
		const running = await served();
		expect(await writes('hello').delivery).toMatchObject({ delivered: true, status: 200 });
		expect(running.results[0].noWebhookResponse).toBeUndefined();
		expect(running.results[0].body).toEqual({ received: true });
	});
});
