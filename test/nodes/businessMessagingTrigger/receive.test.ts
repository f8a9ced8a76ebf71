// Direct requests to webhook() through n8n-core's real WebhookContext: verification first,
// then the envelope, the replay window, filters and outputs.
import { Logger } from '@n8n/backend-common';
import { gzipSync } from 'node:zlib';

import type { WebhookHarness } from '../../harness';
import { combinable } from '../../../nodes/BusinessMessagingTrigger/routing/burst';
import {
	PACKAGE_FIELDS,
	RECEIVED_AT_FIELD,
	RECORD_ONLY_FIELD,
	RESUMED_FIELD,
} from '../../../nodes/BusinessMessagingTrigger/routing/route';
import {
	echoEnvelope,
	inboundEnvelope,
	serviceTimestamp,
	signBody,
	signedRequest,
	statusEnvelope,
	useSandbox,
	WRONG_SECRET,
} from '../../support';
import { asEmitted, trigger, storedSecret } from './helpers';

const sb = useSandbox({ reset: 'afterEach' });
afterEach(() => {
	jest.restoreAllMocks();
});

async function activeTrigger(
	parameters: Record<string, unknown> = {},
): Promise<{ harness: WebhookHarness; secret: string }> {
	sb.reset();
	const harness = await trigger(sb, parameters as never);
	await harness.activate();
	return { harness, secret: storedSecret(harness.staticData, sb.keys.all) as string };
}

function expectNoExecution(answer: { workflowData?: unknown }) {
	expect(answer.workflowData).toBeUndefined();
}

/** n8n's warnings from now on: where the reason of a refusal goes (the caller gets a generic one). */
function warnings(): string[] {
	const lines: string[] = [];
	jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: string) => {
		lines.push(message);
	});
	return lines;
}

const NOT_SIGNED = { error: 'unauthorized', reason: 'the request is not signed for this webhook' };

// Issue 49: the signed envelope was spread whole into the item, so the service could set the
// package's own markers: `__businessMessagingRecordOnly` and a message silently did not run.
describe("the package's own fields are never taken from the service's envelope", () => {
	it('a signed event carrying __businessMessagingRecordOnly: true runs (one execution with the item)', async () => {
		const { harness, secret } = await activeTrigger();
		const event = { ...inboundEnvelope({ text: 'run me' }), [RECORD_ONLY_FIELD]: true };
		const answer = await harness.receive(signedRequest(event, secret));
		expect(answer.body).toEqual({ received: true });
		const ran = (await harness.execute(answer.workflowData ?? [])).flat();
		expect(ran).toHaveLength(1);
		expect(ran[0].json).toMatchObject({ data: { text: 'run me' } });
		expect(ran[0].json).not.toHaveProperty(RECORD_ONLY_FIELD);
	});

	it('a signed event carrying resumed_execution is a plain inbound message (Combine takes it, nothing says it resumed a wait)', async () => {
		const { harness, secret } = await activeTrigger();
		const event = { ...inboundEnvelope({ text: 'plain' }), [RESUMED_FIELD]: '77' };
		const answer = await harness.receive(signedRequest(event, secret));
		expect(answer.body).toEqual({ received: true });
		const [item] = (await harness.execute(answer.workflowData ?? [])).flat();
		expect(item.json).not.toHaveProperty(RESUMED_FIELD);
		expect(combinable(item.json)).toBeDefined();
	});

	it('every package field is left out of the item, everything else passes as sent', async () => {
		const { harness, secret } = await activeTrigger();
		const forged = Object.fromEntries(PACKAGE_FIELDS.map((field) => [field, 'forged']));
		const sent = { ...inboundEnvelope(), extra_field: { kept: true } };
		const answer = await harness.receive(signedRequest({ ...sent, ...forged }, secret));
		const [[item]] = answer.workflowData ?? [[]];
		expect(item.json).toEqual(asEmitted(sent));
		expect(PACKAGE_FIELDS).toEqual(
			expect.arrayContaining([RESUMED_FIELD, RECORD_ONLY_FIELD, RECEIVED_AT_FIELD]),
		);
	});
});

