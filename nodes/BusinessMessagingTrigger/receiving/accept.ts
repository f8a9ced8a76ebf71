/**
 * Whether a request is an event this node runs, without n8n's context: the signature over the
 * raw bytes first, then the envelope, the replay window and the Late Delivery Cutoff
 * (checkDelivery), then this node's filters (filterDelivery). The node's
 * parameters are read (readParameters) only for a verified, well-formed envelope.
 */
import type { IDataObject } from 'n8n-workflow';

import { verifySignature } from '../../shared/signature';
import { outputLayout } from '../description';
import { readTriggerOptions, type TriggerOptions } from '../options';
import {
	EVENT_TYPES,
	checkEventAge,
	parseEnvelope,
	type EventEnvelope,
	type EventType,
} from './envelope';

/** What receiving reads from the node's parameters; read only once the signature is valid. */
export interface EventParameters {
	events: unknown;
	/** Recover Missed Messages; absent counts as on, its default. */
	catchUp?: unknown;
	options: IDataObject;
	separateOutputs: unknown;
}

export type Acceptance =
	| { kind: 'reject'; status: 400 | 401; reason: string }
	| { kind: 'ignore'; reason: string }
	| { kind: 'late'; reason: string }
	| {
			kind: 'emit';
			envelope: EventEnvelope;
			timestampMs: number;
			options: TriggerOptions;
			layout: EventType[] | null;
	  };

/** Why a verified, valid event is not for this workflow, or undefined when it is. */
function filterReason(
	envelope: EventEnvelope,
	events: string[],
	options: TriggerOptions,
): string | undefined {
	if (!events.includes(envelope.event)) return `event ${envelope.event} is not selected`;
	const data = envelope.data;
	if (options.numbers.length > 0 && envelope.event !== 'message.status') {
		const number = typeof data.number === 'string' ? data.number.trim() : '';
		if (!options.numbers.includes(number))
			return `number ${number || '(none)'} is not among the receiving numbers`;
	}
	if (options.statuses.length > 0 && envelope.event === 'message.status') {
		const status = typeof data.status === 'string' ? data.status.trim().toLowerCase() : '';
		if (!options.statuses.includes(status))
			return `status ${status || '(none)'} is not among the status values`;
	}
	return undefined;
}

/** A verified, well-formed event in time, before this node's own filters. */
export interface Delivery {
	kind: 'deliver';
	envelope: EventEnvelope;
	timestampMs: number;
	options: TriggerOptions;
	events: string[];
	layout: EventType[] | null;
}

/** The envelope, this node's parameters and its Max Event Age, for bytes already verified. */
function readDelivery(
	rawBody: Buffer,
	nowMs: number,
	readParameters: () => EventParameters,
): Delivery | { kind: 'reject'; status: 400 | 401; reason: string } {
	const parsed = parseEnvelope(rawBody);
	if (!parsed.ok)
		return { kind: 'reject', status: 400, reason: `not a valid event envelope: ${parsed.reason}` };
	const { envelope } = parsed;

	const parameters = readParameters();
	const options = readTriggerOptions(parameters.options ?? {}, parameters.catchUp !== false);
	const age = checkEventAge(parsed.timestampMs, nowMs, options.maxAgeSeconds);
	if (!age.ok) return { kind: 'reject', status: 401, reason: `replay protection: ${age.reason}` };

	const selected = parameters.events;
	const events = (Array.isArray(selected) ? selected : ['message.inbound']).filter(
		(value): value is string => (EVENT_TYPES as readonly string[]).includes(value as string),
	);
	return {
		kind: 'deliver',
		envelope,
		timestampMs: parsed.timestampMs,
		options,
		events,
		layout: outputLayout(events, parameters.separateOutputs),
	};
}

/**
 * What the service sent, before this node's filters: the signature over the bytes as they
 * arrived, the envelope, the age, the Late Delivery Cutoff.
 */
export function checkDelivery(
	rawBody: Buffer,
	signatureHeader: string | string[] | undefined,
	secret: string,
	nowMs: number,
	readParameters: () => EventParameters,
): Delivery | Exclude<Acceptance, { kind: 'emit' } | { kind: 'ignore' }> {
	const verdict = verifySignature(rawBody, signatureHeader, secret);
	if (!verdict.valid) return { kind: 'reject', status: 401, reason: verdict.reason };
	// Only now look at the body.
	const delivery = readDelivery(rawBody, nowMs, readParameters);
	if (delivery.kind !== 'deliver') return delivery;

	// Too late to be acknowledged within the service's ~8 s: not run , so that the
	// service's "failed" and "not run by any trigger of this n8n" agree and each catch-up runs it once.
	// Not a status event: the service keeps none, no catch-up could run it, so it runs now, late.
	const ageMs = nowMs - delivery.timestampMs;
	const cutoffMs = delivery.options.lateDeliveryCutoffMs;
	if (cutoffMs !== undefined && ageMs > cutoffMs && delivery.envelope.event !== 'message.status') {
		return {
			kind: 'late',
			reason: `the event is ${(ageMs / 1000).toFixed(1)} s old (Late Delivery Cutoff ${cutoffMs / 1000} s): not run here, the catch-up recovers it`,
		};
	}
	return delivery;
}

/** This node's own filters: acknowledged (200) with no execution when the event is not for it. */
export function filterDelivery(delivery: Delivery): Acceptance {
	const ignored = filterReason(delivery.envelope, delivery.events, delivery.options);
	if (ignored) return { kind: 'ignore', reason: ignored };
	const { envelope, timestampMs, options, layout } = delivery;
	return { kind: 'emit', envelope, timestampMs, options, layout };
}

export function acceptEvent(
	rawBody: Buffer,
	signatureHeader: string | string[] | undefined,
	secret: string,
	nowMs: number,
	readParameters: () => EventParameters,
): Acceptance {
	const delivery = checkDelivery(rawBody, signatureHeader, secret, nowMs, readParameters);
	return delivery.kind === 'deliver' ? filterDelivery(delivery) : delivery;
}
