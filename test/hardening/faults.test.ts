// Injected faults (sandbox POST /_sandbox/faults) against every operation of the Business
// Messaging node, the trigger's registration, and webhook receivers that hang.
//
// What must hold, per fault kind, counted from the requests the sandbox logged (state().requests):
// - reads (GET): at most 1 + 3 attempts; 3 transient faults in a row are survived, a 4th is not,
//   with the backoff (0.5 s, 1 s, 2 s) or the Retry-After between attempts;
// - a reply (POST): exactly one request, whatever the fault, and never a second message;
// - every failure names the operation and says what happened (status, body, wait, not resent);
// - a webhook receiver that hangs is given up after the sandbox's timeout (8 s by default), with
//   one attempt, logged under `webhook` with success:false and the reason.
//
// Tests run concurrently, each with its own sandbox, so the retries' waits overlap.
import type { IDataObject } from 'n8n-workflow';

import { webhookHarness } from '../harness';
import {
	apiRequests,
	errorOf,
	injectFault,
	run,
	type Sandbox,
} from '../nodes/businessMessaging/helpers';
import { startSandbox, type FaultKind } from '../sandbox';
import { CONTACT, CREDENTIAL_TYPE, startReceiver, TRIGGER_TYPE } from '../support';
import { OPERATIONS, READS, REPLY, atMs, type Operation, type Prepared } from './helpers';
import { storedSecret } from '../nodes/businessMessagingTrigger/helpers';

/** Faults survived / attempts counted, printed at the end (README → Reliability). */
const figures: Record<string, { survived: number; exhausted: number; attempts: number }> = {};
function count(kind: string, field: 'survived' | 'exhausted' | 'attempts', n: number) {
	figures[kind] ??= { survived: 0, exhausted: 0, attempts: 0 };
	figures[kind][field] += n;
}
afterAll(() => {
	process.stdout.write(`[hardening] faults: ${JSON.stringify(figures)}\n`);
});

async function withSandbox<T>(body: (sandbox: Sandbox) => Promise<T>, options = {}): Promise<T> {
	const sandbox = await startSandbox({ port: 0, ...options });
	try {
		return await body(sandbox);
	} finally {
		await sandbox.close();
	}
}

/**
 * Prepares every operation first (preparing may itself call the API, e.g. a reply for Get
 * Status), then puts `faults` faults of `kind` on each one's path, then runs them all at once.
 * The requests returned are those each operation made, counted from the sandbox's log.
 */
async function runUnderFault(
	sandbox: Sandbox,
	ops: Operation[],
	kind: FaultKind,
	faults: number,
	extra: IDataObject = {},
) {
	const prepared: Prepared[] = [];
	for (const op of ops) prepared.push(await op.prepare(sandbox));
	for (const op of ops)
		await injectFault(sandbox, { kind, count: faults, path_prefix: op.prefix, ...extra });
	const before = sandbox.state().requests.length;
	return await Promise.all(
		ops.map(async (op, i) => {
			const started = Date.now();
			const result = await run(sandbox, prepared[i].parameters, {
				inputItems: prepared[i].inputItems,
			});
			const ms = Date.now() - started;
			const requests = sandbox
				.state()
				.requests.slice(before)
				.filter((r) => r.path.startsWith(op.prefix));
			return { result, ms, requests };
		}),
	);
}

const TRANSIENT: Array<{ kind: FaultKind; extra: IDataObject; gapsMs: number[] }> = [
	{ kind: 'status_500', extra: {}, gapsMs: [500, 1000, 2000] },
	{ kind: 'reset', extra: {}, gapsMs: [500, 1000, 2000] },
	{ kind: 'status_429', extra: { retry_after_seconds: 1 }, gapsMs: [1000, 1000, 1000] },
];

