// How the service signs a webhook delivery (spec, Events 2–3): the X-Service-Signature header is
// `sha256=<hex>`, hex = HMAC-SHA256 of the exact body bytes keyed with the signing secret.
// The one signing helper of the tests, the benchmarks and the sandbox. It must not import from
// nodes/: the node's own verification is checked against it (and, in the signature tests,
// against a second implementation written out there).
import { createHmac } from 'node:crypto';

/** The X-Service-Signature header value for these body bytes. */
export function signBody(body: Buffer | string, secret: string): string {
	return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * A delivery as the service sends it, for harness.receive(): the envelope as JSON bytes (a string
 * or Buffer is sent as it is), signed with the secret.
 */
export function signedRequest(envelope: unknown, secret: string) {
	const rawBody = Buffer.isBuffer(envelope)
		? envelope
		: Buffer.from(typeof envelope === 'string' ? envelope : JSON.stringify(envelope));
	return {
		headers: {
			'content-type': 'application/json',
			'x-service-signature': signBody(rawBody, secret),
		},
		rawBody,
	};
}
