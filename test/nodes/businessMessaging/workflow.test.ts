// Trigger → Download → Reply as a real workflow: the trigger node, served over HTTP and
// activated against the sandbox, receives the sandbox's own signed delivery; its output is
// what the Business Messaging nodes get, with their parameters left at their defaults.
import type { INode, INodeExecutionData } from 'n8n-workflow';

import {
	recordReceived,
	runWorkflow,
	serveWebhook,
	webhookHarness,
	type ServedWebhook,
} from '../../harness';
import {
	ACTION_TYPE,
	CONTACT,
	CREDENTIAL_TYPE,
	describeWithSandbox,
	TRIGGER_NAME,
	TRIGGER_TYPE,
} from '../../support';
import { credentialsFor, inbound, pairedIndexes } from './helpers';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

describeWithSandbox('Trigger → Download → Reply workflow', (sandbox) => {
	let served: ServedWebhook | undefined;
	afterAll(async () => {
		await served?.close();
	});

	async function receiveOneEvent(send: () => Promise<unknown>): Promise<INodeExecutionData[]> {
		const harness = await webhookHarness({
			type: TRIGGER_TYPE,
			parameters: { registration: 'automatic' },
			credentials: credentialsFor(sandbox, 'all'),
		});
		const results = recordReceived(harness);
		served = await serveWebhook(harness);
		await harness.activate();
		await send();
		await harness.deactivate();
		await served.close();
		served = undefined;
		expect(results).toHaveLength(1);
		const items = results[0].workflowData?.[0] ?? [];
		expect(items).toHaveLength(1);
		return items;
	}

	function node(name: string, parameters: INode['parameters'], x: number): INode {
		return {
			id: name,
			name,
			type: ACTION_TYPE,
			typeVersion: 1,
			position: [x, 0],
			parameters,
			credentials: { [CREDENTIAL_TYPE]: { id: 'bm', name: 'Business Messaging account' } },
		};
	}

	it('downloads the media and replies to the sender from the receiving number, with nothing typed but the text', async () => {
		const number = sandbox.numbers[1].phone_number_id;
		const events = await receiveOneEvent(
			async () =>
				await inbound(sandbox, {
					number,
					type: 'image',
					text: '',
					media: {
						mime: 'image/png',
						data_base64: PNG.toString('base64'),
						filename: 'receipt.png',
					},
				}),
		);
		expect(events[0].json).toMatchObject({
			event: 'message.inbound',
			data: { from: CONTACT, number },
		});

		const trigger: INode = {
			id: 'trigger',
			name: TRIGGER_NAME,
			type: TRIGGER_TYPE,
			typeVersion: 1,
			position: [0, 0],
			parameters: { registration: 'automatic' },
			credentials: { [CREDENTIAL_TYPE]: { id: 'bm', name: 'Business Messaging account' } },
			webhookId: 'wh',
		};
		const result = await runWorkflow({
			nodes: [
				trigger,
				node('Download', { resource: 'media', operation: 'download' }, 200),
				node(
					'Reply',
					{ resource: 'message', operation: 'reply', text: 'Got your receipt, thanks!' },
					400,
				),
			],
			connections: {
				[trigger.name]: { main: [[{ node: 'Download', type: 'main', index: 0 }]] },
				Download: { main: [[{ node: 'Reply', type: 'main', index: 0 }]] },
			},
			credentials: credentialsFor(sandbox, 'twoNumbers'),
			inputItems: events,
		});
		expect(result.error).toBeUndefined();
		expect(await result.binary('Download', 0)).toEqual(PNG);
		expect(result.output('Download')[0].binary?.data.fileName).toBe('receipt.png');
		const [reply] = result.output('Reply');
		expect(reply.json).toMatchObject({
			to: CONTACT,
			from: number,
			text: 'Got your receipt, thanks!',
		});
		expect(pairedIndexes(result.output('Reply'))).toEqual([0]);
		expect(sandbox.state().messages).toEqual([
			expect.objectContaining({ to: CONTACT, from: number }),
		]);
	});
});
