// The sandbox set-up the tests share: one sandbox per describe block (or file), started before
// its tests, reset between them, closed after.
import { startSandbox, type Sandbox, type SandboxOptions } from '../sandbox';
import { startedForTests } from './hooks';

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
	const { stand, started } = startedForTests(
		'sandbox',
		() => startSandbox(startOptions),
		(sandbox) => sandbox.close(),
	);
	if (reset === 'beforeEach') beforeEach(() => started().reset());
	if (reset === 'afterEach') afterEach(() => started().reset());
	return stand;
}

/** describe() with a sandbox for its tests (see useSandbox). */
export function describeWithSandbox(
	name: string,
	fn: (sandbox: Sandbox) => void,
	options: SandboxHooksOptions = {},
): void {
	describe(name, () => fn(useSandbox(options)));
}
