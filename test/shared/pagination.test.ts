// The one list reader (pagination.ts): every plausible list shape read, its bounds, and a next
// page URL followed only on the credential's Base URL. Pure tests, then the node run through
// n8n-core against real loopback servers that answer in each shape (a second one for "elsewhere").
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@n8n/backend-common';

import {
	listPage,
	MAX_ENTRIES_PER_PAGE,
	MAX_NEXT_CHARS,
	MAX_PAGES,
} from '../../nodes/shared/pagination';
import { pathUnderBase } from '../../nodes/shared/transport';
import { runNode } from '../harness';
import { HarnessCredentialsHelper } from '../harness/credentials';
import { ACTION_TYPE, API_KEY, CREDENTIAL_TYPE } from '../support';

describe('listPage: each shape', () => {
	it('{data, has_more, next_cursor}: the cursor; no more, no cursor or "more" without one', () => {
		expect(listPage({ data: [1], has_more: true, next_cursor: 'c2' })).toEqual({
			entries: [1],
			next: { cursor: 'c2' },
		});
		expect(listPage({ data: [1], has_more: false, next_cursor: 'c2' })).toEqual({ entries: [1] });
		expect(listPage({ data: [1], next_cursor: null })).toEqual({ entries: [1] });
		expect(listPage({ data: [1] })).toEqual({ entries: [1] });
		// "More" with no way to it: the caller must learn that the list is cut.
		expect(listPage({ data: [1], has_more: true })).toEqual({ entries: [1], truncated: true });
		expect(listPage({ items: [1], next_cursor: 'c2' })).toEqual({
			entries: [1],
			next: { cursor: 'c2' },
		});
	});

	it('{items, next}: a URL (absolute or root-relative) or a token; null ends', () => {
		const url = 'https://api.example.com/v1/messages/inbound?cursor=c2';
		expect(listPage({ items: [1], next: url })).toEqual({ entries: [1], next: { url } });
		expect(listPage({ items: [1], next: '/v1/logs?cursor=c2' })).toEqual({
			entries: [1],
			next: { url: '/v1/logs?cursor=c2' },
		});
		expect(listPage({ items: [1], next: 'eyJvIjoxMDB9' })).toEqual({
			entries: [1],
			next: { cursor: 'eyJvIjoxMDB9' },
		});
		expect(listPage({ data: [1], next: 7 })).toEqual({ entries: [1], next: { cursor: '7' } });
		expect(listPage({ items: [1], next: null })).toEqual({ entries: [1] });
	});

	it('a bare array: one page; full (length ≥ the limit asked): truncated', () => {
		expect(listPage([1, 2], 3)).toEqual({ entries: [1, 2], truncated: false });
		expect(listPage([1, 2, 3], 3)).toEqual({ entries: [1, 2, 3], truncated: true });
		expect(listPage([1, 2, 3])).toEqual({ entries: [1, 2, 3], truncated: false });
	});

	it('{data|items, page, total_pages|pages|has_more}: the next page number', () => {
		expect(listPage({ data: [1], page: 1, per_page: 1, total_pages: 3 })).toEqual({
			entries: [1],
			next: { page: 2 },
		});
		expect(listPage({ data: [1], page: 3, total_pages: 3 })).toEqual({ entries: [1] });
		expect(listPage({ items: [1], page: 2, pages: 3 })?.next).toEqual({ page: 3 });
		expect(listPage({ items: [1], page: 2, has_more: true })?.next).toEqual({ page: 3 });
		expect(listPage({ items: [1], page: 2, has_more: false })?.next).toBeUndefined();
		// Nothing says how many: a full page may have a next one.
		expect(listPage({ data: [1, 2], page: 1 }, 2)?.next).toEqual({ page: 2 });
		expect(listPage({ data: [1], page: 1 }, 2)?.next).toBeUndefined();
	});

	it('anything else is not a list (undefined), never an empty one', () => {
		for (const body of [
			{ a: 1 },
			{ data: 'x' },
			{ results: [1] },
			'text',
			null,
			undefined,
			{ items: [1], next: { href: '/v1/x' } },
		])
			expect(listPage(body)).toBeUndefined();
	});
});