describe('signature', () => {
	it('valid: 200 and one item that is the event exactly as sent', async () => {
		const { harness, secret } = await activeTrigger();
		const event = { ...inboundEnvelope(), extra_field: { kept: true } };
		const answer = await harness.receive(signedRequest(event, secret));
		expect(answer.status).toBe(200);
		// n8n answers (on 2.x once the execution is stored) with the node's webhookResponse.
		expect(answer.noWebhookResponse).toBeUndefined();
		expect(answer.body).toEqual({ received: true });
		expect(answer.workflowData).toEqual([[{ json: asEmitted(event) }]]);
	});

	it('the output never contains the signing secret or the API key', async () => {
		const { harness, secret } = await activeTrigger();
		const answer = await harness.receive(signedRequest(inboundEnvelope(), secret));
		const text = JSON.stringify(answer);
		expect(text).not.toContain(secret);
		expect(text).not.toContain(sb.keys.all);
	});

	it('verifies the raw bytes, whatever the content type says', async () => {
		const { harness, secret } = await activeTrigger();
		const rawBody = Buffer.from(JSON.stringify(inboundEnvelope()));
		const answer = await harness.receive({
			headers: { 'content-type': 'text/plain', 'x-service-signature': signBody(rawBody, secret) },
			rawBody,
		});
		expect(answer.status).toBe(200);
	});

	it('wrong secret: 401, no execution', async () => {
		const { harness } = await activeTrigger();
		const logged = warnings();
		const answer = await harness.receive(signedRequest(inboundEnvelope(), WRONG_SECRET));
		expect(answer.status).toBe(401);
		expect(answer.noWebhookResponse).toBe(true);
		expect(answer.body).toEqual(NOT_SIGNED);
		expect(logged.join('\n')).toMatch(/does not match/);
		expectNoExecution(answer);
	});

	it('one tampered byte: 401', async () => {
		const { harness, secret } = await activeTrigger();
		const request = signedRequest(inboundEnvelope({ text: 'pay 100' }), secret);
		const tampered = Buffer.from(request.rawBody.toString().replace('pay 100', 'pay 900'));
		expect(tampered.length).toBe(request.rawBody.length);
		const answer = await harness.receive({ ...request, rawBody: tampered });
		expect(answer.status).toBe(401);
		expectNoExecution(answer);
	});

	it('the same JSON re-serialised with other spacing or key order: 401', async () => {
		const { harness, secret } = await activeTrigger();
		const event = inboundEnvelope();
		const request = signedRequest(event, secret);
		const variants = [
			JSON.stringify(event, null, 2),
			JSON.stringify({ timestamp: event.timestamp, data: event.data, event: event.event }),
		];
		for (const variant of variants) {
			const answer = await harness.receive({
				headers: request.headers,
				rawBody: Buffer.from(variant),
			});
			expect(answer.status).toBe(401);
			expectNoExecution(answer);
		}
	});

	it.each([
		['missing header', (_header: string) => undefined],
		['no sha256= prefix', (header: string) => header.slice('sha256='.length)],
		['truncated hex', (header: string) => header.slice(0, -2)],
		['non-hex', (header: string) => `${header.slice(0, -1)}x`],
		['empty', (_header: string) => ''],
	])('%s: 401, no execution', async (_label, mangle) => {
		const { harness, secret } = await activeTrigger();
		const request = signedRequest(inboundEnvelope(), secret);
		const header = mangle(request.headers['x-service-signature']);
		const headers: Record<string, string> = { 'content-type': 'application/json' };
		if (header !== undefined) headers['x-service-signature'] = header;
		const answer = await harness.receive({ headers, rawBody: request.rawBody });
		expect(answer.status).toBe(401);
		expectNoExecution(answer);
	});

	it('the signature is checked before the body is parsed: garbage with a bad signature is 401, not 400', async () => {
		const { harness } = await activeTrigger();
		const answer = await harness.receive({
			headers: { 'x-service-signature': `sha256=${'0'.repeat(64)}` },
			rawBody: Buffer.from('{not json'),
		});
		expect(answer.status).toBe(401);
	});

	it('no secret stored (registration lost): every event is rejected, fail closed', async () => {
		const { harness, secret } = await activeTrigger();
		delete harness.staticData.sealedSecret;
		const answer = await harness.receive(signedRequest(inboundEnvelope(), secret));
		expect(answer.status).toBe(401);
		expectNoExecution(answer);
		// Nor does an "empty-key" signature pass.
		expect((await harness.receive(signedRequest(inboundEnvelope(), ''))).status).toBe(401);
	});
});

