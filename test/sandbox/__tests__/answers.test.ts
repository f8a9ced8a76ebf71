// The sandbox's "answers" (CONTRACT.md, "Answering a guess differently"): each setting and value, as a
// client sees it over HTTP.
import { request } from 'undici';
import { DEFAULT_ANSWERS, startSandbox, type Answers } from '..';
import { answersFromEnv } from '../../real-n8n/sandbox';
import { parseArgs } from '../cli';
import { RawJsonNumber, stringifyJson } from '../http';
import { CONTACT, OTHER_CONTACT, signBody, useReceiver, useSandbox } from '../../support';
import {
	api,
	call,
	control,
	inbound,
	registerWebhook,
	type HttpResult,
	type Json,
} from './helpers';

const sb = useSandbox();
const receiver = useReceiver();
let n0: string;
let n1: string;
beforeAll(() => {
	[n0, n1] = sb.numbers.map((n) => n.phone_number_id);
});
beforeEach(() => {
	receiver.requests.length = 0;
	receiver.mode = { kind: 'status', status: 200 };
});

const answer = async (partial: Partial<Answers>): Promise<Json> => {
	const result = await control(sb, 'POST', '/answers', partial);
	expect(result.status).toBe(200);
	return result.body.answers;
};

/** m1..m<count> from CONTACT on n0, oldest first. */
async function inboundTexts(count: number): Promise<void> {
	for (let i = 1; i <= count; i++) await inbound(sb, n0, { text: `m${i}` });
}

const list = (query = ''): Promise<HttpResult> =>
	api(sb, 'GET', `/v1/messages/inbound${query}`, sb.keys.all);

/** GET of an absolute URL with the all-scopes key, as a client following `next` does. */
async function getAbsolute(url: string): Promise<Json> {
	const response = await request(url, { headers: { authorization: `Bearer ${sb.keys.all}` } });
	expect(response.statusCode).toBe(200);
	return await response.body.json();
}

const texts = (records: Array<{ text: string }>): string[] => records.map((r) => r.text);