describe('pathUnderBase: the key goes only to the Base URL', () => {
	const base = 'http://127.0.0.1:4010';
	it('same origin, absolute or root-relative: the path and query', () => {
		expect(pathUnderBase(base, 'http://127.0.0.1:4010/v1/logs?cursor=c2&limit=5')).toBe(
			'/v1/logs?cursor=c2&limit=5',
		);
		expect(pathUnderBase(base, '/v1/logs?cursor=c2')).toBe('/v1/logs?cursor=c2');
	});

	it('another host, port, scheme, user info or a protocol-relative link: refused', () => {
		for (const url of [
			'http://127.0.0.2:4010/v1/logs',
			'http://127.0.0.1:4011/v1/logs',
			'https://127.0.0.1:4010/v1/logs',
			'http://localhost:4010/v1/logs',
			'http://user:pw@127.0.0.1:4010/v1/logs',
			'//evil.example/v1/logs',
			'javascript:alert(1)',
		])
			expect(pathUnderBase(base, url)).toBeUndefined();
	});

	it('a Base URL with a path: only under it (dot segments resolved first)', () => {
		const prefixed = 'https://api.example.com/svc';
		expect(pathUnderBase(prefixed, '/svc/v1/logs?c=1')).toBe('/v1/logs?c=1');
		expect(pathUnderBase(prefixed, 'https://api.example.com/svc/v1/logs')).toBe('/v1/logs');
		for (const url of ['/v1/logs', '/svcx/v1/logs', '/svc/../v1/logs', '/svc//evil.example/x'])
			expect(pathUnderBase(prefixed, url)).toBeUndefined();
	});
});

type Answer = (url: URL) => unknown;

