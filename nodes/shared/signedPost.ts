/**
 * The signed POSTs between the parts of this package on one n8n: a trigger joining (or leaving)
 * the account's holder, a trigger's heartbeat claiming the webhook through its own webhook(), the
 * holder handing the webhook off to a member, and Reply and Wait for Answer registering its wait
 * through the trigger. Each is a JSON body signed as the service signs its events
 * (`sha256=<hex HMAC>` of the raw body) with a key derived from the API key, under the header that
 * says what it is. The event forward (receiving/forward.ts) is not one of them: it signs a time
 * and the resumed workflow with the body, under its own key and headers, and retries.
 *
 * Only the transport is shared: what the answer means, and what a failure to reach the other end
 * means, stays with each caller.
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
		// A redirect would send the signed request (a wait's resume URLs, a hand-off's members) elsewhere.
		disableFollowRedirect: true,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		// Adds no `Accept: application/json` (json: true would); the answer's body may still come parsed.
		json: false,
	})) as SignedPostAnswer;
}
