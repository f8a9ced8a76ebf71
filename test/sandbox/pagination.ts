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

const CURSOR_PREFIX = 'cur_';

const encodeCursor = (seq: number): string =>
	CURSOR_PREFIX + Buffer.from(`before:${seq}`).toString('base64url');

function decodeCursor(cursor: string): number {
	const decoded = cursor.startsWith(CURSOR_PREFIX)
		? Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8')
		: '';
	const match = /^before:(\d+)$/.exec(decoded);
	if (!match)
		throw new HttpError(
			400,
			'invalid_cursor',
			`cursor "${cursor}" was not issued by this endpoint`,
		);
	return Number(match[1]);
}

/** Newest first; the cursor points below the last item returned. `items` is oldest first. */
export function paginateNewestFirst<T>(
	items: readonly Sequenced<T>[],
	query: { limit: number; cursor?: string },
): Page<T> {
	const before = query.cursor === undefined ? Number.POSITIVE_INFINITY : decodeCursor(query.cursor);
	const older = items.filter((item) => item.seq < before).reverse();
	const pageItems = older.slice(0, query.limit);
	const hasMore = older.length > query.limit;
	return {
		data: pageItems.map((item) => item.value),
		has_more: hasMore,
		next_cursor: hasMore ? encodeCursor(pageItems[pageItems.length - 1].seq) : null,
	};
}
