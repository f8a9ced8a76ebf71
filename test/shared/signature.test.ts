import { createHmac } from 'crypto';

import { computeSignature, verifySignature } from '../../nodes/shared/signature';
import { SIGNING_SECRET, WRONG_SECRET } from '../support';

const body = Buffer.from(
	'{"event":"message.inbound","data":{"from":"+15550001111","text":"héllo \\u00e9 ✓","number":"1098"},"timestamp":"2025-01-02T03:04:05.123456+00:00"}',
	'utf8',
);
const sign = (bytes: Buffer | string, secret = SIGNING_SECRET) =>
	`sha256=${createHmac('sha256', secret).update(bytes).digest('hex')}`;

describe('verifySignature', () => {
	it('accepts the HMAC-SHA256 of the raw bytes, keyed with the secret', () => {
		expect(verifySignature(body, sign(body), SIGNING_SECRET)).toEqual({ valid: true });
	});

	it('accepts upper-case hex and a single-element header array', () => {
		const header = sign(body);
		expect(
			verifySignature(body, `sha256=${header.slice(7).toUpperCase()}`, SIGNING_SECRET),
		).toEqual({ valid: true });
		expect(verifySignature(body, [header], SIGNING_SECRET)).toEqual({ valid: true });
	});

	it('computeSignature is the hex digest the header carries', () => {
		expect(`sha256=${computeSignature(body, SIGNING_SECRET)}`).toBe(sign(body));
	});

	it('rejects a signature made with another secret', () => {
		const result = verifySignature(body, sign(body, WRONG_SECRET), SIGNING_SECRET);
		expect(result).toEqual({ valid: false, reason: expect.stringMatching(/does not match/) });
	});

	it('rejects when a single byte of the body was changed', () => {
		const header = sign(body);
		for (const index of [0, 10, Math.floor(body.length / 2), body.length - 1]) {
			const tampered = Buffer.from(body);
			tampered[index] = tampered[index] ^ 0x01;
			expect(verifySignature(tampered, header, SIGNING_SECRET).valid).toBe(false);
		}
	});

	it('rejects the same JSON re-serialised with other spacing or key order', () => {
		const header = sign(body);
		const parsed = JSON.parse(body.toString('utf8'));
		const respaced = Buffer.from(JSON.stringify(parsed, null, 2));
		const reordered = Buffer.from(
			JSON.stringify({ timestamp: parsed.timestamp, data: parsed.data, event: parsed.event }),
		);
		const compact = Buffer.from(JSON.stringify(parsed)); // the \u00e9 escape becomes a raw é
		for (const variant of [respaced, reordered, compact]) {
			expect(variant.equals(body)).toBe(false);
			expect(verifySignature(variant, header, SIGNING_SECRET)).toEqual({
				valid: false,
				reason: expect.stringMatching(/does not match/),
			});
		}
	});

	it('rejects a missing header', () => {
		expect(verifySignature(body, undefined, SIGNING_SECRET)).toEqual({
			valid: false,
			reason: expect.stringMatching(/missing/),
		});
		expect(verifySignature(body, '', SIGNING_SECRET).valid).toBe(false);
		expect(verifySignature(body, [], SIGNING_SECRET).valid).toBe(false);
	});

	it('rejects a header sent twice, even if one copy is right', () => {
		expect(verifySignature(body, [sign(body), sign(body)], SIGNING_SECRET).valid).toBe(false);
	});

	it('rejects the hex without the sha256= prefix, or with another algorithm', () => {
		const hex = sign(body).slice(7);
		expect(verifySignature(body, hex, SIGNING_SECRET)).toEqual({
			valid: false,
			reason: expect.stringMatching(/malformed/),
		});
		expect(verifySignature(body, `sha1=${hex}`, SIGNING_SECRET).valid).toBe(false);
		expect(verifySignature(body, `SHA256 ${hex}`, SIGNING_SECRET).valid).toBe(false);
		expect(verifySignature(body, ` sha256=${hex}`, SIGNING_SECRET).valid).toBe(false);
		expect(verifySignature(body, `sha256=${hex} `, SIGNING_SECRET).valid).toBe(false);
	});

	it('rejects truncated or over-long hex', () => {
		const header = sign(body);
		expect(verifySignature(body, header.slice(0, -1), SIGNING_SECRET)).toEqual({
			valid: false,
			reason: expect.stringMatching(/malformed/),
		});
		expect(verifySignature(body, header.slice(0, 7 + 32), SIGNING_SECRET).valid).toBe(false);
		expect(verifySignature(body, `${header}00`, SIGNING_SECRET).valid).toBe(false);
	});

	it('rejects non-hex characters of the right length', () => {
		const header = sign(body);
		const nonHex = `${header.slice(0, -1)}g`;
		expect(nonHex.length).toBe(header.length);
		expect(verifySignature(body, nonHex, SIGNING_SECRET)).toEqual({
			valid: false,
			reason: expect.stringMatching(/malformed/),
		});
		expect(verifySignature(body, `sha256=${'z'.repeat(64)}`, SIGNING_SECRET).valid).toBe(false);
	});

	it('fails closed without a secret: an empty secret never verifies, even against its own HMAC', () => {
		const headerWithEmptyKey = sign(body, '');
		expect(verifySignature(body, headerWithEmptyKey, '')).toEqual({
			valid: false,
			reason: expect.stringMatching(/no signing secret/),
		});
		expect(verifySignature(body, headerWithEmptyKey, undefined as unknown as string).valid).toBe(
			false,
		);
	});

	it('never throws on odd input', () => {
		expect(() =>
			verifySignature(undefined as unknown as Buffer, 'sha256=00', SIGNING_SECRET),
		).not.toThrow();
		expect(verifySignature('text' as unknown as Buffer, sign('text'), SIGNING_SECRET).valid).toBe(
			false,
		);
		expect(() => verifySignature(body, 42 as unknown as string, SIGNING_SECRET)).not.toThrow();
		expect(verifySignature(body, 42 as unknown as string, SIGNING_SECRET).valid).toBe(false);
	});

	it('verifies an empty body too (the envelope check rejects it afterwards)', () => {
		const empty = Buffer.alloc(0);
		expect(verifySignature(empty, sign(empty), SIGNING_SECRET)).toEqual({ valid: true });
	});
});

describe('an external test vector', () => {
	// GitHub's published webhook example ("Validating webhook deliveries"): another implementation
	// of the same scheme (sha256=<hex HMAC-SHA256 of the raw body>), so our signer is not checked only against itself.
	const secret = "It's a Secret to Everybody";
	const payload = Buffer.from('Hello, World!');
	const header = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

	it('computes the published signature and accepts it', () => {
		expect(`sha256=${computeSignature(payload, secret)}`).toBe(header);
		expect(verifySignature(payload, header, secret)).toEqual({ valid: true });
	});

	it('refuses it for another body or another secret', () => {
		expect(verifySignature(Buffer.from('Hello, World?'), header, secret).valid).toBe(false);
		expect(verifySignature(payload, header, "It's a Secret to Nobody").valid).toBe(false);
	});
});