describe('reads (GET): bounded retries, at most 1 + 3 attempts', () => {
	it.concurrent.each(TRANSIENT)(
		'$kind: 3 in a row are survived by every read, with the backoff between attempts',
		async ({ kind, extra, gapsMs }) => {
			await withSandbox(async (sandbox) => {
				// Each read has its own path prefix, so all run at once on one sandbox.
				const outcomes = await runUnderFault(sandbox, READS, kind, 3, extra);
				outcomes.forEach(({ result, requests }, i) => {
					const op = READS[i];
					expect({ op: op.label, error: result.error?.message }).toEqual({
						op: op.label,
						error: undefined,
					});
					op.succeeded(result.items);
					expect(requests.map((r) => r.fault)).toEqual([kind, kind, kind, null]);
					const gaps = requests.slice(1).map((r, j) => atMs(r.at) - atMs(requests[j].at));
					gaps.forEach((gap, j) => expect(gap).toBeGreaterThanOrEqual(gapsMs[j] - 5));
					count(kind, 'survived', 3);
					count(kind, 'attempts', requests.length);
				});
			});
		},
	);

	it.concurrent.each(TRANSIENT)(
		'$kind: a 4th fault is not retried; the error says what happened',
		async ({ kind, extra }) => {
			await withSandbox(async (sandbox) => {
				const outcomes = await runUnderFault(sandbox, READS, kind, 50, extra);
				outcomes.forEach(({ result, requests }, i) => {
					const op = READS[i];
					expect(requests).toHaveLength(4);
					expect(requests.every((r) => r.fault === kind)).toBe(true);
					const error = errorOf(result);
					const operation = op.label;
					if (kind === 'reset') {
						expect(error.message).toBe(
							`${operation}: could not reach the service (ECONNRESET). Check the credential's Base URL and that n8n can reach the service, then run it again`,
						);
						expect(error.description).toMatch(
							/connection failed \(ECONNRESET\).*Tried 4 time\(s\)/,
						);
					} else if (kind === 'status_429') {
						expect(error.message).toMatch(
							new RegExp(
								`^${operation}: the service is limiting requests \\(429\\)\\. Wait 1 s and run it again, or space out the calls\\. The service said: ".+"$`,
							),
						);
						expect(error.description).toMatch(/retried up to 3 times/);
						expect(error.description).toContain('rate_limited');
					} else {
						expect(error.message).toMatch(
							`${operation} failed (500): the service had an error. Run it again later`,
						);
						expect(error.description).toContain('"code":"internal_error"');
					}
					count(kind, 'exhausted', 1);
					count(kind, 'attempts', requests.length);
				});
				// The faults not consumed are still waiting: nothing beyond the 4 attempts was sent.
				expect(sandbox.state().faults.map((f) => f.remaining)).toEqual(READS.map(() => 46));
			});
		},
	);

	it.concurrent(
		'429: the wait between attempts is at least the Retry-After the service asked for',
		async () => {
			await withSandbox(async (sandbox) => {
				const [{ result, requests }] = await runUnderFault(sandbox, [READS[0]], 'status_429', 1, {
					retry_after_seconds: 2,
				});
				expect(result.error).toBeUndefined();
				expect(requests).toHaveLength(2);
				expect(atMs(requests[1].at) - atMs(requests[0].at)).toBeGreaterThanOrEqual(2000 - 5);
				count('status_429', 'survived', 1);
			});
		},
	);

	it.concurrent(
		'429 asking for more than 30 s: not waited for, one attempt, the wait is in the message',
		async () => {
			await withSandbox(async (sandbox) => {
				const outcomes = await runUnderFault(sandbox, READS, 'status_429', 1, {
					retry_after_seconds: 120,
				});
				outcomes.forEach(({ result, requests, ms }, i) => {
					expect(requests).toHaveLength(1);
					expect(ms).toBeLessThan(5000);
					expect(errorOf(result).message).toContain(
						`${READS[i].label}: the service is limiting requests (429). Wait 120 s and run it again`,
					);
				});
			});
		},
	);

	it.concurrent(
		'malformed JSON: one attempt, the error names the operation and shows the body as it came',
		async () => {
			await withSandbox(async (sandbox) => {
				const outcomes = await runUnderFault(sandbox, READS, 'malformed_json', 1);
				outcomes.forEach(({ result, requests }, i) => {
					const op = READS[i];
					expect(requests).toHaveLength(1);
					const error = errorOf(result);
					if (op.label === 'Media → Download') {
						// The media endpoint must redirect: a 200 of any body is refused, with the body.
						expect(error.message).toBe(
							"Media → Download: expected a redirect to the media file, got 200. Check that the credential's Base URL is the service's address; if it is, report this to its support",
						);
					} else {
						expect(error.message).toBe(
							`${op.label}: the service answered 200 with a body that is not JSON. Check the credential's Base URL: it should be the service's address (without /v1), not a web page`,
						);
					}
					expect(error.description).toContain('{"ok": true, "data": [');
					count('malformed_json', 'attempts', 1);
				});
			});
		},
	);

	it.concurrent('delay shorter than the request timeout: one attempt, success', async () => {
		await withSandbox(async (sandbox) => {
			const outcomes = await runUnderFault(sandbox, READS, 'delay', 1, { delay_ms: 1500 });
			outcomes.forEach(({ result, requests, ms }, i) => {
				expect(result.error).toBeUndefined();
				READS[i].succeeded(result.items);
				expect(requests.map((r) => r.fault)).toEqual(['delay']);
				expect(ms).toBeGreaterThanOrEqual(1500);
				count('delay', 'survived', 1);
				count('delay', 'attempts', 1);
			});
		});
	});
});

