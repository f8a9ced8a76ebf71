/**
 * The one way lists are read. The service's list answers have one shape (CONTRACT I4):
 * `{data: [...], has_more, next_cursor}`, newest first; the next page is asked for by sending
 * `next_cursor` back as `cursor`. Used by the action node's Get Many operations and by what
 * reads the service's history (the Polling Trigger, the trigger's catch-up).
 */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from './json';
import { apiRequest, type ApiContext, type RequestContext } from './transport';

/** Pages followed for one list at most: a safety bound, not an expected size. */
export const MAX_PAGES = 1000;

export interface ListPage {
	entries: unknown[];
	/** The cursor of the next page; undefined on the last one. */
	cursor?: string;
}

/** One list answer in the one shape, or undefined for any other answer (which is not guessed at). */
export function listPage(body: unknown): ListPage | undefined {
	if (!isPlainObject(body) || !Array.isArray(body.data)) return undefined;
	const more =
		body.has_more !== false && typeof body.next_cursor === 'string' && body.next_cursor !== '';
	return { entries: body.data, cursor: more ? (body.next_cursor as string) : undefined };
}

/**
 * GETs a list page by page, handing each answer to `visit` (with the page, or undefined when
 * the answer is not a list) until `visit` returns false, the list ends (no next cursor, or a
 * cursor seen before) or MAX_PAGES pages were read. Returns false only when the bound cut it.
 */
export async function readPages(
	this: ApiContext,
	path: string,
	qs: IDataObject,
	context: RequestContext,
	visit: (page: ListPage | undefined, body: unknown) => boolean,
): Promise<boolean> {
	return (await readPagesFrom.call(this, path, qs, context, visit)).complete;
}

/**
 * readPages from a cursor (undefined: the first page), at most `maxPages` pages. When the
 * bound cuts the list, `cursor` is where the next read would go on: a later read can continue
 * there instead of skipping what lies beyond.
 */
export async function readPagesFrom(
	this: ApiContext,
	path: string,
	qs: IDataObject,
	context: RequestContext,
	visit: (page: ListPage | undefined, body: unknown) => boolean,
	from: { cursor?: string; maxPages?: number } = {},
): Promise<{ complete: boolean; cursor?: string }> {
	const seen = new Set<string>();
	let cursor = from.cursor;
	const maxPages = from.maxPages ?? MAX_PAGES;
	for (let pages = 0; pages < maxPages; pages++) {
		const body = await apiRequest.call(this, 'GET', path, {
			qs: cursor === undefined ? qs : { ...qs, cursor },
			context,
		});
		const page = listPage(body);
		if (!visit(page, body) || !page?.cursor || seen.has(page.cursor)) return { complete: true };
		seen.add(page.cursor);
		cursor = page.cursor;
	}
	return { complete: false, cursor };
}
