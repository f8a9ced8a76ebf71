/**
 * A loopback HTTP proxy between the sandbox's webhook deliveries and n8n, that loses some of
 * them on the way as networks do: `reset` closes the connection without forwarding (the
 * service logs "connection reset"), `late` holds the request back `lateMs` before forwarding
 * it (the service has given up after its ~8 s and logged a timeout; n8n gets it late).
 * Which request gets what is decided by `plan(index)`, so a run is reproducible.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fate = 'pass' | 'reset' | 'late';

export class DeliveryProxy {
	private server?: http.Server;
	private count = 0;
	readonly fates: Record<Fate, number> = { pass: 0, reset: 0, late: 0 };
	/** Where requests go: n8n's production webhook URL of the workflow under test. */
	target = '';
	plan: (index: number) => Fate = () => 'pass';
	lateMs = 10_000;

	async start(): Promise<string> {
		this.server = http.createServer((request, response) => {
			const chunks: Buffer[] = [];
			request.on('data', (chunk: Buffer) => chunks.push(chunk));
			request.on('end', () => void this.handle(request, response, Buffer.concat(chunks)));
		});
		await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
		return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
	}

	reset(plan: (index: number) => Fate = () => 'pass'): void {
		this.count = 0;
		this.plan = plan;
		for (const fate of Object.keys(this.fates) as Fate[]) this.fates[fate] = 0;
	}

	private async handle(
		request: http.IncomingMessage,
		response: http.ServerResponse,
		body: Buffer,
	): Promise<void> {
		const fate = this.plan(this.count++);
		this.fates[fate]++;
		if (fate === 'reset') {
			request.socket.destroy();
			return;
		}
		if (fate === 'late') await new Promise((resolve) => setTimeout(resolve, this.lateMs));
		try {
			const headers: Record<string, string> = {};
			for (const name of ['content-type', 'x-service-signature', 'user-agent']) {
				const value = request.headers[name];
				if (typeof value === 'string') headers[name] = value;
			}
			const answer = await fetch(this.target, {
				method: 'POST',
				headers,
				body,
				signal: AbortSignal.timeout(60_000),
			});
			const text = await answer.text();
			if (!response.destroyed)
				response
					.writeHead(answer.status, {
						'content-type': answer.headers.get('content-type') ?? 'text/plain',
					})
					.end(text);
		} catch {
			if (!response.destroyed) response.writeHead(502).end();
		}
	}

	async close(): Promise<void> {
		this.server?.closeAllConnections();
		await new Promise<void>((resolve) =>
			this.server ? this.server.close(() => resolve()) : resolve(),
		);
	}
}

/** Receives what the workflow under test posts (one POST per execution) and counts messages. */
export class Recorder {
	private server?: http.Server;
	readonly records: Array<{
		id: string;
		recovered: boolean;
		event: string;
		text: string;
		execution: number;
		at: number;
	}> = [];
	url = '';

	async start(): Promise<string> {
		this.server = http.createServer((request, response) => {
			const chunks: Buffer[] = [];
			request.on('data', (chunk: Buffer) => chunks.push(chunk));
			request.on('end', () => {
				try {
					const body = JSON.parse(
						Buffer.concat(chunks).toString('utf8'),
					) as Recorder['records'][number];
					this.records.push({ ...body, execution: Number(body.execution), at: Date.now() });
				} catch {
					/* not ours */
				}
				response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
			});
		});
		await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
		this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/record`;
		return this.url;
	}

	clear(): void {
		this.records.length = 0;
	}

	/** For the ids sent: how many were seen once, never, more than once. */
	tally(sent: string[]): {
		once: number;
		lost: string[];
		duplicated: string[];
		recovered: number;
		live: number;
	} {
		const seen = new Map<string, number>();
		for (const record of this.records) seen.set(record.id, (seen.get(record.id) ?? 0) + 1);
		const mine = this.records.filter((record) => sent.includes(record.id));
		return {
			once: sent.filter((id) => seen.get(id) === 1).length,
			lost: sent.filter((id) => !seen.has(id)),
			duplicated: sent.filter((id) => (seen.get(id) ?? 0) > 1),
			recovered: mine.filter((record) => record.recovered).length,
			live: mine.filter((record) => !record.recovered).length,
		};
	}

	async close(): Promise<void> {
		this.server?.closeAllConnections();
		await new Promise<void>((resolve) =>
			this.server ? this.server.close(() => resolve()) : resolve(),
		);
	}
}
