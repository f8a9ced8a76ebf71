// The signature property again, end to end: random genuine and tampered events delivered to the
// Business Messaging Trigger's webhook() through n8n-core's real WebhookContext (the harness),
// and over real HTTP (serveWebhook + undici). A genuine event is answered 200 and becomes exactly
// one item equal to the event; every tampered one is refused (401 from the node, or n8n's own 422
// when the bytes no longer parse as JSON) and starts no execution.
//
// Fewer cases than the pure property (each goes through n8n's webhook machinery); the seed is
// printed once (test/hardening/seed.ts).
import fc from 'fast-check';
import { request } from 'undici';

import { serveWebhook, webhookHarness, type ServedWebhook, type WebhookHarness } from '../harness';
import { CONTACT, CREDENTIAL_TYPE, signBody, TRIGGER_TYPE, useSandbox } from '../support';
import { configureSeed } from './seed';
import { asEmitted, storedSecret } from '../nodes/businessMessagingTrigger/helpers';

const HARNESS_RUNS = 2_000;
const HTTP_RUNS = 500;
configureSeed('receive.property');

const OTHER_SECRET = `whsec_${'a1'.repeat(32)}`;
/** The secret the sandbox issued when the trigger registered (set in beforeAll). */
let SECRET = '';
/** Reset by activeHarness(), before each registration. */
const sandbox = useSandbox({ reset: 'never' });

const timestamp = () => `${new Date().toISOString().slice(0, 23)}123+00:00`;

const eventArb = fc.record({
	event: fc.constant('message.inbound'),
	data: fc.record({
		from: fc.constant(CONTACT),
		contact_name: fc.string({ maxLength: 20 }),
		number: fc.constant('100000000000001'),
		wa_message_id: fc.stringMatching(/^wamid\.[A-Za-z0-9_-]{8,32}$/),
		type: fc.constant('text'),
		text: fc.string({ unit: 'grapheme', maxLength: 200 }),
		media_id: fc.constant(null),
		media_url: fc.constant(null),
	}),
});

type Tamper =
	| { kind: 'none' }
	| { kind: 'flip'; at: number; mask: number }
	| { kind: 'truncate'; at: number }
	| { kind: 'append'; bytes: Uint8Array }
	| { kind: 'respace' }
	| { kind: 'wrong-secret' }
	| { kind: 'header'; value: string | undefined };

/** Header variants that survive real HTTP (node:http trims surrounding whitespace, so none here). */
const tamperArb: fc.Arbitrary<Tamper> = fc.oneof(
	{ weight: 4, arbitrary: fc.constant<Tamper>({ kind: 'none' }) },
	fc.record({
		kind: fc.constant('flip' as const),
		at: fc.nat(),
		mask: fc.integer({ min: 1, max: 255 }),
	}),
	fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
	fc.record({
		kind: fc.constant('append' as const),
		bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
	}),
	fc.constant<Tamper>({ kind: 'respace' }),
	fc.constant<Tamper>({ kind: 'wrong-secret' }),
	fc.record({
		kind: fc.constant('header' as const),
		value: fc.constantFrom(
			undefined,
			'',
			'sha256=',
			`sha256=${'0'.repeat(64)}`,
			'sha1=abc',
			`sha256=${'g'.repeat(64)}`,
		),
	}),
);

function isJson(bytes: Buffer): boolean {
	try {
		JSON.parse(bytes.toString('utf8'));
		return true;
	} catch {
		return false;
	}
}

/**
 * A tampered delivery is refused with no execution: 401 from the node, or, when the bytes are no
 * longer JSON, n8n's own 422 "Failed to parse request body" before the node runs.
 */
function expectRefused(status: number, rawBody: Buffer): void {
	if (status === 422) expect(isJson(rawBody)).toBe(false);
	else expect(status).toBe(401);
}

/** The bytes and signature header to send, and whether the service would have sent exactly these. */
function deliveryFor(
	event: object,
	tamper: Tamper,
): { rawBody: Buffer; signature: string | undefined; genuine: boolean } {
	const body = Buffer.from(JSON.stringify(event), 'utf8');
	const signature = signBody(body, SECRET);
	switch (tamper.kind) {
		case 'none':
			return { rawBody: body, signature, genuine: true };
		case 'flip': {
			const tampered = Buffer.from(body);
			tampered[tamper.at % body.length] ^= tamper.mask;
			return { rawBody: tampered, signature, genuine: false };
		}
		case 'truncate':
			return { rawBody: body.subarray(0, tamper.at % body.length), signature, genuine: false };
		case 'append':
			return {
				rawBody: Buffer.concat([body, Buffer.from(tamper.bytes)]),
				signature,
				genuine: false,
			};
		case 'respace':
			return {
				rawBody: Buffer.from(JSON.stringify(event, null, 1), 'utf8'),
				signature,
				genuine: false,
			};
		case 'wrong-secret':
			return { rawBody: body, signature: signBody(body, OTHER_SECRET), genuine: false };
		case 'header':
			return { rawBody: body, signature: tamper.value, genuine: false };
	}
}

