// Two kinds of fixture, named apart:
// - *Envelope: what the service POSTs to the trigger, {event, data, timestamp} (spec, Events);
// - *Item: what a node emits, an n8n item ({json: …}) that the next node gets as input.
import { randomUUID } from 'node:crypto';
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

/**
 * The contact the tests write as: the envelopes come from it (and echoes go to it) unless told
 * otherwise, and the sandbox's inbound messages come from it. The sandbox's tests count on its
 * last three digits (recipient_masked +1555****567).
 */
export const CONTACT = '+15551234567';
/** A second contact, for what must tell two apart. */
export const OTHER_CONTACT = '+15557650000';
/** The account's number the envelopes name (phone_number_id) unless told otherwise. */
export const NUMBER = '109876543210';

/** A well-formed API key (sk_live_ + 48 hex) that is none of the sandbox's keys. */
export const API_KEY = `sk_live_${'ab'.repeat(24)}`;
/** A well-formed signing secret, the service's form (whsec_ + 64 hex). */
export const SIGNING_SECRET = `whsec_${'ab'.repeat(32)}`;
/** A secret that is not the one the receiver holds: what it signs must be refused. */
export const WRONG_SECRET = 'whsec_wrong';
/** A webhook URL that another system (the console, another tool) registered with the service. */
export const FOREIGN_URL = 'https://crm.example.org/hooks/messaging';

/** The service's timestamp shape, microseconds and +00:00, e.g. 2026-11-22T10:15:30.123456+00:00. */
export function serviceTimestamp(ms = Date.now()): string {
	return `${new Date(ms).toISOString().slice(0, 23)}456+00:00`;
}

/** A message.inbound envelope; `data` overrides the fields of a text from CONTACT. */
export function inboundEnvelope(data: IDataObject = {}, timestamp = serviceTimestamp()) {
	return {
		event: 'message.inbound',
		data: {
			from: CONTACT,
			contact_name: 'Ada',
			number: NUMBER,
			wa_message_id: `wamid.${randomUUID()}`,
			type: 'text',
			text: 'hello',
			media_id: null,
			media_url: null,
			...data,
		},
		timestamp,
	};
}

/** A message.status envelope. */
export function statusEnvelope(data: IDataObject = {}, timestamp = serviceTimestamp()) {
	return {
		event: 'message.status',
		data: {
			id: 'msg_1',
			wa_message_id: 'wamid.1',
			status: 'delivered',
			recipient_masked: '+1555****567',
			error: null,
			...data,
		},
		timestamp,
	};
}

/** A message.echo envelope (a message the business sent from the app). */
export function echoEnvelope(data: IDataObject = {}, timestamp = serviceTimestamp()) {
	return {
		event: 'message.echo',
		data: {
			to: CONTACT,
			number: NUMBER,
			wa_message_id: 'wamid.2',
			type: 'text',
			text: 'sent from the app',
			media_id: null,
			...data,
		},
		timestamp,
	};
}

/**
 * The trigger's output item for an inbound record the sandbox stored (POST /_sandbox/inbound):
 * the envelope of that message, as the action node receives it as input.
 */
export function inboundItem(record: IDataObject): INodeExecutionData {
	return {
		json: {
			event: 'message.inbound',
			data: {
				from: record.from,
				contact_name: record.contact_name,
				number: record.number,
				wa_message_id: record.wa_message_id,
				type: record.type,
				text: record.text,
				media_id: record.media_id,
				media_url: record.media_url,
			},
			timestamp: '2025-01-01T00:00:00.000000+00:00',
		},
	};
}
