// The sandbox set-up the tests share: one sandbox per describe block (or file), started before
// its tests, reset between them, closed after.
import { startSandbox, type Sandbox, type SandboxOptions } from '../sandbox';

export interface SandboxHooksOptions extends SandboxOptions {
	/**
	 * When the sandbox's state is reset: before each test (default), after each test, or
	 * 'never' (the tests reset it themselves, e.g. after their own clean-up).
	 */
	reset?: 'beforeEach' | 'afterEach' | 'never';
}

/**
 * Registers beforeAll (start), afterAll (close) and the reset hook in the current describe block
 * (or file), and returns the sandbox. What it returns stands for the sandbox beforeAll starts:
 * use it inside hooks and tests, not while the describe block is being defined.
 */
export function useSandbox(options: SandboxHooksOptions = {}): Sandbox {
	const { reset = 'beforeEach', ...startOptions } = options;
	let current: Sandbox | undefined;
	const started = (): Sandbox => {
		if (!current) throw new Error('The sandbox starts in beforeAll: use it inside hooks and tests');
		return current;
	};
	beforeAll(async () => {
		current = await startSandbox(startOptions);
	});
	afterAll(async () => {
		await current?.close();
	});
	if (reset === 'beforeEach') beforeEach(() => started().reset());
	if (reset === 'afterEach') afterEach(() => started().reset());
	return new Proxy({} as Sandbox, {
		get: (_target, property) => Reflect.get(started(), property),
		has: (_target, property) => Reflect.has(started(), property),
	});
}

/** describe() with a sandbox for its tests (see useSandbox). */
export function describeWithSandbox(name: string, fn: (sandbox: Sandbox) => void, options: SandboxHooksOptions = {}): void {
	describe(name, () => fn(useSandbox(options)));
}
