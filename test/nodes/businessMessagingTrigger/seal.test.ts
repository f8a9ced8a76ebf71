// The signing secret is stored sealed under the API key (security item 4).
import { openSecret, sealSecret } from '../../../nodes/shared/seal';
import { API_KEY, SIGNING_SECRET } from '../../support';

describe('sealSecret / openSecret', () => {
	it('opens with the same API key, and the sealed text does not contain the secret', () => {
		const sealed = sealSecret(SIGNING_SECRET, API_KEY);
		expect(sealed).not.toContain(SIGNING_SECRET);
		expect(sealed).not.toContain(SIGNING_SECRET.slice(6));
		expect(openSecret(sealed, API_KEY)).toBe(SIGNING_SECRET);
		// A key pasted with spaces around it is the same key.
		expect(openSecret(sealed, ` ${API_KEY} `)).toBe(SIGNING_SECRET);
	});

	it('every sealing is different (random salt and IV)', () => {
		expect(sealSecret(SIGNING_SECRET, API_KEY)).not.toBe(sealSecret(SIGNING_SECRET, API_KEY));
	});

	it('does not open with another key, tampered text, or anything that is not a sealed value', () => {
		const sealed = sealSecret(SIGNING_SECRET, API_KEY);
		expect(openSecret(sealed, `sk_live_${'c3'.repeat(24)}`)).toBeUndefined();
		const parts = sealed.split('.');
		const flipped = Buffer.from(parts[4], 'base64url');
		flipped[0] ^= 1;
		expect(
			openSecret([...parts.slice(0, 4), flipped.toString('base64url')].join('.'), API_KEY),
		).toBeUndefined();
		for (const value of [
			undefined,
			null,
			'',
			SIGNING_SECRET,
			'v1.a.b.c',
			'v2.' + parts.slice(1).join('.'),
			42,
		]) {
			expect(openSecret(value, API_KEY)).toBeUndefined();
		}
		expect(openSecret(sealed, undefined)).toBeUndefined();
	});
});