/** A loopback HTTP server answering JSON, recording each request with its Authorization header. */
async function jsonServer() {
	let answer: Answer = () => ({});
	const requests: Array<{ url: URL; authorization?: string }> = [];
	const server: Server = createServer((req: IncomingMessage, res) => {
		const url = new URL(req.url ?? '/', 'http://127.0.0.1');
		requests.push({ url, authorization: req.headers.authorization });
		res.setHeader('content-type', 'application/json');
		res.end(JSON.stringify(answer(url)));
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		requests,
		answer: (next: Answer) => (answer = next),
		close: async () => await new Promise<void>((resolve) => server.close(() => resolve())),
	};
}

let service: Awaited<ReturnType<typeof jsonServer>>;
let elsewhere: Awaited<ReturnType<typeof jsonServer>>;
beforeAll(async () => {
	[service, elsewhere] = await Promise.all([jsonServer(), jsonServer()]);
});
afterAll(async () => await Promise.all([service.close(), elsewhere.close()]));
afterEach(() => jest.restoreAllMocks());
beforeEach(() => {
	service.requests.length = 0;
	elsewhere.requests.length = 0;
});

const LOGS = { resource: 'log', operation: 'getMany', category: 'sends', simple: false };

async function readLogs(parameters: Record<string, unknown> = { returnAll: true }) {
	return await runNode({
		type: ACTION_TYPE,
		parameters: { ...LOGS, ...parameters },
		credentials: { [CREDENTIAL_TYPE]: { apiKey: API_KEY, baseUrl: service.baseUrl } },
	});
}

const ids = (result: Awaited<ReturnType<typeof readLogs>>) => result.items.map((i) => i.json.id);
const logs = (from: number, to: number) =>
	Array.from({ length: to - from + 1 }, (_, i) => ({ id: `log_${from + i}` }));

describe('Get Many through the reader, against a loopback service', () => {
	it('{items, next: absolute URL on the Base URL}: followed as given, each record once', async () => {
		service.answer((url) =>
			url.searchParams.get('cursor') === 'c2'
				? { items: logs(3, 4), next: null }
				: { items: logs(1, 2), next: `${service.baseUrl}/v1/logs?category=sends&cursor=c2` },
		);
		const result = await readLogs();
		expect(result.error).toBeUndefined();
		expect(ids(result)).toEqual(['log_1', 'log_2', 'log_3', 'log_4']);
		expect(service.requests.map((r) => r.url.search)).toEqual([
			'?category=sends',
			'?category=sends&cursor=c2',
		]);
		expect(service.requests.every((r) => r.authorization === `Bearer ${API_KEY}`)).toBe(true);
	});

	it('a next-URL page reads the credential once (its Base URL check and its request share the read)', async () => {
		service.answer((url) =>
			url.searchParams.get('cursor') === 'c2'
				? { items: logs(3, 4), next: null }
				: { items: logs(1, 2), next: `${service.baseUrl}/v1/logs?category=sends&cursor=c2` },
		);
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		const result = await readLogs();
		expect(ids(result)).toHaveLength(4);
		// One read per page: the first page's request, then the next URL's check and request.
		expect(reads.mock.calls.filter(([, , type]) => type === CREDENTIAL_TYPE)).toHaveLength(2);
	});

	it('{items, next: token}: sent back as cursor', async () => {
		service.answer((url) =>
			url.searchParams.get('cursor') === 'tok2'
				? { items: logs(2, 2), next: null }
				: { items: logs(1, 1), next: 'tok2' },
		);
		expect(ids(await readLogs())).toEqual(['log_1', 'log_2']);
		expect(service.requests.map((r) => r.url.searchParams.get('cursor'))).toEqual([null, 'tok2']);
	});

	it('{data, page, total_pages}: page=2, page=3, then stops', async () => {
		service.answer((url) => {
			const page = Number(url.searchParams.get('page') ?? 1);
			return { data: logs(page, page), page, per_page: 1, total_pages: 3 };
		});
		expect(ids(await readLogs())).toEqual(['log_1', 'log_2', 'log_3']);
		expect(service.requests.map((r) => r.url.searchParams.get('page'))).toEqual([null, '2', '3']);
	});

	it('a bare array: its records, one request', async () => {
		service.answer(() => logs(1, 3));
		expect(ids(await readLogs())).toEqual(['log_1', 'log_2', 'log_3']);
		expect(service.requests).toHaveLength(1);
	});

	it('a next URL on another host: refused before anything is sent there, the error says so', async () => {
		service.answer(() => ({
			items: logs(1, 1),
			next: `${elsewhere.baseUrl}/v1/logs?category=sends&cursor=c2`,
		}));
		const result = await readLogs();
		expect(result.error?.message).toBe(
			"Log → Get Many: the service's next page is not on the credential's Base URL; it was not read",
		);
		expect(String((result.error as { description?: string }).description)).toContain(
			elsewhere.baseUrl,
		);
		expect(elsewhere.requests).toEqual([]);
		expect(service.requests).toHaveLength(1);
	});

	it('a next URL on another host with line feeds and bidi marks is quoted on one printable line', async () => {
		service.answer(() => ({
			items: logs(1, 1),
			next: `${elsewhere.baseUrl}/v1/logs?cursor=c2\n\u202eforged line`,
		}));
		const description = String(
			((await readLogs()).error as { description?: string } | undefined)?.description,
		);
		expect(description).toContain(`${elsewhere.baseUrl}/v1/logs?cursor=c2 forged line`);
		expect(description).not.toMatch(/[\p{Cc}\p{Cf}]/u);
		expect(elsewhere.requests).toEqual([]);
	});

	it('a root-relative next URL that leaves a Base URL path: refused, nothing sent', async () => {
		service.answer(() => ({ items: logs(1, 1), next: '/v1/logs?cursor=c2' }));
		const result = await runNode({
			type: ACTION_TYPE,
			parameters: { ...LOGS, returnAll: true },
			credentials: { [CREDENTIAL_TYPE]: { apiKey: API_KEY, baseUrl: `${service.baseUrl}/svc` } },
		});
		expect(result.error?.message).toMatch(/next page is not on the credential's Base URL/);
		expect(service.requests.map((r) => r.url.pathname)).toEqual(['/svc/v1/logs']);
	});

	it('a service that ignores the cursor: the repeated page is not read twice', async () => {
		service.answer(() => ({ data: logs(1, 2), has_more: true, next_cursor: 'c2' }));
		expect(ids(await readLogs())).toEqual(['log_1', 'log_2']);
		expect(service.requests).toHaveLength(2);
	});

	it('a cursor that comes back: reading stops', async () => {
		let n = 0;
		service.answer(() => ({ data: logs(++n, n), has_more: true, next_cursor: n % 2 ? 'a' : 'b' }));
		expect(ids(await readLogs())).toEqual(['log_1', 'log_2', 'log_3']);
		expect(service.requests).toHaveLength(3);
	});

	// Issue 49: a list whose next repeats page 1 ended "complete" with no log line.
	it('a next that repeats page 1 (its own URL): the read ends there, and a warning naming the path says so on one line', async () => {
		const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
		service.answer(() => ({
			items: logs(1, 2),
			next: `${service.baseUrl}/v1/logs?category=sends`,
		}));
		const result = await readLogs();
		expect(result.error).toBeUndefined();
		expect(ids(result)).toEqual(['log_1', 'log_2']);
		expect(service.requests).toHaveLength(2);
		expect(warned.mock.calls.map(([line]) => String(line))).toEqual([
			"Log → Get Many: the service's list GET /v1/logs repeated a page already read, so the read ended there",
		]);
	});

	it('a next cursor that points back at a page already read: the same warning', async () => {
		const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
		let n = 0;
		service.answer(() => ({ data: logs(++n, n), has_more: true, next_cursor: n % 2 ? 'a' : 'b' }));
		expect(ids(await readLogs())).toEqual(['log_1', 'log_2', 'log_3']);
		expect(warned.mock.calls.map(([line]) => String(line))).toEqual([
			expect.stringMatching(
				/^Log → Get Many: the service's list GET \/v1\/logs repeated a page already read/,
			),
		]);
	});

	it(`an endless list: MAX_PAGES (${MAX_PAGES}) pages at most`, async () => {
		let n = 0;
		service.answer(() => ({ data: logs(++n, n), next: `p${n}` }));
		const result = await readLogs();
		expect(result.items).toHaveLength(MAX_PAGES);
		expect(service.requests).toHaveLength(MAX_PAGES);
	}, 60_000);

	it('pages that come round again under new cursors: reading stops at the first repeat', async () => {
		let n = 0;
		service.answer(() => ({ data: logs((n % 2) + 1, (n % 2) + 1), next: `fresh${++n}` }));
		expect(ids(await readLogs())).toEqual(['log_1', 'log_2']);
		expect(service.requests).toHaveLength(3);
	});

	it(`a page of more than ${MAX_ENTRIES_PER_PAGE} records: the read stops with an error naming it`, async () => {
		service.answer(() => ({ data: logs(1, 20_000), next: 'c2' }));
		const result = await readLogs();
		expect(result.error?.message).toBe(
			`Log → Get Many: the service's list answer of GET /v1/logs was not read on: one page held 20000 records, more than the ${MAX_ENTRIES_PER_PAGE} a page may hold`,
		);
		expect(service.requests).toHaveLength(1);
	});

	it(`a next cursor longer than ${MAX_NEXT_CHARS} characters is not followed: the error says so`, async () => {
		let n = 0;
		service.answer(() => ({ data: logs(++n, n), next_cursor: 'c'.repeat(100_000 + n) }));
		const result = await readLogs();
		expect(result.error?.message).toMatch(
			/was not read on: its next page position is \d+ characters long, more than the 2048 this node follows$/,
		);
		expect(service.requests).toHaveLength(1);
	});

	it('with a Limit: no page beyond the one that reaches it', async () => {
		let n = 0;
		service.answer(() => ({ items: logs(2 * n + 1, 2 * ++n), next: `p${n}` }));
		expect(ids(await readLogs({ returnAll: false, limit: 3 }))).toEqual([
			'log_1',
			'log_2',
			'log_3',
		]);
		expect(service.requests).toHaveLength(2);
	});
});
