// Combine a Contact's Messages (routing/burst.ts) when the service answers the spec's guesses
// another plausible way: every list shape, body/created records and ignored filters.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import type { WebhookReceiveResult } from '../../harness';
import type { Answers } from '../../sandbox/answers';
import { CONTACT, describeWithSandbox, OTHER_CONTACT } from '../../support';
import type { Sandbox } from '../../sandbox';
import { inboundFrom, servedTrigger, type ServedTrigger } from './helpers';

const COMBINE = { options: { combineMessages: true, quietPeriod: 1, longestWait: 30 } };
const SHAPES: Array<Answers['list_shape']> = [
	'data_cursor',
	'items_next_url',
	'items_next_token',
	'page_number',
	'bare_array',
];

function burstTests(sb: Sandbox) {
	const open: ServedTrigger[] = [];
	afterEach(async () => {
		for (const running of open.splice(0)) await running.close();
	});
	const write = async (from: string, text: string) => await inboundFrom(sb, from, text);
	const runAll = async (running: ServedTrigger, results: WebhookReceiveResult[]) =>
		(
			await Promise.all(
				results.map(async (result) => await running.harness.execute(result.workflowData ?? [])),
			)
		).flatMap((outputs) => outputs.flat());

	it('one item per burst, its texts read from body, another contact its own burst', async () => {
		const running = await servedTrigger(sb, COMBINE);
		open.push(running);
		await write(CONTACT, 'hi');
		await write(OTHER_CONTACT, 'hello from Bob');
		await write(CONTACT, 'order 4411');
		const items: INodeExecutionData[] = await runAll(running, running.results);
		expect(items.map((item) => item.json.text).sort()).toEqual([
			'hello from Bob',
			'hi\norder 4411',
		]);
		const ada = items.find((item) => item.json.contact === CONTACT)!;
		expect(ada.json.combine_problem).toBeUndefined();
		const messages = ada.json.messages as IDataObject[];
		expect(messages.map((m) => m.text)).toEqual(['hi', 'order 4411']);
		expect(messages.every((m) => typeof m.created_at === 'string')).toBe(true);
	});
}

describe.each(SHAPES)('combine, list_shape=%s, record_fields=body_created', (listShape) => {
	describeWithSandbox('in the trigger, against the sandbox', burstTests, {
		answers: { list_shape: listShape, record_fields: 'body_created', inbound_filters: 'ignored' },
	});
});
