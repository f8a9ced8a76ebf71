import { z } from 'zod';
import { HttpError } from './http';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from './policy';
import type { Sequenced } from './store';

export interface Page<T> {
	data: T[];
	has_more: boolean;
	/** Pass as `cursor` to get the next (older) page; null on the last page. */
	next_cursor: string | null;
}

export const pageQuerySchema = z.object({
	limit: z.coerce.number().int().min(1).max(MAX_PAGE_LIMIT).default(DEFAULT_PAGE_LIMIT),
	cursor: z.string().min(1).optional(),
});

/** `page` of the `page_number` list shape (answers.ts): 1-based, default 1. */
export const pageNumberSchema = z.object({
	page: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).default(1),
});

/** Newest first (every list today), or oldest first (the `webhook_log: event_id` answer). */
export type ListOrder = 'newest_first' | 'oldest_first';

const CURSOR_PREFIX = 'cur_';
const CURSOR_WORD: Record<ListOrder, string> = {
	newest_first: 'before',
	oldest_first: 'after',
};

const encodeCursor = (order: ListOrder, seq: number): string =>
	CURSOR_PREFIX + Buffer.from(`${CURSOR_WORD[order]}:${seq}`).toString('base64url');

function decodeCursor(cursor: string, order: ListOrder): number {
	const decoded = cursor.startsWith(CURSOR_PREFIX)
		? Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8')
		: '';
	const match = new RegExp(`^${CURSOR_WORD[order]}:(\\d+)$`).exec(decoded);
	if (!match)
		throw new HttpError(
			400,
			'invalid_cursor',
			`cursor "${cursor}" was not issued by this endpoint`,
		);
	return Number(match[1]);
}

/** One cursor-addressed page: the values and the cursor of the next page (null on the last). */
export interface CursorPage<T> {
	values: T[];
	nextCursor: string | null;
}

/** `items` is oldest first; the cursor points past the last item returned, in the list's order. */
export function paginateByCursor<T>(
	items: readonly Sequenced<T>[],
	query: { limit: number; cursor?: string },
	order: ListOrder = 'newest_first',
): CursorPage<T> {
	let rest: Sequenced<T>[];
	if (order === 'newest_first') {
		const before =
			query.cursor === undefined ? Number.POSITIVE_INFINITY : decodeCursor(query.cursor, order);
		rest = items.filter((item) => item.seq < before).reverse();
	} else {
		const after = query.cursor === undefined ? 0 : decodeCursor(query.cursor, order);
		rest = items.filter((item) => item.seq > after);
	}
	const pageItems = rest.slice(0, query.limit);
	const hasMore = rest.length > query.limit;
	return {
		values: pageItems.map((item) => item.value),
		nextCursor: hasMore ? encodeCursor(order, pageItems[pageItems.length - 1].seq) : null,
	};
}

/** Newest first; the cursor points below the last item returned. `items` is oldest first. */
export function paginateNewestFirst<T>(
	items: readonly Sequenced<T>[],
	query: { limit: number; cursor?: string },
): Page<T> {
	const page = paginateByCursor(items, query, 'newest_first');
	return { data: page.values, has_more: page.nextCursor !== null, next_cursor: page.nextCursor };
}

/** Page `page` (1-based) of `perPage` items in the list's order; past the last page, no items. */
export function paginateByNumber<T>(
	items: readonly Sequenced<T>[],
	perPage: number,
	page: number,
	order: ListOrder = 'newest_first',
): { values: T[]; total_pages: number } {
	const ordered = order === 'newest_first' ? [...items].reverse() : [...items];
	const start = (page - 1) * perPage;
	return {
		values: ordered.slice(start, start + perPage).map((item) => item.value),
		total_pages: Math.ceil(ordered.length / perPage),
	};
}
