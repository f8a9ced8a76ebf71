import { apiRequests, errorOf, injectFault, pairedIndexes, run } from '../helpers';
import { describeWithSandbox } from '../../../support';

const KEYS = { resource: 'key', operation: 'getMany' };

describeWithSandbox('Key → Get Many', (sandbox) => {
	it('lists the keys with allowed_numbers (null: every number), never a key value', async () => {
		const result = await run(sandbox, { ...KEYS, returnAll: true });
		expect(result.error).toBeUndefined();
		const byId = Object.fromEntries(result.items.map((item) => [item.json.id, item.json]));
		expect(Object.keys(byId).sort()).toEqual(Object.values(sandbox.keyIds).sort());
		expect(byId.key_all.allowed_numbers).toBeNull();
		expect(byId.key_one_number.allowed_numbers).toEqual([sandbox.numbers[0].phone_number_id]);
		expect(byId.key_two_numbers.allowed_numbers).toHaveLength(2);
		for (const item of result.items) expect(item.json).toHaveProperty('allowed_numbers');
		const output = JSON.stringify(result.runData);
		for (const value of Object.values(sandbox.keys)) expect(output).not.toContain(value);
		expect(pairedIndexes(result.items)).toEqual(result.items.map(() => 0));
	});

	it('Limit cuts the list', async () => {
		const result = await run(sandbox, { ...KEYS, returnAll: false, limit: 2 });
		expect(result.items).toHaveLength(2);
	});

	it('survives a 429 with Retry-After', async () => {
		await injectFault(sandbox, {
			kind: 'status_429',
			retry_after_seconds: 1,
			path_prefix: '/v1/console/keys',
		});
		const result = await run(sandbox, KEYS);
		expect(result.error).toBeUndefined();
		expect(apiRequests(sandbox, '/v1/console/keys')).toHaveLength(2);
	});

	it('a revoked key: 401 with what to do', async () => {
		const error = errorOf(await run(sandbox, KEYS, { key: 'revoked' }));
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
		expect(error.description).toMatch(/Keys tab/);
	});
});