describe('a reply (POST) is sent exactly once, whatever the fault', () => {
	const cases: Array<{
		kind: FaultKind;
		extra?: IDataObject;
		sent: boolean;
		message: RegExp;
		description: RegExp;
	}> = [
		{
			kind: 'status_500',
			sent: false,
			message:
				/^Message → Reply failed \(500\): the service had an error and the reply was not sent again\. It may have gone out: check Log → Get Many \(category Sends\) before sending it again\. The service said: ".+"$/,
			description: /may or may not have sent the reply.*Log → Get Many.*internal_error/,
		},
		{
			kind: 'status_429',
			extra: { retry_after_seconds: 5 },
			sent: false,
			message:
				/^Message → Reply: the service is limiting requests \(429\) and the reply was not sent again\. Wait 5 s, then send it again\. The service said: ".+"$/,
			description: /never retried.*can be sent again once the wait is over.*rate_limited/,
		},
		{
			kind: 'reset',
			sent: false,
			message:
				/^Message → Reply: could not reach the service \(ECONNRESET\)\. It was not sent again, because the service may already have acted on it: check Log → Get Many \(category Sends\) before sending it again$/,
			description: /ECONNRESET.*not sent again, because the service may already have acted on it/,
		},
		{
			kind: 'malformed_json',
			sent: false,
			message:
				/^Message → Reply: the service answered 200 with a body that is not JSON\. It was probably carried out and was not sent again: check before repeating it$/,
			description: /probably carried out.*not sent again.*\{"ok": true, "data": \[/,
		},
	];

	it.concurrent.each(cases)(
		'$kind: one request, no retry, a clear error',
		async ({ kind, extra, sent, message, description }) => {
			await withSandbox(async (sandbox) => {
				// Several faults are waiting: a retry would meet the next one and show up as a second request.
				const [{ result, requests }] = await runUnderFault(sandbox, [REPLY], kind, 5, extra);
				expect(requests).toHaveLength(1);
				expect(sandbox.state().messages).toHaveLength(sent ? 1 : 0);
				const error = errorOf(result);
				expect(error.message).toMatch(message);
				expect(error.description).toMatch(description);
				count(kind, 'attempts', 1);
			});
		},
	);

	it.concurrent(
		'delay shorter than the request timeout: exactly one reply, sent once',
		async () => {
			await withSandbox(async (sandbox) => {
				const [{ result, requests, ms }] = await runUnderFault(sandbox, [REPLY], 'delay', 1, {
					delay_ms: 2500,
				});
				expect(result.error).toBeUndefined();
				REPLY.succeeded(result.items);
				expect(ms).toBeGreaterThanOrEqual(2500);
				expect(requests).toHaveLength(1);
				expect(sandbox.state().messages).toHaveLength(1);
				count('delay', 'survived', 1);
			});
		},
	);

	it.concurrent(
		'ten items under a mix of faults: each reply at most once, the good ones sent, continueOnFail',
		async () => {
			await withSandbox(async (sandbox) => {
				const prepared = await REPLY.prepare(sandbox);
				const kinds: FaultKind[] = ['status_500', 'reset', 'status_429', 'malformed_json', 'delay'];
				for (const kind of kinds)
					await injectFault(sandbox, { kind, count: 1, path_prefix: REPLY.prefix, delay_ms: 300 });
				const items = Array.from({ length: 10 }, (_, i) => ({
					json: { ...(prepared.inputItems?.[0].json ?? {}), n: i },
				}));
				const result = await run(
					sandbox,
					{ ...prepared.parameters, text: '={{ "reply " + $json.n }}' },
					{
						inputItems: items,
						continueOnFail: true,
					},
				);
				expect(result.error).toBeUndefined();
				expect(apiRequests(sandbox, REPLY.prefix)).toHaveLength(10);
				const texts = sandbox.state().messages.map((m) => m.text);
				// Items 0–3 met the four failing faults, item 4 the delay, 5–9 nothing.
				expect(texts).toEqual(['reply 4', 'reply 5', 'reply 6', 'reply 7', 'reply 8', 'reply 9']);
				expect(new Set(texts).size).toBe(texts.length);
				expect(result.items.slice(0, 4).map((item) => typeof item.json.error)).toEqual([
					'string',
					'string',
					'string',
					'string',
				]);
			});
		},
	);
});

describe('every operation: a fault never produces a duplicate request beyond the bounds', () => {
	it.concurrent(
		'all kinds at once, one fault each: reads take at most 2 requests, the reply 1',
		async () => {
			await withSandbox(async (sandbox) => {
				for (const kind of ['status_500', 'reset', 'status_429', 'delay'] as FaultKind[]) {
					sandbox.reset();
					const outcomes = await runUnderFault(sandbox, OPERATIONS, kind, 1, {
						retry_after_seconds: 0,
						delay_ms: 200,
					});
					outcomes.forEach(({ requests }, i) => {
						const op = OPERATIONS[i];
						const expected = op.method === 'POST' || kind === 'delay' ? 1 : 2;
						expect({ op: op.label, kind, requests: requests.length }).toEqual({
							op: op.label,
							kind,
							requests: expected,
						});
					});
				}
			});
		},
	);
});

describe('trigger registration under faults', () => {
	async function activeTrigger(sandbox: Sandbox) {
		return await webhookHarness({
			type: TRIGGER_TYPE,
			parameters: {},
			credentials: { [CREDENTIAL_TYPE]: { apiKey: sandbox.keys.all, baseUrl: sandbox.baseUrl } },
		});
	}

	it.concurrent(
		'GET of the webhook is retried (3 × 500), the registration POST is sent once',
		async () => {
			await withSandbox(async (sandbox) => {
				const harness = await activeTrigger(sandbox);
				await injectFault(sandbox, {
					kind: 'status_500',
					count: 3,
					path_prefix: '/v1/console/webhook',
				});
				await harness.activate();
				const calls = sandbox.state().requests.map((r) => `${r.method} ${r.fault ?? r.status}`);
				expect(calls).toEqual([
					'GET status_500',
					'GET status_500',
					'GET status_500',
					'GET 200',
					'GET 200',
					'POST 201',
				]);
				expect(storedSecret(harness.staticData, sandbox.keys.all)).toBe(
					sandbox.state().webhook.secret,
				);
			});
		},
	);

	it.concurrent.each(['reset', 'status_500', 'status_429'] as FaultKind[])(
		'%s on the registration POST: one POST, activation fails with a clear message',
		async (kind) => {
			await withSandbox(async (sandbox) => {
				const harness = await activeTrigger(sandbox);
				// Only the POST is faulted: the sandbox applies faults to every method of the path,
				// so let the two GETs through first.
				const original = harness.activate.bind(harness);
				const prefix = '/v1/console/webhook';
				await injectFault(sandbox, { kind: 'delay', count: 2, delay_ms: 0, path_prefix: prefix });
				await injectFault(sandbox, { kind, count: 5, path_prefix: prefix, retry_after_seconds: 1 });
				await expect(original()).rejects.toThrow(
					kind === 'reset'
						? 'Trigger → Register Webhook: could not reach the service'
						: kind === 'status_429'
							? 'Trigger → Register Webhook: the service is limiting requests (429). Wait 1 s and run it again'
							: 'Trigger → Register Webhook failed (500)',
				);
				const posts = sandbox.state().requests.filter((r) => r.method === 'POST');
				expect(posts).toHaveLength(1);
				expect(harness.staticData.sealedSecret).toBeUndefined();
			});
		},
	);
});

describe('webhook receivers that hang: one attempt, given up at the timeout, logged with the reason', () => {
	it.concurrent(
		'a receiver that never answers, the real 8 s timeout: the node reads success:false and the reason',
		async () => {
			const receiver = await startReceiver({ kind: 'hang' });
			try {
				await withSandbox(async (sandbox) => {
					await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
						method: 'POST',
						headers: {
							authorization: `Bearer ${sandbox.keys.all}`,
							'content-type': 'application/json',
						},
						body: JSON.stringify({ url: receiver.url }),
					});
					const started = Date.now();
					const control = await fetch(`${sandbox.baseUrl}/_sandbox/inbound`, {
						method: 'POST',
						headers: { 'content-type': 'application/json' },
						body: JSON.stringify({
							from: CONTACT,
							contact_name: 'Ada',
							number: sandbox.numbers[0].phone_number_id,
							text: 'Hi',
						}),
					});
					const elapsed = Date.now() - started;
					const { delivery } = (await control.json()) as { delivery: IDataObject };
					expect(delivery).toMatchObject({
						delivered: false,
						status: null,
						reason: 'timeout after 8000 ms',
					});
					expect(elapsed).toBeGreaterThanOrEqual(8000);
					expect(elapsed).toBeLessThan(9500);
					expect(receiver.hits).toBe(1);

					// The user's view of it: Log → Get Many, category webhook, through the node.
					const result = await run(sandbox, {
						resource: 'log',
						operation: 'getMany',
						category: 'webhook',
						returnAll: true,
						simple: false,
					});
					expect(result.error).toBeUndefined();
					expect(result.items.map((item) => item.json)).toEqual([
						expect.objectContaining({
							category: 'webhook',
							event: 'message.inbound',
							url: receiver.url,
							success: false,
							status_code: null,
							reason: 'timeout after 8000 ms',
						}),
					]);
					count('webhook_hang_8s', 'attempts', receiver.hits);
				});
			} finally {
				await receiver.close();
			}
		},
		20_000,
	);

	it.concurrent.each([
		[
			'headers sent, body never ends',
			{ kind: 'headers-then-hang' as const },
			'timeout after 300 ms',
			false,
		],
		[
			'answers 200 after 100 ms (within the timeout)',
			{ kind: 'slow' as const, ms: 100, status: 200 },
			null,
			true,
		],
		[
			'answers 503 after 100 ms',
			{ kind: 'slow' as const, ms: 100, status: 503 },
			'HTTP 503',
			false,
		],
	])('%s', async (_label, behaviour, reason, delivered) => {
		const receiver = await startReceiver(behaviour);
		try {
			await withSandbox(
				async (sandbox) => {
					await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
						method: 'POST',
						headers: {
							authorization: `Bearer ${sandbox.keys.all}`,
							'content-type': 'application/json',
						},
						body: JSON.stringify({ url: receiver.url }),
					});
					await fetch(`${sandbox.baseUrl}/_sandbox/echo`, {
						method: 'POST',
						headers: { 'content-type': 'application/json' },
						body: JSON.stringify({
							to: CONTACT,
							number: sandbox.numbers[0].phone_number_id,
							text: 'Hi',
						}),
					});
					const [entry] = sandbox.state().logs.filter((log) => log.category === 'webhook');
					expect(entry).toMatchObject({ success: delivered, reason });
					expect(receiver.hits).toBe(1);
				},
				{ webhookTimeoutMs: 300 },
			);
		} finally {
			await receiver.close();
		}
	});
});
