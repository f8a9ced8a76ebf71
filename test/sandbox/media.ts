import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, safeDecode, sendError } from './http';
import { SIGNED_URL_TTL_SECONDS } from './policy';
import type { SandboxStore } from './store';

/** Signs media links for the media host; the key lives only in this process. */
export class MediaSigner {
	private readonly key = randomBytes(32);

	constructor(private readonly mediaBaseUrl: string) {}

	signedUrl(mediaId: string, nowUnixSeconds: number): { url: string; expires: number } {
		const expires = nowUnixSeconds + SIGNED_URL_TTL_SECONDS;
		const query = new URLSearchParams({ expires: String(expires), signature: this.signature(mediaId, expires) });
		return { url: `${this.mediaBaseUrl}/media/${encodeURIComponent(mediaId)}?${query}`, expires };
	}

	verify(mediaId: string, expires: string, signature: string): boolean {
		const expected = Buffer.from(this.signature(mediaId, expires));
		const given = Buffer.from(signature);
		return expected.length === given.length && timingSafeEqual(expected, given);
	}

	private signature(mediaId: string, expires: number | string): string {
		return createHmac('sha256', this.key).update(`${mediaId}:${expires}`).digest('hex');
	}
}

/** Largest file `POST /_sandbox/inbound` generates from `media.size_bytes`. */
export const MAX_GENERATED_MEDIA_BYTES = 1024 * 1024 * 1024;

let generated: Buffer | undefined;

/**
 * Deterministic bytes for large test media (benchmarks), so they need not travel as base64
 * over JSON: a 64 KiB block of SHA-256 output (sha256("sandbox-media-0"), "-1", ...) repeated
 * and cut to `size`. The largest buffer made so far is kept and shared (never mutated).
 */
export function generatedMediaBytes(size: number): Buffer {
	if (!Number.isSafeInteger(size) || size < 1 || size > MAX_GENERATED_MEDIA_BYTES) {
		throw new RangeError(`size must be an integer from 1 to ${MAX_GENERATED_MEDIA_BYTES}`);
	}
	if (!generated || generated.length < size) {
		const block = Buffer.alloc(64 * 1024);
		for (let i = 0; i < block.length / 32; i++) createHash('sha256').update(`sandbox-media-${i}`).digest().copy(block, i * 32);
		generated = Buffer.allocUnsafe(size).fill(block);
	}
	return generated.subarray(0, size);
}

const EXTENSIONS: Record<string, string> = {
	'image/jpeg': 'jpg',
	'image/png': 'png',
	'image/webp': 'webp',
	'image/gif': 'gif',
	'audio/ogg': 'ogg',
	'audio/mpeg': 'mp3',
	'audio/aac': 'aac',
	'video/mp4': 'mp4',
	'video/3gpp': '3gp',
	'application/pdf': 'pdf',
	'text/plain': 'txt',
};

export function defaultFilename(mediaId: string, mime: string): string {
	return `${mediaId}.${EXTENSIONS[mime.toLowerCase()] ?? 'bin'}`;
}

/** ASCII fallback plus RFC 5987 form, so non-ASCII names survive. */
export function contentDisposition(filename: string): string {
	const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
	return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * The second origin: serves media bytes behind signed, expiring URLs. It records the headers of every
 * request so tests can check that the API key never reaches it.
 */
export function createMediaHostHandler(store: SandboxStore, signer: MediaSigner) {
	return (req: IncomingMessage, res: ServerResponse): void => {
		const method = req.method ?? 'GET';
		const path = req.url ?? '/';
		let status = 500;
		try {
			status = serveMedia(store, signer, method, new URL(path, 'http://media.invalid'), res);
		} catch (err) {
			const error = err instanceof HttpError ? err : new HttpError(500, 'internal_error', String(err));
			status = error.status;
			sendError(res, error);
		} finally {
			store.recordMediaRequest({ method, path, headers: { ...req.headers }, status, at: store.now() });
		}
	};
}

function serveMedia(store: SandboxStore, signer: MediaSigner, method: string, url: URL, res: ServerResponse): number {
	const match = /^\/media\/([^/]+)$/.exec(url.pathname);
	if (!match) throw new HttpError(404, 'not_found', `No media path ${url.pathname}`);
	if (method !== 'GET' && method !== 'HEAD') {
		throw new HttpError(405, 'method_not_allowed', 'Only GET and HEAD', { Allow: 'GET, HEAD' });
	}
	const mediaId = safeDecode(match[1]);
	const expires = url.searchParams.get('expires') ?? '';
	const signature = url.searchParams.get('signature') ?? '';
	if (!/^\d+$/.test(expires) || !signer.verify(mediaId, expires, signature)) {
		throw new HttpError(403, 'invalid_signature', 'The media link signature is missing or wrong');
	}
	if (store.nowMs() / 1000 > Number(expires)) {
		throw new HttpError(403, 'url_expired', 'The media link has expired: request a new one with GET /v1/media/{id}');
	}
	const media = store.getMedia(mediaId);
	if (!media?.data) throw new HttpError(404, 'media_not_found', `No hosted media ${mediaId}`);
	if (store.isPastRetention(media)) throw new HttpError(410, 'media_expired', `Media ${mediaId} is past the retention window`);
	res.writeHead(200, {
		'Content-Type': media.mime,
		'Content-Length': String(media.data.length),
		'Content-Disposition': contentDisposition(media.filename),
		'Cache-Control': 'private, no-store',
	});
	res.end(method === 'HEAD' ? undefined : media.data);
	return 200;
}
