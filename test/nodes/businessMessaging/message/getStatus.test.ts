import {
	apiRequests,
	createKey,
	errorOf,
	inbound,
	injectFault,
	pairedIndexes,
	run,
} from '../helpers';
import { HarnessCredentialsHelper } from '../../../harness/credentials';
import { describeWithSandbox, inboundItem } from '../../../support';

const GET_STATUS = { resource: 'message', operation: 'getStatus' };

describeWithSandbox('Message → Get Status', (sandbox) => {
	let messageId: string;
	beforeEach(async () => {
		const record = await inbound(sandbox);
		const sent = await run(
			sandbox,
			{ resource: 'message', operation: 'reply', text: 'Hi' },
			{ inputItems: [inboundItem(record)] },
		);
		messageId = String(sent.items[0].json.id);
	});

	const statusReads = () => apiRequests(sandbox).filter((r) => r.path !== '/v1/messages/reply');

	it('reads the message as the service returns it', async () => {
		const result = await run(sandbox, { ...GET_STATUS, messageId });
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(1);
		expect(result.items[0].json).toMatchObject({ id: messageId, status: 'sent' });
		expect(pairedIndexes(result.items)).toEqual([0]);
		expect(statusReads().map((r) => r.path)).toEqual([`/v1/messages/${messageId}`]);
	});

	// n8n 2.x builds an expression isolate for a credential read outside an execution (a trigger's
	// webhook): the request reuses the credential the node read and checked, never reads it again.
	it('one credential read per request, retries included (the checked credential is the one sent)', async () => {
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		try {
			await injectFault(sandbox, { kind: 'status_500', path_prefix: '/v1/messages/' });
			const result = await run(sandbox, { ...GET_STATUS, messageId });
			expect(result.error).toBeUndefined();
			expect(statusReads()).toHaveLength(2);
			expect(reads.mock.calls).toHaveLength(1);
		} finally {
			reads.mockRestore();
		}
	});

	it('takes the id from each input item', async () => {
		const result = await run(
			sandbox,
			{ ...GET_STATUS, messageId: '={{ $json.id }}' },
			{
				inputItems: [{ json: { id: messageId } }, { json: { id: ` ${messageId} ` } }],
			},
		);
		expect(result.items.map((item) => item.json.id)).toEqual([messageId, messageId]);
		expect(pairedIndexes(result.items)).toEqual([0, 1]);
	});

	it.each(['../console/keys', 'a/b', '..', '.', '/v1/ping', 'x\\..\\y', 'id\nX-Injected: 1'])(
		'an id such as %j never reaches another endpoint',
		async (id) => {
			const result = await run(sandbox, { ...GET_STATUS, messageId: id });
			const error = errorOf(result);
			expect(error.message).toMatch(
				/^Message ID ".*" is not a valid ID: enter a single ID, without slashes or dot segments$/s,
			);
			expect(statusReads()).toHaveLength(0);
		},
	);

	it('an id with URL-special characters stays inside /v1/messages/', async () => {
		const error = errorOf(await run(sandbox, { ...GET_STATUS, messageId: '%2e%2e?x=1#y' }));
		expect(error.message).toMatch(/failed \(404\)/);
		expect(statusReads().map((r) => r.path)).toEqual(['/v1/messages/%252e%252e%3Fx%3D1%23y']);
	});

	it.each([
		[
			'whitespace',
			'   ',
			/^Message ID is empty: enter it, or check that the expression that fills it/,
		],
		[
			'an object from an expression',
			'={{ { id: 1 } }}',
			/^Message ID must be text, got an object: check the expression that fills it/,
		],
		[
			'a boolean from an expression',
			'={{ true }}',
			/^Message ID must be text, got a boolean: check the expression/,
		],
		[
			'null from an expression',
			'={{ null }}',
			/^Message ID must be text, got null: check the expression/,
		],
	])('%s is refused, naming the field, and nothing is sent', async (_label, messageId, message) => {
		const result = await run(sandbox, { ...GET_STATUS, messageId });
		expect(errorOf(result).message).toMatch(message);
		expect(result.nodeError('Business Messaging')?.name).toBe('NodeOperationError');
		expect(statusReads()).toHaveLength(0);
	});

	it("an unknown id says in the message which id to use, quoting the service's sentence", async () => {
		const error = errorOf(await run(sandbox, { ...GET_STATUS, messageId: 'msg_unknown' }));
		// The message is all the editor shows: the way out must be there, not only in the description.
		expect(error.message).toBe(
			'Message → Get Status failed (404): the service has no message with this ID. Use the "id" a Reply returned (the service\'s message ID), not a wa_message_id: only messages sent through the API have a status. The service said: "No message msg_unknown"',
		);
		expect(error.description).toContain('"message_not_found"');
		expect(error.description).toContain('No message msg_unknown');
	});

	// The spec does not show error bodies: the sandbox answers each plausible shape (issue 37).
	it.each(['error_object', 'detail', 'message', 'text'] as const)(
		"error_body %s: the message says which id to use and quotes the service's sentence",
		async (errorBody) => {
			sandbox.setAnswers({ error_body: errorBody });
			const error = errorOf(await run(sandbox, { ...GET_STATUS, messageId: 'msg_unknown' }));
			expect(error.message).toMatch(
				/^Message → Get Status failed \(404\): the service has no message with this ID\. Use the "id" a Reply returned/,
			);
			expect(error.message).toMatch(/The service said: "No message msg_unknown"$/);
			// A revoked key, in the same shape: the way out, then the service's sentence.
			const revoked = errorOf(await run(sandbox, { ...GET_STATUS, messageId }, { key: 'revoked' }));
			expect(revoked.message).toMatch(
				/^The API key is revoked or unknown \(401\): make one in the console's Keys tab.*\. The service said: "[^"<]+"$/,
			);
		},
	);

	it("a wa_message_id (the platform's id) gets the same advice", async () => {
		const record = await inbound(sandbox);
		const error = errorOf(
			await run(sandbox, { ...GET_STATUS, messageId: String(record.wa_message_id) }),
		);
		expect(error.message).toMatch(/failed \(404\).*not a wa_message_id/);
	});

	it('a key without messages:read: names the scope', async () => {
		const key = await createKey(sandbox, ['balance:read', 'messages:send']);
		const error = errorOf(await run(sandbox, { ...GET_STATUS, messageId }, { key }));
		expect(error.message).toMatch(
			/^The API key lacks the messages:read scope \(403\): use a key with messages:read: make one in the console's Keys tab/,
		);
	});

	it('a revoked key: 401 with what to do', async () => {
		const error = errorOf(await run(sandbox, { ...GET_STATUS, messageId }, { key: 'revoked' }));
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
	});

	it('survives transient faults (500, then a reset) with a bounded retry', async () => {
		await injectFault(sandbox, { kind: 'status_500', path_prefix: '/v1/messages/' });
		await injectFault(sandbox, { kind: 'reset', path_prefix: '/v1/messages/' });
		const result = await run(sandbox, { ...GET_STATUS, messageId });
		expect(result.error).toBeUndefined();
		expect(result.items[0].json.id).toBe(messageId);
		expect(statusReads()).toHaveLength(3);
	});

	it('continueOnFail: a mix of good and bad ids', async () => {
		const result = await run(
			sandbox,
			{ ...GET_STATUS, messageId: '={{ $json.id }}' },
			{
				continueOnFail: true,
				inputItems: [
					{ json: { id: messageId } },
					{ json: { id: 'a/b' } },
					{ json: { id: 'msg_unknown' } },
					{ json: { id: messageId } },
				],
			},
		);
		expect(result.error).toBeUndefined();
		expect(pairedIndexes(result.items)).toEqual([0, 1, 2, 3]);
		expect(result.items[0].json.id).toBe(messageId);
		expect(result.items[1].json.error).toMatch(/Message ID "a\/b" is not a valid ID/);
		expect(result.items[2].json.error).toMatch(/failed \(404\)/);
		expect(result.items[3].json.id).toBe(messageId);
	});
});
