/** GET /v1/media/{id} with the key, then its redirect without it, every hop checked before sent. */
import type { IBinaryData, IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { apiError, header, type RequestContext } from './errors';
import { serviceLine } from './redact';
import { bodyAsText, withServiceSentence } from './serviceText';
import {
	checkedCredential,
	fetchWithoutCredentials,
	rawApiRequest,
	throwForStatus,
	type RawResponse,
	type Readable,
} from './transport';
import {
	mediaAddressProblem,
	mediaUrlProblem,
	safeFileName,
	storedMimeType,
	type DownloadLimits,
} from './mediaPolicy';
import { mediaIdFromReference } from './fields';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Redirects the media host may add after the service's own 302. */
export const MAX_MEDIA_REDIRECTS = 3;

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

/** Addresses by n8n's resolver and SSRF rules (the scanner bars DNS imports); undefined on 1.x. */
async function resolvedAddresses(
	this: IExecuteFunctions,
	hostname: string,
): Promise<string[] | undefined> {
	if (typeof this.helpers.getSecureEgressFilter !== 'function') return undefined;
	const lookup = this.helpers.getSecureEgressFilter('safe').createSecureLookup();
	return await new Promise<string[]>((resolve, reject) => {
		lookup(hostname, { all: true }, (error, addresses) => {
			if (error) reject(error);
			else resolve(typeof addresses === 'string' ? [addresses] : addresses.map((a) => a.address));
		});
	});
}

export async function checkMediaTarget(
	this: IExecuteFunctions,
	target: URL,
	baseUrl: URL,
	context: RequestContext,
): Promise<void> {
	const refuse = (why: string, detail = '') =>
		new NodeOperationError(
			this.getNode(),
			`${context.operation}: refused to fetch the media from ${target.protocol}//${target.host}: ${why}. Check that the credential's Base URL is the real service; if it is, report the link to its support`,
			{
				itemIndex: context.itemIndex,
				description: `${detail}The service's media link (or a redirect from the media host) points somewhere n8n does not fetch from: a non-web scheme, a step down from https, or an address on this machine or a private network. Nothing was requested from it. Check that the credential's Base URL is the real service; if it is, report the link to its support.`,
			},
		);
	const textProblem = mediaUrlProblem(target, baseUrl);
	if (textProblem) throw refuse(textProblem);
	const hostname = target.hostname.replace(/^\[|\]$/g, '');
	let addresses: string[] | undefined;
	try {
		addresses = await resolvedAddresses.call(this, hostname);
	} catch (error) {
		// The reason goes in the description: n8n replaces a message naming ENOTFOUND with its own.
		const reason = serviceLine((error as Error).message ?? String(error));
		throw refuse(
			"its host could not be resolved, or n8n's own SSRF protection blocks it",
			`The resolver said: ${reason}. `,
		);
	}
	for (const address of addresses ?? []) {
		const problem = mediaAddressProblem(address, baseUrl);
		if (problem)
			throw refuse(
				`${target.hostname} resolves to ${address}: ${problem.replace(/^its address \S+ is /, '')}`,
			);
	}
}

async function fetchMediaFile(
	this: IExecuteFunctions,
	location: URL,
	baseUrl: URL,
	context: RequestContext,
	abort: { signal: AbortSignal; abortedError: () => Error },
): Promise<RawResponse<Readable>> {
	let target = location;
	for (let redirects = 0; ; redirects++) {
		await checkMediaTarget.call(this, target, baseUrl, context);
		const response = await fetchWithoutCredentials.call(this, target.toString(), context, abort);
		const next = REDIRECT_STATUSES.has(response.statusCode)
			? header(response.headers, 'location')
			: undefined;
		if (next === undefined) return response;
		response.body.destroy();
		if (redirects === MAX_MEDIA_REDIRECTS) {
			throw new NodeOperationError(
				this.getNode(),
				`${context.operation}: the media host redirected more than ${MAX_MEDIA_REDIRECTS} times. Try again later; if it keeps happening, report it to the service's support`,
				{
					itemIndex: context.itemIndex,
					description: `The redirects were not followed further (a loop, or a chain leading elsewhere); nothing was downloaded. Last hop: ${target.protocol}//${target.host}. Try again later, or report it to the service's support.`,
				},
			);
		}
		if (!URL.canParse(next, target.href)) {
			throw new NodeOperationError(
				this.getNode(),
				`${context.operation}: the media host redirected to an invalid URL. Try again later; if it keeps happening, report it to the service's support`,
				{ itemIndex: context.itemIndex, description: 'Nothing was downloaded.' },
			);
		}
		target = new URL(next, target);
	}
}

/** Destroys the body once its bytes (after decompression) pass the limit, or at the deadline. */
function enforceLimits(
	body: Readable,
	maxBytes: number,
	deadline: AbortSignal,
	errors: { tooLarge: () => Error; tooSlow: () => Error },
	onRefused: (error: Error) => void,
): () => void {
	let received = 0;
	const refuse = (error: Error) => {
		onRefused(error);
		body.destroy(error);
	};
	const count = (chunk: Buffer | string) => {
		received += chunk.length;
		if (received > maxBytes) refuse(errors.tooLarge());
	};
	const expire = () => refuse(errors.tooSlow());
	// Our 'data' listener must not start the flow before n8n's reader is attached: paused until
	// a reader listens for 'data' ('readable' readers resume by themselves).
	const resumeForReader = (event: string | symbol) => {
		if (event !== 'data') return;
		body.off('newListener', resumeForReader);
		body.resume();
	};
	body.on('data', count);
	body.pause();
	body.on('newListener', resumeForReader);
	deadline.addEventListener('abort', expire, { once: true });
	if (deadline.aborted) expire();
	return () => {
		body.off('data', count);
		body.off('newListener', resumeForReader);
		deadline.removeEventListener('abort', expire);
	};
}

export async function downloadMedia(
	this: IExecuteFunctions,
	reference: unknown,
	options: { itemIndex?: number; fieldName: string; operation: string; limits: DownloadLimits },
): Promise<{ mediaId: string; binary: IBinaryData; mimeTypeAsSent?: string }> {
	const node = this.getNode();
	const { itemIndex, operation, limits } = options;
	const context: RequestContext = { operation, scope: 'messages:read', itemIndex, media: true };
	const credential = await checkedCredential.call(this, itemIndex);
	const { baseUrl, secrets } = credential;
	const mediaId = mediaIdFromReference(node, reference, baseUrl, options.fieldName, itemIndex);

	// The credential read above: n8n reads it once per download.
	const pointer = await rawApiRequest.call(this, 'GET', `/v1/media/${mediaId}`, {
		context,
		credential,
	});
	const location = header(pointer.headers, 'location');
	if (!REDIRECT_STATUSES.has(pointer.statusCode) || !location) {
		if (!REDIRECT_STATUSES.has(pointer.statusCode)) throwForStatus(node, pointer, context);
		throw apiError(
			node,
			{ status: pointer.statusCode },
			{
				message: withServiceSentence(
					`${context.operation}: expected a redirect to the media file, got ${pointer.statusCode}. Check that the credential's Base URL is the service's address; if it is, report this to its support`,
					pointer.body,
				),
				description: `The body as it came: ${bodyAsText(pointer.body)}`,
				itemIndex,
			},
		);
	}

	const base = new URL(`${baseUrl}/`);
	if (!URL.canParse(location, base.href)) {
		throw apiError(
			node,
			{ status: pointer.statusCode },
			{
				message: `${context.operation}: the service's media link is not a valid URL. Try again later; if it keeps happening, report it to the service's support`,
				itemIndex,
			},
		);
	}
	const signedUrl = new URL(location, base);

	// One deadline for every hop and byte: an idle timeout alone lets a trickle run for ever.
	const maxBytes = Math.floor(limits.maxFileSizeMb * 1024 * 1024);
	const deadline = AbortSignal.timeout(limits.timeoutSeconds * 1000);
	const stopped = (message: string, description: string) => () =>
		new NodeOperationError(node, `${context.operation}: ${message}`, { itemIndex, description });
	const tooSlow = stopped(
		`the download took longer than the Download Timeout of ${limits.timeoutSeconds} s and was stopped. Try again later, or raise Download Timeout (Seconds) in the node's options`,
		"The media host is too slow, or stalling on purpose; nothing was kept. Try again later, or raise Download Timeout (Seconds) in the node's options for a large file on a slow link.",
	);
	const tooLarge = stopped(
		`the media file is larger than the Max File Size of ${limits.maxFileSizeMb} MB and was stopped. Raise Max File Size (MB) in the node's options if such a file is expected`,
		`The download was stopped once ${limits.maxFileSizeMb} MB had arrived (counted after decompression); nothing was kept. Raise Max File Size (MB) in the node's options if such a file is expected.`,
	);

	const file = await fetchMediaFile.call(this, signedUrl, base, context, {
		signal: deadline,
		abortedError: tooSlow,
	});
	if (file.statusCode < 200 || file.statusCode >= 300) {
		const text = serviceLine(await readSmallText(file.body), { known: secrets, max: 500 });
		const expired = [401, 403, 404, 410].includes(file.statusCode);
		throw apiError(
			node,
			{ status: file.statusCode, body: text },
			{
				message: withServiceSentence(
					expired
						? `The media link was refused (${file.statusCode}): it expired, or the media is past the account's retention window. Download media soon after its event arrives (the trigger's Download Media option does)`
						: `${context.operation}: the media host answered ${file.statusCode}. Try again later; if it keeps failing, report it to the service's support`,
					text,
				),
				description: `Media is kept only for the account's retention window and its links are short-lived: download it soon after the event arrives. The media host said: ${text || '(empty body)'}`,
				httpCode: String(file.statusCode),
				itemIndex,
			},
		);
	}
	const declaredLength = Number(header(file.headers, 'content-length'));
	if (Number.isFinite(declaredLength) && declaredLength > maxBytes) {
		file.body.destroy();
		throw tooLarge();
	}

	const id = decodeURIComponent(mediaId);
	const { mimeType, mimeTypeAsSent } = storedMimeType(header(file.headers, 'content-type'));
	const disposition = header(file.headers, 'content-disposition');
	const fileName = safeFileName(fileNameFromDisposition(disposition), id);
	let refusal: Error | undefined;
	const stopWatching = enforceLimits(
		file.body,
		maxBytes,
		deadline,
		{ tooLarge, tooSlow },
		(error) => (refusal ??= error),
	);
	try {
		const binary = await this.helpers.prepareBinaryData(file.body, fileName, mimeType);
		if (refusal) throw refusal;
		return { mediaId: id, binary, ...(mimeTypeAsSent !== undefined && { mimeTypeAsSent }) };
	} catch (error) {
		file.body.destroy();
		throw refusal ?? (deadline.aborted ? tooSlow() : error);
	} finally {
		stopWatching();
	}
}