describe('envelope', () => {
	it('signed but not JSON, sent as application/json: n8n itself answers 422 before the node runs', async () => {
		const { harness, secret } = await activeTrigger();
		const answer = await harness.receive(signedRequest('{"event": "message.inbound",', secret));
		expect(answer.status).toBe(422);
		expectNoExecution(answer);
	});

	it('signed but not JSON, other content type: the node answers 400', async () => {
		const { harness, secret } = await activeTrigger();
		const request = signedRequest('{"event": "message.inbound",', secret);
		const answer = await harness.receive({
			...request,
			headers: { ...request.headers, 'content-type': 'text/plain' },
		});
		expect(answer.status).toBe(400);
		expect(answer.body).toEqual({
			error: 'bad_request',
			reason: 'not a valid event envelope: the body is not valid JSON',
		});
		expectNoExecution(answer);
	});

	it.each([
		['an array', '[]'],
		['unknown event', JSON.stringify({ ...inboundEnvelope(), event: 'message.deleted' })],
		['data not an object', JSON.stringify({ ...inboundEnvelope(), data: 'hello' })],
		['timestamp missing', JSON.stringify({ event: 'message.inbound', data: {} })],
		[
			'timestamp not ISO 8601',
			JSON.stringify({ ...inboundEnvelope(), timestamp: 'Tue, 02 Jan 2025 03:04:05 GMT' }),
		],
	])('signed but %s: 400, no execution', async (_label, raw) => {
		const { harness, secret } = await activeTrigger();
		const answer = await harness.receive(signedRequest(raw, secret));
		expect(answer.status).toBe(400);
		expect(answer.body).toEqual({
			error: 'bad_request',
			reason: expect.stringMatching(/not a valid event envelope/),
		});
		expectNoExecution(answer);
	});
});

describe('late deliveries (Recover Missed Messages on, the default)', () => {
	it('an event older than the Late Delivery Cutoff is answered 503 and not run; a fresh one runs', async () => {
		const { harness, secret } = await activeTrigger();
		const late = await harness.receive(
			signedRequest(inboundEnvelope({}, serviceTimestamp(Date.now() - 6_000)), secret),
		);
		expect(late.status).toBe(503);
		expect(late.body).toEqual({
			error: 'too_late',
			reason: expect.stringMatching(/^the event is 6\.\d s old \(Late Delivery Cutoff 5 s\)/),
		});
		expectNoExecution(late);
		const fresh = await harness.receive(
			signedRequest(inboundEnvelope({}, serviceTimestamp(Date.now() - 1_000)), secret),
		);
		expect(fresh.status).toBe(200);
		expect(fresh.workflowData).toBeDefined();
	});

	it('a late event that is not selected is answered 503 too (the service logs a failure, the catch-up skips it)', async () => {
		const { harness, secret } = await activeTrigger({ events: ['message.status'] });
		const late = await harness.receive(
			signedRequest(inboundEnvelope({}, serviceTimestamp(Date.now() - 6_000)), secret),
		);
		expect(late.status).toBe(503);
		expectNoExecution(late);
	});

	it('a late delivery is not remembered as received: refused again, never run', async () => {
		const { harness, secret } = await activeTrigger();
		const delivery = signedRequest(
			inboundEnvelope({}, serviceTimestamp(Date.now() - 6_000)),
			secret,
		);
		expect((await harness.receive(delivery)).status).toBe(503);
		expect((await harness.receive(delivery)).status).toBe(503);
	});
});

