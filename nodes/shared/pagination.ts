/** The one way lists are read; the spec shows no shape (CONTRACT I4, L1, K3): any likely one is. */
import { createHash } from 'node:crypto';

import type { IDataObject } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { RequestContext } from './errors';
import { isPlainObject } from './json';
import { serviceLine } from './redact';
import { apiRequest, checkedCredential, pathUnderBase, type ApiContext } from './transport';

/** Pages followed for one list at most: a safety bound, not an expected size. */
export const MAX_PAGES = 1000;
/** Records one page may hold: ten times the largest page this node asks for (100). */
export const MAX_ENTRIES_PER_PAGE = 1000;
/** A next-page cursor or URL longer than this is not followed (a position, not a payload). */
export const MAX_NEXT_CHARS = 2048;

/** The shapes read, named in errors about an answer that is none of them. */
export const LIST_SHAPES =
	'{data: [...], has_more, next_cursor}, {items: [...], next}, a JSON array, or {data: [...], page, total_pages}';

/** Where the next page is: a cursor sent back as `cursor`, a URL, or a page number. */
export type NextPage = { cursor: string } | { url: string } | { page: number };

interface ListPage {
	entries: unknown[];
	next?: NextPage;
	/** The answer gives no way on, though it is full: more may exist (a bare array). */
	truncated?: boolean;
}

/** A next-page URL (absolute or root-relative) rather than an opaque token. */
function looksLikeUrl(value: string): boolean {
	return /^[a-z][a-z\d+.-]*:\/\//i.test(value) || value.startsWith('/');
}

function token(value: unknown): string | undefined {
	if (typeof value === 'number' && Number.isFinite(value)) return String(value);
	return typeof value === 'string' && value !== '' ? value : undefined;
}

function pageNumberNext(body: IDataObject, full: boolean): NextPage | undefined {
	const page = body.page as number;
	const total = typeof body.total_pages === 'number' ? body.total_pages : body.pages;
	if (typeof total === 'number') return page < total ? { page: page + 1 } : undefined;
	if (typeof body.has_more === 'boolean') return body.has_more ? { page: page + 1 } : undefined;
	// Nothing says how many: a full page may have a next one (an empty one ends it).
	return full ? { page: page + 1 } : undefined;
}

/** One list answer, or undefined (no shape); a full page (`limit`) with no way on is truncated. */
export function listPage(body: unknown, limit?: number): ListPage | undefined {
	const full = (entries: unknown[]) => limit !== undefined && entries.length >= limit;
	if (Array.isArray(body)) return { entries: body, truncated: full(body) };
	if (!isPlainObject(body)) return undefined;
	const entries = Array.isArray(body.data) ? body.data : body.items;
	if (!Array.isArray(entries)) return undefined;
	if (body.has_more === false) return { entries };
	if (typeof body.page === 'number' && Number.isInteger(body.page))
		return { entries, next: pageNumberNext(body, full(entries)) };
	const next = 'next' in body ? body.next : body.next_cursor;
	// "More" with no way to it: the caller learns the list is cut.
	if (next === undefined || next === null || next === '')
		return body.has_more === true ? { entries, truncated: true } : { entries };
	const value = token(next);
	// A `next` we cannot read (an object): following nothing would lose the rest silently.
	if (value === undefined) return undefined;
	return {
		entries,
		next: typeof next === 'string' && looksLikeUrl(next) ? { url: next } : { cursor: value },
	};
}

