// The router's dispatch: an operation the resource does not have (an old workflow, an expression) is
// refused by name, before any request. (An unknown resource n8n refuses itself: no operation field shows.)
import { apiRequests, errorOf, run } from './helpers';
import { describeWithSandbox } from '../../support';

describeWithSandbox('router', (sandbox) => {
	it.each([
		['account', 'nope'],
		['account', 'description'],
		['message', 'constructor'],
		['webhook', 'toString'],
	])('resource %s, operation %s: not supported, nothing sent', async (resource, operation) => {
		const before = apiRequests(sandbox).length;
		const error = errorOf(await run(sandbox, { resource, operation }));
		expect(error.message).toBe(
			`The operation "${operation}" of resource "${resource}" is not supported: pick another operation, or update the Business Messaging package`,
		);
		expect(apiRequests(sandbox)).toHaveLength(before);
	});
});
