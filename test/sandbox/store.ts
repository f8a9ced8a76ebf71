import { AnswerSettings } from './answers';
import type { SandboxClock } from './clock';
import { formatMicroTimestamp } from './clock';
import { FaultQueue } from './faults';
import { newKeyId, newKeyValue, newLogId, newWebhookSecret } from './ids';
import { MEDIA_RETENTION_SECONDS, REPLY_WINDOW_SECONDS, CREDITS_PER_REPLY } from './policy';
import { ACCOUNT_ID, INITIAL_CREDIT_BALANCE, type Seed } from './seed';
import {
	API_KEY_PREFIX,
	type ApiRequestRecord,
	type ConversationRecord,
	type DeliveryRecord,
	type KeyView,
	type LogCategory,
	type LogEntry,
	type MediaHostMode,
	type MediaRequestRecord,
	type MediaView,
	type MessageRecord,
	type NumberView,
	type SandboxState,
	type Scope,
	type StoredKey,
	type WebhookEventName,
} from './types';

/** An item kept in arrival order; `seq` orders lists and backs pagination cursors. */
export interface Sequenced<T> {
	seq: number;
	atMs: number;
	value: T;
}

export interface StoredMedia {
	id: string;
	mime: string;
	filename: string;
	/** null when the media is not hosted (host_media: false). */
	data: Buffer | null;
	createdMs: number;
}

interface Webhook {
	url: string;
	secret: string;
}

/** All mutable state of one sandbox, and the bookkeeping every route shares. */
export class SandboxStore {
	readonly faults = new FaultQueue();
	private keys = new Map<string, StoredKey>();
	private messages = new Map<string, MessageRecord>();
	private conversation: Sequenced<ConversationRecord>[] = [];
	private media = new Map<string, StoredMedia>();
	private webhook: Webhook | null = null;
	/** Every signing secret issued since the sandbox started (kept across resets). */
	private issuedSecrets: string[] = [];
	private deliveries: DeliveryRecord[] = [];
	private mediaRequests: MediaRequestRecord[] = [];
	private apiRequests: ApiRequestRecord[] = [];
	private logs: Sequenced<LogEntry>[] = [];
	private numbersRegisteredAt = '';
	private creditBalance = INITIAL_CREDIT_BALANCE;
	private seq = 0;
	/** What each delivery carried, so that it can be sent again (POST /_sandbox/deliveries/{id}/resend). */
	private deliveryPayloads = new Map<
		string,
		{ event: WebhookEventName; data: Record<string, unknown> }
	>();
	/** The delivery each `webhook` log entry is about, by log id (the `webhook_log: event_id` answer). */
	private webhookLogDeliveries = new Map<string, string>();
	private changeListeners = new Set<() => void>();
	/** How the media host answers valid links (POST /_sandbox/media-host/mode); normal after reset. */
	mediaHostMode: MediaHostMode = { kind: 'normal' };

	constructor(
		private readonly clock: SandboxClock,
		private readonly seed: Seed,
		/** How the API answers the spec's open details (answers.ts); back to the start set on reset. */
		readonly answers: AnswerSettings = new AnswerSettings(),
	) {
		this.reset();
	}

	/** Back to the seed. The clock is reset by the caller first so that seed logs carry real time. */
	reset(): void {
		this.keys.clear();
		this.messages.clear();
		this.conversation = [];
		this.media.clear();
		this.webhook = null;
		this.deliveries = [];
		this.deliveryPayloads.clear();
		this.mediaRequests = [];
		this.apiRequests = [];
		this.logs = [];
		this.webhookLogDeliveries.clear();
		this.answers.reset();
		this.faults.clear();
		this.creditBalance = INITIAL_CREDIT_BALANCE;
		this.mediaHostMode = { kind: 'normal' };
		this.numbersRegisteredAt = this.clock.timestamp();
		for (const number of this.seed.numbers) {
			this.log('numbers', {
				action: 'registered',
				phone_number_id: number.phone_number_id,
				display_number: number.display_number,
			});
		}
		for (const key of this.seed.keys) {
			this.insertKey(key.id, key.value, key.scopes, key.allowed_numbers);
			if (key.revoked) this.revokeKey(key.id);
		}
		this.touch();
	}

