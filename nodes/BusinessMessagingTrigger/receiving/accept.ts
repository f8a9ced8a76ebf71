/** Whether a request is an event this node runs; its parameters are read only once verified. */
import type { IDataObject, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';

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

/** What this node runs, read once per entry point (webhook(), trigger()). */
export interface NodeSettings {
	options: TriggerOptions;
	events: EventType[];
	layout: EventType[] | null;
}

export function readNodeSettings(parameters: EventParameters): NodeSettings {
	const options = readTriggerOptions(parameters.options ?? {}, parameters.catchUp !== false);
	const selected = Array.isArray(parameters.events) ? parameters.events : ['message.inbound'];
	const events = EVENT_TYPES.filter((type) => selected.includes(type));
	return { options, events, layout: outputLayout(events, parameters.separateOutputs) };
}

export function nodeParameters(this: IWebhookFunctions | ITriggerFunctions): EventParameters {
	return {
		events: this.getNodeParameter('events', ['message.inbound']),
		catchUp: this.getNodeParameter('catchUp', true),
		options: this.getNodeParameter('options', {}) as IDataObject,
		separateOutputs: this.getNodeParameter('separateOutputs', false),
	};
}

const trimmed = (value: unknown) =>
	typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '';

/** Why an event does not run here (events, numbers, statuses), for webhook and catch-up alike. */
export function filterReason(
	event: string,
	data: Record<string, unknown>,
	{ events, options }: Pick<NodeSettings, 'events' | 'options'>,
): string | undefined {
	if (!(events as string[]).includes(event)) return `event ${event} is not selected`;
	if (options.numbers.length > 0 && event !== 'message.status') {
		const number = trimmed(data.number);
		if (!options.numbers.includes(number))
			return `number ${number || '(none)'} is not among the receiving numbers`;
	}
	if (options.statuses.length > 0 && event === 'message.status') {
		const status = trimmed(data.status).toLowerCase();
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

	const settings = readNodeSettings(readParameters());
	const { options, layout } = settings;
	const age = checkEventAge(timestampMs, nowMs, options.maxAgeSeconds);
	if (!age.ok) return { kind: 'reject', status: 401, reason: `replay protection: ${age.reason}` };

	// Past the service's ~8 s: not run, so that its "failed" means "not run" and the catch-up runs it
	// once. Not a status event: the service keeps none, so no catch-up could run it.
	const ageMs = nowMs - timestampMs;
	const cutoffMs = options.lateDeliveryCutoffMs;
	const ignored = filterReason(envelope.event, envelope.data, settings);
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
