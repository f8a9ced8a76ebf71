/** The one signed POST between parts of this n8n: Reply and Wait registering via the trigger. */
import type { RequestHelperFunctions } from 'n8n-workflow';

import { deriveKey, type KeyLabel } from './credentialKeys';
import { computeSignature } from './signature';
import type { RawResponse } from './transport';

export function signWithDerivedKey(
	apiKey: string,
	label: KeyLabel,
	rawBody: string | Buffer,
): string {
	return `sha256=${computeSignature(Buffer.from(rawBody), deriveKey(apiKey, label))}`;
}

/** POSTs `body` signed over exactly these bytes; every status is an answer, no answer throws. */
export async function postSigned(
	this: { helpers: Pick<RequestHelperFunctions, 'httpRequest'> },
	url: string,
	body: string,
	signed: { header: string; apiKey: string; label: KeyLabel; timeoutMs: number },
): Promise<Pick<RawResponse, 'statusCode' | 'body'>> {
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
	})) as RawResponse;
}
