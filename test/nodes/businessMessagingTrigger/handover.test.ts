// While a Person Answers (hand over): the pure decision, the outputs the editor shows, and the
// trigger fed by the sandbox's own signed deliveries (echoes from the business app, then inbound).
import { BusinessMessagingTrigger } from '../../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node';
import { handOverDecision } from '../../../nodes/BusinessMessagingTrigger/routing/handOver';
import { handOverSettings } from '../../../nodes/BusinessMessagingTrigger/options';
import { nodeOutputs, recordReceived, serveWebhook, type ServedWebhook } from '../../harness';
import { HarnessCredentialsHelper } from '../../harness/credentials';
import { CONTACT, NUMBER, OTHER_CONTACT, useSandbox } from '../../support';
import { control, trigger, triggerNode, type Json } from './helpers';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const at = (minutesAgo: number) => new Date(NOW - minutesAgo * 60 * 1000).toISOString();
const echo = (minutesAgo: number, to = CONTACT, number = NUMBER) => ({
	direction: 'echo',
	to,
	number,
	created_at: at(minutesAgo),
});

describe('handOverDecision (pure)', () => {
	it('an echo to the contact on the number within N minutes: handed over, with its time', () => {
		expect(handOverDecision([echo(29)], CONTACT, NUMBER, NOW, 30)).toEqual({
			handedOver: true,
			lastEchoAt: at(29),
		});
	});
	it('the newest echo counts, in any order; older than N minutes is not a hand over', () => {
		expect(handOverDecision([echo(45), echo(31)], CONTACT, NUMBER, NOW, 30)).toEqual({
			handedOver: false,
			lastEchoAt: at(31),
		});
		expect(
			handOverDecision([echo(45), echo(5), echo(31)], CONTACT, NUMBER, NOW, 30).handedOver,
		).toBe(true);
	});
	it('echoes to another contact or from another number do not count', () => {
		expect(
			handOverDecision([echo(1, OTHER_CONTACT), echo(1, CONTACT, '999')], CONTACT, NUMBER, NOW, 30),
		).toEqual({ handedOver: false });
	});
	it("compared on the service's clock: an echo stamped after the message (clock skew) beyond 1 minute is not counted", () => {
		expect(handOverDecision([echo(-0.5)], CONTACT, NUMBER, NOW, 30).handedOver).toBe(true);
		expect(handOverDecision([echo(-5)], CONTACT, NUMBER, NOW, 30).handedOver).toBe(false);
	});
	it('N is the option; nothing or garbage is not a hand over', () => {
		expect(handOverDecision([echo(50)], CONTACT, NUMBER, NOW, 60).handedOver).toBe(true);
		expect(
			handOverDecision(
				[null, 'x', { to: CONTACT, number: NUMBER, created_at: 'nope' }],
				CONTACT,
				NUMBER,
				NOW,
				30,
			),
		).toEqual({ handedOver: false });
	});
	it('settings: off unless chosen, 30 minutes by default', () => {
		expect(handOverSettings({})).toEqual({ mode: 'off', minutes: 30 });
		expect(handOverSettings({ handOver: 'output', handOverMinutes: 5 })).toEqual({
			mode: 'output',
			minutes: 5,
		});
		expect(handOverSettings({ handOver: 'drop', handOverMinutes: 0 })).toEqual({
			mode: 'drop',
			minutes: 30,
		});
	});
});

describe('the Hand Over output in the editor', () => {
	const node = new BusinessMessagingTrigger();
	const outputsFor = (parameters: Record<string, unknown>) =>
		nodeOutputs(node, triggerNode(parameters));
	it('appears last only with "Send to Hand Over Output"', () => {
		expect(outputsFor({ options: { handOver: 'output' } })).toEqual([
			{ type: 'main' },
			{ type: 'main', displayName: 'Hand Over' },
		]);
		expect(outputsFor({ options: { handOver: 'drop' } })).toEqual([{ type: 'main' }]);
		expect(
			outputsFor({
				events: ['message.inbound', 'message.echo'],
				separateOutputs: true,
				options: { handOver: 'output' },
			}),
		).toEqual([
			{ type: 'main', displayName: 'Inbound' },
			{ type: 'main', displayName: 'Echo' },
			{ type: 'main', displayName: 'Hand Over' },
		]);
	});
});

