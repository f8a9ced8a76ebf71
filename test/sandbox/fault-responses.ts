import type { ServerResponse } from 'node:http';
import type { FaultView } from './types';

export interface FaultOutcome {
	/** true when the fault replaced the normal answer. */
	answered: boolean;
	/** Status sent, or null when the connection was dropped (or not yet answered, for a delay). */
	status: number | null;
}

const DEFAULT_DELAY_MS = 1000;
const DEFAULT_RETRY_AFTER_SECONDS = 1;

/** Writes an error answer in the sandbox's current error_body (answers.ts sendApiError). */
export type SendError = (error: {
	status: number;
	code: string;
	message: string;
	headers?: Record<string, string>;
}) => void;

/** Replaces (or, for `delay`, holds back) the normal answer of one /v1 request. */
export async function applyFault(
	fault: FaultView,
	res: ServerResponse,
	sendError: SendError,
): Promise<FaultOutcome> {
	switch (fault.kind) {
		case 'status_500':
			sendError({
				status: 500,
				code: 'internal_error',
				message: 'Injected fault: internal server error',
			});
			return { answered: true, status: 500 };
		case 'status_429': {
			const retryAfter = fault.retry_after_seconds ?? DEFAULT_RETRY_AFTER_SECONDS;
			sendError({
				status: 429,
				code: 'rate_limited',
				message: `Injected fault: too many requests, retry after ${retryAfter} s`,
				headers: { 'Retry-After': String(retryAfter) },
			});
			return { answered: true, status: 429 };
		}
		case 'reset':
			// The request was read in full, so the server "saw" it: what a client retry must account for.
			res.socket?.destroy();
			return { answered: true, status: null };
		case 'malformed_json': {
			const truncated = '{"ok": true, "data": [';
			res.writeHead(200, {
				'Content-Type': 'application/json; charset=utf-8',
				'Content-Length': String(truncated.length),
			});
			res.end(truncated);
			return { answered: true, status: 200 };
		}
		case 'json_body': {
			const text = JSON.stringify(fault.body ?? null);
			res.writeHead(200, {
				'Content-Type': 'application/json; charset=utf-8',
				'Content-Length': String(Buffer.byteLength(text)),
			});
			res.end(text);
			return { answered: true, status: 200 };
		}
		case 'delay':
			await new Promise<void>((resolve) =>
				setTimeout(resolve, fault.delay_ms ?? DEFAULT_DELAY_MS).unref(),
			);
			return { answered: false, status: null };
	}
}
