import { readFileSync } from 'fs';
import { join } from 'path';

import {
	DEFAULT_MAX_AGE_SECONDS,
	MAX_EVENT_AGE_SECONDS,
	boundedMaxAge,
} from '../../../nodes/BusinessMessagingTrigger/options';
import {
	FUTURE_TOLERANCE_SECONDS,
	checkEventAge,
	parseEnvelope,
	parseTimestamp,
} from '../../../nodes/BusinessMessagingTrigger/receiving/envelope';

const body = (value: unknown) =>
	Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
const inbound = {
	event: 'message.inbound',
	data: { from: '+15550001111', number: '1098', text: 'hi', media_id: null, media_url: null },
	timestamp: '2025-01-02T03:04:05.123456+00:00',
};

describe('parseTimestamp', () => {
	it('reads the service shape: microseconds and a UTC offset', () => {
		expect(parseTimestamp('2025-01-02T03:04:05.123456+00:00')).toBe(
			Date.UTC(2025, 0, 2, 3, 4, 5, 123),
		);
	});

	it('knows the length of every month, leap years included', () => {
		expect(parseTimestamp('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
		expect(parseTimestamp('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
		expect(parseTimestamp('2025-12-31T23:59:59Z')).toBe(Date.UTC(2025, 11, 31, 23, 59, 59));
		expect(parseTimestamp('2025-06-30T00:00:00Z')).toBe(Date.UTC(2025, 5, 30));
	});

	it('applies offsets and accepts Z and no fraction', () => {
		expect(parseTimestamp('2025-01-02T05:04:05+02:00')).toBe(Date.UTC(2025, 0, 2, 3, 4, 5));
		expect(parseTimestamp('2025-01-01T22:34:05.5-04:30')).toBe(Date.UTC(2025, 0, 2, 3, 4, 5, 500));
		expect(parseTimestamp('2025-01-02T03:04:05Z')).toBe(Date.UTC(2025, 0, 2, 3, 4, 5));
	});

	it.each([
		'2025-01-02 03:04:05+00:00',
		'2025-01-02T03:04:05', // no offset: ambiguous
		'2025-13-02T03:04:05Z',
		'2025-02-30T03:04:05Z',
		'2025-02-29T03:04:05Z', // not a leap year
		'1900-02-29T03:04:05Z', // divisible by 100, not by 400
		'2025-04-31T03:04:05Z',
		'2025-01-02T24:00:00Z',
		'yesterday',
		'',
		1735787045,
		null,
	])('refuses %p', (value) => {
		expect(parseTimestamp(value)).toBeUndefined();
	});
});

describe('parseEnvelope', () => {
	it('accepts each event type and keeps the envelope as sent, extra fields included', () => {
		for (const event of ['message.inbound', 'message.status', 'message.echo']) {
			const sent = { ...inbound, event, extra: { kept: true } };
			const result = parseEnvelope(body(sent));
			expect(result).toEqual({
				ok: true,
				envelope: sent,
				timestampMs: Date.UTC(2025, 0, 2, 3, 4, 5, 123),
			});
		}
	});

	it.each([
		['not JSON', '{"event":', /not valid JSON/],
		['empty body', '', /not valid JSON/],
		['an array', [inbound], /not a JSON object/],
		['null', 'null', /not a JSON object/],
		['unknown event', { ...inbound, event: 'message.deleted' }, /"event" must be one of/],
		[
			'missing event',
			{ data: inbound.data, timestamp: inbound.timestamp },
			/"event" must be one of/,
		],
		['data not an object', { ...inbound, data: 'x' }, /"data" must be an object/],
		['data an array', { ...inbound, data: [] }, /"data" must be an object/],
		[
			'missing data',
			{ event: inbound.event, timestamp: inbound.timestamp },
			/"data" must be an object/,
		],
		['bad timestamp', { ...inbound, timestamp: 'now' }, /"timestamp"/],
		['missing timestamp', { event: inbound.event, data: inbound.data }, /"timestamp"/],
	])('rejects %s', (_label, value, reason) => {
		const result = parseEnvelope(body(value));
		expect(result.ok).toBe(false);
		if (!result.ok) expect(result.reason).toMatch(reason);
	});
});

describe('checkEventAge', () => {
	const now = Date.UTC(2025, 0, 2, 3, 10, 0);

	it('has a 300 s default and a 60 s future tolerance', () => {
		expect(DEFAULT_MAX_AGE_SECONDS).toBe(300);
		expect(FUTURE_TOLERANCE_SECONDS).toBe(60);
	});

	it('accepts a fresh event and one exactly at the limit', () => {
		expect(checkEventAge(now - 2_000, now, 300)).toEqual({ ok: true });
		expect(checkEventAge(now - 300_000, now, 300)).toEqual({ ok: true });
	});

	it('refuses an event older than the maximum age', () => {
		const result = checkEventAge(now - 301_000, now, 300);
		expect(result).toEqual({
			ok: false,
			reason: expect.stringMatching(/301 s old, more than the maximum age of 300 s/),
		});
	});

	it('refuses an event dated too far in the future, allows small skew', () => {
		expect(checkEventAge(now + 30_000, now, 300)).toEqual({ ok: true });
		expect(checkEventAge(now + 61_000, now, 300)).toEqual({
			ok: false,
			reason: expect.stringMatching(/future/),
		});
	});

	it('0 no longer turns the check off: events dated 2019 or 2099 are refused whatever the setting', () => {
		for (const setting of [0, -1, Number.NaN, 1e9]) {
			expect(checkEventAge(Date.UTC(2019, 0, 1), now, setting).ok).toBe(false);
			expect(checkEventAge(Date.UTC(2099, 0, 1), now, setting).ok).toBe(false);
		}
	});

	it('the setting is bounded to 1 s .. 1 hour; 0 means the bound, a non-number the default', () => {
		expect(MAX_EVENT_AGE_SECONDS).toBe(3600);
		expect(boundedMaxAge(0)).toBe(3600);
		expect(boundedMaxAge(86_400)).toBe(3600);
		expect(boundedMaxAge(0.2)).toBe(1);
		expect(boundedMaxAge(30)).toBe(30);
		expect(boundedMaxAge(Number.NaN)).toBe(DEFAULT_MAX_AGE_SECONDS);
		expect(checkEventAge(now - 3599_000, now, 0)).toEqual({ ok: true });
		expect(checkEventAge(now - 3601_000, now, 0).ok).toBe(false);
	});
});

describe('purity', () => {
	it.each(['shared/signature.ts', 'BusinessMessagingTrigger/receiving/envelope.ts'])(
		'%s imports nothing from n8n',
		(file) => {
			const source = readFileSync(join(__dirname, '../../../nodes', file), 'utf8');
			const imports = [...source.matchAll(/from '([^']+)'/g)].map((match) => match[1]);
			expect(imports.filter((name) => /n8n/.test(name))).toEqual([]);
		},
	);
});
