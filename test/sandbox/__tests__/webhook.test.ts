import { startSandbox } from '..';
import {
	CONTACT,
	signBody,
	startReceiver,
	useReceiver,
	useSandbox,
	WRONG_SECRET,
} from '../../support';
import {
	api,
	closedPort,
	control,
	inbound,
	MICRO_TIMESTAMP,
	registerWebhook,
	type Json,
} from './helpers';

const sb = useSandbox();
const receiver = useReceiver();
let n0: string;
beforeAll(() => {
	n0 = sb.numbers[0].phone_number_id;
});
beforeEach(() => {
	receiver.requests.length = 0;
	receiver.mode = { kind: 'status', status: 200 };
});

const parsed = (index: number): Json => JSON.parse(receiver.requests[index].raw.toString('utf8'));

describe('registration', () => {
	it('registers an https URL with 201 and the secret, which GET never returns', async () => {
		const registered = await api(sb, 'POST', '/v1/console/webhook', sb.keys.all, {
			url: 'https://example.com/hook',
		});
		expect(registered.status).toBe(201);
		expect(registered.body).toEqual({
			url: 'https://example.com/hook',
			configured: true,
			secret: expect.stringMatching(/^whsec_[0-9a-f]{64}$/),
		});
		const read = await api(sb, 'GET', '/v1/console/webhook', sb.keys.all);
		expect(read.status).toBe(200);
		expect(read.body).toEqual({ url: 'https://example.com/hook', configured: true });
		expect(read.text).not.toContain(registered.body.secret);
	});

	it('reads configured:false and url null when none is registered', async () => {
		const read = await api(sb, 'GET', '/v1/console/webhook', sb.keys.all);
		expect(read.body).toEqual({ url: null, configured: false });
	});

	it.each([
		'http://127.0.0.1:5678/webhook/abc',
		'http://localhost:5678/webhook/abc',
		'http://[::1]:5678/webhook/abc',
	])('accepts plain http to loopback: %s', async (url) => {
		const result = await api(sb, 'POST', '/v1/console/webhook', sb.keys.all, { url });
		expect(result.status).toBe(201);
		expect(result.body.url).toBe(url);
	});

	it.each([
		'http://example.com/hook',
		'http://10.0.0.5/hook',
		'ftp://example.com/hook',
		'not a url',
	])('refuses %s with 400 invalid_webhook_url', async (url) => {
		const result = await api(sb, 'POST', '/v1/console/webhook', sb.keys.all, { url });
		expect(result.status).toBe(400);
		expect(result.body.error.code).toBe('invalid_webhook_url');
		expect(sb.state().webhook.configured).toBe(false);
	});

	it('refuses a body without url with 400', async () => {
		const result = await api(sb, 'POST', '/v1/console/webhook', sb.keys.all, {
			address: 'https://example.com',
		});
		expect(result.status).toBe(400);
		expect(result.body.error.message).toContain('url:');
	});

	it('registering again replaces the URL and issues a new secret used for signing', async () => {
		const first = await registerWebhook(sb, 'https://example.com/old');
		const second = await registerWebhook(sb, receiver.url);
		expect(second).not.toBe(first);
		expect(sb.state().webhook).toEqual({ url: receiver.url, configured: true, secret: second });
		await inbound(sb, n0);
		expect(receiver.requests).toHaveLength(1);
		expect(receiver.requests[0].headers['x-service-signature']).toBe(
			signBody(receiver.requests[0].raw, second),
		);
	});

	it('DELETE answers 204; afterwards GET says configured:false and nothing is delivered', async () => {
		await registerWebhook(sb, receiver.url);
		const removed = await api(sb, 'DELETE', '/v1/console/webhook', sb.keys.all);
		expect(removed.status).toBe(204);
		expect(removed.text).toBe('');
		expect((await api(sb, 'GET', '/v1/console/webhook', sb.keys.all)).body).toEqual({
			url: null,
			configured: false,
		});
		const result = await inbound(sb, n0);
		expect(result.body.delivery).toEqual({
			delivered: false,
			status: null,
			duration_ms: null,
			reason: 'no webhook registered',
		});
		expect(receiver.requests).toHaveLength(0);
		expect(sb.state().deliveries.map((d) => d.reason)).toEqual(['no webhook registered']);
		// No attempt, so nothing in the webhook log.
		expect(sb.state().logs.filter((l) => l.category === 'webhook')).toHaveLength(0);
	});
});