describe('list_shape', () => {
	it('data_cursor (default): {data, has_more, next_cursor}', async () => {
		expect((await control(sb, 'GET', '/answers')).body.answers.list_shape).toBe('data_cursor');
		await inboundTexts(3);
		const first = await list('?limit=2');
		expect(Object.keys(first.body).sort()).toEqual(['data', 'has_more', 'next_cursor']);
		expect(texts(first.body.data)).toEqual(['m3', 'm2']);
	});

	it('items_next_url: following `next` verbatim reaches every record once, newest first', async () => {
		await answer({ list_shape: 'items_next_url' });
		await inboundTexts(5);
		await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, text: 'not in' });
		let body = (await list('?limit=2&direction=in')).body;
		const seen: string[] = [];
		const nexts: string[] = [];
		for (;;) {
			expect(Object.keys(body).sort()).toEqual(['items', 'next']);
			seen.push(...texts(body.items));
			if (body.next === null) break;
			nexts.push(body.next);
			body = await getAbsolute(body.next);
		}
		expect(seen).toEqual(['m5', 'm4', 'm3', 'm2', 'm1']);
		expect(nexts).toHaveLength(2);
		for (const next of nexts) {
			const url = new URL(next);
			expect(url.origin).toBe(sb.baseUrl);
			expect(url.pathname).toBe('/v1/messages/inbound');
			expect(url.searchParams.get('limit')).toBe('2');
			expect(url.searchParams.get('direction')).toBe('in');
			expect(url.searchParams.getAll('cursor')).toHaveLength(1);
		}
	});

	it('items_next_url on the logs and the keys', async () => {
		await answer({ list_shape: 'items_next_url' });
		const logs = await api(sb, 'GET', '/v1/logs?category=numbers&limit=2', sb.keys.all);
		expect(logs.body.items).toHaveLength(2);
		const rest = await getAbsolute(logs.body.next);
		expect(rest).toEqual({ items: [expect.objectContaining({ category: 'numbers' })], next: null });
		const keys = await api(sb, 'GET', '/v1/console/keys', sb.keys.all);
		expect(keys.body).toEqual({ items: expect.any(Array), next: null });
		expect(keys.body.items).toHaveLength(6);
	});

	it('items_next_token: the token is taken back as `cursor`', async () => {
		await answer({ list_shape: 'items_next_token' });
		await inboundTexts(5);
		const seen: string[] = [];
		let body = (await list('?limit=2')).body;
		for (;;) {
			expect(Object.keys(body).sort()).toEqual(['items', 'next']);
			seen.push(...texts(body.items));
			if (body.next === null) break;
			expect(body.next).toEqual(expect.any(String));
			expect(body.next).not.toContain('/');
			body = (await list(`?limit=2&cursor=${encodeURIComponent(body.next)}`)).body;
		}
		expect(seen).toEqual(['m5', 'm4', 'm3', 'm2', 'm1']);
		expect((await list('?cursor=nonsense')).status).toBe(400);
	});

	it('bare_array: a JSON array of the first `limit` records, no way to the next page', async () => {
		await answer({ list_shape: 'bare_array' });
		await inboundTexts(5);
		const first = await list('?limit=2');
		expect(first.text.startsWith('[')).toBe(true);
		expect(texts(first.body)).toEqual(['m5', 'm4']);
		expect(texts((await list()).body)).toEqual(['m5', 'm4', 'm3', 'm2', 'm1']);
		const keys = await api(sb, 'GET', '/v1/console/keys', sb.keys.all);
		expect(Array.isArray(keys.body)).toBe(true);
		expect(keys.body).toHaveLength(6);
		const logs = await api(sb, 'GET', '/v1/logs?category=keys&limit=3', sb.keys.all);
		expect(logs.body).toHaveLength(3);
	});

	it('page_number: pages 1..total_pages cover every record once, newest first', async () => {
		await answer({ list_shape: 'page_number' });
		await inboundTexts(5);
		const first = await list('?limit=2');
		expect(Object.keys(first.body).sort()).toEqual(['data', 'page', 'per_page', 'total_pages']);
		expect(first.body).toMatchObject({ page: 1, per_page: 2, total_pages: 3 });
		const seen: string[] = [];
		for (let page = 1; page <= first.body.total_pages; page++) {
			const result = await list(`?limit=2&page=${page}&cursor=ignored`);
			expect(result.body).toMatchObject({ page, per_page: 2, total_pages: 3 });
			seen.push(...texts(result.body.data));
		}
		expect(seen).toEqual(['m5', 'm4', 'm3', 'm2', 'm1']);
		expect((await list('?limit=2&page=4')).body).toEqual({
			data: [],
			page: 4,
			per_page: 2,
			total_pages: 3,
		});
		expect((await list('?page=1')).body).toMatchObject({ per_page: 50, total_pages: 1 });
		const bad = await list('?page=0');
		expect(bad.status).toBe(400);
		expect(bad.body.error.message).toContain('page');
		const keys = await api(sb, 'GET', '/v1/console/keys', sb.keys.all);
		expect(keys.body).toEqual({ data: expect.any(Array), page: 1, per_page: 6, total_pages: 1 });
	});
});

describe('record_fields', () => {
	it('body_created: `body` and `created`, a number with 6 decimals that orders like created_at', async () => {
		await answer({ record_fields: 'body_created' });
		await inboundTexts(3);
		const result = await list();
		const stored = sb.state().inbound;
		expect(result.body.data.map((r: Json) => r.body)).toEqual(['m3', 'm2', 'm1']);
		expect(Object.keys(result.body.data[0])).toEqual([
			'id',
			'direction',
			'from',
			'contact_name',
			'number',
			'wa_message_id',
			'type',
			'body',
			'media_id',
			'media_url',
			'media_mime',
			'created',
		]);
		const rawCreated = [...result.text.matchAll(/"created":([^,}]+)/g)].map((m) => m[1]);
		expect(rawCreated).toHaveLength(3);
		for (const raw of rawCreated) expect(raw).toMatch(/^\d{10}\.\d{6}$/);
		result.body.data.forEach((record: Json, i: number) => {
			const same = stored.find((s) => s.id === record.id)!;
			const [whole, micros] = rawCreated[i].split('.');
			expect(Number(whole) * 1000).toBe(Math.floor(Date.parse(same.created_at) / 1000) * 1000);
			expect(same.created_at).toContain(`.${micros}+00:00`);
			expect(typeof record.created).toBe('number');
		});
		const created = result.body.data.map((r: Json) => r.created as number);
		expect([...created].sort((a, b) => b - a)).toEqual(created);
		expect(new Set(created).size).toBe(3);
	});

	it('body_created: echo records too; the control API and /state keep text and created_at', async () => {
		await answer({ record_fields: 'body_created' });
		const echo = await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, text: 'app' });
		expect(echo.body.record).toMatchObject({ text: 'app', created_at: expect.any(String) });
		const [record] = (await list('?direction=echo')).body.data;
		expect(record).toMatchObject({ direction: 'echo', body: 'app', created: expect.any(Number) });
		expect(record).not.toHaveProperty('text');
		expect(record).not.toHaveProperty('created_at');
		expect(sb.state().inbound[0]).toMatchObject({ text: 'app', created_at: expect.any(String) });
	});
});

