import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { HttpError, safeDecode, sendError } from './http';
import { SIGNED_URL_TTL_SECONDS } from './policy';
import type { SandboxStore, StoredMedia } from './store';
import type { MediaHostMode } from './types';

/** Signs media links for the media host; the key lives only in this process. */
export class MediaSigner {
	private readonly key = randomBytes(32);

	constructor(private readonly mediaBaseUrl: string) {}

	signedUrl(mediaId: string, nowUnixSeconds: number): { url: string; expires: number } {
		const expires = nowUnixSeconds + SIGNED_URL_TTL_SECONDS;
		const query = new URLSearchParams({
			expires: String(expires),
			signature: this.signature(mediaId, expires),
		});
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
		for (let i = 0; i < block.length / 32; i++)
			createHash('sha256')
				.update(`sandbox-media-${i}`)
				.digest()
				.copy(block, i * 32);
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
			const error =
				err instanceof HttpError ? err : new HttpError(500, 'internal_error', String(err));
			status = error.status;
			sendError(res, error);
		} finally {
			store.recordMediaRequest({
				method,
				path,
				headers: { ...req.headers },
				status,
				at: store.now(),
			});
		}
	};
}

function serveMedia(
	store: SandboxStore,
	signer: MediaSigner,
	method: string,
	url: URL,
	res: ServerResponse,
): number {
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
		throw new HttpError(
			403,
			'url_expired',
			'The media link has expired: request a new one with GET /v1/media/{id}',
		);
	}
	const media = store.getMedia(mediaId);
	if (!media?.data) throw new HttpError(404, 'media_not_found', `No hosted media ${mediaId}`);
	if (store.isPastRetention(media))
		throw new HttpError(410, 'media_expired', `Media ${mediaId} is past the retention window`);
	return answerMedia(store.mediaHostMode, { ...media, data: media.data }, method, url, res);
}

/** The answer to a valid link, as the media host's mode (CONTRACT M8) has it. */
function answerMedia(
	mode: MediaHostMode,
	media: StoredMedia & { data: Buffer },
	method: string,
	url: URL,
	res: ServerResponse,
): number {
	const hop = Number(url.searchParams.get('hop') ?? '0');
	const redirect = (location: string): number => {
		res.writeHead(302, { Location: location, 'Cache-Control': 'no-store', 'Content-Length': '0' });
		res.end();
		return 302;
	};
	const nextHop = () => {
		const next = new URL(url.toString());
		next.searchParams.set('hop', String(hop + 1));
		return `${next.pathname}${next.search}`;
	};
	if (mode.kind === 'redirect_loop') return redirect(`${url.pathname}${url.search}`);
	if (mode.kind === 'redirects' && hop < mode.count) return redirect(nextHop());
	if (mode.kind === 'redirect_to' && hop === 0) return redirect(mode.location);

	const headers = {
		'Content-Type': mode.content_type ?? media.mime,
		'Content-Disposition': contentDisposition(mode.filename ?? media.filename),
		'Cache-Control': 'private, no-store',
	};
	if (mode.kind === 'gzip_bomb') {
		res.writeHead(200, { ...headers, 'Content-Encoding': 'gzip' });
		if (method === 'HEAD') res.end();
		else
			void pipeline(
				Readable.from(zeroChunks(mode.decompressed_bytes)),
				createGzip({ level: 9 }),
				res,
			).catch(() => undefined);
		return 200;
	}
	res.writeHead(200, { ...headers, 'Content-Length': String(media.data.length) });
	if (method === 'HEAD') res.end();
	else if (mode.kind === 'trickle') trickle(media.data, mode.bytes_per_second, res);
	else res.end(media.data);
	return 200;
}

/** `total` zero bytes in 64 KiB chunks, made as they are read (a bomb must not cost the sandbox memory). */
function* zeroChunks(total: number): Generator<Buffer> {
	const chunk = Buffer.alloc(64 * 1024);
	for (let sent = 0; sent < total; sent += chunk.length)
		yield chunk.subarray(0, Math.min(chunk.length, total - sent));
}

/** Sends `data` a few bytes each second; stops when the client goes away. */
function trickle(data: Buffer, bytesPerSecond: number, res: ServerResponse): void {
	let offset = 0;
	const timer = setInterval(() => {
		if (res.destroyed || offset >= data.length) {
			clearInterval(timer);
			if (!res.destroyed) res.end();
			return;
		}
		res.write(data.subarray(offset, offset + bytesPerSecond));
		offset += bytesPerSecond;
	}, 1000);
	res.on('close', () => clearInterval(timer));
}
