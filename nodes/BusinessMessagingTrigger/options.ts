/** Every trigger option read and bounded once, defaults beside it. Pure: a bad value falls back. */
import type { IDataObject } from 'n8n-workflow';

import { splitList } from '../shared/fields';
import { readDownloadLimits } from '../shared/mediaPolicy';

// Max Event Age: delivered within ~8 s, never retried; 5 min for clock skew. No "off" (replays).
export const DEFAULT_MAX_AGE_SECONDS = 300;
export const MAX_EVENT_AGE_SECONDS = 3600;

/** Late Delivery Cutoff: 3 s left to store and answer within the service's ~8 s. */
export const DEFAULT_LATE_DELIVERY_CUTOFF_SECONDS = 5;

export const DEFAULT_CATCH_UP_INTERVAL_SECONDS = 60;
export const MIN_CATCH_UP_INTERVAL_SECONDS = 10;
export const DEFAULT_MAX_RECOVERED = 500;
export const MAX_RECOVERED = 10_000;
/** Never further back than this (how long the service keeps messages is not shown). */
export const MAX_CATCH_UP_DAYS = 7;

export const DEFAULT_HAND_OVER_MINUTES = 30;
export const MAX_HAND_OVER_MINUTES = 7 * 24 * 60;

// Quiet period at most 20: with its 1 s grace and n8n's intake, a wait fits n8n's 30 s shutdown.
export const QUIET_PERIOD_SECONDS = { default: 5, min: 1, max: 20 };
export const LONGEST_WAIT_SECONDS = { default: 60, min: 5, max: 600 };

export type CombineSettings = { quietMs: number; longestMs: number };
export type HandOverSettings = ReturnType<typeof handOverSettings>;
export type OnActivation = 'sinceLastActive' | 'fromActivation';
export type TriggerOptions = ReturnType<typeof readTriggerOptions>;

const isEmpty = (value: unknown) => value === undefined || value === null || value === '';

function positiveOr(value: unknown, fallback: number): number {
	const number = Number(value);
	return Number.isFinite(number) && number > 0 ? number : fallback;
}

/** The maximum age within 1 s .. 1 h; 0 (which used to turn the check off) means the bound. */
export function boundedMaxAge(seconds: number): number {
	if (!Number.isFinite(seconds) || seconds < 0) return DEFAULT_MAX_AGE_SECONDS;
	return seconds === 0
		? MAX_EVENT_AGE_SECONDS
		: Math.min(Math.max(seconds, 1), MAX_EVENT_AGE_SECONDS);
}

export function handOverSettings(raw: IDataObject | undefined) {
	const mode: 'off' | 'output' | 'drop' =
		raw?.handOver === 'output' || raw?.handOver === 'drop' ? raw.handOver : 'off';
	const minutes = positiveOr(raw?.handOverMinutes, DEFAULT_HAND_OVER_MINUTES);
	return { mode, minutes: Math.min(MAX_HAND_OVER_MINUTES, minutes) };
}

export function catchUpSettings(raw: IDataObject) {
	const max = Number(raw.maxRecovered);
	const intervalSeconds = positiveOr(raw.catchUpInterval, DEFAULT_CATCH_UP_INTERVAL_SECONDS);
	const maxRecovered = Number.isFinite(max) && max >= 1 ? Math.floor(max) : DEFAULT_MAX_RECOVERED;
	const onActivation: OnActivation =
		raw.onActivation === 'fromActivation' ? 'fromActivation' : 'sinceLastActive';
	return {
		intervalMs: Math.max(intervalSeconds, MIN_CATCH_UP_INTERVAL_SECONDS) * 1000,
		onActivation,
		maxRecovered: Math.min(Math.max(maxRecovered, 1), MAX_RECOVERED),
	};
}

const BOUNDED = [
	['quietPeriod', 'Quiet Period (Seconds)', QUIET_PERIOD_SECONDS],
	['longestWait', 'Longest Wait (Seconds)', LONGEST_WAIT_SECONDS],
] as const;

/** What is wrong with Combine's numbers (an expression can put anything there). */
export function combineProblem(raw: IDataObject): string | undefined {
	if (raw.combineMessages !== true) return undefined;
	for (const [name, label, bounds] of BOUNDED) {
		if (isEmpty(raw[name])) continue;
		const value = Number(raw[name]);
		if (!Number.isFinite(value) || value < bounds.min || value > bounds.max)
			return `Options → ${label} must be a number from ${bounds.min} to ${bounds.max} (it is ${String(raw[name])})`;
	}
	return undefined;
}

export function combineSettings(raw: IDataObject): CombineSettings | undefined {
	if (raw.combineMessages !== true || combineProblem(raw) !== undefined) return undefined;
	const [quiet, longest] = BOUNDED.map(([name, , bounds]) =>
		isEmpty(raw[name]) ? bounds.default : Number(raw[name]),
	);
	return { quietMs: quiet * 1000, longestMs: longest * 1000 };
}

export function readTriggerOptions(raw: IDataObject, catchUp = true) {
	const maxAge = isEmpty(raw.maxAge) ? DEFAULT_MAX_AGE_SECONDS : Number(raw.maxAge);
	const cutoffSeconds = positiveOr(raw.lateDeliveryCutoff, DEFAULT_LATE_DELIVERY_CUTOFF_SECONDS);
	const binaryPropertyName =
		typeof raw.binaryPropertyName === 'string' ? raw.binaryPropertyName.trim() : '';
	return {
		maxAgeSeconds: boundedMaxAge(maxAge),
		lateDeliveryCutoffMs: catchUp ? cutoffSeconds * 1000 : undefined,
		downloadMedia: raw.downloadMedia === true,
		binaryPropertyName: binaryPropertyName || 'data',
		downloadLimits: readDownloadLimits(raw),
		numbers: splitList(raw.numbers),
		statuses: splitList(raw.statuses).map((status) => status.toLowerCase()),
		handOver: handOverSettings(raw),
		catchUp: catchUpSettings(raw),
		takeOver: raw.takeOver === true,
		onWebhookTaken: raw.onWebhookTaken === 'stop' ? ('stop' as const) : ('catchUp' as const),
		/** Undefined: each message is its own item. */
		combine: combineSettings(raw),
	};
}
