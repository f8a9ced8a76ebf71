// Property-based tests of the webhook signature check (nodes/BusinessMessagingTrigger/signature.ts).
//
// Spec, Events 2–3: `X-Service-Signature: sha256=<hex>`, hex = HMAC-SHA256 of the raw body bytes
// keyed with the signing secret; re-serialising the body changes the signature. The property:
// for random bodies, secrets and mutations, exactly the correctly signed raw bytes are accepted.
//
// Decisions this file pins down (documented in README → Reliability):
// - Case: the prefix and the hex are matched case-insensitively (`SHA256=ABCD…` is accepted when
//   the MAC is right). Hex case carries no information, so this cannot let a forgery through;
//   the 256-bit MAC alone decides.
// - Nothing else is tolerated: no surrounding or inner whitespace, no other algorithm or
//   separator, exactly 64 hex digits, exactly one header value (an array of two, even two
//   identical correct copies, and node:http's comma-joined form are refused).
// - "Wrong secret" means a secret that is not the same HMAC key: HMAC pads keys with zero bytes
//   and replaces keys over 64 bytes by their SHA-256, so "abc" and "abc\0" sign alike. The
//   generators below therefore draw secrets without NUL and of at most 64 bytes, besides the
//   service's own form (whsec_ + 64 hex, 70 bytes: hashed, so any two different ones differ).
//
// NUM_RUNS cases per property; the seed is printed once (test/hardening/seed.ts).
import fc from 'fast-check';

import { verifySignature } from '../../nodes/shared/signature';
import { signBody } from '../support';
import { configureSeed } from './seed';

const NUM_RUNS = 10_000;
configureSeed('signature.property');

const accepted = (body: Buffer, value: unknown, secret: string) =>
	verifySignature(body, value as string | string[] | undefined, secret).valid;

// ---- generators ----------------------------------------------------------------------------

/** The service's secrets (whsec_ + 64 hex) and arbitrary non-NUL secrets of 1–64 UTF-8 bytes. */
const secretArb: fc.Arbitrary<string> = fc.oneof(
	fc.stringMatching(/^whsec_[0-9a-f]{64}$/),
	fc
		.string({ unit: 'grapheme', minLength: 1, maxLength: 40 })
		.filter((s) => !s.includes('\u0000') && Buffer.byteLength(s) <= 64),
	fc
		.string({ unit: 'binary-ascii', minLength: 1, maxLength: 64 })
		.filter((s) => !s.includes('\u0000')),
);

/** Two secrets that are different HMAC keys. */
const twoSecretsArb = fc.tuple(secretArb, secretArb).filter(([a, b]) => a !== b);

/** An event the way the service serialises it: compact JSON, UTF-8. */
const eventArb = fc.record({
	event: fc.constantFrom('message.inbound', 'message.status', 'message.echo'),
	data: fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 8 }),
	timestamp: fc.constant('2026-11-22T10:15:30.123456+00:00'),
});

/** Raw bodies: service-shaped JSON, arbitrary JSON text, and arbitrary bytes (empty included). */
const bodyArb: fc.Arbitrary<Buffer> = fc.oneof(
	eventArb.map((event) => Buffer.from(JSON.stringify(event), 'utf8')),
	fc.json({ maxDepth: 4 }).map((text) => Buffer.from(text, 'utf8')),
	fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)),
);
const nonEmptyBodyArb = bodyArb.filter((body) => body.length > 0);

const hexDigit = fc.constantFrom(...'0123456789abcdefABCDEF'.split(''));
const whitespace = fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u200b', '\ufeff');

/** Recursively reorders object keys (a permutation drawn per object) and re-serialises. */
function reorderKeys(value: unknown, pick: (n: number) => number): unknown {
	if (Array.isArray(value)) return value.map((entry) => reorderKeys(entry, pick));
	if (value && typeof value === 'object') {
		const entries = Object.entries(value as Record<string, unknown>);
		const shuffled: Array<[string, unknown]> = [];
		while (entries.length) shuffled.push(entries.splice(pick(entries.length), 1)[0]);
		return Object.fromEntries(shuffled.map(([k, v]) => [k, reorderKeys(v, pick)]));
	}
	return value;
}

