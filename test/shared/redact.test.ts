// Security review 2, item 6: what redaction missed on 2458c7e. Each case failed there.
import { redact, redactText } from '../../nodes/shared/redact';

const KEY = 'sk_live_Ab+Cd/Ef==Gh_0123456789';

describe('redactText', () => {
	it('redacts a key URL-encoded inside a text whole, not only up to the first escape', () => {
		const text = `request: /v1/ping?key=${encodeURIComponent(KEY)}&x=1`;
		const out = redactText(text);
		expect(out).not.toContain('%2BCd');
		expect(out).not.toContain('Ef');
		expect(out).toBe('request: /v1/ping?key=sk_live_[redacted]&x=1');
	});

	it('redacts a key JSON-escaped (\\/) inside a text body whole', () => {
		const text = JSON.stringify({ echo: KEY }).replace(/\//g, '\\/');
		const out = redactText(text);
		expect(out).not.toContain('Ef==');
		expect(out).toBe('{"echo":"sk_live_[redacted]"}');
	});

	it('redacts every written form of a known value, also without a recognisable prefix', () => {
		const secret = 'n0t-a-prefix/secret+value';
		for (const form of [secret, encodeURIComponent(secret), 'n0t-a-prefix\\/secret+value']) {
			expect(redactText(`got ${form} back`, [secret])).toBe('got [redacted] back');
		}
	});
});

describe('redact', () => {
	it('never shows the text value of a field named like a secret (the registration answer, say)', () => {
		const body = {
			url: 'https://n8n.example.com/webhook/x',
			signing_secret: 'plain-value-without-prefix',
		};
		expect(redact(body)).toEqual({
			url: 'https://n8n.example.com/webhook/x',
			signing_secret: '[redacted]',
		});
		// The original is left as it came.
		expect(body.signing_secret).toBe('plain-value-without-prefix');
	});

	it('keeps a "__proto__" key of a service body as a plain field, never as the prototype of the copy', () => {
		const body = JSON.parse('{"__proto__": {"polluted": "sk_live_abcdefgh"}, "a": 1}') as Record<
			string,
			unknown
		>;
		const out = redact(body) as Record<string, unknown>;
		expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
		expect((out as { polluted?: unknown }).polluted).toBeUndefined();
		expect(Object.prototype.hasOwnProperty.call(out, '__proto__')).toBe(true);
		expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":"sk_live_[redacted]"},"a":1}');
	});
});