describe('inbound_filters', () => {
	beforeEach(async () => {
		await inbound(sb, n0, { text: 'ada on n0' });
		await inbound(sb, n1, { from: OTHER_CONTACT, text: 'other on n1' });
		await control(sb, 'POST', '/echo', { to: CONTACT, number: n0, text: 'echo' });
	});

	it('applied (default): contact and number filter', async () => {
		expect(texts((await list(`?contact=${encodeURIComponent(CONTACT)}`)).body.data)).toEqual([
			'ada on n0',
		]);
		expect(texts((await list(`?number=${n1}`)).body.data)).toEqual(['other on n1']);
	});

	it("ignored: a contact or number filter returns other contacts' records too; direction still applies", async () => {
		await answer({ inbound_filters: 'ignored' });
		const all = ['other on n1', 'ada on n0'];
		expect(texts((await list(`?contact=${encodeURIComponent(CONTACT)}`)).body.data)).toEqual(all);
		expect(texts((await list(`?number=${n1}`)).body.data)).toEqual(all);
		expect(texts((await list(`?direction=echo&number=${n1}`)).body.data)).toEqual(['echo']);
	});
});

describe('webhook_log', () => {
	it('event_id: entries {event_id, url, success, reason} only, oldest first; other categories unchanged', async () => {
		await registerWebhook(sb, receiver.url);
		await inbound(sb, n0, { text: 'one' });
		receiver.mode = { kind: 'status', status: 500 };
		await inbound(sb, n0, { text: 'two' });
		receiver.mode = { kind: 'status', status: 200 };
		await inbound(sb, n0, { text: 'three' });
		await answer({ webhook_log: 'event_id' });
		const deliveries = sb.state().deliveries;
		const result = await api(sb, 'GET', '/v1/logs?category=webhook', sb.keys.all);
		expect(result.body.data).toEqual(
			deliveries.map((d) => ({
				event_id: d.id,
				url: receiver.url,
				success: d.delivered,
				reason: d.reason,
			})),
		);
		expect(result.body.data.map((e: Json) => e.event_id)).toEqual(
			expect.arrayContaining([expect.stringMatching(/^dlv_/)]),
		);
		expect(result.body.data[1]).toMatchObject({ success: false, reason: 'HTTP 500' });
		for (const entry of result.body.data)
			expect(Object.keys(entry).sort()).toEqual(['event_id', 'reason', 'success', 'url']);
		// Pages go on oldest first.
		const first = await api(sb, 'GET', '/v1/logs?category=webhook&limit=2', sb.keys.all);
		expect(first.body.data.map((e: Json) => e.event_id)).toEqual(
			deliveries.slice(0, 2).map((d) => d.id),
		);
		const second = await api(
			sb,
			'GET',
			`/v1/logs?category=webhook&limit=2&cursor=${first.body.next_cursor}`,
			sb.keys.all,
		);
		expect(second.body).toEqual({
			data: [expect.objectContaining({ event_id: deliveries[2].id })],
			has_more: false,
			next_cursor: null,
		});
		const receptions = await api(sb, 'GET', '/v1/logs?category=receptions', sb.keys.all);
		expect(receptions.body.data[0]).toMatchObject({
			category: 'receptions',
			wa_message_id: expect.any(String),
		});
		expect(receptions.body.data[0].created_at > receptions.body.data[2].created_at).toBe(true);
	});

	it('by_message (default): the entries keep event, wa_message_id and created_at', async () => {
		await registerWebhook(sb, receiver.url);
		await inbound(sb, n0);
		const [entry] = (await api(sb, 'GET', '/v1/logs?category=webhook', sb.keys.all)).body.data;
		expect(entry).toMatchObject({ event: 'message.inbound', wa_message_id: expect.any(String) });
	});
});

