import type { SandboxContext } from './context';
import { HttpError } from './http';
import { newMediaId, newMessageId, newRecordId, newWaMessageId } from './ids';
import { defaultFilename } from './media';
import type {
	DeliveryOutcome,
	DeliveryStatus,
	EchoRecord,
	InboundRecord,
	MessageRecord,
	MessageType,
	StoredKey,
} from './types';

/**
 * The number a reply leaves from, per the spec's `from` rules: one allowed number may be implied;
 * several require `from`; a `from` the key may not use is 403.
 */
export function resolveSender(
	allowed: string[] | null,
	accountNumbers: string[],
	from: string | undefined,
): string {
	const usable = allowed ?? accountNumbers;
	if (from === undefined) {
		if (usable.length === 1) return usable[0];
		const whose = allowed
			? `This key is limited to ${usable.length} numbers`
			: `The account has ${usable.length} numbers`;
		throw new HttpError(
			422,
			'from_required',
			`${whose} (${usable.join(', ')}): pass "from", the phone_number_id that received the inbound message (its "number" field)`,
		);
	}
	if (!usable.includes(from)) {
		const why = allowed
			? `this key is limited to ${allowed.join(', ')}`
			: `it is not a number of this account (${accountNumbers.join(', ')})`;
		throw new HttpError(403, 'from_not_allowed', `"from" ${from} cannot be used: ${why}`);
	}
	return from;
}

export function sendReply(
	ctx: SandboxContext,
	key: StoredKey,
	input: { to: string; text: string; from?: string },
): MessageRecord {
	const { store } = ctx;
	const from = resolveSender(key.allowed_numbers, store.accountNumberIds(), input.from);
	if (!store.isReplyWindowOpen(input.to, from)) {
		throw new HttpError(
			422,
			'window_closed',
			`No inbound message from ${input.to} on number ${from} in the last 24 hours: free-text replies are only allowed inside the 24-hour window. Send a template message instead.`,
		);
	}
	const now = store.now();
	const message: MessageRecord = {
		id: newMessageId(),
		wa_message_id: newWaMessageId(),
		direction: 'out',
		type: 'text',
		to: input.to,
		from,
		text: input.text,
		status: 'sent',
		error: null,
		created_at: now,
		updated_at: now,
	};
	store.addMessage(message);
	store.log('sends', {
		message_id: message.id,
		wa_message_id: message.wa_message_id,
		to: message.to,
		from,
		key_id: key.id,
	});
	store.debitReply(message.id);
	return message;
}

export function inferType(mime: string): MessageType {
	const family = mime.split('/')[0];
	if (family === 'image' || family === 'audio' || family === 'video') return family;
	return 'document';
}

export interface InboundInput {
	from: string;
	contact_name: string;
	number: string;
	type?: MessageType;
	text: string;
	media?: { mime: string; data: Buffer; filename?: string };
	host_media: boolean;
}

export async function receiveInbound(
	ctx: SandboxContext,
	input: InboundInput,
): Promise<{ record: InboundRecord; delivery: DeliveryOutcome }> {
	const { store } = ctx;
	const type = input.type ?? (input.media ? inferType(input.media.mime) : 'text');
	checkTypeAndContent(type, input.text, input.media !== undefined, 'media');
	let mediaId: string | null = null;
	let mediaUrl: string | null = null;
	if (input.media) {
		mediaId = newMediaId();
		store.addMedia({
			id: mediaId,
			mime: input.media.mime,
			filename: input.media.filename ?? defaultFilename(mediaId, input.media.mime),
			data: input.host_media ? input.media.data : null,
			createdMs: store.nowMs(),
		});
		if (input.host_media) mediaUrl = `${ctx.baseUrl}/v1/media/${mediaId}`;
	}
	const record: InboundRecord = {
		id: newRecordId(),
		direction: 'in',
		from: input.from,
		contact_name: input.contact_name,
		number: input.number,
		wa_message_id: newWaMessageId(),
		type,
		text: input.text,
		media_id: mediaId,
		media_url: mediaUrl,
		media_mime: input.media?.mime ?? null,
		created_at: store.now(),
	};
	store.addConversationRecord(record);
	logReception(ctx, record.id, 'in', record.from, record.number, record.wa_message_id, type);
	const delivery = await ctx.webhooks.deliver('message.inbound', {
		from: record.from,
		contact_name: record.contact_name,
		number: record.number,
		wa_message_id: record.wa_message_id,
		type: record.type,
		text: record.text,
		media_id: record.media_id,
		media_url: record.media_url,
	});
	return { record, delivery };
}

