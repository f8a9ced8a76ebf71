/** The media download policy, pure: where from, the limits, the stored type and file name. */
import type { INode } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { ipAddressClass, isLoopbackHost } from './ipAddress';
import { CONTROL_OR_SEPARATOR } from './redact';

/** Names that mean this machine in common hosts files, whatever a resolver would say. */
const THIS_MACHINE_NAMES = new Set([
	'localhost',
	'localhost.localdomain',
	'ip6-localhost',
	'ip6-loopback',
]);

/** Why a media URL may not be fetched, from its text (names are checked again once resolved). */
export function mediaUrlProblem(target: URL, baseUrl: URL): string | undefined {
	if (target.protocol !== 'http:' && target.protocol !== 'https:')
		return `its scheme is "${target.protocol}" (only https, or http when the Base URL is http, is fetched)`;
	if (baseUrl.protocol === 'https:' && target.protocol !== 'https:')
		return 'it is http while the Base URL is https (the file would travel unencrypted)';
	if (target.username || target.password) return 'it carries a user name or password';
	const host = target.hostname.toLowerCase().replace(/\.$/, '');
	const thisMachine = THIS_MACHINE_NAMES.has(host) || host.endsWith('.localhost');
	if (thisMachine && !isLoopbackHost(baseUrl.hostname)) return `its host ${host} is this machine`;
	return ipAddressClass(host) === undefined ? undefined : mediaAddressProblem(host, baseUrl);
}

export function mediaAddressProblem(address: string, baseUrl: URL): string | undefined {
	const kind = ipAddressClass(address);
	if (kind === undefined) return `${address} is not an IP address`;
	if (kind === 'public') return undefined;
	if (kind === 'loopback' && isLoopbackHost(baseUrl.hostname)) return undefined;
	return `its address ${address} is ${kind === 'reserved' ? 'a reserved' : kind === 'unspecified' ? 'an unspecified' : `a ${kind}`} address`;
}

export const DEFAULT_MAX_FILE_SIZE_MB = 100;
export const DEFAULT_DOWNLOAD_TIMEOUT_SECONDS = 300;

export type DownloadLimits = { maxFileSizeMb: number; timeoutSeconds: number };
export type LimitOptions = { maxFileSize?: unknown; downloadTimeout?: unknown };

/** The limits from a node's options: defaults when empty, or the sentence naming a bad one. */
export function readDownloadLimits(options: LimitOptions): DownloadLimits | { problem: string } {
	const positive = (value: unknown, fallback: number, label: string): number | string => {
		if (value === undefined || value === null || value === '') return fallback;
		const number = typeof value === 'string' ? Number(value) : value;
		if (typeof number === 'number' && Number.isFinite(number) && number > 0) return number;
		return `${label} must be a number above 0, got ${JSON.stringify(value)?.slice(0, 50)}: enter one, or leave it empty for the default`;
	};
	const maxFileSizeMb = positive(
		options.maxFileSize,
		DEFAULT_MAX_FILE_SIZE_MB,
		'Max File Size (MB)',
	);
	const timeoutSeconds = positive(
		options.downloadTimeout,
		DEFAULT_DOWNLOAD_TIMEOUT_SECONDS,
		'Download Timeout (Seconds)',
	);
	if (typeof maxFileSizeMb === 'string') return { problem: maxFileSizeMb };
	if (typeof timeoutSeconds === 'string') return { problem: timeoutSeconds };
	return { maxFileSizeMb, timeoutSeconds };
}

/** readDownloadLimits for an action: a bad option throws. */
export function downloadLimits(
	node: INode,
	options: LimitOptions,
	itemIndex?: number,
): DownloadLimits {
	const limits = readDownloadLimits(options);
	if ('problem' in limits) {
		throw new NodeOperationError(node, limits.problem, {
			itemIndex,
			description: 'Nothing was downloaded. Leave it empty for the default.',
		});
	}
	return limits;
}

/** Types a browser would run or render as a page: such a file is stored as opaque bytes instead. */
const ACTIVE_CONTENT_TYPES = new Set([
	'text/html',
	'application/xhtml+xml',
	'image/svg+xml',
	'text/javascript',
	'application/javascript',
	'application/x-javascript',
	'application/ecmascript',
	'text/ecmascript',
	'text/xml',
	'application/xml',
	'text/xsl',
	'multipart/x-mixed-replace',
]);

/** The type to store a file under, and the type as sent when it was not kept. */
export function storedMimeType(sent: string | undefined): {
	mimeType: string;
	mimeTypeAsSent?: string;
} {
	const type = (sent ?? '').split(';')[0].trim().toLowerCase();
	if (!type) return { mimeType: 'application/octet-stream' };
	const wellFormed = /^[a-z0-9][\w.+-]*\/[a-z0-9][\w.+-]*$/.test(type);
	if (!wellFormed || ACTIVE_CONTENT_TYPES.has(type) || type.endsWith('+xml'))
		return { mimeType: 'application/octet-stream', mimeTypeAsSent: (sent ?? '').slice(0, 200) };
	return { mimeType: type };
}

const MAX_FILE_NAME_LENGTH = 200;

/** A safe file name: no control characters, separators or leading dots; ≤ 200 chars. */
export function safeFileName(sent: string | undefined, fallback: string): string {
	const cleaned = (sent ?? '')
		.replace(CONTROL_OR_SEPARATOR, '')
		.replace(/[/\\]/g, '_')
		.trim()
		.replace(/^\.+/, '');
	const characters = Array.from(cleaned || fallback.replace(/[/\\]/g, '_'));
	if (characters.length <= MAX_FILE_NAME_LENGTH) return characters.join('');
	const dot = characters.lastIndexOf('.');
	const extension = dot > 0 && characters.length - dot <= 16 ? characters.slice(dot) : [];
	return [...characters.slice(0, MAX_FILE_NAME_LENGTH - extension.length), ...extension].join('');
}
