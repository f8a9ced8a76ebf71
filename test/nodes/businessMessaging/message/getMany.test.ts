import {
	apiRequests,
	createKey,
	echo,
	errorOf,
	inbound,
	injectFault,
	pairedIndexes,
	run,
} from '../helpers';
import { CONTACT, describeWithSandbox, OTHER_CONTACT } from '../../../support';

// The raw records (Simplify off); Simplify: simplify.test.ts.
const GET_MANY = { resource: 'message', operation: 'getMany', simple: false };

describeWithSandbox('Message → Get Many (inbound history)', (sandbox) => {
	let first: string;
	let second: string;
	beforeAll(() => {
		[first, second] = sandbox.numbers.map((n) => n.phone_number_id);
	});

	const listRequests = () => apiRequests(sandbox, '/v1/messages/inbound');

	async function seedInbound(count: number, input: Parameters<typeof inbound>[1] = {}) {
		for (let i = 0; i < count; i++) await inbound(sandbox, { text: `m${i}`, ...input });
	}

	it('direction Inbound: one item per stored inbound record, as the service returns them', async () => {
		await seedInbound(3);
		await echo(sandbox, { text: 'from the app' });
		const result = await run(sandbox, { ...GET_MANY, direction: 'in', returnAll: true });
		expect(result.error).toBeUndefined();
		expect(result.items.map((item) => item.json.text)).toEqual(['m2', 'm1', 'm0']);
		expect(result.items.every((item) => item.json.direction === 'in')).toBe(true);
		expect(pairedIndexes(result.items)).toEqual([0, 0, 0]);
	});

	it('direction Echo: sends direction=echo and returns the echoes', async () => {
		await seedInbound(2);
		await echo(sandbox, { text: 'from the app' });
		const result = await run(sandbox, { ...GET_MANY, direction: 'echo', returnAll: true });
		expect(result.items.map((item) => item.json)).toEqual([
			expect.objectContaining({ direction: 'echo', text: 'from the app', to: CONTACT }),
		]);
	});

	it('Limit: returns at most that many, from one page', async () => {
		await seedInbound(5);
		const result = await run(sandbox, { ...GET_MANY, returnAll: false, limit: 2 });
		expect(result.items.map((item) => item.json.text)).toEqual(['m4', 'm3']);
		expect(listRequests()).toHaveLength(1);
	});

	it('Return All follows the next_cursor the answer carries, page after page', async () => {
		await seedInbound(7);
		const result = await run(sandbox, {
			...GET_MANY,
			returnAll: true,
			queryParameters: { parameter: [{ name: 'limit', value: '3' }] },
		});
		expect(result.items.map((item) => item.json.text)).toEqual([
			'm6',
			'm5',
			'm4',
			'm3',
			'm2',
			'm1',
			'm0',
		]);
		// Pages of 3 (the pass-through limit), newest first: 3 + 3 + 1, no duplicates.
		expect(listRequests()).toHaveLength(3);
	});

	it('a Limit larger than a page follows the cursor until it has enough', async () => {
		await seedInbound(55);
		const result = await run(sandbox, { ...GET_MANY, returnAll: false, limit: 52 });
		expect(result.items).toHaveLength(52);
		expect(listRequests()).toHaveLength(2);
		expect(new Set(result.items.map((item) => item.json.id)).size).toBe(52);
	});

	it('Filters are sent as query parameters as they are', async () => {
		await inbound(sandbox, { number: first, text: 'a' });
		await inbound(sandbox, { number: second, text: 'b' });
		await inbound(sandbox, { from: OTHER_CONTACT, number: second, text: 'c' });
		const result = await run(sandbox, {
			...GET_MANY,
			returnAll: true,
			filters: { number: second, contact: OTHER_CONTACT },
		});
		expect(result.items.map((item) => item.json.text)).toEqual(['c']);
	});

	it('an additional query parameter may not override a field of the node', async () => {
		const result = await run(sandbox, {
			...GET_MANY,
			queryParameters: { parameter: [{ name: 'direction', value: 'echo' }] },
		});
		expect(errorOf(result).message).toMatch(/"direction" is set by the node itself/);
		expect(listRequests()).toHaveLength(0);
	});

	it.each([
		[
			'Limit',
			{ returnAll: false, limit: '={{ "ten" }}' },
			/^Limit must be a whole number of 1 or more/,
		],
		[
			'Limit',
			{ returnAll: false, limit: '={{ 0 }}' },
			/^Limit must be a whole number of 1 or more/,
		],
		['Direction', { direction: '={{ "out" }}' }, /^Direction must be one of echo, in, got "out"/],
		[
			'Filters → Number',
			{ filters: { number: '={{ { a: 1 } }}' } },
			/^Filters → Number \(Phone Number ID\) must be text/,
		],
	])('bad %s is refused before anything is sent', async (_field, parameters, message) => {
		const result = await run(sandbox, { ...GET_MANY, ...parameters });
		expect(errorOf(result).message).toMatch(message);
		expect(listRequests()).toHaveLength(0);
	});

	it('survives a 429 honouring Retry-After, and a 500', async () => {
		await seedInbound(1);
		await injectFault(sandbox, {
			kind: 'status_429',
			retry_after_seconds: 1,
			path_prefix: '/v1/messages/inbound',
		});
		await injectFault(sandbox, { kind: 'status_500', path_prefix: '/v1/messages/inbound' });
		const started = Date.now();
		const result = await run(sandbox, { ...GET_MANY, returnAll: true });
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(1);
		expect(listRequests()).toHaveLength(3);
		expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
	});

	it('a body that is not JSON is shown as it came', async () => {
		await injectFault(sandbox, { kind: 'malformed_json', path_prefix: '/v1/messages/inbound' });
		const error = errorOf(await run(sandbox, { ...GET_MANY, returnAll: true }));
		expect(error.message).toMatch(/not JSON/);
		expect(error.description).toContain('{"ok": true, "data": [');
	});

	it('a key without messages:read: names the scope', async () => {
		const key = await createKey(sandbox, ['balance:read', 'messages:send']);
		const error = errorOf(await run(sandbox, GET_MANY, { key }));
		expect(error.message).toMatch(
			/^The API key lacks the messages:read scope \(403\): use a key with messages:read: make one in the console's Keys tab/,
		);
		expect(error.description).toMatch(/Keys tab/);
	});

	it('a revoked key: 401 with what to do', async () => {
		const error = errorOf(await run(sandbox, GET_MANY, { key: 'revoked' }));
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
	});

	it('one list per input item, each paired with its item; failures under continueOnFail stay in place', async () => {
		await inbound(sandbox, { number: first, text: 'a' });
		await inbound(sandbox, { number: second, text: 'b' });
		const result = await run(
			sandbox,
			{ ...GET_MANY, returnAll: true, filters: { number: '={{ $json.number }}' } },
			{
				continueOnFail: true,
				inputItems: [
					{ json: { number: first } },
					{ json: { number: { bad: true } } },
					{ json: { number: second } },
				],
			},
		);
		expect(pairedIndexes(result.items)).toEqual([0, 1, 2]);
		expect(result.items[0].json.text).toBe('a');
		expect(result.items[1].json.error).toMatch(/Filters → Number/);
		expect(result.items[2].json.text).toBe('b');
	});
});