export interface EchoInput {
	to: string;
	number: string;
	type?: MessageType;
	text: string;
	media_mime?: string;
}

export async function relayEcho(
	ctx: SandboxContext,
	input: EchoInput,
): Promise<{ record: EchoRecord; delivery: DeliveryOutcome }> {
	const { store } = ctx;
	const type = input.type ?? (input.media_mime ? inferType(input.media_mime) : 'text');
	checkTypeAndContent(type, input.text, input.media_mime !== undefined, 'media_mime');
	const record: EchoRecord = {
		id: newRecordId(),
		direction: 'echo',
		to: input.to,
		number: input.number,
		wa_message_id: newWaMessageId(),
		type,
		text: input.text,
		// The platform gives echoes a media id but no way to download them.
		media_id: input.media_mime ? newMediaId() : null,
		media_mime: input.media_mime ?? null,
		created_at: store.now(),
	};
	store.addConversationRecord(record);
	logReception(ctx, record.id, 'echo', record.to, record.number, record.wa_message_id, type);
	const delivery = await ctx.webhooks.deliver('message.echo', {
		to: record.to,
		number: record.number,
		wa_message_id: record.wa_message_id,
		type: record.type,
		text: record.text,
		media_id: record.media_id,
		media_mime: record.media_mime,
	});
	return { record, delivery };
}

export async function updateStatus(
	ctx: SandboxContext,
	input: { id: string; status: DeliveryStatus; error?: unknown },
): Promise<{ message: MessageRecord; delivery: DeliveryOutcome }> {
	const { store } = ctx;
	const message = store.getMessage(input.id);
	if (!message)
		throw new HttpError(
			404,
			'message_not_found',
			`No message ${input.id} was sent through the API`,
		);
	message.status = input.status;
	message.error = input.error === undefined ? defaultError(input.status) : input.error;
	message.updated_at = store.now();
	store.touch();
	const delivery = await ctx.webhooks.deliver('message.status', {
		id: message.id,
		wa_message_id: message.wa_message_id,
		status: message.status,
		recipient_masked: maskRecipient(message.to),
		error: message.error,
	});
	return { message: { ...message }, delivery };
}

/** Guess for the unshown error shape, used only when a failure is simulated without one. */
function defaultError(status: DeliveryStatus): unknown {
	return status === 'failed'
		? { code: 'undeliverable', message: 'The message could not be delivered' }
		: null;
}

/**
 * Keeps the "+", the first 4 and the last 3 digits and stars the rest: +15550000001 -> +1555****001.
 * Numbers of fewer than 10 digits keep 2 and 2 so that something is always hidden.
 */
export function maskRecipient(phone: string): string {
	const digits = phone.replace(/^\+/, '');
	const [head, tail] = digits.length >= 10 ? [4, 3] : [2, 2];
	const hidden = Math.max(1, digits.length - head - tail);
	return `+${digits.slice(0, head)}${'*'.repeat(hidden)}${digits.slice(digits.length - tail)}`;
}

function checkTypeAndContent(
	type: MessageType,
	text: string,
	hasMedia: boolean,
	mediaField: string,
): void {
	if (type === 'text') {
		if (hasMedia)
			throw new HttpError(
				400,
				'invalid_request',
				`Invalid body: ${mediaField}: not allowed for type text`,
			);
		if (text.length === 0)
			throw new HttpError(400, 'invalid_request', 'Invalid body: text: required for type text');
	} else if (!hasMedia) {
		throw new HttpError(
			400,
			'invalid_request',
			`Invalid body: ${mediaField}: required for type ${type}`,
		);
	}
}

function logReception(
	ctx: SandboxContext,
	recordId: string,
	direction: 'in' | 'echo',
	contact: string,
	number: string,
	waMessageId: string,
	type: MessageType,
): void {
	ctx.store.log('receptions', {
		record_id: recordId,
		direction,
		contact,
		number,
		wa_message_id: waMessageId,
		type,
	});
}
