import { apiRequests, errorOf, inbound, injectFault, pairedIndexes, run } from '../helpers';
import { describeWithSandbox, inboundItem } from '../../../support';

// The raw records (Simplify off); Simplify: simplify.test.ts.
const LOGS = { resource: 'log', operation: 'getMany', simple: false };

describeWithSandbox('Log → Get Many', (sandbox) => {
	const logRequests = () => apiRequests(sandbox, '/v1/logs');

	it('reads one category, one item per entry, as the service returns them', async () => {
		const record = await inbound(sandbox);
		await run(
			sandbox,
			{ resource: 'message', operation: 'reply', text: 'Hi' },
			{ inputItems: [inboundItem(record)] },
		);
		const result = await run(sandbox, { ...LOGS, category: 'sends', returnAll: true });
		expect(result.error).toBeUndefined();
		expect(result.items).toEqual([
			expect.objectContaining({
				json: expect.objectContaining({ category: 'sends', to: record.from }),
			}),
		]);
		expect(pairedIndexes(result.items)).toEqual([0]);

		const receptions = await run(sandbox, { ...LOGS, category: 'receptions', returnAll: true });
		expect(receptions.items.map((item) => item.json.category)).toEqual(['receptions']);
	});

	it('the rejections log records refused calls', async () => {
		await run(sandbox, { resource: 'account', operation: 'ping' }, { key: 'noBalance' });
		const result = await run(sandbox, {
			...LOGS,
			category: 'rejections',
			returnAll: false,
			limit: 10,
		});
		expect(result.items[0].json).toMatchObject({
			category: 'rejections',
			status: 403,
			path: '/v1/ping',
		});
	});

	it('every one of the 7 categories is accepted', async () => {
		for (const category of [
			'sends',
			'receptions',
			'credits',
			'rejections',
			'keys',
			'numbers',
			'webhook',
		]) {
			const result = await run(sandbox, { ...LOGS, category });
			expect(result.error).toBeUndefined();
		}
		expect(logRequests()).toHaveLength(7);
	});

	it('Limit and Return All over several pages', async () => {
		for (let i = 0; i < 5; i++) await inbound(sandbox, { text: `m${i}` });
		const limited = await run(sandbox, {
			...LOGS,
			category: 'receptions',
			returnAll: false,
			limit: 2,
		});
		expect(limited.items).toHaveLength(2);
		const all = await run(sandbox, {
			...LOGS,
			category: 'receptions',
			returnAll: true,
			queryParameters: { parameter: [{ name: 'limit', value: '2' }] },
		});
		expect(all.items).toHaveLength(5);
		expect(new Set(all.items.map((item) => item.json.id)).size).toBe(5);
		expect(logRequests()).toHaveLength(1 + 3);
	});

	it('a category that is not one of the 7 (from an expression) is refused, nothing sent', async () => {
		const error = errorOf(await run(sandbox, { ...LOGS, category: '={{ "everything" }}' }));
		expect(error.message).toBe(
			'Category must be one of credits, keys, numbers, receptions, rejections, sends, webhook, got "everything": pick one, or fix the expression that fills it',
		);
		expect(logRequests()).toHaveLength(0);
	});

	it('survives a transient fault', async () => {
		await injectFault(sandbox, { kind: 'status_500', count: 2, path_prefix: '/v1/logs' });
		const result = await run(sandbox, { ...LOGS, category: 'keys' });
		expect(result.error).toBeUndefined();
		expect(logRequests()).toHaveLength(3);
	});

	it('a revoked key: 401 with what to do', async () => {
		const error = errorOf(await run(sandbox, { ...LOGS, category: 'webhook' }, { key: 'revoked' }));
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
	});

	it('continueOnFail: a bad category on one item does not stop the others', async () => {
		const result = await run(
			sandbox,
			{ ...LOGS, category: '={{ $json.category }}', returnAll: true },
			{
				continueOnFail: true,
				inputItems: [
					{ json: { category: 'keys' } },
					{ json: { category: 'all' } },
					{ json: { category: 'webhook' } },
				],
			},
		);
		expect(result.error).toBeUndefined();
		const paired = pairedIndexes(result.items);
		const keyEntries = result.items.filter((_, i) => paired[i] === 0);
		const errors = result.items.filter((_, i) => paired[i] === 1);
		expect(keyEntries.length).toBeGreaterThan(0);
		expect(keyEntries.every((item) => item.json.category === 'keys')).toBe(true);
		expect(errors).toHaveLength(1);
		expect(errors[0].json.error).toMatch(/^Category must be one of/);
		// Item 2 ran too: the webhook log is empty, so it adds no item, but it was asked for.
		expect(paired).toEqual([...keyEntries.map(() => 0), 1]);
		expect(logRequests()).toHaveLength(2);
	});
});