describe('hand over with real deliveries from the sandbox', () => {
	const sb = useSandbox({ reset: 'never' });
	const open: ServedWebhook[] = [];
	afterEach(async () => {
		await Promise.all(open.splice(0).map(async (s) => await s.close()));
		sb.reset();
	});

	async function served(parameters: Record<string, unknown>) {
		const harness = await trigger(sb, parameters as never);
		// The echoes themselves reach the trigger too (acknowledged, not selected): not counted here.
		const results = recordReceived(
			harness,
			(result) => !/not selected/.test(String((result.body as Json)?.ignored)),
		);
		const server = await serveWebhook(harness);
		open.push(server);
		await harness.activate();
		return results;
	}
	const number = () => sb.numbers[0].phone_number_id;
	const write = async (from: string, text = 'hello') =>
		(
			(await control(sb, 'POST', '/inbound', {
				from,
				contact_name: 'Ada',
				number: number(),
				text,
			})) as Json
		).body;
	const personAnswers = async (to: string) =>
		await control(sb, 'POST', '/echo', { to, number: number(), text: 'A person here' });
	/** The echo history's next reads all fail (4: more than the transport's retries of a read). */
	const echoHistoryFails = async (kind: 'status_500' | 'reset') =>
		await control(sb, 'POST', '/faults', { count: 4, kind, path_prefix: '/v1/messages/inbound' });

	it("after an echo, the next inbound of that contact goes to Hand Over; another contact's does not", async () => {
		const results = await served({ options: { handOver: 'output', handOverMinutes: 30 } });
		await write(CONTACT, 'before');
		await personAnswers(CONTACT);
		await write(CONTACT, 'after');
		await write(OTHER_CONTACT, 'someone else');
		expect(
			results.map((r) =>
				r.workflowData?.map((output) =>
					output.map((item) => item.json.data && (item.json.data as Json).text),
				),
			),
		).toEqual([
			[['before'], []],
			[[], ['after']],
			[['someone else'], []],
		]);
		expect(results[1].workflowData![1][0].json.hand_over).toMatchObject({
			active: true,
			minutes: 30,
		});
	});

	it('"Do Not Emit": acknowledged, no execution', async () => {
		const results = await served({ options: { handOver: 'drop' } });
		await personAnswers(CONTACT);
		const sent = await write(CONTACT, 'quiet please');
		expect(sent.delivery).toMatchObject({ delivered: true, status: 200 });
		expect(results).toHaveLength(1);
		expect(results[0].workflowData).toBeUndefined();
		expect(results[0].body).toMatchObject({
			received: true,
			ignored: expect.stringMatching(/person is answering/),
		});
		await write(OTHER_CONTACT, 'not quiet');
		expect(results[1].workflowData).toEqual([
			[expect.objectContaining({ json: expect.objectContaining({ event: 'message.inbound' }) })],
		]);
	});

	it('after the first message, five more within a minute read no credential for the echo history (n8n 2.x: an isolate each); a read is kept through a 500, not through a network failure', async () => {
		const results = await served({ options: { handOver: 'output' } });
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		try {
			await write(CONTACT, 'first');
			reads.mockClear();
			for (let i = 0; i < 5; i++) await write(CONTACT, `message ${i}`);
			expect(results).toHaveLength(6);
			expect(reads).toHaveBeenCalledTimes(0);
			await personAnswers(CONTACT);
			await write(CONTACT, 'after the echo');
			expect(results[6].workflowData![1]).toHaveLength(1);
			await echoHistoryFails('status_500');
			await write(CONTACT, 'during an outage');
			expect(results[7].workflowData![0][0].json.hand_over).toMatchObject({ checked: false });
			// The service failing says nothing of the credential.
			await write(CONTACT, 'after the outage');
			expect(reads).toHaveBeenCalledTimes(0);
			expect(results[8].workflowData![1]).toHaveLength(1);
			// A network failure may be a changed Base URL: the next message reads the credential again.
			await echoHistoryFails('reset');
			await write(CONTACT, 'while the network fails');
			expect(results[9].workflowData![0][0].json.hand_over).toMatchObject({ checked: false });
			await write(CONTACT, 'after the network failure');
			expect(reads).toHaveBeenCalledTimes(1);
			expect(results[10].workflowData![1]).toHaveLength(1);
		} finally {
			reads.mockRestore();
		}
	});

	it('the echo history cannot be read: the message goes where it would have gone, marked unchecked (never lost)', async () => {
		const results = await served({ options: { handOver: 'output' } });
		await personAnswers(CONTACT);
		await echoHistoryFails('status_500');
		await write(CONTACT, 'during an outage');
		const item = results[0].workflowData![0][0];
		expect(results[0].workflowData![1]).toEqual([]);
		expect(item.json.hand_over).toMatchObject({
			checked: false,
			reason: expect.stringMatching(/500/),
		});
	});
});