describe('replay window', () => {
	it('default 300 s: a 10-minute-old event is rejected, a 4-minute-old one accepted', async () => {
		const { harness, secret } = await activeTrigger({ catchUp: false });
		const logged = warnings();
		const stale = await harness.receive(
			signedRequest(inboundEnvelope({}, serviceTimestamp(Date.now() - 600_000)), secret),
		);
		expect(stale.status).toBe(401);
		expect(stale.body).toEqual(NOT_SIGNED);
		expect(logged.join('\n')).toMatch(/replay protection: the event is 600 s old/);
		expectNoExecution(stale);

		const recent = await harness.receive(
			signedRequest(inboundEnvelope({}, serviceTimestamp(Date.now() - 240_000)), secret),
		);
		expect(recent.status).toBe(200);
	});

	it('the same signed request replayed later is rejected', async () => {
		const { harness, secret } = await activeTrigger({ catchUp: false });
		const request = signedRequest(inboundEnvelope(), secret);
		expect((await harness.receive(request)).status).toBe(200);
		const now = Date.now();
		jest.spyOn(Date, 'now').mockReturnValue(now + 301_000);
		const replay = await harness.receive(request);
		expect(replay.status).toBe(401);
		expectNoExecution(replay);
	});

	it('a timestamp more than 60 s in the future is rejected', async () => {
		const { harness, secret } = await activeTrigger({ catchUp: false });
		const logged = warnings();
		const answer = await harness.receive(
			signedRequest(inboundEnvelope({}, serviceTimestamp(Date.now() + 120_000)), secret),
		);
		expect(answer.status).toBe(401);
		expect(answer.body).toEqual(NOT_SIGNED);
		expect(logged.join('\n')).toMatch(/future/);
	});

	it('a configured maximum age applies; 0 no longer turns the check off', async () => {
		const strict = await activeTrigger({ catchUp: false, options: { maxAge: 30 } });
		const minuteOld = inboundEnvelope({}, serviceTimestamp(Date.now() - 60_000));
		expect((await strict.harness.receive(signedRequest(minuteOld, strict.secret))).status).toBe(
			401,
		);

		const zero = await activeTrigger({ catchUp: false, options: { maxAge: 0 } });
		for (const timestamp of [
			'2019-01-01T00:00:00.000000+00:00',
			'2099-01-01T00:00:00.000000+00:00',
		]) {
			const answer = await zero.harness.receive(
				signedRequest(inboundEnvelope({}, timestamp), zero.secret),
			);
			expect(answer.status).toBe(401);
			expectNoExecution(answer);
		}
		// 0 means the largest maximum age, one hour.
		const halfHourOld = inboundEnvelope({}, serviceTimestamp(Date.now() - 1_800_000));
		expect((await zero.harness.receive(signedRequest(halfHourOld, zero.secret))).status).toBe(200);
	});

	it('the same signed delivery posted again is refused 401, generic, and not executed (the service never retries)', async () => {
		const { harness, secret } = await activeTrigger({ catchUp: false });
		const delivery = signedRequest(inboundEnvelope(), secret);
		const first = await harness.receive(delivery);
		expect(first.status).toBe(200);
		expect(first.workflowData).toBeDefined();
		const logged = warnings();
		for (let i = 0; i < 3; i++) {
			const again = await harness.receive(delivery);
			expect(again.status).toBe(401);
			expect(again.body).toEqual(NOT_SIGNED);
			expectNoExecution(again);
		}
		expect(logged.join('\n')).toMatch(/already received \(replay\)/);
		// Another delivery (another body, so another signature) still runs.
		const other = await harness.receive(
			signedRequest(inboundEnvelope({ text: 'another message' }), secret),
		);
		expect(other.workflowData).toBeDefined();
	});
});

