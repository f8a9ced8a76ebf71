import { createHmac } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { HttpError } from './http';
import { newDeliveryId } from './ids';
import { LOOPBACK_HOSTS } from './policy';
import type { SandboxStore } from './store';
import type { DeliveryOutcome, DeliveryRecord, WebhookEventName } from './types';

export const SIGNATURE_HEADER = 'X-Service-Signature';

export function signBody(secret: string, rawBody: string | Buffer): string {
	return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** https anywhere; plain http only to a loopback host so that a local n8n can receive events. */
export function checkWebhookUrl(raw: string): string {
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		throw new HttpError(400, 'invalid_webhook_url', `"${raw}" is not an absolute URL`);
	}
	if (url.protocol === 'https:') return url.toString();
	if (url.protocol === 'http:' && (LOOPBACK_HOSTS as readonly string[]).includes(url.hostname)) return url.toString();
	throw new HttpError(
		400,
		'invalid_webhook_url',
		`The webhook URL must use https (plain http is accepted only for ${LOOPBACK_HOSTS.join(', ')}); got ${url.protocol}//${url.host}`,
	);
}

/** Posts one signed event to the registered URL: one attempt, no retries, bounded by the timeout. */
export class WebhookDispatcher {
	private readonly agent = new Agent({ keepAliveTimeout: 1000 });
	private readonly inFlight = new Set<AbortController>();

	constructor(
		private readonly store: SandboxStore,
		private readonly timeoutMs: number,
	) {}

	async deliver(event: WebhookEventName, data: Record<string, unknown>): Promise<DeliveryOutcome> {
		const body = JSON.stringify({ event, data, timestamp: this.store.now() });
		const webhook = this.store.currentWebhook();
		if (!webhook) {
			const outcome: DeliveryOutcome = { delivered: false, status: null, duration_ms: null, reason: 'no webhook registered' };
			this.record(event, null, null, null, outcome);
			return outcome;
		}
		const signature = signBody(webhook.secret, body);
		const outcome = await this.post(webhook.url, body, signature);
		this.record(event, webhook.url, body, signature, outcome);
		this.store.log('webhook', {
			event,
			// The message the delivery carried (CONTRACT L2): status events name theirs too.
			wa_message_id: typeof data.wa_message_id === 'string' ? data.wa_message_id : null,
			url: webhook.url,
			success: outcome.delivered,
			status_code: outcome.status,
			reason: outcome.reason,
			duration_ms: outcome.duration_ms,
		});
		return outcome;
	}

	async close(): Promise<void> {
		for (const controller of this.inFlight) controller.abort();
		await this.agent.destroy();
	}

	private async post(url: string, body: string, signature: string): Promise<DeliveryOutcome> {
		const controller = new AbortController();
		let timedOut = false;
		const timer = setTimeout(() => {
			timedOut = true;
			controller.abort();
		}, this.timeoutMs);
		this.inFlight.add(controller);
		const started = performance.now();
		const elapsed = (): number => Math.round(performance.now() - started);
		try {
			const response = await request(url, {
				method: 'POST',
				dispatcher: this.agent,
				signal: controller.signal,
				headers: {
					'content-type': 'application/json',
					'user-agent': 'messaging-sandbox-webhooks/1',
					[SIGNATURE_HEADER.toLowerCase()]: signature,
				},
				body,
			});
			// The receiver's answer body is not used; read it so the timeout also covers a body that never ends.
			// Without the signal, dump() resolves (not rejects) when the timer aborts mid-body.
			await response.body.dump({ limit: 1024 * 1024, signal: controller.signal });
			if (timedOut) throw new Error('timeout');
			const ok = response.statusCode >= 200 && response.statusCode < 300;
			return {
				delivered: ok,
				status: response.statusCode,
				duration_ms: elapsed(),
				reason: ok ? null : `HTTP ${response.statusCode}`,
			};
		} catch (err) {
			return { delivered: false, status: null, duration_ms: elapsed(), reason: this.describeFailure(err, timedOut) };
		} finally {
			clearTimeout(timer);
			this.inFlight.delete(controller);
		}
	}

	private describeFailure(err: unknown, timedOut: boolean): string {
		if (timedOut) return `timeout after ${this.timeoutMs} ms`;
		const error = err as { code?: string; message?: string; cause?: { code?: string } };
		const code = error.code ?? error.cause?.code;
		if (code === 'ECONNREFUSED') return 'connection refused';
		if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'DNS lookup failed';
		if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
		return `network error: ${error.message ?? String(err)}`;
	}

	private record(
		event: WebhookEventName,
		url: string | null,
		body: string | null,
		signature: string | null,
		outcome: DeliveryOutcome,
	): void {
		const record: DeliveryRecord = { id: newDeliveryId(), event, url, body, signature, created_at: this.store.now(), ...outcome };
		this.store.recordDelivery(record);
	}
}
