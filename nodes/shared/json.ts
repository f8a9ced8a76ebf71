/** What a JSON value is, for the checks and messages of every module. */
import type { IDataObject } from 'n8n-workflow';

import { serviceLine } from './redact';

export function isPlainObject(value: unknown): value is IDataObject {
	return (
		typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value)
	);
}

export function describeType(value: unknown): string {
	if (value === null) return 'null';
	if (Array.isArray(value)) return 'a list';
	return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

export function parseJsonBody(rawBody: Buffer): unknown {
	try {
		return JSON.parse(rawBody.toString('utf8')) as unknown;
	} catch {
		return undefined;
	}
}

/** A body for an error message: short, on one printable line, redacted (serviceLine). */
export function shortened(body: unknown, max = 300): string {
	const text = typeof body === 'string' ? body : (JSON.stringify(body) ?? String(body));
	return serviceLine(text, { max });
}

/** JSON with every object's keys in order: the same text whatever order a store kept them in (MySQL's JSON). */
export function canonicalJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
	if (!isPlainObject(value)) return JSON.stringify(value) ?? 'null';
	const keys = Object.keys(value)
		.filter((key) => value[key] !== undefined)
		.sort();
	return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`;
}
