/**
 * The one signed POST between parts of this package on one n8n: Reply and Wait for Answer
 * registering its wait through the trigger. A JSON body signed as the service signs its events
 * (`sha256=<hex HMAC>` of the raw body) with a key derived from the API key, under the header
 * that says what it is; redirects are never followed.
 */
import type { RequestHelperFunctions } from 'n8n-workflow';

import { deriveKey, type KeyLabel } from './credentialKeys';
import { computeSignature } from './signature';

/** `sha256=<hex HMAC>` of the raw body, keyed with the API key's derived key for `label`. */
export function signWithDerivedKey(
	apiKey: string,
	label: KeyLabel,
	rawBody: string | Buffer,
): string {
	return `sha256=${computeSignature(Buffer.from(rawBody), deriveKey(apiKey, label))}`;
}

export interface SignedPost {
	/** The header that carries the signature (and says what the request is). */
	header: string;
	/** Whose derived key signs it. */
	apiKey: string;
	label: KeyLabel;
	timeoutMs: number;
}

/** The other end's answer, whatever its status; the body as n8n's helper gives it (a string, or parsed JSON). */
export interface SignedPostAnswer {
	statusCode: number;
	body: unknown;
}

/**
 * POSTs `body` (JSON text) to `url`, signed over exactly these bytes. Every status is an answer
 * (none throws); a request that got no answer (refused, timed out) throws n8n's error.
 */
export async function postSigned(
	this: { helpers: Pick<RequestHelperFunctions, 'httpRequest'> },
	url: string,
	body: string,
	signed: SignedPost,
): Promise<SignedPostAnswer> {
	return (await this.helpers.httpRequest({
		method: 'POST',
		url,
		body,
		headers: {
			'content-type': 'application/json',
			[signed.header]: signWithDerivedKey(signed.apiKey, signed.label, body),
		},
		timeout: signed.timeoutMs,
		// A redirect would send the signed request (a wait's resume URLs) elsewhere.
		disableFollowRedirect: true,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		// Adds no `Accept: application/json` (json: true would); the answer's body may still come parsed.
		json: false,
	})) as SignedPostAnswer;
}
