/** Small helpers for the real-n8n driver, its runs and `npm run dev`: ports, waiting, timing, logging. */
import { createServer } from 'node:net';

export const sleep = (ms: number): Promise<void> =>
	new Promise((resolve) => setTimeout(resolve, ms));

/** A port that was free on 127.0.0.1 a moment ago, never one of `avoid`. */
export async function freePort(avoid: number[] = []): Promise<number> {
	for (;;) {
		const port = await new Promise<number>((resolve, reject) => {
			const server = createServer();
			server.unref();
			server.on('error', reject);
			server.listen(0, '127.0.0.1', () => {
				const address = server.address();
				const found = typeof address === 'object' && address ? address.port : 0;
				server.close(() => resolve(found));
			});
		});
		if (port && !avoid.includes(port)) return port;
	}
}

/** Polls `probe` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function waitFor<T>(
	description: string,
	probe: () => Promise<T | undefined | false> | T | undefined | false,
	timeoutMs = 30_000,
	intervalMs = 250,
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	let lastError: unknown;
	for (;;) {
		try {
			const value = await probe();
			if (value !== undefined && value !== false) return value as T;
			lastError = undefined;
		} catch (error) {
			lastError = error;
		}
		if (Date.now() > deadline) {
			const why = lastError instanceof Error ? `: ${lastError.message}` : '';
			throw new Error(
				`Timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${description}${why}`,
			);
		}
		await sleep(intervalMs);
	}
}

const started = Date.now();

export function log(message: string): void {
	const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
	process.stdout.write(`[${seconds}s] ${message}\n`);
}

export function seconds(fromMs: number): string {
	return `${((Date.now() - fromMs) / 1000).toFixed(1)} s`;
}

export function errorText(error: unknown): string {
	if (error instanceof Error) return error.message;
	return String(error);
}