describe('requests that are not a signed JSON envelope never cause work', () => {
	const form = Buffer.from(
		'--b\r\nContent-Disposition: form-data; name="event"\r\n\r\nmessage.inbound\r\n--b--\r\n',
	);
	it.each([
		[
			"multipart/form-data (n8n's form parser consumes the body)",
			{ 'content-type': 'multipart/form-data; boundary=b' },
			form,
		],
		[
			'application/x-www-form-urlencoded',
			{ 'content-type': 'application/x-www-form-urlencoded' },
			Buffer.from('event=message.inbound'),
		],
		['text/plain', { 'content-type': 'text/plain' }, Buffer.from('hello')],
		[
			'application/xml',
			{ 'content-type': 'application/xml' },
			Buffer.from('<event>message.inbound</event>'),
		],
		['an empty body', { 'content-type': 'application/json' }, Buffer.alloc(0)],
		['no content type', {}, Buffer.from('{}')],
		[
			'a gzip-encoded JSON body',
			{ 'content-type': 'application/json', 'content-encoding': 'gzip' },
			gzipSync(JSON.stringify(inboundEnvelope())),
		],
		[
			'a signature of the compressed bytes',
			{ 'content-type': 'application/json', 'content-encoding': 'gzip' },
			gzipSync(JSON.stringify(inboundEnvelope())),
		],
	] as const)(
		'%s: a 4xx, no execution, webhook() does not throw',
		async (label, headers, rawBody) => {
			const { harness, secret } = await activeTrigger();
			const signed: Record<string, string> =
				label === 'a signature of the compressed bytes'
					? { 'x-service-signature': signBody(rawBody, secret) }
					: {};
			const answer = await harness.receive({ headers: { ...headers, ...signed }, rawBody });
			expect(answer.status).toBeGreaterThanOrEqual(400);
			expect(answer.status).toBeLessThan(500);
			expectNoExecution(answer);
			expect(answer.error).toBeUndefined();
		},
	);

	it('a flood to a receiver without a signing secret writes at most 10 error lines a minute', async () => {
		const { harness, secret } = await activeTrigger();
		delete harness.staticData.sealedSecret;
		const errors: string[] = [];
		jest.spyOn(Logger.prototype, 'error').mockImplementation((message: string) => {
			errors.push(message);
		});
		for (let i = 0; i < 50; i++) {
			expect(
				(await harness.receive(signedRequest(inboundEnvelope({ text: `flood ${i}` }), secret)))
					.status,
			).toBe(401);
		}
		expect(
			errors.filter((line) => line.includes('no signing secret is stored')).length,
		).toBeLessThanOrEqual(10);
	});

	it("a flood of bad requests writes at most 10 warnings a minute to n8n's log", async () => {
		const { harness } = await activeTrigger();
		const warnings: string[] = [];
		jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: string) => {
			warnings.push(message);
		});
		for (let i = 0; i < 50; i++) {
			const answer = await harness.receive({
				headers: { 'content-type': 'application/json', 'x-service-signature': 'sha256=00' },
				rawBody: '{}',
			});
			expect(answer.status).toBe(401);
		}
		expect(
			warnings.filter((line) => line.includes('rejected a request')).length,
		).toBeLessThanOrEqual(10);
	});
	it("a flood to one trigger does not hide another trigger's rejection lines (one bound per trigger)", async () => {
		const flooded = (await activeTrigger()).harness;
		// Another n8n (another origin): it takes the webhook over rather than joining the first.
		const other = await trigger(sb, { options: { takeOver: true } } as never, {
			webhookUrl: 'https://other-n8n.example/webhook',
		});
		await other.activate();
		const lines: string[] = [];
		jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: string) => {
			lines.push(message);
		});
		const junk = {
			headers: { 'content-type': 'application/json', 'x-service-signature': 'sha256=00' },
			rawBody: '{}',
		};
		for (let i = 0; i < 50; i++) expect((await flooded.receive(junk)).status).toBe(401);
		expect(lines.filter((line) => line.includes('rejected a request')).length).toBeLessThanOrEqual(
			10,
		);
		lines.length = 0;
		// The flooded trigger's minute is used up; the other trigger's first rejection is still logged.
		expect((await other.receive(junk)).status).toBe(401);
		expect(lines.filter((line) => line.includes('rejected a request'))).toHaveLength(1);
	});
});

