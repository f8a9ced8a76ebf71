/**
 * Media download: GET /v1/media/{id} with the key, then the file from the short-lived signed
 * URL it redirects to, fetched without credentials (the URL's host is not the service's) and
 * streamed into n8n's binary data (to disk in n8n's filesystem mode, never whole in memory).
 */
import type { IBinaryData, IExecuteFunctions, IWebhookFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { bodyAsText, type RequestContext } from './errors';
import { redactText } from './redact';
import {
	checkedCredential,
	fetchWithoutCredentials,
	rawApiRequest,
	throwForStatus,
	type RawResponse,
	type Readable,
} from './transport';
import { mediaIdFromReference } from './validate';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

function header(headers: RawResponse['headers'], name: string): string | undefined {
	const value = headers[name];
	return Array.isArray(value) ? value[0] : value;
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

/** The start of an error body from the media host, for the message. */
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

export async function downloadMedia(
	this: IExecuteFunctions | IWebhookFunctions,
	reference: unknown,
	options: { itemIndex?: number; fieldName: string; operation: string },
): Promise<{ mediaId: string; binary: IBinaryData }> {
	const node = this.getNode();
	const { itemIndex } = options;
	const context: RequestContext = { operation: options.operation, scope: 'messages:read', itemIndex, media: true };
	const { baseUrl, secrets } = await checkedCredential.call(this, itemIndex);
	const mediaId = mediaIdFromReference(node, reference, baseUrl, options.fieldName, itemIndex);

	const pointer = await rawApiRequest.call(this, 'GET', `/v1/media/${mediaId}`, { context });
	const location = header(pointer.headers, 'location');
	if (!REDIRECT_STATUSES.has(pointer.statusCode) || !location) {
		if (!REDIRECT_STATUSES.has(pointer.statusCode)) throwForStatus(node, pointer, context);
		throw new NodeApiError(node, { status: pointer.statusCode }, {
			message: `${context.operation}: expected a redirect to the media file, got ${pointer.statusCode}`,
			description: `The body as it came: ${bodyAsText(pointer.body)}`,
			itemIndex,
		});
	}

	const file = await fetchWithoutCredentials.call(this, new URL(location, `${baseUrl}/`).toString(), context);
	if (file.statusCode < 200 || file.statusCode >= 300) {
		const text = redactText(await readSmallText(file.body), secrets);
		const expired = [401, 403, 404, 410].includes(file.statusCode);
		throw new NodeApiError(node, { status: file.statusCode, body: text }, {
			message: expired
				? `The media link was refused (${file.statusCode}): it expired, or the media is past the account's retention window`
				: `${context.operation}: the media host answered ${file.statusCode}`,
			description: `Media is kept only for the account's retention window and its links are short-lived: download it soon after the event arrives. The media host said: ${text || '(empty body)'}`,
			httpCode: String(file.statusCode),
			itemIndex,
		});
	}

	const id = decodeURIComponent(mediaId);
	const mimeType = header(file.headers, 'content-type')?.split(';')[0].trim() || 'application/octet-stream';
	const fileName = fileNameFromDisposition(header(file.headers, 'content-disposition')) ?? id;
	return { mediaId: id, binary: await this.helpers.prepareBinaryData(file.body, fileName, mimeType) };
}
