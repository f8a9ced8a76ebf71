/**
 * One role decision at a time per account in this process (docs/several-workflows.md §3): n8n
 * activates several workflows at once (`npm run dev`, 2.x's concurrent publications), and two
 * triggers reading "no webhook" at the same moment would both register, leaving the first with
 * a dead secret. checkExists, create, delete and the heartbeat's re-check all run on the leader
 * main, so a module-level async lock keyed by the account (accountId of the API key) is enough there.
 */
const tails = new Map<string, Promise<unknown>>();

export async function withAccountLock<T>(account: string, work: () => Promise<T>): Promise<T> {
	const before = tails.get(account) ?? Promise.resolve();
	const run = before.then(work, work);
	const tail = run.then(
		() => undefined,
		() => undefined,
	);
	tails.set(account, tail);
	try {
		return await run;
	} finally {
		if (tails.get(account) === tail) tails.delete(account);
	}
}
