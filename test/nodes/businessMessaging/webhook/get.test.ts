import { apiRequests, errorOf, injectFault, pairedIndexes, run } from '../helpers';
import { describeWithSandbox } from '../../../support';

const GET = { resource: 'webhook', operation: 'get' };

describeWithSandbox('Webhook → Get', (sandbox) => {
	async function register(url: string): Promise<string> {
		const response = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
			body: JSON.stringify({ url }),
		});
		const body = (await response.json()) as { secret: string };
		expect(response.status).toBe(201);
		return body.secret;
	}

	it('not registered: url null, configured false', async () => {
		const result = await run(sandbox, GET);
		expect(result.error).toBeUndefined();
		expect(result.items).toEqual([
			{ json: { url: null, configured: false }, pairedItem: { item: 0 } },
		]);
	});

	it('registered: url and configured, and the signing secret is nowhere in the execution data', async () => {
		const secret = await register('https://hooks.example.com/n8n');
		expect(sandbox.state().webhook.secret).toBe(secret);
		const result = await run(sandbox, GET);
		expect(result.items[0].json).toEqual({
			url: 'https://hooks.example.com/n8n',
			configured: true,
		});
		expect(JSON.stringify(result.execution)).not.toContain(secret);
		expect(pairedIndexes(result.items)).toEqual([0]);
	});

	it('survives a transient fault', async () => {
		await injectFault(sandbox, { kind: 'reset', path_prefix: '/v1/console/webhook' });
		const result = await run(sandbox, GET);
		expect(result.error).toBeUndefined();
		expect(apiRequests(sandbox, '/v1/console/webhook')).toHaveLength(2);
	});

	it('a revoked key: 401 with what to do', async () => {
		const error = errorOf(await run(sandbox, GET, { key: 'revoked' }));
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
	});
});
