// Something the tests of a describe block (or file) share, started before them and closed after:
// the sandbox (useSandbox), a webhook receiver (useReceiver).

export interface StartedForTests<T> {
	/** Stands for what beforeAll starts: its properties are read (and set) through to it. */
	stand: T;
	/** What beforeAll started; throws before that. */
	started(): T;
}

/**
 * Registers beforeAll (start) and afterAll (close) in the current describe block (or file). What
 * it returns stands for what beforeAll starts: use it inside hooks and tests, not while the
 * describe block is being defined.
 */
export function startedForTests<T extends object>(
	what: string,
	start: () => Promise<T>,
	close: (started: T) => Promise<void>,
): StartedForTests<T> {
	let current: T | undefined;
	const started = (): T => {
		if (!current) throw new Error(`The ${what} starts in beforeAll: use it inside hooks and tests`);
		return current;
	};
	beforeAll(async () => {
		current = await start();
	});
	afterAll(async () => {
		if (current) await close(current);
	});
	const stand = new Proxy({} as T, {
		get: (_target, property) => Reflect.get(started(), property),
		set: (_target, property, value) => Reflect.set(started(), property, value),
		has: (_target, property) => Reflect.has(started(), property),
	});
	return { stand, started };
}
