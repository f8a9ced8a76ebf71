// The signing secret is stored sealed under the API key (security item 4).
import { openSecret, sealSecret } from '../../../nodes/BusinessMessagingTrigger/registration/seal';

const KEY = `sk_live_${'a1'.repeat(24)}`;
const SECRET = `whsec_${'b2'.repeat(32)}`;

describe('sealSecret / openSecret', () => {
	it('opens with the same API key, and the sealed text does not contain the secret', () => {
		const sealed = sealSecret(SECRET, KEY);
		expect(sealed).not.toContain(SECRET);
		expect(sealed).not.toContain(SECRET.slice(6));
		expect(openSecret(sealed, KEY)).toBe(SECRET);
		// A key pasted with spaces around it is the same key.
		expect(openSecret(sealed, ` ${KEY} `)).toBe(SECRET);
	});

	it('every sealing is different (random salt and IV)', () => {
		expect(sealSecret(SECRET, KEY)).not.toBe(sealSecret(SECRET, KEY));
	});

	it('does not open with another key, tampered text, or anything that is not a sealed value', () => {
		const sealed = sealSecret(SECRET, KEY);
		expect(openSecret(sealed, `sk_live_${'c3'.repeat(24)}`)).toBeUndefined();
		const parts = sealed.split('.');
		const flipped = Buffer.from(parts[4], 'base64url');
		flipped[0] ^= 1;
		expect(openSecret([...parts.slice(0, 4), flipped.toString('base64url')].join('.'), KEY)).toBeUndefined();
		for (const value of [undefined, null, '', SECRET, 'v1.a.b.c', 'v2.' + parts.slice(1).join('.'), 42]) {
			expect(openSecret(value, KEY)).toBeUndefined();
		}
		expect(openSecret(sealed, undefined)).toBeUndefined();
	});
});