/** A trigger activated against the sandbox (Automatic registration): the sandbox's secret is in its static data. */
async function activeHarness(
	serve = false,
): Promise<{ harness: WebhookHarness; served?: ServedWebhook }> {
	sandbox.reset(); // one webhook per account: each harness registers afresh
	const harness = await webhookHarness({
		type: TRIGGER_TYPE,
		parameters: {},
		credentials: { [CREDENTIAL_TYPE]: { apiKey: sandbox.keys.all, baseUrl: sandbox.baseUrl } },
	});
	const served = serve ? await serveWebhook(harness) : undefined;
	await harness.activate();
	SECRET = storedSecret(harness.staticData, sandbox.keys.all) as string;
	expect(SECRET).toBe(sandbox.state().webhook.secret);
	return { harness, served };
}

describe('trigger webhook(): exactly the genuine events are accepted', () => {
	let harness: WebhookHarness;
	beforeAll(async () => {
		({ harness } = await activeHarness());
	});

	it(`through n8n-core's WebhookContext, ${HARNESS_RUNS} random deliveries`, async () => {
		let genuine = 0;
		let tampered = 0;
		await fc.assert(
			fc.asyncProperty(eventArb, tamperArb, async (fields, tamper) => {
				const event = { ...fields, timestamp: timestamp() };
				const delivery = deliveryFor(event, tamper);
				const headers: Record<string, string> = { 'content-type': 'application/json' };
				if (delivery.signature !== undefined) headers['x-service-signature'] = delivery.signature;
				const answer = await harness.receive({ headers, rawBody: delivery.rawBody });
				if (delivery.genuine) {
					genuine++;
					expect(answer.status).toBe(200);
					// The event as sent, plus reply_window_closes_at for inbound messages.
					expect(answer.workflowData).toEqual([[{ json: asEmitted(event) }]]);
				} else {
					tampered++;
					expectRefused(answer.status, delivery.rawBody);
					expect(answer.workflowData).toBeUndefined();
					expect(JSON.stringify(answer.body)).not.toContain(SECRET);
				}
			}),
			{ numRuns: HARNESS_RUNS },
		);
		expect(genuine + tampered).toBe(HARNESS_RUNS);
		expect(genuine).toBeGreaterThan(0);
		expect(tampered).toBeGreaterThan(0);
	});

	describe('over real HTTP', () => {
		let served: ServedWebhook;
		let httpHarness: WebhookHarness;
		beforeAll(async () => {
			const active = await activeHarness(true);
			httpHarness = active.harness;
			served = active.served as ServedWebhook;
		});
		afterAll(async () => {
			await served?.close();
		});

		it(`${HTTP_RUNS} random deliveries, answered 200 with an execution or 401 without`, async () => {
			const executions: unknown[] = [];
			const original = httpHarness.receive.bind(httpHarness);
			jest.spyOn(httpHarness, 'receive').mockImplementation(async (input) => {
				const answer = await original(input);
				if (answer.workflowData) executions.push(answer.workflowData);
				return answer;
			});
			let expectedExecutions = 0;
			await fc.assert(
				fc.asyncProperty(eventArb, tamperArb, async (fields, tamper) => {
					const event = { ...fields, timestamp: timestamp() };
					const delivery = deliveryFor(event, tamper);
					const before = executions.length;
					const response = await request(served.url, {
						method: 'POST',
						headers: {
							'content-type': 'application/json',
							...(delivery.signature !== undefined
								? { 'x-service-signature': delivery.signature }
								: {}),
						},
						body: delivery.rawBody,
					});
					await response.body.dump();
					if (delivery.genuine) {
						expectedExecutions++;
						expect(response.statusCode).toBe(200);
						expect(executions.length).toBe(before + 1);
					} else {
						expectRefused(response.statusCode, delivery.rawBody);
						expect(executions.length).toBe(before);
					}
				}),
				{ numRuns: HTTP_RUNS },
			);
			expect(executions).toHaveLength(expectedExecutions);
		});
	});
});