	/** Called after any change (GET /_sandbox/events); returns the function that stops the calls. */
	onChange(listener: () => void): () => void {
		this.changeListeners.add(listener);
		return () => this.changeListeners.delete(listener);
	}

	/** Tells the listeners that something changed; callers that mutate a record in place call it too. */
	touch(): void {
		for (const listener of this.changeListeners) listener();
	}

	now(): string {
		return this.clock.timestamp();
	}

	nowMs(): number {
		return this.clock.nowMs();
	}

	// ---- numbers --------------------------------------------------------

	accountNumberIds(): string[] {
		return this.seed.numbers.map((n) => n.phone_number_id);
	}

	hasNumber(phoneNumberId: string): boolean {
		return this.accountNumberIds().includes(phoneNumberId);
	}

	// ---- keys -----------------------------------------------------------

	createKey(scopes: Scope[], allowedNumbers: string[] | null): StoredKey {
		return this.insertKey(newKeyId(), newKeyValue(), scopes, allowedNumbers);
	}

	private insertKey(
		id: string,
		value: string,
		scopes: Scope[],
		allowedNumbers: string[] | null,
	): StoredKey {
		const key: StoredKey = {
			id,
			value,
			prefix: API_KEY_PREFIX,
			last4: value.slice(-4),
			scopes: [...scopes],
			allowed_numbers: allowedNumbers ? [...allowedNumbers] : null,
			revoked: false,
			created_at: this.now(),
			revoked_at: null,
		};
		this.keys.set(id, key);
		this.touch();
		this.log('keys', {
			action: 'created',
			key_id: id,
			scopes: key.scopes,
			allowed_numbers: key.allowed_numbers,
		});
		return key;
	}

	/** undefined for an unknown id; revoking twice is a no-op. */
	revokeKey(id: string): StoredKey | undefined {
		const key = this.keys.get(id);
		if (!key || key.revoked) return key;
		key.revoked = true;
		key.revoked_at = this.now();
		this.log('keys', { action: 'revoked', key_id: id });
		return key;
	}

	findKeyByValue(value: string): StoredKey | undefined {
		for (const key of this.keys.values()) if (key.value === value) return key;
		return undefined;
	}

	keyViews(): KeyView[] {
		return [...this.keys.values()].map(toKeyView);
	}

	// ---- webhook --------------------------------------------------------

	/** Registering again replaces the URL and always issues a new secret. */
	registerWebhook(url: string): Webhook {
		this.webhook = { url, secret: newWebhookSecret() };
		this.issuedSecrets.push(this.webhook.secret);
		this.touch();
		return { ...this.webhook };
	}

	removeWebhook(): void {
		this.webhook = null;
		this.touch();
	}

	currentWebhook(): Webhook | null {
		return this.webhook ? { ...this.webhook } : null;
	}

	// ---- messages sent through the API ---------------------------------

	addMessage(message: MessageRecord): void {
		this.messages.set(message.id, message);
		this.touch();
	}

	getMessage(id: string): MessageRecord | undefined {
		return this.messages.get(id);
	}

	debitReply(messageId: string): void {
		this.creditBalance -= CREDITS_PER_REPLY;
		this.log('credits', {
			action: 'debit',
			amount: CREDITS_PER_REPLY,
			balance_after: this.creditBalance,
			reason: 'reply',
			message_id: messageId,
		});
	}

	// ---- inbound and echo records --------------------------------------

	addConversationRecord(record: ConversationRecord): void {
		this.conversation.push({ seq: this.nextSeq(), atMs: this.nowMs(), value: record });
		this.touch();
	}

	conversationRecords(): readonly Sequenced<ConversationRecord>[] {
		return this.conversation;
	}

	/** Sandbox-clock time of the contact's last inbound message on that number. */
	lastInboundMs(contact: string, number: string): number | undefined {
		for (let i = this.conversation.length - 1; i >= 0; i--) {
			const { value, atMs } = this.conversation[i];
			if (value.direction === 'in' && value.from === contact && value.number === number)
				return atMs;
		}
		return undefined;
	}