describe('secret_field', () => {
	it.each(['signing_secret', 'hmac_key'] as const)(
		'%s: the secret is under that name and signs deliveries',
		async (field) => {
			await answer({ secret_field: field });
			const registered = await api(sb, 'POST', '/v1/console/webhook', sb.keys.all, {
				url: receiver.url,
			});
			expect(registered.status).toBe(201);
			expect(registered.body).toEqual({
				url: receiver.url,
				configured: true,
				[field]: expect.stringMatching(/^whsec_[0-9a-f]{64}$/),
			});
			await inbound(sb, n0);
			const [delivered] = receiver.requests;
			expect(delivered.headers['x-service-signature']).toBe(
				signBody(delivered.raw, registered.body[field]),
			);
		},
	);
});

describe('error_body', () => {
	/** A 401 (no key) and a 404 (unknown message), as the client gets them. */
	const errors = async (): Promise<[HttpResult, HttpResult]> => [
		await call(sb.baseUrl, 'GET', '/v1/ping'),
		await api(sb, 'GET', '/v1/messages/msg_unknown', sb.keys.all),
	];
	const sentences = [
		'Send the API key as "Authorization: Bearer sk_live_..."',
		'No message msg_unknown',
	];

	it('error_object (default): {error: {code, message}}', async () => {
		const [unauthorized, notFound] = await errors();
		expect(unauthorized.status).toBe(401);
		expect(unauthorized.body).toEqual({ error: { code: 'missing_key', message: sentences[0] } });
		expect(notFound.status).toBe(404);
		expect(notFound.body).toEqual({ error: { code: 'message_not_found', message: sentences[1] } });
	});

	it('detail: RFC 9457 problem details, application/problem+json', async () => {
		await answer({ error_body: 'detail' });
		const [unauthorized, notFound] = await errors();
		expect(unauthorized.status).toBe(401);
		expect(unauthorized.headers['content-type']).toBe('application/problem+json; charset=utf-8');
		expect(unauthorized.body).toEqual({
			type: 'about:blank',
			title: 'Unauthorized',
			status: 401,
			detail: sentences[0],
		});
		expect(notFound.status).toBe(404);
		expect(notFound.body).toEqual({
			type: 'about:blank',
			title: 'Not Found',
			status: 404,
			detail: sentences[1],
		});
	});

	it('message: {message, code}', async () => {
		await answer({ error_body: 'message' });
		const [unauthorized, notFound] = await errors();
		expect(unauthorized.status).toBe(401);
		expect(unauthorized.headers['content-type']).toBe('application/json; charset=utf-8');
		expect(unauthorized.body).toEqual({ message: sentences[0], code: 'missing_key' });
		expect(notFound.status).toBe(404);
		expect(notFound.body).toEqual({ message: sentences[1], code: 'message_not_found' });
	});

	it('text: the sentence alone as text/plain', async () => {
		await answer({ error_body: 'text' });
		const [unauthorized, notFound] = await errors();
		expect(unauthorized.status).toBe(401);
		expect(unauthorized.headers['content-type']).toBe('text/plain; charset=utf-8');
		expect(unauthorized.text).toBe(sentences[0]);
		expect(notFound.status).toBe(404);
		expect(notFound.headers['content-type']).toBe('text/plain; charset=utf-8');
		expect(notFound.text).toBe(sentences[1]);
	});

	it('keeps extra headers (Allow, Retry-After), covers injected faults, and leaves /_sandbox alone', async () => {
		await answer({ error_body: 'text' });
		const notAllowed = await api(sb, 'PUT', '/v1/console/webhook', sb.keys.all);
		expect(notAllowed.status).toBe(405);
		expect(notAllowed.headers.allow).toBe('POST, GET, DELETE');
		expect(notAllowed.text).toContain('PUT is not allowed');
		await control(sb, 'POST', '/faults', { count: 1, kind: 'status_429', retry_after_seconds: 3 });
		const limited = await api(sb, 'GET', '/v1/ping', sb.keys.all);
		expect(limited.status).toBe(429);
		expect(limited.headers['retry-after']).toBe('3');
		expect(limited.text).toBe('Injected fault: too many requests, retry after 3 s');
		const controlError = await control(sb, 'POST', '/keys/key_nope/revoke');
		expect(controlError.body).toEqual({
			error: { code: 'key_not_found', message: 'No key key_nope' },
		});
		// Refusals are logged as before.
		const rejections = await api(sb, 'GET', '/v1/logs?category=rejections', sb.keys.all);
		expect(rejections.body.data[0]).toMatchObject({ status: 405, code: 'method_not_allowed' });
	});
});

