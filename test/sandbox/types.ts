/** Shared vocabulary of the sandbox: constants from the spec and the shapes the sandbox chose. */

import type { Answers } from './answers';

export const SCOPES = [
	'balance:read',
	'templates:read',
	'templates:write',
	'messages:send',
	'messages:read',
	'connection:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export const LOG_CATEGORIES = [
	'sends',
	'receptions',
	'credits',
	'rejections',
	'keys',
	'numbers',
	'webhook',
] as const;
export type LogCategory = (typeof LOG_CATEGORIES)[number];

export const MESSAGE_TYPES = ['text', 'image', 'audio', 'video', 'document', 'sticker'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

/** Guess: the spec only shows `delivered`. */
export const DELIVERY_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const FAULT_KINDS = [
	'status_500',
	'status_429',
	'reset',
	'delay',
	'malformed_json',
	/** 200 with the JSON `body` given: any answer shape, for a client's reading of it. */
	'json_body',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export type WebhookEventName = 'message.status' | 'message.inbound' | 'message.echo';

export const API_KEY_PREFIX = 'sk_live_';
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

export interface SeededNumber {
	phone_number_id: string;
	display_number: string;
}

/** Values of the keys the sandbox seeds, by label. */
export interface SeededKeys {
	all: string;
	oneNumber: string;
	twoNumbers: string;
	noSend: string;
	noBalance: string;
	revoked: string;
}
export type SeededKeyLabel = keyof SeededKeys;
export type SeededKeyIds = Record<SeededKeyLabel, string>;

/** A key as the console lists it: never the value. */
export interface KeyView {
	id: string;
	prefix: string;
	last4: string;
	scopes: Scope[];
	allowed_numbers: string[] | null;
	revoked: boolean;
	created_at: string;
	revoked_at: string | null;
}

export interface StoredKey extends KeyView {
	value: string;
}

/** A reply sent through POST /v1/messages/reply. */
export interface MessageRecord {
	id: string;
	wa_message_id: string;
	direction: 'out';
	type: 'text';
	to: string;
	from: string;
	text: string;
	status: DeliveryStatus;
	error: unknown;
	created_at: string;
	updated_at: string;
}

export interface InboundRecord {
	id: string;
	direction: 'in';
	from: string;
	contact_name: string;
	number: string;
	wa_message_id: string;
	type: MessageType;
	text: string;
	media_id: string | null;
	media_url: string | null;
	media_mime: string | null;
	created_at: string;
}

export interface EchoRecord {
	id: string;
	direction: 'echo';
	to: string;
	number: string;
	wa_message_id: string;
	type: MessageType;
	text: string;
	media_id: string | null;
	media_mime: string | null;
	created_at: string;
}

export type ConversationRecord = InboundRecord | EchoRecord;

export interface MediaView {
	id: string;
	mime: string;
	filename: string;
	size: number;
	hosted: boolean;
	created_at: string;
	retained_until: string;
}

export interface DeliveryOutcome {
	delivered: boolean;
	status: number | null;
	duration_ms: number | null;
	reason: string | null;
}

export interface DeliveryRecord extends DeliveryOutcome {
	id: string;
	event: WebhookEventName;
	url: string | null;
	/** The exact bytes posted (utf-8), null when nothing was posted. */
	body: string | null;
	signature: string | null;
	created_at: string;
	/** The receiver's answer body (first 2048 bytes, utf-8); null when nothing answered. */
	answer: string | null;
	/** The delivery this one sends again (POST /_sandbox/deliveries/{id}/resend), else null. */
	resend_of: string | null;
}

/**
 * How the media host misbehaves for valid signed links, set with POST /_sandbox/media-host/mode
 * (CONTRACT M8) until the next reset. `content_type` and `filename` replace the media's own.
 */
export type MediaHostMode = (
	| { kind: 'normal' }
	| { kind: 'redirects'; count: number }
	| { kind: 'redirect_loop' }
	| { kind: 'redirect_to'; location: string }
	| { kind: 'gzip_bomb'; decompressed_bytes: number }
	| { kind: 'trickle'; bytes_per_second: number }
) & { content_type?: string; filename?: string };

export interface MediaRequestRecord {
	method: string;
	path: string;
	headers: Record<string, string | string[] | undefined>;
	status: number;
	at: string;
}

export interface ApiRequestRecord {
	method: string;
	path: string;
	/** null when the connection was reset without an answer. */
	status: number | null;
	fault: FaultKind | null;
	at: string;
}

export interface LogEntry {
	id: string;
	category: LogCategory;
	created_at: string;
	[detail: string]: unknown;
}

export interface FaultSpec {
	kind: FaultKind;
	count: number;
	retry_after_seconds?: number;
	delay_ms?: number;
	path_prefix?: string;
	/** json_body: the answer's body. */
	body?: unknown;
}

export interface FaultView extends FaultSpec {
	id: string;
	remaining: number;
}

export interface WebhookState {
	url: string | null;
	configured: boolean;
	secret: string | null;
}

export interface NumberView extends SeededNumber {
	registered_at: string;
}

export interface SandboxState {
	now: string;
	account_id: string;
	credit_balance: number;
	numbers: NumberView[];
	keys: KeyView[];
	messages: MessageRecord[];
	/** Inbound and echo records, oldest first. */
	inbound: ConversationRecord[];
	media: MediaView[];
	webhook: WebhookState;
	/** Every signing secret the console issued since the sandbox started (kept across resets). */
	issued_secrets: string[];
	deliveries: DeliveryRecord[];
	media_requests: MediaRequestRecord[];
	requests: ApiRequestRecord[];
	requests_count: number;
	faults: FaultView[];
	logs: LogEntry[];
}

export interface SandboxOptions {
	/** 0 (default) picks a free port. */
	port?: number;
	/** Port of the media host (the other origin); 0 (default) picks a free port. */
	mediaPort?: number;
	host?: string;
	webhookTimeoutMs?: number;
	/**
	 * Answers some of the spec's open details another way (answers.ts, CONTRACT "Answering a guess
	 * differently"); the settings left out keep their default. Reset comes back to these.
	 */
	answers?: Partial<Answers>;
}

export interface Sandbox {
	/** e.g. http://127.0.0.1:4010, no trailing slash. */
	baseUrl: string;
	/** The other origin that serves signed media URLs. */
	mediaBaseUrl: string;
	keys: SeededKeys;
	keyIds: SeededKeyIds;
	numbers: SeededNumber[];
	close(): Promise<void>;
	reset(): void;
	advanceClock(seconds: number): void;
	now(): Date;
	state(): SandboxState;
	/** The current answers (all seven settings). */
	answers(): Answers;
	/** Changes some settings until the next reset (which restores the start answers); returns all seven. */
	setAnswers(partial: Partial<Answers>): Answers;
}
