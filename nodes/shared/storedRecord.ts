/** A stored message record, pure and tolerant: the spec does not show its fields (CONTRACT I4). */
import type { IDataObject } from 'n8n-workflow';

/** Below this a unix number is seconds (year 5138), below the next milliseconds. */
const LARGEST_SECONDS = 1e11;
const LARGEST_MILLISECONDS = 1e14;

export function recordText(record: IDataObject): string | undefined {
	if (typeof record.text === 'string') return record.text;
	return typeof record.body === 'string' ? record.body : undefined;
}

/** The digits of a non-negative unix number, as written (no float arithmetic on the fraction). */
function unixDigits(value: unknown): { whole: string; fraction: string } | undefined {
	let text: string;
	if (typeof value === 'number' && Number.isFinite(value)) {
		// Shortest round-trip form: 1795770930.123456 stays "1795770930.123456".
		text = value < 1e21 ? String(value) : '';
		if (/e/i.test(text)) text = value.toFixed(6);
	} else if (typeof value === 'string') text = value.trim();
	else return undefined;
	const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
	return match ? { whole: match[1], fraction: match[2] ?? '' } : undefined;
}

/** Unix seconds or milliseconds as the ISO form the service's `created_at` has (µs, +00:00). */
export function isoFromUnix(value: unknown): string | undefined {
	const digits = unixDigits(value);
	if (!digits) return undefined;
	const whole = Number(digits.whole);
	let seconds: number;
	let micros: string;
	if (whole < LARGEST_SECONDS) {
		seconds = whole;
		micros = digits.fraction.padEnd(6, '0').slice(0, 6);
	} else if (whole < LARGEST_MILLISECONDS) {
		seconds = Math.floor(whole / 1000);
		micros = String(whole % 1000).padStart(3, '0') + digits.fraction.padEnd(3, '0').slice(0, 3);
	} else return undefined;
	const iso = new Date(seconds * 1000).toISOString(); // 2026-11-22T10:15:30.000Z
	return `${iso.slice(0, 19)}.${micros}+00:00`;
}

function readableTime(value: unknown): string | undefined {
	if (typeof value === 'string' && !/^\s*\d+(\.\d+)?\s*$/.test(value))
		return Number.isNaN(Date.parse(value)) ? undefined : value;
	return isoFromUnix(value);
}

/** When the record was stored, as an ISO string the watermark compares; undefined: unreadable. */
export function recordCreatedAt(record: IDataObject): string | undefined {
	return readableTime(record.created_at) ?? readableTime(record.created);
}

/** The record plus `text` and ISO `created_at` when it lacks them (the watermark reads strings). */
export function withCanonicalFields(record: IDataObject): IDataObject {
	const canonical: IDataObject = { ...record };
	const text = recordText(record);
	if (text !== undefined && typeof record.text !== 'string') canonical.text = text;
	const createdAt = recordCreatedAt(record);
	if (createdAt !== undefined && createdAt !== record.created_at) canonical.created_at = createdAt;
	return canonical;
}