describe('webhook_config', () => {
	it('url_configured (default): {url, configured}', async () => {
		expect((await api(sb, 'GET', '/v1/console/webhook', sb.keys.all)).body).toEqual({
			url: null,
			configured: false,
		});
	});

	it('other_shape: {endpoint: {address, enabled}}, never the secret', async () => {
		await answer({ webhook_config: 'other_shape' });
		const read = () => api(sb, 'GET', '/v1/console/webhook', sb.keys.all);
		expect((await read()).body).toEqual({ endpoint: { address: null, enabled: false } });
		const secret = await registerWebhook(sb, receiver.url);
		const configured = await read();
		expect(configured.body).toEqual({ endpoint: { address: receiver.url, enabled: true } });
		expect(configured.text).not.toContain(secret);
		await api(sb, 'DELETE', '/v1/console/webhook', sb.keys.all);
		expect((await read()).body).toEqual({ endpoint: { address: null, enabled: false } });
	});
});

describe('GET/POST /_sandbox/answers', () => {
	it('GET answers the seven settings, the defaults at first', async () => {
		const result = await control(sb, 'GET', '/answers');
		expect(result.status).toBe(200);
		expect(result.body).toEqual({
			answers: {
				list_shape: 'data_cursor',
				record_fields: 'text_created_at',
				inbound_filters: 'applied',
				webhook_log: 'by_message',
				secret_field: 'secret',
				error_body: 'error_object',
				webhook_config: 'url_configured',
			},
		});
		expect(sb.answers()).toEqual(DEFAULT_ANSWERS);
	});

	it('POST takes a partial set and answers all seven; later POSTs keep the others', async () => {
		expect(await answer({ list_shape: 'bare_array' })).toEqual({
			...DEFAULT_ANSWERS,
			list_shape: 'bare_array',
		});
		expect(await answer({ error_body: 'text', secret_field: 'hmac_key' })).toEqual({
			...DEFAULT_ANSWERS,
			list_shape: 'bare_array',
			error_body: 'text',
			secret_field: 'hmac_key',
		});
		expect(await answer({})).toEqual(sb.answers());
	});

	it.each([
		[{ list_shpae: 'bare_array' }, 'list_shpae: unknown setting'],
		[{ list_shape: 'cursor' }, 'list_shape: unknown value "cursor"'],
		[{ error_body: 7 }, 'error_body: unknown value 7'],
		[['list_shape'], 'expected an object'],
	])('400 invalid_request naming what is unknown: %j', async (bodyValue, named) => {
		const result = await control(sb, 'POST', '/answers', bodyValue);
		expect(result.status).toBe(400);
		expect(result.body.error.code).toBe('invalid_request');
		expect(result.body.error.message).toContain(named);
		expect(sb.answers()).toEqual(DEFAULT_ANSWERS);
	});

	it("/_sandbox/state and /_sandbox/view keep the sandbox's own shapes", async () => {
		await answer({ record_fields: 'body_created', webhook_config: 'other_shape' });
		await inbound(sb, n0);
		const state = (await control(sb, 'GET', '/state')).body;
		expect(state.inbound[0]).toMatchObject({ text: 'hello', created_at: expect.any(String) });
		expect(state.webhook).toEqual({ url: null, configured: false, secret: null });
		const view = (await control(sb, 'GET', '/view')).body;
		expect(view.inbound[0]).toMatchObject({ text: 'hello' });
	});
});