describe('delivery', () => {
	it('POSTs JSON signed with HMAC-SHA256 of the exact raw bytes', async () => {
		const secret = await registerWebhook(sb, receiver.url);
		await inbound(sb, n0, { text: 'héllo ✓ "quoted"' });
		const [received] = receiver.requests;
		expect(received.method).toBe('POST');
		expect(received.headers['content-type']).toBe('application/json');
		expect(received.headers['x-service-signature']).toBe(signBody(received.raw, secret));
		// Re-serialising would not necessarily give the same bytes; the sandbox signs what it sends.
		expect(received.raw.toString('utf8')).toBe(sb.state().deliveries[0].body);
		expect(received.headers['x-service-signature']).not.toBe(signBody(received.raw, WRONG_SECRET));
	});

	it('message.inbound: envelope {event, data, timestamp} and exactly the spec data fields', async () => {
		await registerWebhook(sb, receiver.url);
		const result = await inbound(sb, n0, {
			media: { mime: 'image/jpeg', data_base64: Buffer.from('jpeg-bytes').toString('base64') },
			text: 'caption',
		});
		const body = parsed(0);
		expect(Object.keys(body).sort()).toEqual(['data', 'event', 'timestamp']);
		expect(body.event).toBe('message.inbound');
		expect(body.timestamp).toMatch(MICRO_TIMESTAMP);
		expect(Object.keys(body.data).sort()).toEqual(
			[
				'contact_name',
				'from',
				'media_id',
				'media_url',
				'number',
				'text',
				'type',
				'wa_message_id',
			].sort(),
		);
		expect(body.data).toEqual({
			from: CONTACT,
			contact_name: 'Ada',
			number: n0,
			wa_message_id: result.body.record.wa_message_id,
			type: 'image',
			text: 'caption',
			media_id: result.body.record.media_id,
			media_url: `${sb.baseUrl}/v1/media/${result.body.record.media_id}`,
		});
		expect(result.body.delivery).toEqual({
			delivered: true,
			status: 200,
			duration_ms: expect.any(Number),
			reason: null,
		});
	});

	it('message.inbound: media_url null when media is not hosted, and for text', async () => {
		await registerWebhook(sb, receiver.url);
		await inbound(sb, n0, { media: { mime: 'audio/ogg', data_base64: 'AAAA' }, host_media: false });
		await inbound(sb, n0);
		expect(parsed(0).data).toMatchObject({
			type: 'audio',
			media_id: expect.any(String),
			media_url: null,
		});
		expect(parsed(1).data).toMatchObject({ type: 'text', media_id: null, media_url: null });
	});

	it('message.echo: exactly the spec data fields, no media_url', async () => {
		await registerWebhook(sb, receiver.url);
		const result = await control(sb, 'POST', '/echo', {
			to: CONTACT,
			number: n0,
			media_mime: 'video/mp4',
			text: 'clip',
		});
		expect(result.status).toBe(201);
		const body = parsed(0);
		expect(body.event).toBe('message.echo');
		expect(body.timestamp).toMatch(MICRO_TIMESTAMP);
		expect(Object.keys(body.data).sort()).toEqual([
			'media_id',
			'media_mime',
			'number',
			'text',
			'to',
			'type',
			'wa_message_id',
		]);
		expect(body.data).toEqual({
			to: CONTACT,
			number: n0,
			wa_message_id: result.body.record.wa_message_id,
			type: 'video',
			text: 'clip',
			media_id: expect.any(String),
			media_mime: 'video/mp4',
		});
	});

	it('message.status: exactly the spec data fields, recipient masked', async () => {
		await inbound(sb, n0);
		const sent = await api(sb, 'POST', '/v1/messages/reply', sb.keys.oneNumber, {
			to: CONTACT,
			text: 'ok',
		});
		await registerWebhook(sb, receiver.url);
		const result = await control(sb, 'POST', '/status', { id: sent.body.id, status: 'delivered' });
		expect(result.body.delivery.delivered).toBe(true);
		const body = parsed(0);
		expect(body.event).toBe('message.status');
		expect(body.timestamp).toMatch(MICRO_TIMESTAMP);
		expect(body.data).toEqual({
			id: sent.body.id,
			wa_message_id: sent.body.wa_message_id,
			status: 'delivered',
			recipient_masked: '+1555****567',
			error: null,
		});
	});

	it('the timestamp follows the sandbox clock', async () => {
		await registerWebhook(sb, receiver.url);
		sb.advanceClock(400 * 24 * 3600);
		await inbound(sb, n0);
		const stamp = Date.parse(parsed(0).timestamp);
		expect(Math.abs(stamp - sb.now().getTime())).toBeLessThan(5000);
	});

	it('does not retry: a 500 receiver gets exactly one attempt, logged as a failure', async () => {
		receiver.mode = { kind: 'status', status: 500 };
		await registerWebhook(sb, receiver.url);
		const result = await inbound(sb, n0);
		expect(result.body.delivery).toEqual({
			delivered: false,
			status: 500,
			duration_ms: expect.any(Number),
			reason: 'HTTP 500',
		});
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(receiver.requests).toHaveLength(1);
		const log = await api(sb, 'GET', '/v1/logs?category=webhook', sb.keys.all);
		expect(log.body.data).toEqual([
			expect.objectContaining({
				event: 'message.inbound',
				success: false,
				status_code: 500,
				reason: 'HTTP 500',
			}),
		]);
		// L2: the entry names the message it carried, as stored in the history.
		const stored = await api(sb, 'GET', '/v1/messages/inbound', sb.keys.all);
		expect(log.body.data[0].wa_message_id).toBe(stored.body.data[0].wa_message_id);
		expect(log.body.data[0].wa_message_id).toMatch(/^wamid\./);
	});

	it('reports connection refused', async () => {
		await registerWebhook(sb, `http://127.0.0.1:${await closedPort()}/hook`);
		const result = await inbound(sb, n0);
		expect(result.body.delivery).toMatchObject({
			delivered: false,
			status: null,
			reason: 'connection refused',
		});
		expect(sb.state().logs.find((l) => l.category === 'webhook')).toMatchObject({
			success: false,
			reason: 'connection refused',
		});
	});
});