/** Python's json.dumps default spacing: ", " and ": " between tokens, never inside strings. */
function spaced(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(spaced).join(', ')}]`;
	if (value && typeof value === 'object') {
		return `{${Object.entries(value as Record<string, unknown>)
			.map(([k, v]) => `${JSON.stringify(k)}: ${spaced(v)}`)
			.join(', ')}}`;
	}
	return JSON.stringify(value);
}

/** Ways a correct header can be turned into another one. */
type HeaderMutation = { name: string; apply: (correct: string) => unknown };

const headerMutationArb: fc.Arbitrary<HeaderMutation> = fc.oneof(
	fc.constant<HeaderMutation>({ name: 'prefix removed', apply: (h) => h.slice('sha256='.length) }),
	fc
		.constantFrom(
			'sha1=',
			'sha512=',
			'sha-256=',
			'sha256:',
			'sha256 ',
			'sha256==',
			'hmac-sha256=',
			'v1=',
			'=',
			'sha256',
		)
		.map((prefix) => ({
			name: `prefix ${JSON.stringify(prefix)}`,
			apply: (h: string) => prefix + h.slice(7),
		})),
	fc
		.tuple(
			fc.array(whitespace, { minLength: 1, maxLength: 3 }),
			fc.constantFrom('before', 'after', 'both', 'inside-prefix', 'inside-hex'),
			fc.nat(63),
		)
		.map(([ws, where, at]) => ({
			name: `whitespace ${where}`,
			apply: (h: string) => {
				const w = ws.join('');
				if (where === 'before') return w + h;
				if (where === 'after') return h + w;
				if (where === 'both') return w + h + w;
				if (where === 'inside-prefix') return `sha256${w}=${h.slice(7)}`;
				return h.slice(0, 7 + at) + w + h.slice(7 + at);
			},
		})),
	fc.integer({ min: 1, max: 64 }).map((cut) => ({
		name: `hex truncated by ${cut}`,
		apply: (h: string) => h.slice(0, h.length - cut),
	})),
	fc
		.array(hexDigit, { minLength: 1, maxLength: 64 })
		.map((extra) => ({ name: 'hex extended', apply: (h: string) => h + extra.join('') })),
	fc
		.tuple(fc.nat(63), fc.constantFrom(...'gGzZxX-+_./ =:\u00e9\u0000'.split('')))
		.map(([at, char]) => ({
			name: `non-hex ${JSON.stringify(char)} at ${at}`,
			apply: (h: string) => h.slice(0, 7 + at) + char + h.slice(8 + at),
		})),
	fc.tuple(fc.nat(63), fc.integer({ min: 1, max: 15 })).map(([at, delta]) => ({
		name: `hex digit ${at} changed`,
		apply: (h: string) =>
			h.slice(0, 7 + at) + ((parseInt(h[7 + at], 16) + delta) % 16).toString(16) + h.slice(8 + at),
	})),
	fc.constant<HeaderMutation>({ name: 'two identical headers', apply: (h) => [h, h] }),
	fc.constant<HeaderMutation>({
		name: 'comma-joined duplicate (node:http)',
		apply: (h) => `${h}, ${h}`,
	}),
	fc.constant<HeaderMutation>({
		name: 'correct + wrong header',
		apply: (h) => [h, `sha256=${'0'.repeat(64)}`],
	}),
	fc.constant<HeaderMutation>({
		name: 'wrong + correct header',
		apply: (h) => [`sha256=${'0'.repeat(64)}`, h],
	}),
	fc.constantFrom<HeaderMutation>(
		{ name: 'empty string', apply: () => '' },
		{ name: 'empty array', apply: () => [] },
		{ name: 'undefined', apply: () => undefined },
		{ name: 'null', apply: () => null },
		{ name: 'prefix only', apply: () => 'sha256=' },
		{ name: 'array holding an empty string', apply: () => [''] },
		{ name: 'number', apply: () => 0 },
	),
	fc.constant<HeaderMutation>({
		name: 'base64 instead of hex',
		apply: (h) => `sha256=${Buffer.from(h.slice(7), 'hex').toString('base64')}`,
	}),
	fc.constant<HeaderMutation>({
		name: 'hex of the hex',
		apply: (h) => `sha256=${Buffer.from(h.slice(7)).toString('hex').slice(0, 64)}`,
	}),
);

// ---- properties ----------------------------------------------------------------------------

describe(`verifySignature, ${NUM_RUNS} random cases per property`, () => {
	it('accepts the HMAC-SHA256 of the raw bytes, as a string or a one-element array', () => {
		fc.assert(
			fc.property(bodyArb, secretArb, fc.boolean(), (body, secret, asArray) => {
				const value = signBody(body, secret);
				return accepted(body, asArray ? [value] : value, secret);
			}),
			{ numRuns: NUM_RUNS },
		);
	});

	it('accepts any letter case of a correct header (prefix and hex), and no case of a wrong one', () => {
		fc.assert(
			fc.property(
				bodyArb,
				twoSecretsArb,
				fc.array(fc.boolean(), { minLength: 71, maxLength: 71 }),
				(body, [secret, other], upper) => {
					const recase = (value: string) =>
						value
							.split('')
							.map((char, i) => (upper[i] ? char.toUpperCase() : char.toLowerCase()))
							.join('');
					return (
						accepted(body, recase(signBody(body, secret)), secret) &&
						!accepted(body, recase(signBody(body, other)), secret)
					);
				},
			),
			{ numRuns: NUM_RUNS },
		);
	});

	it('rejects the body with any single byte changed', () => {
		fc.assert(
			fc.property(
				nonEmptyBodyArb,
				secretArb,
				fc.nat(),
				fc.integer({ min: 1, max: 255 }),
				(body, secret, at, mask) => {
					const value = signBody(body, secret);
					const tampered = Buffer.from(body);
					tampered[at % body.length] ^= mask;
					return !accepted(tampered, value, secret);
				},
			),
			{ numRuns: NUM_RUNS },
		);
	});

	it('rejects the body truncated, extended or prefixed', () => {
		fc.assert(
			fc.property(
				nonEmptyBodyArb,
				secretArb,
				fc.oneof(
					fc.nat().map((n) => ({ kind: 'truncate' as const, n })),
					fc
						.uint8Array({ minLength: 1, maxLength: 64 })
						.map((bytes) => ({ kind: 'append' as const, bytes })),
					fc
						.uint8Array({ minLength: 1, maxLength: 64 })
						.map((bytes) => ({ kind: 'prepend' as const, bytes })),
					fc
						.constantFrom('\n', '\r\n', ' ', '\u0000')
						.map((s) => ({ kind: 'append' as const, bytes: Buffer.from(s) })),
				),
				(body, secret, change) => {
					const value = signBody(body, secret);
					let changed: Buffer;
					if (change.kind === 'truncate') changed = body.subarray(0, change.n % body.length);
					else if (change.kind === 'append')
						changed = Buffer.concat([body, Buffer.from(change.bytes)]);
					else changed = Buffer.concat([Buffer.from(change.bytes), body]);
					return !accepted(changed, value, secret);
				},
			),
			{ numRuns: NUM_RUNS },
		);
	});

	it('rejects re-serialised JSON (spacing, key order, escapes) unless it is byte-identical', () => {
		fc.assert(
			fc.property(
				eventArb,
				secretArb,
				fc.constantFrom<'indent' | 'reorder' | 'escape' | 'space-after-colon' | 'trailing-newline'>(
					'indent',
					'reorder',
					'escape',
					'space-after-colon',
					'trailing-newline',
				),
				fc.integer({ min: 1, max: 4 }),
				fc.infiniteStream(fc.nat()),
				(event, secret, how, indent, picks) => {
					const original = Buffer.from(JSON.stringify(event), 'utf8');
					const value = signBody(original, secret);
					let text: string;
					if (how === 'indent') text = JSON.stringify(event, null, indent);
					else if (how === 'reorder') {
						const it = picks[Symbol.iterator]();
						text = JSON.stringify(reorderKeys(event, (n) => (it.next().value as number) % n));
					} else if (how === 'escape')
						text = JSON.stringify(event).replace(/[^\x20-\x7e]|\//g, (c) =>
							c === '/' ? '\\/' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
						);
					else if (how === 'space-after-colon') text = spaced(event);
					else text = `${JSON.stringify(event)}\n`;
					const variant = Buffer.from(text, 'utf8');
					// Same JSON value either way: only the bytes decide.
					expect(JSON.parse(text)).toEqual(JSON.parse(original.toString('utf8')));
					return accepted(variant, value, secret) === variant.equals(original);
				},
			),
			{ numRuns: NUM_RUNS },
		);
	});

	it('rejects a signature made with another secret', () => {
		fc.assert(
			fc.property(
				bodyArb,
				twoSecretsArb,
				(body, [secret, other]) => !accepted(body, signBody(body, other), secret),
			),
			{ numRuns: NUM_RUNS },
		);
	});

	it('rejects every header variant: prefix, whitespace, length, non-hex, duplicates, empty', () => {
		fc.assert(
			fc.property(bodyArb, secretArb, headerMutationArb, (body, secret, mutation) => {
				const correct = signBody(body, secret);
				const mutated = mutation.apply(correct);
				if (mutated === correct) return true; // e.g. a digit "changed" by 16: not a mutation
				return !accepted(body, mutated, secret);
			}),
			{ numRuns: NUM_RUNS },
		);
	});

	it('accepts an arbitrary header string only if it equals the correct one up to letter case', () => {
		const headerStringArb = fc.oneof(
			fc.string({ maxLength: 80 }),
			fc.string({ unit: 'binary', maxLength: 80 }),
			fc.array(hexDigit, { minLength: 64, maxLength: 64 }).map((hex) => `sha256=${hex.join('')}`),
		);
		fc.assert(
			fc.property(bodyArb, secretArb, headerStringArb, (body, secret, value) => {
				const correct = signBody(body, secret);
				return accepted(body, value, secret) === (value.toLowerCase() === correct);
			}),
			{ numRuns: NUM_RUNS },
		);
	});

	it('never throws and never accepts without a usable secret or a Buffer body, whatever the input', () => {
		fc.assert(
			fc.property(fc.anything(), fc.anything(), fc.anything(), (body, value, secret) => {
				const result = verifySignature(body as Buffer, value as string, secret as string);
				if (result.valid) {
					// Only possible for a real Buffer, a non-empty string secret and its correct header.
					return (
						Buffer.isBuffer(body) &&
						typeof secret === 'string' &&
						secret !== '' &&
						String(Array.isArray(value) ? value[0] : value).toLowerCase() === signBody(body, secret)
					);
				}
				return typeof result.reason === 'string' && result.reason.length > 0;
			}),
			{ numRuns: NUM_RUNS },
		);
		// The empty secret, even with its own HMAC: fail closed.
		fc.assert(
			fc.property(bodyArb, (body) => !accepted(body, signBody(body, ''), '')),
			{ numRuns: NUM_RUNS },
		);
	});
});