describe('events, filters and outputs', () => {
	it('default: inbound only; echo and status are acknowledged with 200 and start nothing', async () => {
		const { harness, secret } = await activeTrigger();
		for (const event of [echoEnvelope(), statusEnvelope()]) {
			const answer = await harness.receive(signedRequest(event, secret));
			expect(answer.status).toBe(200);
			expect(answer.body).toEqual({
				received: true,
				ignored: `event ${event.event} is not selected`,
			});
			expectNoExecution(answer);
		}
	});

	it('several events on one output', async () => {
		const { harness, secret } = await activeTrigger({
			events: ['message.inbound', 'message.status', 'message.echo'],
		});
		for (const event of [inboundEnvelope(), statusEnvelope(), echoEnvelope()]) {
			const answer = await harness.receive(signedRequest(event, secret));
			expect(answer.workflowData).toEqual([[{ json: asEmitted(event) }]]);
		}
	});

	it('separate outputs: each event type on its own output, in the order inbound, status, echo', async () => {
		const { harness, secret } = await activeTrigger({
			events: ['message.echo', 'message.status', 'message.inbound'],
			separateOutputs: true,
		});
		const inbound = inboundEnvelope();
		const status = statusEnvelope();
		const echo = echoEnvelope();
		expect((await harness.receive(signedRequest(inbound, secret))).workflowData).toEqual([
			[{ json: asEmitted(inbound) }],
			[],
			[],
		]);
		expect((await harness.receive(signedRequest(status, secret))).workflowData).toEqual([
			[],
			[{ json: status }],
			[],
		]);
		expect((await harness.receive(signedRequest(echo, secret))).workflowData).toEqual([
			[],
			[],
			[{ json: echo }],
		]);
	});

	it('separate outputs with two events: two outputs', async () => {
		const { harness, secret } = await activeTrigger({
			events: ['message.echo', 'message.status'],
			separateOutputs: true,
		});
		const echo = echoEnvelope();
		expect((await harness.receive(signedRequest(echo, secret))).workflowData).toEqual([
			[],
			[{ json: echo }],
		]);
	});

	it('receiving numbers: inbound and echo of other numbers are ignored; status events pass', async () => {
		const { harness, secret } = await activeTrigger({
			events: ['message.inbound', 'message.status', 'message.echo'],
			options: { numbers: '111, 222' },
		});
		expect(
			(await harness.receive(signedRequest(inboundEnvelope({ number: '222' }), secret)))
				.workflowData,
		).toHaveLength(1);
		const other = await harness.receive(signedRequest(inboundEnvelope({ number: '333' }), secret));
		expect(other.status).toBe(200);
		expect(other.body).toEqual({
			received: true,
			ignored: 'number 333 is not among the receiving numbers',
		});
		expectNoExecution(other);
		expectNoExecution(
			await harness.receive(signedRequest(echoEnvelope({ number: '333' }), secret)),
		);
		expect(
			(await harness.receive(signedRequest(statusEnvelope(), secret))).workflowData,
		).toHaveLength(1);
	});

	it('status values: only the listed statuses start the workflow (case-insensitive)', async () => {
		const { harness, secret } = await activeTrigger({
			events: ['message.status'],
			options: { statuses: 'Delivered, failed' },
		});
		expect(
			(await harness.receive(signedRequest(statusEnvelope({ status: 'delivered' }), secret)))
				.workflowData,
		).toHaveLength(1);
		expect(
			(await harness.receive(signedRequest(statusEnvelope({ status: 'failed' }), secret)))
				.workflowData,
		).toHaveLength(1);
		const read = await harness.receive(signedRequest(statusEnvelope({ status: 'read' }), secret));
		expect(read.status).toBe(200);
		expectNoExecution(read);
	});
});