async function requestPage(
	this: ApiContext,
	path: string,
	qs: IDataObject,
	context: RequestContext,
	next: NextPage | undefined,
): Promise<unknown> {
	if (next === undefined || !('url' in next))
		return await apiRequest.call(this, 'GET', path, { qs: { ...qs, ...next }, context });
	const credential = await checkedCredential.call(this, context.itemIndex);
	const onBase = pathUnderBase(credential.baseUrl, next.url);
	if (onBase === undefined) {
		throw new NodeOperationError(
			this.getNode(),
			`${context.operation}: the service's next page is not on the credential's Base URL; it was not read`,
			{
				description: `The list answer of ${path} points its next page to "${serviceLine(next.url, { max: 200 })}", outside ${credential.baseUrl}. The API key is sent only to the Base URL, so reading stopped here. Check the credential's Base URL (it must be the address the service's links use).`,
				itemIndex: context.itemIndex,
			},
		);
	}
	// The URL carries the whole query of the next page.
	return await apiRequest.call(this, 'GET', onBase, { context, credential });
}

function digestOf(entries: unknown[]): string {
	return createHash('sha256').update(JSON.stringify(entries)).digest('base64');
}

function pageProblem(
	this: ApiContext,
	path: string,
	context: RequestContext,
	problem: string,
): NodeOperationError {
	return new NodeOperationError(
		this.getNode(),
		`${context.operation}: the service's list answer of GET ${path} was not read on: ${problem}`,
		{
			description:
				'A list is read page by page within bounds, so that a broken or hostile answer cannot make one read take unbounded memory or requests. Nothing beyond that page was read. If the service really answers so, report it to its support.',
			itemIndex: context.itemIndex,
		},
	);
}

/** The service's list came round to a page already read: the read ends there (complete), said once. */
function repeatedPage(this: ApiContext, path: string, context: RequestContext) {
	this.logger.warn(
		`${context.operation}: the service's list GET ${serviceLine(path)} repeated a page already read, so the read ended there`,
	);
	return { complete: true };
}

/**
 * GETs a list page by page from `from.next`, handing each answer to `visit` (undefined: not a list)
 * until it returns false, the list ends or repeats. `complete` false: `maxPages` cut it (a later
 * read goes on at `next`), or a full page had no way on (a bare array, no `next`).
 */
export async function readPages(
	this: ApiContext,
	path: string,
	qs: IDataObject,
	context: RequestContext,
	visit: (page: ListPage | undefined, body: unknown) => boolean,
	from: { next?: NextPage; maxPages?: number } = {},
): Promise<{ complete: boolean; next?: NextPage }> {
	const seen = new Set<string>();
	let next = from.next;
	const maxPages = from.maxPages ?? MAX_PAGES;
	const limit = typeof qs.limit === 'number' ? qs.limit : undefined;
	const pagesRead = new Set<string>();
	for (let pages = 0; pages < maxPages; pages++) {
		const body = await requestPage.call(this, path, qs, context, next);
		const page = listPage(body, limit);
		if (page && page.entries.length > MAX_ENTRIES_PER_PAGE)
			throw pageProblem.call(
				this,
				path,
				context,
				`one page held ${page.entries.length} records, more than the ${MAX_ENTRIES_PER_PAGE} a page may hold${limit === undefined ? '' : ` (${limit} were asked for)`}`,
			);
		// The same entries again: a service that ignores the way on; visiting would duplicate them.
		const entries = page && page.entries.length > 0 ? digestOf(page.entries) : undefined;
		if (entries !== undefined && pagesRead.has(entries))
			return repeatedPage.call(this, path, context);
		if (entries !== undefined) pagesRead.add(entries);
		if (!visit(page, body)) return { complete: true };
		if (page?.truncated) return { complete: false };
		const position = JSON.stringify(page?.next);
		if (!page?.next) return { complete: true };
		if (seen.has(position)) return repeatedPage.call(this, path, context);
		// An empty page gives nothing to go on for: a list whose next never ends costs one request more.
		if (page.entries.length === 0) return { complete: true };
		if (position.length > MAX_NEXT_CHARS)
			throw pageProblem.call(
				this,
				path,
				context,
				`its next page position is ${position.length} characters long, more than the ${MAX_NEXT_CHARS} this node follows`,
			);
		seen.add(position);
		next = page.next;
	}
	return { complete: false, next };
}
