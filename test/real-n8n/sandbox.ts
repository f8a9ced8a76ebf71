/**
 * The sandbox as the real-n8n runs and `npm run dev` use it: started in this process
 * (startSandbox from test/sandbox) and driven through its control API over HTTP, exactly
 * as the printed curl command does.
 */
import {
	parseAnswersSpec,
	startSandbox,
	type Answers,
	type Sandbox,
	type SandboxState,
} from '../sandbox';

export type { Answers, Sandbox, SandboxState };

/**
 * The answers SANDBOX_ANSWERS asks for (`list_shape=items_next_url,webhook_log=event_id`, the syntax of
 * the sandbox CLI's --answers): every suite that starts its sandbox here then runs against them.
 */
export function answersFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<Answers> {
	const spec = env.SANDBOX_ANSWERS?.trim();
	if (!spec) return {};
	try {
		return parseAnswersSpec(spec);
	} catch (err) {
		throw new Error(`SANDBOX_ANSWERS: ${(err as Error).message}`);
	}
}

/**
 * webhookTimeoutMs: the service's delivery timeout (default about 8 s); shorter, it stands for an overloaded n8n.
 * answers: how the sandbox answers the spec's open details (test/sandbox/CONTRACT.md, "Answering a guess
 * differently"), over SANDBOX_ANSWERS setting by setting; the sandbox's reset keeps them.
 */
export async function launchSandbox(
	port = 0,
	mediaPort = 0,
	webhookTimeoutMs?: number,
	answers: Partial<Answers> = {},
): Promise<Sandbox> {
	return await startSandbox({
		port,
		mediaPort,
		host: '127.0.0.1',
		webhookTimeoutMs,
		answers: { ...answersFromEnv(), ...answers },
	});
}

export class SandboxControl {
	constructor(readonly baseUrl: string) {}

	async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
		const response = await fetch(`${this.baseUrl}/_sandbox${path}`, {
			method,
			headers: body !== undefined ? { 'content-type': 'application/json' } : {},
			body: body !== undefined ? JSON.stringify(body) : undefined,
			signal: AbortSignal.timeout(30_000),
		});
		const text = await response.text();
		if (!response.ok)
			throw new Error(`sandbox ${method} /_sandbox${path} -> ${response.status}: ${text}`);
		return (text ? JSON.parse(text) : undefined) as T;
	}

	async state(): Promise<SandboxState> {
		return await this.call('GET', '/state');
	}

	/** The sandbox's current answers (GET /_sandbox/answers). */
	async answers(): Promise<Answers> {
		return (await this.call<{ answers: Answers }>('GET', '/answers')).answers;
	}

	/** Changes some answers until the next reset (POST /_sandbox/answers); returns all seven. */
	async setAnswers(partial: Partial<Answers>): Promise<Answers> {
		return (await this.call<{ answers: Answers }>('POST', '/answers', partial)).answers;
	}

	/** A message from `from` to the account's number `number`; the sandbox relays it to the webhook. */
	async inbound(input: { from: string; contact_name: string; number: string; text: string }) {
		return await this.call<{
			record: { id: string; wa_message_id: string };
			delivery: DeliveryOutcomeView;
		}>('POST', '/inbound', input);
	}

	async echo(input: { to: string; number: string; text: string }) {
		return await this.call<{
			record: { id: string; wa_message_id: string };
			delivery: DeliveryOutcomeView;
		}>('POST', '/echo', input);
	}

	async status(id: string, status: string) {
		return await this.call<{
			message: { id: string; status: string };
			delivery: DeliveryOutcomeView;
		}>('POST', '/status', {
			id,
			status,
		});
	}

	async createKey(scopes: string[], allowedNumbers: string[] | null = null) {
		return await this.call<{ id: string; key: string }>('POST', '/keys', {
			scopes,
			allowed_numbers: allowedNumbers,
		});
	}

	async revokeKey(id: string): Promise<void> {
		await this.call('POST', `/keys/${id}/revoke`);
	}
}

export interface DeliveryOutcomeView {
	delivered: boolean;
	status: number | null;
	duration_ms: number | null;
	reason: string | null;
}

/** The curl command that simulates an inbound message (printed by `npm run dev`). */
export function inboundCurl(baseUrl: string, number: string): string {
	const body = JSON.stringify({
		from: '+33612345678',
		contact_name: 'Ada',
		number,
		text: 'Hello, is my order on its way?',
	});
	return `curl -s -X POST ${baseUrl}/_sandbox/inbound -H 'content-type: application/json' -d '${body}'`;
}

/** The service's webhook delivery log (`GET /v1/logs?category=webhook`) for these messages: failures counted. */
export async function webhookLogFor(
	baseUrl: string,
	apiKey: string,
	waIds: Set<string>,
): Promise<{ entries: number; failed: number; reasons: Record<string, number> }> {
	const out = { entries: 0, failed: 0, reasons: {} as Record<string, number> };
	let cursor: string | undefined;
	for (let page = 0; page < 100; page++) {
		const url = new URL(`${baseUrl}/v1/logs`);
		url.searchParams.set('category', 'webhook');
		url.searchParams.set('limit', '100');
		if (cursor) url.searchParams.set('cursor', cursor);
		const response = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } });
		const body = (await response.json()) as {
			data?: Array<{ wa_message_id?: string; success?: boolean; reason?: string | null }>;
			has_more?: boolean;
			next_cursor?: string | null;
		};
		for (const entry of body.data ?? []) {
			if (!entry.wa_message_id || !waIds.has(entry.wa_message_id)) continue;
			out.entries++;
			if (entry.success === false) {
				out.failed++;
				const reason = entry.reason ?? '?';
				out.reasons[reason] = (out.reasons[reason] ?? 0) + 1;
			}
		}
		if (!body.has_more || !body.next_cursor) break;
		cursor = body.next_cursor;
	}
	return out;
}
