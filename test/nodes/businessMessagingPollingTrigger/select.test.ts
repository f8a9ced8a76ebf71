// Which stored messages a poll emits: after the watermark, oldest first, ties at one instant by id.
import type { IDataObject } from 'n8n-workflow';

import { isAfter, selectNew, type Watermark } from '../../../nodes/shared/watermark';

const at = (second: number, micro = 0) =>
	`2026-11-23T10:00:${String(second).padStart(2, '0')}.${String(micro).padStart(6, '0')}+00:00`;
const record = (id: string, createdAt: string): IDataObject => ({
	id,
	created_at: createdAt,
	direction: 'in',
});

describe('selectNew', () => {
	const start: Watermark = { createdAt: at(10), ids: [] };

	it('emits what is after the watermark, oldest first, and moves the watermark to the newest emitted', () => {
		const newestFirst = [
			record('c', at(13)),
			record('b', at(12)),
			record('a', at(11)),
			record('old', at(9)),
		];
		const { emit, watermark, left } = selectNew(newestFirst, start, 10);
		expect(emit.map((r) => r.id)).toEqual(['a', 'b', 'c']);
		expect(watermark).toEqual({ createdAt: at(13), ids: ['c'] });
		expect(left).toBe(0);
		// The next poll sees the same page again: nothing is emitted twice.
		expect(selectNew(newestFirst, watermark, 10).emit).toEqual([]);
	});

	it('messages of the same instant: each once, even when the bound cuts between them', () => {
		const same = [record('m3', at(11)), record('m2', at(11)), record('m1', at(11))];
		const first = selectNew(same, start, 2);
		expect(first.emit.map((r) => r.id)).toEqual(['m1', 'm2']);
		expect(first.left).toBe(1);
		const second = selectNew([record('m4', at(11)), ...same], first.watermark, 2);
		expect(second.emit.map((r) => r.id)).toEqual(['m3', 'm4']);
		expect(second.watermark).toEqual({ createdAt: at(11), ids: ['m1', 'm2', 'm3', 'm4'] });
		expect(selectNew(same, second.watermark, 2).emit).toEqual([]);
	});

	it('orders by the instant, microseconds included, whatever the offset it is written with', () => {
		const records = [record('b', '2026-11-23T11:00:11.000002+01:00'), record('a', at(11, 1))];
		expect(selectNew(records, start, 10).emit.map((r) => r.id)).toEqual(['a', 'b']);
		expect(isAfter(record('z', at(9, 999999)), start)).toBe(false);
		expect(isAfter(record('z', at(10, 1)), start)).toBe(true);
	});

	it('a message stored in the millisecond of a watermark n8n wrote (toISOString: no microseconds) is after it', () => {
		// The catch-up starts from n8n's clock; the service writes microseconds and another offset form.
		const fromN8n: Watermark = { createdAt: '2026-11-25T01:04:58.383Z', ids: [] };
		expect(isAfter(record('m', '2026-11-25T01:04:58.383807+00:00'), fromN8n)).toBe(true);
		expect(isAfter(record('m', '2026-11-25T01:04:58.383000+00:00'), fromN8n)).toBe(true);
		expect(isAfter(record('m', '2026-11-25T01:04:58.382999+00:00'), fromN8n)).toBe(false);
		const emitted = selectNew([record('m', '2026-11-25T01:04:58.383807+00:00')], fromN8n, 10);
		expect(emitted.emit.map((r) => r.id)).toEqual(['m']);
		expect(
			selectNew([record('m', '2026-11-25T01:04:58.383807+00:00')], emitted.watermark, 10).emit,
		).toEqual([]);
	});

	it('a bound: the oldest first, the rest left for the next poll', () => {
		const records = Array.from({ length: 25 }, (_, i) => record(`r${i}`, at(11 + i))).reverse();
		const first = selectNew(records, start, 10);
		expect(first.emit.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => `r${i}`));
		expect(first.left).toBe(15);
		expect(selectNew(records, first.watermark, 10).emit[0].id).toBe('r10');
	});
});
