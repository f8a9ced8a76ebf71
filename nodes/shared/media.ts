import type { IBinaryData, IExecuteFunctions, IWebhookFunctions, INode } from 'n8n-workflow';
import { NodeApiError, NodeOperationError, sleep } from 'n8n-workflow';

import { bodyAsText, type RequestContext } from './errors';
import { RETRY_POLICY, pathSegment, rawApiRequest, resolveCredentials, throwForStatus } from './transport';

export type MediaContext = IExecuteFunctions | IWebhookFunctions;

/** Node's Readable, named without importing 'stream' (the scanner allows no such import). */
type Readable = Exclude<Parameters<MediaContext['helpers']['prepareBinaryData']>[0], Buffer>;

export interface DownloadedMedia {
	mediaId: string;
	binary: IBinaryData;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * The media id behind a reference: a bare id, or a media_url of the credential's own
 * service (`{base_url}/v1/media/{id}`). A URL of any other host is refused, so the
 * API key is only ever presented to the service itself.
 */
export function mediaIdFromReference(
	node: INode,
	reference: unknown,
	baseUrl: string,
	fieldName: string,
	itemIndex?: number,
): string {
	if (typeof reference === 'string' && /^https?:\/\//i.test(reference.trim())) {
		const base = new URL(baseUrl);
		const expected = `${base.origin}${base.pathname.replace(/\/$/, '')}/v1/media/{id}`;
		const invalid = (why: string) =>
			new NodeOperationError(node, `${fieldName} is not a valid media URL`, {
				itemIndex,
				description: `${why} Expected ${expected} (the media_url of an inbound event) or a bare media ID. Nothing was sent.`,
			});
		let url: URL;
		try {
			url = new URL(reference.trim());
		} catch {
			throw invalid(`"${reference.trim().slice(0, 200)}" does not parse as a URL.`);
		}
		const match = /^\/v1\/media\/([^/]+)\/?$/.exec(url.pathname.slice(base.pathname.replace(/\/$/, '').length));
		if (url.origin !== base.origin || !match) {
			throw new NodeOperationError(node, `${fieldName} is not a media URL of this credential's service`, {
				itemIndex,
				description: `Expected ${base.origin}${base.pathname.replace(/\/$/, '')}/v1/media/{id} (the media_url of an inbound event) or a bare media ID, got ${url.origin}${url.pathname}. The API key is only sent to the credential's Base URL.`,
			});
		}
		let id: string;
		try {
			id = decodeURIComponent(match[1]);
		} catch {
			throw invalid(`The media ID in it, "${match[1].slice(0, 100)}", is not valid percent-encoding.`);
		}
		return pathSegment(node, id, fieldName, itemIndex);
	}
	return pathSegment(node, reference, fieldName, itemIndex);
}

function header(headers: Record<string, unknown>, name: string): string | undefined {
	const value = headers[name];
	return Array.isArray(value) ? String(value[0]) : typeof value === 'string' ? value : undefined;
}

export function fileNameFromDisposition(disposition: string | undefined): string | undefined {
	if (!disposition) return undefined;
	const extended = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(disposition);
	if (extended) {
		try {
			return decodeURIComponent(extended[1].trim());
		} catch {
			// fall through to the plain parameter
		}
	}
	const plain = /filename\s*=\s*"?([^";]+)"?/.exec(disposition);
	return plain?.[1].trim() || undefined;
}

async function readSmallText(stream: Readable, limit = 2048): Promise<string> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of stream) {
		const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
		chunks.push(buffer);
		size += buffer.length;
		if (size >= limit) break;
	}
	stream.destroy();
	return Buffer.concat(chunks).toString('utf8').slice(0, limit);
}

interface StreamResponse {
	statusCode: number;
	headers: Record<string, unknown>;
	body: Readable;
}

/**
 * Fetches the short-lived signed URL. Deliberately without credentials: this function
 * never reads them, and the URL's host is not the service's.
 */
async function fetchSignedUrl(this: MediaContext, url: string, context: RequestContext): Promise<StreamResponse> {
	for (let attempt = 0; ; attempt++) {
		let response: StreamResponse;
		try {
			response = (await this.helpers.httpRequest({
				method: 'GET',
				url,
				encoding: 'stream',
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				timeout: 60_000,
			})) as StreamResponse;
		} catch (error) {
			if (attempt < RETRY_POLICY.retries) {
				await sleep(RETRY_POLICY.baseDelayMs * 2 ** attempt);
				continue;
			}
			throw new NodeApiError(this.getNode(), { message: (error as Error).message }, {
				message: `${context.operation}: could not fetch the media file (${(error as Error).message})`,
				itemIndex: context.itemIndex,
			});
		}
		if ((response.statusCode >= 500 || response.statusCode === 429) && attempt < RETRY_POLICY.retries) {
			response.body.destroy();
			await sleep(RETRY_POLICY.baseDelayMs * 2 ** attempt);
			continue;
		}
		return response;
	}
}

/**
 * GET /v1/media/{id}, then the file from the signed URL it redirects to, streamed into
 * n8n's binary data (to disk in n8n's filesystem mode, never whole in our memory).
 */
export async function downloadMedia(
	this: MediaContext,
	reference: unknown,
	options: { itemIndex?: number; fieldName: string; operation?: string },
): Promise<DownloadedMedia> {
	const node = this.getNode();
	const context: RequestContext = {
		operation: options.operation ?? 'Media → Download',
		scope: 'messages:read',
		itemIndex: options.itemIndex,
		media: true,
	};
	const { baseUrl } = await resolveCredentials.call(this, options.itemIndex);
	const mediaId = mediaIdFromReference(node, reference, baseUrl, options.fieldName, options.itemIndex);

	const pointer = await rawApiRequest.call(this, 'GET', `/v1/media/${mediaId}`, { context });
	if (!REDIRECT_STATUSES.has(pointer.statusCode)) throwForStatus(node, pointer, context);
	const location = header(pointer.headers, 'location');
	if (!REDIRECT_STATUSES.has(pointer.statusCode) || !location) {
		throw new NodeApiError(node, { status: pointer.statusCode }, {
			message: `${context.operation}: expected a redirect to the media file, got ${pointer.statusCode}`,
			description: `The body as it came: ${bodyAsText(pointer.body)}`,
			itemIndex: options.itemIndex,
		});
	}
	const signedUrl = new URL(location, `${baseUrl}/`).toString();

	const file = await fetchSignedUrl.call(this, signedUrl, context);
	if (file.statusCode < 200 || file.statusCode >= 300) {
		const text = await readSmallText(file.body);
		const expired = [401, 403, 404, 410].includes(file.statusCode);
		throw new NodeApiError(node, { status: file.statusCode, body: text }, {
			message: expired
				? `The media link was refused (${file.statusCode}): it expired, or the media is past the account's retention window`
				: `${context.operation}: the media host answered ${file.statusCode}`,
			description: `Media is kept only for the account's retention window and its links are short-lived: download it soon after the event arrives. The media host said: ${text || '(empty body)'}`,
			httpCode: String(file.statusCode),
			itemIndex: options.itemIndex,
		});
	}

	const mimeType = header(file.headers, 'content-type')?.split(';')[0].trim() || 'application/octet-stream';
	const fileName =
		fileNameFromDisposition(header(file.headers, 'content-disposition')) ?? decodeURIComponent(mediaId);
	const binary = await this.helpers.prepareBinaryData(file.body, fileName, mimeType);
	return { mediaId: decodeURIComponent(mediaId), binary };
}
