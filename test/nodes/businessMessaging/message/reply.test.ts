import {
	apiRequests,
	createKey,
	errorOf,
	inbound,
	injectFault,
	pairedIndexes,
	run,
} from '../helpers';
import { CONTACT, describeWithSandbox, inboundItem, OTHER_CONTACT } from '../../../support';

const REPLY = { resource: 'message', operation: 'reply' };

describeWithSandbox('Message → Reply', (sandbox) => {
	let first: string;
	let second: string;
	let third: string;
	beforeAll(() => {
		[first, second, third] = sandbox.numbers.map((n) => n.phone_number_id);
	});

	const replies = () => apiRequests(sandbox, '/v1/messages/reply');

	it('right after the trigger needs only the text: To and From come from the event', async () => {
		const record = await inbound(sandbox, { number: second });
		const result = await run(
			sandbox,
			{ ...REPLY, text: 'Thanks!' },
			{ inputItems: [inboundItem(record)] },
		);
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(1);
		expect(result.items[0].json).toMatchObject({
			to: CONTACT,
			from: second,
			text: 'Thanks!',
			direction: 'out',
		});
		expect(pairedIndexes(result.items)).toEqual([0]);
		expect(sandbox.state().messages).toEqual([
			expect.objectContaining({ to: CONTACT, from: second }),
		]);
	});

	it('a key limited to one number may leave From empty', async () => {
		await inbound(sandbox, { number: first });
		const result = await run(
			sandbox,
			{ ...REPLY, to: CONTACT, text: 'Hi', from: '' },
			{ key: 'oneNumber' },
		);
		expect(result.error).toBeUndefined();
		expect(result.items[0].json).toMatchObject({ from: first, to: CONTACT });
	});

	it('without an event and with From left at its default, From is simply not sent', async () => {
		await inbound(sandbox, { number: first });
		const result = await run(sandbox, { ...REPLY, to: CONTACT, text: 'Hi' }, { key: 'oneNumber' });
		expect(result.error).toBeUndefined();
		expect(result.items[0].json.from).toBe(first);
	});

	it("From outside the key's allowed numbers: says so", async () => {
		await inbound(sandbox, { number: third });
		const error = errorOf(
			await run(sandbox, { ...REPLY, to: CONTACT, text: 'Hi', from: third }, { key: 'twoNumbers' }),
		);
		expect(error.message).toMatch(/403/);
		expect(error.message).toContain(`"${third}" is not among the numbers the key is limited to`);
		expect(sandbox.state().messages).toHaveLength(0);
	});

	it('From missing on a key limited to several numbers: says From is required', async () => {
		await inbound(sandbox, { number: first });
		const error = errorOf(
			await run(sandbox, { ...REPLY, to: CONTACT, text: 'Hi', from: '' }, { key: 'twoNumbers' }),
		);
		expect(error.message).toMatch(/From is required/);
		expect(error.description).toMatch(/"number" field of the inbound event/);
	});

	it('a closed 24-hour window: says so and that a template message is needed', async () => {
		const record = await inbound(sandbox, { number: first });
		sandbox.advanceClock(24 * 60 * 60 + 60);
		const error = errorOf(
			await run(sandbox, { ...REPLY, text: 'Late' }, { inputItems: [inboundItem(record)] }),
		);
		expect(error.message).toMatch(/24-hour reply window is closed/);
		expect(error.message).toMatch(/template message/);
		expect(sandbox.state().messages).toHaveLength(0);
	});

	it('a key without messages:send: names the scope', async () => {
		const record = await inbound(sandbox, { number: first });
		const error = errorOf(
			await run(
				sandbox,
				{ ...REPLY, text: 'Hi' },
				{ key: 'noSend', inputItems: [inboundItem(record)] },
			),
		);
		expect(error.message).toMatch(/403/);
		expect(error.message).toMatch(/messages:send/);
	});

	it('a revoked key: says to make a new one in the Keys tab', async () => {
		const record = await inbound(sandbox);
		const error = errorOf(
			await run(
				sandbox,
				{ ...REPLY, text: 'Hi' },
				{ key: 'revoked', inputItems: [inboundItem(record)] },
			),
		);
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
		expect(error.description).toMatch(/Keys tab/);
	});

	it.each(['status_500', 'reset', 'status_429'] as const)(
		'is never sent twice: a %s on the reply is reported, not retried',
		async (kind) => {
			const record = await inbound(sandbox);
			await injectFault(sandbox, { kind, count: 3, path_prefix: '/v1/messages/reply' });
			const result = await run(
				sandbox,
				{ ...REPLY, text: 'Once' },
				{ inputItems: [inboundItem(record)] },
			);
			expect(errorOf(result).message).toMatch(/Message → Reply/);
			expect(replies()).toHaveLength(1);
		},
	);

	it('a reset on a reply says it was not sent again', async () => {
		const record = await inbound(sandbox);
		await injectFault(sandbox, { kind: 'reset', path_prefix: '/v1/messages/reply' });
		const error = errorOf(
			await run(sandbox, { ...REPLY, text: 'Once' }, { inputItems: [inboundItem(record)] }),
		);
		expect(error.description).toMatch(/not sent again/);
	});

	describe('bad input is refused before anything is sent', () => {
		it.each([
			['empty text from an expression', { text: '={{ "" }}' }, /^Text is empty/],
			['whitespace text', { text: '   \n' }, /^Text is empty/],
			[
				'text from an expression that is a number',
				{ text: '={{ 42 }}' },
				/^Text must be text, got a number/,
			],
			['whitespace To', { to: '  ', text: 'Hi' }, /^To is empty/],
			[
				'To that is a number',
				{ to: '={{ 15557654321 }}', text: 'Hi' },
				/^To must be text, got a number/,
			],
			[
				'From that is an object',
				{ text: 'Hi', from: '={{ { id: 1 } }}' },
				/^From \(Phone Number ID\) must be text, got an object/,
			],
		])('%s', async (_label, parameters, message) => {
			const record = await inbound(sandbox);
			const result = await run(
				sandbox,
				{ ...REPLY, ...parameters },
				{ inputItems: [inboundItem(record)] },
			);
			const error = errorOf(result);
			expect(error.message).toMatch(message);
			expect((result.nodeError('Business Messaging') as { name?: string }).name).toBe(
				'NodeOperationError',
			);
			expect(replies()).toHaveLength(0);
		});

		it.each([
			['Text', { text: '' }],
			['To', { to: '', text: 'Hi' }],
		])(
			'a literally empty %s is stopped by n8n itself (required parameter)',
			async (field, parameters) => {
				const record = await inbound(sandbox);
				await expect(
					run(sandbox, { ...REPLY, ...parameters }, { inputItems: [inboundItem(record)] }),
				).rejects.toThrow(`Parameter "${field}" is required`);
				expect(replies()).toHaveLength(0);
			},
		);

		it('To is empty when the input is not an event and To was left at its default', async () => {
			const error = errorOf(
				await run(sandbox, { ...REPLY, text: 'Hi' }, { inputItems: [{ json: { foo: 1 } }] }),
			);
			expect(error.message).toMatch(
				/^To is empty: enter it.*After the trigger node it is the event's data\.from/,
			);
			expect(replies()).toHaveLength(0);
		});
	});

	it('continueOnFail: failed items become error items, the others go on, all paired', async () => {
		const good = await inbound(sandbox, { number: first });
		const otherGood = await inbound(sandbox, { from: OTHER_CONTACT, number: second });
		const noWindow = { ...good, from: '+15559999999' };
		const result = await run(
			sandbox,
			{ ...REPLY, text: '={{ $json.text ?? "Thanks" }}' },
			{
				continueOnFail: true,
				inputItems: [
					inboundItem(good),
					{ json: { data: { from: CONTACT, number: first }, text: '  ' } },
					inboundItem(noWindow),
					inboundItem(otherGood),
				],
			},
		);
		expect(result.error).toBeUndefined();
		expect(pairedIndexes(result.items)).toEqual([0, 1, 2, 3]);
		expect(result.items[0].json).toMatchObject({ to: CONTACT, from: first });
		expect(result.items[1].json.error).toBe(
			'Text is empty: enter it, or check that the expression that fills it resolves for this item',
		);
		expect(result.items[2].json.error).toMatch(/24-hour reply window is closed/);
		expect(result.items[3].json).toMatchObject({ to: OTHER_CONTACT, from: second });
		expect(sandbox.state().messages).toHaveLength(2);
	});

	it('without continueOnFail, the first failing item stops the node and is named', async () => {
		const good = await inbound(sandbox);
		const result = await run(
			sandbox,
			{ ...REPLY, text: 'Hi' },
			{
				inputItems: [
					inboundItem(good),
					{ json: { data: { from: CONTACT } }, pairedItem: { item: 0 } },
					inboundItem(good),
				],
				key: await createKey(sandbox, ['messages:send'], [first]),
			},
		);
		// Item 1 has no number: the one-number key implies it, so it is sent too.
		expect(result.error).toBeUndefined();
		expect(sandbox.state().messages).toHaveLength(3);

		sandbox.reset();
		const again = await inbound(sandbox);
		const failing = await run(
			sandbox,
			{ ...REPLY, text: '={{ $json.text }}' },
			{
				inputItems: [
					{ json: { ...inboundItem(again).json, text: 'ok' } },
					{ json: { ...inboundItem(again).json, text: '' } },
					{ json: { ...inboundItem(again).json, text: 'never' } },
				],
			},
		);
		const error = failing.nodeError('Business Messaging') as {
			message: string;
			context?: { itemIndex?: number };
		};
		expect(error.message).toBe(
			'Text is empty: enter it, or check that the expression that fills it resolves for this item',
		);
		expect(error.context?.itemIndex).toBe(1);
		expect(sandbox.state().messages.map((m) => m.text)).toEqual(['ok']);
	});
});
