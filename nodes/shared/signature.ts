/** Webhook signature: `sha256=<hex HMAC-SHA256>` of the raw bytes as they came. Never throws. */
import { createHmac, timingSafeEqual } from 'crypto';

export const SIGNATURE_HEADER = 'x-service-signature';

const HEADER_PATTERN = /^sha256=([0-9a-f]{64})$/i;

export const SIGNATURE_MISMATCH = 'the signature does not match the body';

type SignatureResult = { valid: true } | { valid: false; reason: string };

export function computeSignature(rawBody: Buffer, secret: string): string {
	return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/** Whether the header could be a signature at all: checked before any secret is read. */
export function hasSignatureShape(header: string | string[] | undefined): boolean {
	const value = Array.isArray(header) && header.length === 1 ? header[0] : header;
	return typeof value === 'string' && HEADER_PATTERN.test(value);
}

export function verifySignature(
	rawBody: Buffer,
	header: string | string[] | undefined,
	secret: string,
): SignatureResult {
	try {
		if (typeof secret !== 'string' || secret === '')
			return { valid: false, reason: 'no signing secret is available to verify the signature' };
		if (!Buffer.isBuffer(rawBody))
			return { valid: false, reason: 'the raw request body is not available' };
		if (Array.isArray(header) && header.length > 1)
			return { valid: false, reason: 'the signature header was sent more than once' };
		const value = Array.isArray(header) ? header[0] : header;
		if (typeof value !== 'string' || value === '')
			return { valid: false, reason: 'the signature header is missing' };
		const match = HEADER_PATTERN.exec(value);
		if (!match) {
			return {
				valid: false,
				reason: 'the signature header is malformed (expected sha256= followed by 64 hex digits)',
			};
		}
		const received = Buffer.from(match[1].toLowerCase(), 'hex');
		const expected = Buffer.from(computeSignature(rawBody, secret), 'hex');
		if (received.length !== expected.length || !timingSafeEqual(received, expected))
			return { valid: false, reason: SIGNATURE_MISMATCH };
		return { valid: true };
	} catch {
		return { valid: false, reason: 'the signature could not be checked' };
	}
}
