/** The one way lists are read: `{data, has_more, next_cursor}`, newest first (CONTRACT I4). */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from './json';
import { apiRequest, type ApiContext, type RequestContext } from './transport';

/** Pages followed for one list at most: a safety bound, not an expected size. */
export const MAX_PAGES = 1000;

export interface ListPage {
	entries: unknown[];
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
 * GETs a list page by page from `from.cursor`, handing each answer to `visit` (the page, or
 * undefined when not a list) until it returns false, the list ends or a cursor repeats. When
 * `maxPages` cuts it, `complete` is false and `cursor` is where a later read can go on.
 */
export async function readPages(
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