	isReplyWindowOpen(contact: string, number: string): boolean {
		const last = this.lastInboundMs(contact, number);
		return last !== undefined && this.nowMs() - last <= REPLY_WINDOW_SECONDS * 1000;
	}

	// ---- media ----------------------------------------------------------

	addMedia(media: StoredMedia): void {
		this.media.set(media.id, media);
		this.touch();
	}

	getMedia(id: string): StoredMedia | undefined {
		return this.media.get(id);
	}

	isPastRetention(media: StoredMedia): boolean {
		return this.nowMs() - media.createdMs > MEDIA_RETENTION_SECONDS * 1000;
	}

	// ---- logs and request records --------------------------------------

	log(category: LogCategory, details: Record<string, unknown>): LogEntry {
		const entry: LogEntry = { id: newLogId(), category, created_at: this.now(), ...details };
		this.logs.push({ seq: this.nextSeq(), atMs: this.nowMs(), value: entry });
		this.touch();
		return entry;
	}

	/** Writes the `webhook` log entry of one delivery attempt (CONTRACT L2). */
	logWebhookAttempt(deliveryId: string, details: Record<string, unknown>): LogEntry {
		const entry = this.log('webhook', details);
		this.webhookLogDeliveries.set(entry.id, deliveryId);
		return entry;
	}

	/** The delivery a `webhook` log entry is about. */
	deliveryIdOfLog(logId: string): string | undefined {
		return this.webhookLogDeliveries.get(logId);
	}

	logsOf(category: LogCategory): Sequenced<LogEntry>[] {
		return this.logs.filter((item) => item.value.category === category);
	}

	recordDelivery(
		delivery: DeliveryRecord,
		payload: { event: WebhookEventName; data: Record<string, unknown> },
	): void {
		this.deliveries.push(delivery);
		this.deliveryPayloads.set(delivery.id, payload);
		this.touch();
	}

	deliveryPayload(
		id: string,
	): { event: WebhookEventName; data: Record<string, unknown> } | undefined {
		return this.deliveryPayloads.get(id);
	}

	recordMediaRequest(request: MediaRequestRecord): void {
		this.mediaRequests.push(request);
	}

	/** Returned so the caller can fill in the status once it answers. */
	recordApiRequest(method: string, path: string): ApiRequestRecord {
		const record: ApiRequestRecord = { method, path, status: null, fault: null, at: this.now() };
		this.apiRequests.push(record);
		this.touch();
		return record;
	}

	snapshot(): SandboxState {
		const webhook = this.webhook;
		const state: SandboxState = {
			now: this.now(),
			account_id: ACCOUNT_ID,
			credit_balance: this.creditBalance,
			numbers: this.seed.numbers.map((n): NumberView => ({
				...n,
				registered_at: this.numbersRegisteredAt,
			})),
			keys: this.keyViews(),
			messages: [...this.messages.values()],
			inbound: this.conversation.map((item) => item.value),
			media: [...this.media.values()].map(toMediaView),
			webhook: {
				url: webhook?.url ?? null,
				configured: webhook !== null,
				secret: webhook?.secret ?? null,
			},
			issued_secrets: [...this.issuedSecrets],
			deliveries: this.deliveries,
			media_requests: this.mediaRequests,
			requests: this.apiRequests,
			requests_count: this.apiRequests.length,
			faults: this.faults.list(),
			logs: this.logs.map((item) => item.value),
		};
		// A deep copy, so a caller holding a snapshot never sees later changes.
		return structuredClone(state);
	}

	private nextSeq(): number {
		this.seq += 1;
		return this.seq;
	}
}

export function toKeyView(key: StoredKey): KeyView {
	const { value: _value, ...view } = key;
	return {
		...view,
		scopes: [...view.scopes],
		allowed_numbers: view.allowed_numbers ? [...view.allowed_numbers] : null,
	};
}

function toMediaView(media: StoredMedia): MediaView {
	return {
		id: media.id,
		mime: media.mime,
		filename: media.filename,
		size: media.data?.length ?? 0,
		hosted: media.data !== null,
		created_at: formatMicroTimestamp(media.createdMs),
		retained_until: formatMicroTimestamp(media.createdMs + MEDIA_RETENTION_SECONDS * 1000),
	};
}
