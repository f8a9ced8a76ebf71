/** Which stored messages are new, pure: after the watermark by `created_at`, then `id`. */
import type { IDataObject } from 'n8n-workflow';

export interface Watermark {
	createdAt: string;
	/** Ids of the messages emitted at exactly that instant. */
	ids: string[];
}

function instant(record: IDataObject): number {
	const ms = typeof record.created_at === 'string' ? Date.parse(record.created_at) : Number.NaN;
	return Number.isNaN(ms) ? -Infinity : ms;
}

/** The µs Date.parse drops (`.383807`: 807): as texts, `.383807+00:00` sorts before `.383Z`. */
function microsPastMillisecond(record: IDataObject): number {
	const fraction = /\.(\d+)/.exec(String(record.created_at))?.[1] ?? '';
	return Number(fraction.padEnd(6, '0').slice(3, 6));
}

export function byAge(a: IDataObject, b: IDataObject): number {
	return (
		instant(a) - instant(b) ||
		microsPastMillisecond(a) - microsPastMillisecond(b) ||
		String(a.id).localeCompare(String(b.id))
	);
}

export function isAfter(record: IDataObject, watermark: Watermark): boolean {
	const mark = { created_at: watermark.createdAt, id: '' };
	const order =
		instant(record) - instant(mark) || microsPastMillisecond(record) - microsPastMillisecond(mark);
	return order !== 0 ? order > 0 : !watermark.ids.includes(String(record.id));
}

export function reachesWatermark(page: IDataObject[], watermark: Watermark): boolean {
	return page.some((record) => !isAfter(record, watermark));
}

/** The new records, oldest first, at most `max`, and the watermark after emitting them. */
export function selectNew(
	records: IDataObject[],
	watermark: Watermark,
	max: number,
): { emit: IDataObject[]; watermark: Watermark; left: number } {
	const fresh = records.filter((record) => isAfter(record, watermark)).sort(byAge);
	const unique = fresh.filter(
		(record, index) => index === 0 || record.id === undefined || record.id !== fresh[index - 1].id,
	);
	const emit = unique.slice(0, max);
	if (emit.length === 0) return { emit, watermark, left: 0 };
	const newest = emit[emit.length - 1];
	const createdAt = String(newest.created_at);
	const sameInstant = emit
		.filter((record) => record.created_at === createdAt)
		.map((record) => String(record.id));
	const ids = createdAt === watermark.createdAt ? [...watermark.ids, ...sameInstant] : sameInstant;
	return { emit, watermark: { createdAt, ids }, left: unique.length - emit.length };
}
