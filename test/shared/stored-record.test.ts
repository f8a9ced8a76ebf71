// A stored message record read tolerantly (storedRecord.ts): text or body, created_at or created
// (ISO, unix seconds or milliseconds), in the ISO form with microseconds the watermark compares.
import {
	isoFromUnix,
	recordCreatedAt,
	recordText,
	withCanonicalFields,
} from '../../nodes/shared/storedRecord';
import { byAge, isAfter, selectNew } from '../../nodes/shared/watermark';

describe('recordText', () => {
	it('reads text, else body; nothing else', () => {
		expect(recordText({ text: 'hi', body: 'other' })).toBe('hi');
		expect(recordText({ body: 'hi' })).toBe('hi');
		expect(recordText({ content: 'hi' })).toBeUndefined();
		expect(recordText({ text: 3 })).toBeUndefined();
	});
});

describe('isoFromUnix', () => {
	it('unix seconds with 6 decimals: the same microseconds, no float rounding', () => {
		expect(isoFromUnix(1795770930.123456)).toBe('2026-11-27T09:15:30.123456+00:00');
		expect(isoFromUnix(1795770930.000001)).toBe('2026-11-27T09:15:30.000001+00:00');
		expect(isoFromUnix(1795770930)).toBe('2026-11-27T09:15:30.000000+00:00');
		expect(isoFromUnix('1795770930.5')).toBe('2026-11-27T09:15:30.500000+00:00');
	});

	it('unix milliseconds (13 digits), with a fraction of a millisecond', () => {
		expect(isoFromUnix(1795770930123)).toBe('2026-11-27T09:15:30.123000+00:00');
		expect(isoFromUnix(1795770930123.456)).toBe('2026-11-27T09:15:30.123456+00:00');
	});

	it('refuses what is not a unix time', () => {
		for (const value of [-5, Number.NaN, 1e15, 'soon', '', null, undefined, {}])
			expect(isoFromUnix(value)).toBeUndefined();
	});
});

describe('recordCreatedAt', () => {
	it('created_at as it came when ISO; else created (ISO or unix)', () => {
		const iso = '2026-11-27T09:15:30.123456+00:00';
		expect(recordCreatedAt({ created_at: iso, created: 1 })).toBe(iso);
		expect(recordCreatedAt({ created: iso })).toBe(iso);
		expect(recordCreatedAt({ created: 1795770930.123456 })).toBe(iso);
		expect(recordCreatedAt({ created_at: 1795770930123 })).toBe('2026-11-27T09:15:30.123000+00:00');
	});

	it('undefined when no field is a readable time', () => {
		expect(recordCreatedAt({})).toBeUndefined();
		expect(recordCreatedAt({ created_at: 'yesterday' })).toBeUndefined();
		expect(recordCreatedAt({ timestamp: '2026-11-27T09:15:30Z' })).toBeUndefined();
	});
});

describe('withCanonicalFields', () => {
	it('keeps the record own fields and adds text and created_at when missing', () => {
		const record = { id: 'm1', body: 'hi', created: 1795770930.123456, direction: 'in' };
		expect(withCanonicalFields(record)).toEqual({
			...record,
			text: 'hi',
			created_at: '2026-11-27T09:15:30.123456+00:00',
		});
		expect(record).not.toHaveProperty('text');
	});

	it('leaves a record already in the canonical form as it is', () => {
		const record = { id: 'm1', text: 'hi', created_at: '2026-11-27T09:15:30.123456+00:00' };
		expect(withCanonicalFields(record)).toEqual(record);
	});

	it('orders unix-second records to the microsecond, as ISO ones (watermark)', () => {
		const [a, b, c] = [0.000001, 0.000002, 0.001].map((d, i) =>
			withCanonicalFields({ id: `m${i}`, created: Number((1795770930 + d).toFixed(6)) }),
		);
		expect([c, b, a].sort(byAge).map((r) => r.id)).toEqual(['m0', 'm1', 'm2']);
		const mark = { createdAt: String(a.created_at), ids: ['m0'] };
		expect(isAfter(a, mark)).toBe(false);
		expect(isAfter(b, mark)).toBe(true);
		expect(selectNew([c, b, a], mark, 10).emit.map((r) => r.id)).toEqual(['m1', 'm2']);
	});
});
