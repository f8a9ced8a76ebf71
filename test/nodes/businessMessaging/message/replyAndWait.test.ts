// Message → Reply and Wait for Answer through n8n-core's WorkflowExecute: the reply is sent once,
// the execution waits (n8n's putExecutionToWait), the waiting entry the trigger looks for is
// registered, and a resume on n8n's timer (as the wait tracker does it: the stored run data run
// again) continues on the Timed Out output without sending again. The answer's path (the trigger
// posting to the resume URL) runs in real n8n: test/e2e/checks/conversation.ts.
import type { INode } from 'n8n-workflow';

import { findWaiting, waitingKey } from '../../../../nodes/shared/waiting';
import { MANUAL_TRIGGER_NODE_NAME, MANUAL_TRIGGER_TYPE, runWorkflow } from '../../../harness';
import { describeWithSandbox, inboundItem } from '../../../support';
import { CONTACT, NODE_TYPE, credentialsFor, inbound } from '../helpers';

const ASK = 'Ask';

function workflow(parameters: Record<string, unknown>, type = NODE_TYPE) {
	const nodes: INode[] = [
		{ id: 'm', name: MANUAL_TRIGGER_NODE_NAME, type: MANUAL_TRIGGER_TYPE, typeVersion: 1, position: [0, 0], parameters: {} },
		{
			id: 'a',
			name: ASK,
			type,
			typeVersion: 1,
			position: [200, 0],
			parameters: { resource: 'message', operation: 'replyAndWait', text: 'What is your order number?', ...parameters },
			credentials: { businessMessagingApi: { id: '1', name: 'sandbox' } },
		},
	];
	return { nodes, connections: { [MANUAL_TRIGGER_NODE_NAME]: { main: [[{ node: ASK, type: 'main' as const, index: 0 }]] } } };
}

describeWithSandbox('Message → Reply and Wait for Answer', (sandbox) => {
	it('sends the reply once, waits until the limit, registers the wait; the timer resume continues on Timed Out without sending again', async () => {
		const record = await inbound(sandbox, { number: sandbox.numbers[1].phone_number_id });
		const started = Date.now();
		const first = await runWorkflow({
			...workflow({ limitWaitTime: true, waitAmount: 2, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(first.error).toBeUndefined();
		expect(first.execution.status).toBe('waiting');
		const waitTill = first.execution.waitTill!.getTime();
		expect(waitTill).toBeGreaterThanOrEqual(started + 120_000);
		expect(waitTill).toBeLessThan(Date.now() + 121_000);
		expect(sandbox.state().messages).toEqual([
			expect.objectContaining({ to: CONTACT, from: sandbox.numbers[1].phone_number_id, text: 'What is your order number?' }),
		]);
		const found = findWaiting(undefined, [waitingKey(CONTACT, sandbox.numbers[1].phone_number_id)]);
		expect(found?.entry).toMatchObject({ expiresAtMs: waitTill, alsoStart: false });
		expect(found?.entry.resumeUrl).toMatch(/\/webhook-waiting\//);

		const resumed = await runWorkflow({
			...workflow({ limitWaitTime: true, waitAmount: 2, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			resumeFrom: first.execution.data,
		});
		expect(resumed.error).toBeUndefined();
		expect(resumed.execution.status).toBe('success');
		expect(resumed.output(ASK, 0)).toEqual([]);
		const [timedOut] = resumed.output(ASK, 1);
		expect(timedOut.json).toMatchObject({
			timed_out: true,
			waited_for: { contact: CONTACT, number: sandbox.numbers[1].phone_number_id },
			reply: { to: CONTACT, text: 'What is your order number?' },
			data: { from: CONTACT },
		});
		expect(timedOut.pairedItem).toMatchObject({ item: 0 });
		expect(sandbox.state().messages).toHaveLength(1);
	});

	it('without a limit it waits indefinitely (as n8n\'s Wait node)', async () => {
		const record = await inbound(sandbox);
		const result = await runWorkflow({
			...workflow({ limitWaitTime: false }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(result.execution.status).toBe('waiting');
		expect(result.execution.waitTill!.getUTCFullYear()).toBe(3000);
	});

	it('a failed reply does not wait: the error says why and nothing waits', async () => {
		const record = await inbound(sandbox);
		sandbox.advanceClock(24 * 60 * 60 + 60);
		const result = await runWorkflow({
			...workflow({ limitWaitTime: true, waitAmount: 1, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(result.execution.status).not.toBe('waiting');
		expect(result.nodeError(ASK)?.message).toMatch(/24-hour reply window is closed/);
	});
});