describe('answers given at start', () => {
	const start: Partial<Answers> = { list_shape: 'items_next_token', webhook_log: 'event_id' };
	let own: Awaited<ReturnType<typeof startSandbox>>;
	beforeAll(async () => {
		own = await startSandbox({ answers: start });
	});
	afterAll(async () => {
		await own.close();
	});

	it('are answered from the start, and reset (HTTP or in process) restores them, not the defaults', async () => {
		expect(own.answers()).toEqual({ ...DEFAULT_ANSWERS, ...start });
		const keys = await api(own, 'GET', '/v1/console/keys', own.keys.all);
		expect(keys.body).toEqual({ items: expect.any(Array), next: null });
		await control(own, 'POST', '/answers', { list_shape: 'data_cursor', error_body: 'text' });
		expect((await control(own, 'POST', '/reset')).status).toBe(204);
		expect((await control(own, 'GET', '/answers')).body.answers).toEqual({
			...DEFAULT_ANSWERS,
			...start,
		});
		expect(own.setAnswers({ secret_field: 'signing_secret' })).toEqual({
			...DEFAULT_ANSWERS,
			...start,
			secret_field: 'signing_secret',
		});
		own.reset();
		expect(own.answers()).toEqual({ ...DEFAULT_ANSWERS, ...start });
	});

	it('an unknown setting or value is refused in process too', async () => {
		expect(() => own.setAnswers({ list_shape: 'nope' } as never)).toThrow(
			/list_shape: unknown value "nope"/,
		);
		await expect(startSandbox({ answers: { colour: 'blue' } as never })).rejects.toThrow(
			/colour: unknown setting/,
		);
	});
});

describe('the --answers flag and SANDBOX_ANSWERS', () => {
	it('--answers parses setting=value pairs', () => {
		expect(
			parseArgs(['--answers', 'list_shape=items_next_url,record_fields=body_created']),
		).toEqual({
			port: 4010,
			mediaPort: 4011,
			answers: { list_shape: 'items_next_url', record_fields: 'body_created' },
		});
		expect(
			parseArgs([
				'--answers',
				'list_shape=bare_array',
				'--port',
				'5000',
				'--answers',
				'error_body=text',
			]),
		).toEqual({
			port: 5000,
			mediaPort: 5001,
			answers: { list_shape: 'bare_array', error_body: 'text' },
		});
	});

	it('--answers names an unknown setting, value or a pair without "="', () => {
		expect(() => parseArgs(['--answers', 'list_shape=pages'])).toThrow(
			/list_shape: unknown value "pages"[\s\S]*Usage/,
		);
		expect(() => parseArgs(['--answers', 'shape=bare_array'])).toThrow(/shape: unknown setting/);
		expect(() => parseArgs(['--answers', 'list_shape'])).toThrow(/not setting=value/);
		expect(() => parseArgs(['--answers'])).toThrow(/Unknown argument --answers/);
	});

	it('SANDBOX_ANSWERS has the same syntax (test/real-n8n/sandbox.ts)', () => {
		expect(
			answersFromEnv({ SANDBOX_ANSWERS: 'list_shape=items_next_url,webhook_log=event_id' }),
		).toEqual({
			list_shape: 'items_next_url',
			webhook_log: 'event_id',
		});
		expect(answersFromEnv({})).toEqual({});
		expect(() => answersFromEnv({ SANDBOX_ANSWERS: 'webhook_log=latest' })).toThrow(
			/SANDBOX_ANSWERS: .*webhook_log: unknown value "latest"/,
		);
	});
});

describe('raw numbers in JSON answers', () => {
	it('keep their 6 decimals, trailing zeros included', () => {
		expect(stringifyJson({ created: new RawJsonNumber('1795770930.120000'), text: 'x' })).toBe(
			'{"created":1795770930.120000,"text":"x"}',
		);
	});
});
