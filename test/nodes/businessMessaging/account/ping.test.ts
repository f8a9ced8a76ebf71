import { apiRequests, errorOf, injectFault, pairedIndexes, run } from '../helpers';
import { describeWithSandbox } from '../../../support';

const PING = { resource: 'account', operation: 'ping' };

describeWithSandbox('Account → Ping', (sandbox) => {
	it('says the key is valid and passes the answer through', async () => {
		const result = await run(sandbox, PING);
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(1);
		expect(result.items[0].json).toMatchObject({ valid: true, ok: true, key_id: 'key_all' });
		expect(pairedIndexes(result.items)).toEqual([0]);
		expect(apiRequests(sandbox).map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/ping']);
	});

	it('pings once per input item, each output paired with its input', async () => {
		const result = await run(sandbox, PING, {
			inputItems: [{ json: {} }, { json: {} }, { json: {} }],
		});
		expect(pairedIndexes(result.items)).toEqual([0, 1, 2]);
	});

	it('a revoked key: says so and points to the Keys tab', async () => {
		const result = await run(sandbox, PING, { key: 'revoked' });
		const error = errorOf(result);
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
		expect(error.description).toMatch(/Keys tab/);
		expect(JSON.stringify(result.runData)).not.toContain(sandbox.keys.revoked);
	});

	it('a key without balance:read: names the scope', async () => {
		const error = errorOf(await run(sandbox, PING, { key: 'noBalance' }));
		expect(error.message).toMatch(/lacks the balance:read scope \(403\)/);
		expect(error.description).toMatch(/Account → Ping needs the balance:read scope/);
	});

	it.each([
		['status_500', {}],
		['reset', {}],
		['status_429', { retry_after_seconds: 1 }],
	] as const)('survives a transient %s fault with a bounded retry', async (kind, extra) => {
		await injectFault(sandbox, { kind, count: 2, path_prefix: '/v1/ping', ...extra });
		const started = Date.now();
		const result = await run(sandbox, PING);
		expect(result.error).toBeUndefined();
		expect(result.items[0].json.valid).toBe(true);
		expect(apiRequests(sandbox, '/v1/ping')).toHaveLength(3);
		if (kind === 'status_429') expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
	});

	it('gives up after a bounded number of retries and shows the status and body', async () => {
		await injectFault(sandbox, { kind: 'status_500', count: 10, path_prefix: '/v1/ping' });
		const error = errorOf(await run(sandbox, PING));
		expect(error.message).toMatch(/Account → Ping failed \(500\)/);
		expect(error.description).toMatch(/internal_error/);
		expect(apiRequests(sandbox, '/v1/ping')).toHaveLength(4);
	});
});
