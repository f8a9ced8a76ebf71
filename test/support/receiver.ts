// A webhook receiver on a free loopback port (http://127.0.0.1:<port>/hook), to register at the
// sandbox: it records the exact bytes it gets and answers as its mode says, late or never.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { startedForTests } from './hooks';

export type ReceiverMode =
	/** Answers at once with this status (text/plain "ok"). */
	| { kind: 'status'; status: number }
	/** Answers with this status and {"received":true} after `ms`. */
	| { kind: 'slow'; ms: number; status: number }
	/** Never answers. */
	| { kind: 'hang' }
	/** Sends the headers and part of a body, never the end. */
	| { kind: 'headers-then-hang' };

export interface ReceivedRequest {
	method: string;
	headers: IncomingHttpHeaders;
	raw: Buffer;
}

export interface Receiver {
	url: string;
	/** Requests that arrived (counted as they arrive, before their body is read). */
	hits: number;
	/** Requests whose body was read completely, in order. */
	requests: ReceivedRequest[];
	/** Applies to the requests that arrive from now on. */
	mode: ReceiverMode;
	close(): Promise<void>;
}

export async function startReceiver(
	mode: ReceiverMode = { kind: 'status', status: 200 },
): Promise<Receiver> {
	const receiver: Receiver = { url: '', hits: 0, requests: [], mode, close: async () => undefined };
	const server: Server = createServer((req, res) => {
		receiver.hits++;
		const chunks: Buffer[] = [];
		req.on('data', (chunk: Buffer) => chunks.push(chunk));
		req.on('end', () => {
			receiver.requests.push({
				method: req.method ?? '',
				headers: req.headers,
				raw: Buffer.concat(chunks),
			});
			const answer = receiver.mode;
			if (answer.kind === 'status') {
				res.writeHead(answer.status, { 'content-type': 'text/plain' });
				res.end('ok');
			} else if (answer.kind === 'slow') {
				setTimeout(() => {
					res.writeHead(answer.status, { 'content-type': 'application/json' });
					res.end('{"received":true}');
				}, answer.ms).unref();
			} else if (answer.kind === 'headers-then-hang') {
				res.writeHead(200, { 'content-type': 'application/json' });
				res.write('{"received":');
			}
			// 'hang': nothing, ever.
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
	receiver.close = () =>
		new Promise<void>((resolve) => {
			server.close(() => resolve());
			server.closeAllConnections();
		});
	return receiver;
}

/**
 * A receiver for the tests of the current describe block (or file): started in beforeAll, closed
 * in afterAll. What it returns stands for the receiver beforeAll starts (its mode and fields can
 * be set through it): use it inside hooks and tests.
 */
export function useReceiver(mode?: ReceiverMode): Receiver {
	return startedForTests(
		'receiver',
		() => startReceiver(mode),
		(receiver) => receiver.close(),
	).stand;
}