describe('delivery timeout', () => {
	it('gives up after webhookTimeoutMs with one attempt, logged with the reason', async () => {
		const quick = await startSandbox({ webhookTimeoutMs: 300 });
		const hanging = await startReceiver({ kind: 'hang' });
		try {
			await registerWebhook(quick, hanging.url);
			const started = Date.now();
			const result = await inbound(quick, quick.numbers[0].phone_number_id);
			const elapsed = Date.now() - started;
			expect(result.body.delivery).toMatchObject({
				delivered: false,
				status: null,
				reason: 'timeout after 300 ms',
			});
			expect(elapsed).toBeGreaterThanOrEqual(290);
			expect(elapsed).toBeLessThan(3000);
			expect(hanging.requests).toHaveLength(1);
			const log = await api(quick, 'GET', '/v1/logs?category=webhook', quick.keys.all);
			expect(log.body.data[0]).toMatchObject({
				success: false,
				status_code: null,
				reason: 'timeout after 300 ms',
			});
		} finally {
			await quick.close();
			await hanging.close();
		}
	});

	it('a 200 whose body never ends is a timeout too (the timeout covers the body)', async () => {
		const quick = await startSandbox({ webhookTimeoutMs: 300 });
		const stuck = await startReceiver({ kind: 'headers-then-hang' });
		try {
			await registerWebhook(quick, stuck.url);
			const result = await inbound(quick, quick.numbers[0].phone_number_id);
			expect(result.body.delivery).toMatchObject({
				delivered: false,
				status: null,
				reason: 'timeout after 300 ms',
			});
			expect(quick.state().logs.find((l) => l.category === 'webhook')).toMatchObject({
				success: false,
				status_code: null,
				reason: 'timeout after 300 ms',
			});
		} finally {
			await quick.close();
			await stuck.close();
		}
	});
});
