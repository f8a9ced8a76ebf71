import { createHmac } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { HttpError } from './http';
import { newDeliveryId } from './ids';
import { LOOPBACK_HOSTS } from './policy';
import type { SandboxStore } from './store';
import type { DeliveryOutcome, DeliveryRecord, WebhookEventName } from './types';

export const SIGNATURE_HEADER = 'X-Service-Signature';
/** How much of a receiver's answer each delivery record keeps (state().deliveries[].answer). */
export const ANSWER_KEPT_BYTES = 2048;

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
	if (url.protocol === 'http:' && (LOOPBACK_HOSTS as readonly string[]).includes(url.hostname))
		return url.toString();
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
		const { delivered, status, duration_ms, reason } = await this.send(event, data, null);
		return { delivered, status, duration_ms, reason };
	}

	/**
	 * The same event and data again, as a new delivery: a fresh timestamp, signed with the current secret, to the
	 * currently registered URL (a sandbox-only action; the service never retries). undefined for an unknown id.
	 */
	async resend(deliveryId: string): Promise<DeliveryRecord | undefined> {
		const payload = this.store.deliveryPayload(deliveryId);
		if (!payload) return undefined;
		return await this.send(payload.event, payload.data, deliveryId);
	}

	private async send(
		event: WebhookEventName,
		data: Record<string, unknown>,
		resendOf: string | null,
	): Promise<DeliveryRecord> {
		const body = JSON.stringify({ event, data, timestamp: this.store.now() });
		const webhook = this.store.currentWebhook();
		if (!webhook) {
			const outcome: DeliveryOutcome = {
				delivered: false,
				status: null,
				duration_ms: null,
				reason: 'no webhook registered',
			};
			return this.record({ event, data }, null, null, null, outcome, null, resendOf);
		}
		const signature = signBody(webhook.secret, body);
		const { answer, ...outcome } = await this.post(webhook.url, body, signature);
		const record = this.record(
			{ event, data },
			webhook.url,
			body,
			signature,
			outcome,
			answer,
			resendOf,
		);
		this.store.logWebhookAttempt(record.id, {
			event,
			// The message the delivery carried (CONTRACT L2): status events name theirs too.
			wa_message_id: typeof data.wa_message_id === 'string' ? data.wa_message_id : null,
			url: webhook.url,
			success: outcome.delivered,
			status_code: outcome.status,
			reason: outcome.reason,
			duration_ms: outcome.duration_ms,
		});
		return record;
	}

	async close(): Promise<void> {
		for (const controller of this.inFlight) controller.abort();
		await this.agent.destroy();
	}

	private async post(
		url: string,
		body: string,
		signature: string,
	): Promise<DeliveryOutcome & { answer: string | null }> {
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
			// Read the whole answer so the timeout also covers a body that never ends (the signal aborts the
			// stream); its first ANSWER_KEPT_BYTES are kept for the delivery log, the rest up to 1 MiB discarded.
			const kept: Buffer[] = [];
			let size = 0;
			for await (const chunk of response.body) {
				const buffer = chunk as Buffer;
				if (size < ANSWER_KEPT_BYTES) kept.push(buffer.subarray(0, ANSWER_KEPT_BYTES - size));
				size += buffer.length;
				if (size > 1024 * 1024) {
					response.body.destroy();
					break;
				}
			}
			if (timedOut) throw new Error('timeout');
			const ok = response.statusCode >= 200 && response.statusCode < 300;
			return {
				delivered: ok,
				status: response.statusCode,
				duration_ms: elapsed(),
				reason: ok ? null : `HTTP ${response.statusCode}`,
				answer: Buffer.concat(kept).toString('utf8'),
			};
		} catch (err) {
			return {
				delivered: false,
				status: null,
				duration_ms: elapsed(),
				reason: this.describeFailure(err, timedOut),
				answer: null,
			};
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
		payload: { event: WebhookEventName; data: Record<string, unknown> },
		url: string | null,
		body: string | null,
		signature: string | null,
		outcome: DeliveryOutcome,
		answer: string | null,
		resendOf: string | null,
	): DeliveryRecord {
		const record: DeliveryRecord = {
			id: newDeliveryId(),
			event: payload.event,
			url,
			body,
			signature,
			created_at: this.store.now(),
			...outcome,
			answer,
			resend_of: resendOf,
		};
		this.store.recordDelivery(record, payload);
		return record;
	}
}
