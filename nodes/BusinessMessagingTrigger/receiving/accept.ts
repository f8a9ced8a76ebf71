/** Whether a request is an event this node runs; its parameters are read only once verified. */
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

export interface EventParameters {
	events: unknown;
	/** Recover Missed Messages; absent counts as on, its default. */
	catchUp?: unknown;
	options: IDataObject;
	separateOutputs: unknown;
}

export type Emit = {
	kind: 'emit';
	envelope: EventEnvelope;
	timestampMs: number;
	options: TriggerOptions;
	layout: EventType[] | null;
};

export type Acceptance =
	| { kind: 'reject'; status: 400 | 401; reason: string }
	| { kind: 'ignore'; reason: string }
	/** `emit`: what it would have been, unless filtered out (an answer to a wait may still resume). */
	| { kind: 'late'; reason: string; emit?: Emit }
	| Emit;

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

/** Signature over the raw bytes, envelope, age, Late Delivery Cutoff, then this node's filters. */
export function acceptEvent(
	rawBody: Buffer,
	signatureHeader: string | string[] | undefined,
	secret: string,
	nowMs: number,
	readParameters: () => EventParameters,
): Acceptance {
	const verdict = verifySignature(rawBody, signatureHeader, secret);
	if (!verdict.valid) return { kind: 'reject', status: 401, reason: verdict.reason };
	const parsed = parseEnvelope(rawBody);
	if (!parsed.ok)
		return { kind: 'reject', status: 400, reason: `not a valid event envelope: ${parsed.reason}` };
	const { envelope, timestampMs } = parsed;

	const parameters = readParameters();
	const options = readTriggerOptions(parameters.options ?? {}, parameters.catchUp !== false);
	const age = checkEventAge(timestampMs, nowMs, options.maxAgeSeconds);
	if (!age.ok) return { kind: 'reject', status: 401, reason: `replay protection: ${age.reason}` };
	const selected = parameters.events;
	const events = (Array.isArray(selected) ? selected : ['message.inbound']).filter(
		(value): value is string => (EVENT_TYPES as readonly string[]).includes(value as string),
	);
	const layout = outputLayout(events, parameters.separateOutputs);

	// Past the service's ~8 s: not run, so that its "failed" means "not run" and the catch-up runs it
	// once. Not a status event: the service keeps none, so no catch-up could run it.
	const ageMs = nowMs - timestampMs;
	const cutoffMs = options.lateDeliveryCutoffMs;
	const ignored = filterReason(envelope, events, options);
	const emit: Emit = { kind: 'emit', envelope, timestampMs, options, layout };
	if (cutoffMs !== undefined && ageMs > cutoffMs && envelope.event !== 'message.status') {
		return {
			kind: 'late',
			reason: `the event is ${(ageMs / 1000).toFixed(1)} s old (Late Delivery Cutoff ${cutoffMs / 1000} s): not run here, the catch-up recovers it`,
			...(!ignored && { emit }),
		};
	}
	if (ignored) return { kind: 'ignore', reason: ignored };
	return emit;
}
