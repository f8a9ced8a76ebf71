// The API key and the signing secret never appear where a user, a log reader or n8n's database
// could see them: node output, error messages and descriptions (also under Continue On Fail and on
// 401/403/5xx/connection failures), the harness's runData (what n8n stores as execution data), the
// trigger's HTTP answers, n8n's logger, the node and credential descriptions; and the media host
// never sees an Authorization header (or the key anywhere in its requests).
//
// The search walks every reachable value (own properties of errors included, enumerable or not),
// for the whole key and secret and for their random parts alone.
// n8n's stored execution data in a real n8n: test/hardening/real-n8n/run.ts (npm run test:load).
import { Logger } from '@n8n/backend-common';
import type { IExecuteFunctions, INodeParameters } from 'n8n-workflow';
import { LoggerProxy } from 'n8n-workflow';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { BusinessMessagingApi } from '../../credentials/BusinessMessagingApi.credentials';
import { BusinessMessaging } from '../../nodes/BusinessMessaging/BusinessMessaging.node';
import { BusinessMessagingTrigger } from '../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node';
import {
	runNode,
	testCredential,
	webhookHarness,
	type WebhookHarness,
	type WorkflowRunResult,
} from '../harness';
import { createKey, inbound, injectFault, type Sandbox } from '../nodes/businessMessaging/helpers';
import { startSandbox } from '../sandbox';
import {
	ACTION_TYPE,
	CREDENTIAL_TYPE,
	inboundEnvelope,
	signBody,
	signedRequest,
	TRIGGER_TYPE,
	WRONG_SECRET,
} from '../support';
import { OPERATIONS, PNG_1PX } from './helpers';

// The retries' waits (0.5 s, 1 s, 2 s) are not what this file tests: they are skipped here.
jest.mock('n8n-workflow', () => ({
	...jest.requireActual('n8n-workflow'),
	sleep: async () => undefined,
}));

/** What a user would paste into the credential for a console-registered webhook (Manual mode). */
const CREDENTIAL_SECRET = `whsec_${'c0ffee'.repeat(10)}abcd`;

let sandbox: Sandbox;
/** Every key value and signing secret in play; none may show up anywhere checked. */
const secrets = new Set<string>();
const logLines: string[] = [];

function remember(...values: Array<string | null | undefined>) {
	for (const value of values) if (value) secrets.add(value);
}

/** The whole value and its random part (after sk_live_ / whsec_): a leak of either counts. */
function needles(): string[] {
	const out = new Set<string>();
	for (const value of secrets) {
		out.add(value);
		const tail = value.replace(/^(sk_live_|whsec_)/, '');
		if (tail.length >= 16) out.add(tail);
	}
	return [...out];
}

/** Every string reachable from a value: object and error properties (non-enumerable too), arrays, Buffers. */
function reachableText(value: unknown, seen = new Set<unknown>(), out: string[] = []): string[] {
	if (value === null || value === undefined) return out;
	if (typeof value === 'string') {
		out.push(value);
		return out;
	}
	if (typeof value !== 'object' && typeof value !== 'function') {
		out.push(String(value));
		return out;
	}
	if (seen.has(value)) return out;
	seen.add(value);
	if (Buffer.isBuffer(value)) {
		out.push(value.toString('utf8'));
		return out;
	}
	if (value instanceof Map) {
		for (const [k, v] of value) reachableText([k, v], seen, out);
		return out;
	}
	if (typeof value === 'function') return out;
	for (const name of Object.getOwnPropertyNames(value)) {
		let entry: unknown;
		try {
			entry = (value as Record<string, unknown>)[name];
		} catch {
			continue;
		}
		out.push(name);
		reachableText(entry, seen, out);
	}
	return out;
}

function expectNoSecret(label: string, value: unknown) {
	const text = reachableText(value).join('\n');
	for (const needle of needles()) {
		if (text.includes(needle)) {
			const at = text.indexOf(needle);
			throw new Error(
				`${label}: found a secret (${needle.slice(0, 12)}…) in: …${text.slice(Math.max(0, at - 200), at + 80)}…`,
			);
		}
	}
}

function expectRunClean(label: string, result: WorkflowRunResult) {
	expectNoSecret(`${label}: runData`, result.runData);
	expectNoSecret(`${label}: workflow error`, result.error);
	expectNoSecret(`${label}: whole execution`, result.execution);
}

function expectMediaHostNeverSawTheKey(label: string) {
	const requests = sandbox.state().media_requests;
	for (const request of requests) {
		expect({ label, authorization: request.headers.authorization }).toEqual({
			label,
			authorization: undefined,
		});
		expect(
			Object.keys(request.headers).filter((name) => /auth|cookie|key|token/i.test(name)),
		).toEqual([]);
	}
	expectNoSecret(`${label}: media host requests`, requests);
}

beforeAll(async () => {
	sandbox = await startSandbox({ port: 0 });
	remember(...Object.values(sandbox.keys), CREDENTIAL_SECRET);
	// n8n's logger, as nodes and n8n-core use it: every line and its metadata is kept.
	for (const level of ['error', 'warn', 'info', 'debug'] as const) {
		const original = Logger.prototype[level];
		jest.spyOn(Logger.prototype, level).mockImplementation(function (
			this: Logger,
			message: string,
			meta?: object,
		) {
			logLines.push(`${level} ${message} ${reachableText(meta).join(' ')}`);
			return original.call(this, message, meta as never);
		});
		jest.spyOn(LoggerProxy, level).mockImplementation((message: string, meta?: object) => {
			logLines.push(`${level} ${message} ${reachableText(meta).join(' ')}`);
		});
	}
});
afterAll(async () => {
	await sandbox.close();
	jest.restoreAllMocks();
});

afterAll(() => {
	// Checked last, over everything logged by every test of this file.
	expect(logLines.length).toBeGreaterThan(0);
	expectNoSecret("n8n's logger", logLines);
});

async function registerWebhook(url = 'https://hooks.example.com/in'): Promise<string> {
	const response = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
		method: 'POST',
		headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
		body: JSON.stringify({ url }),
	});
	const { secret } = (await response.json()) as { secret: string };
	remember(secret);
	return secret;
}

function credentials(apiKey: string, extra: Record<string, unknown> = {}) {
	remember(apiKey);
	return {
		[CREDENTIAL_TYPE]: {
			apiKey,
			baseUrl: sandbox.baseUrl,
			webhookSecret: CREDENTIAL_SECRET,
			...extra,
		},
	};
}

/**
 * The node as n8n loads it, except that the error execute() throws is kept as thrown: n8n stores
 * only its toJSON() in runData (no `cause`), but the object itself reaches n8n's error reporting
 * and logs, so it must be clean too (a cause holding the HTTP request would hold the key).
 */
const thrownErrors: unknown[] = [];
class RecordingBusinessMessaging extends BusinessMessaging {
	async execute(this: IExecuteFunctions) {
		try {
			return await BusinessMessaging.prototype.execute.call(this);
		} catch (error) {
			thrownErrors.push(error);
			throw error;
		}
	}
}

async function runOp(
	parameters: INodeParameters,
	apiKey: string,
	options: { inputItems?: never[] | unknown[]; continueOnFail?: boolean; baseUrl?: string } = {},
) {
	thrownErrors.length = 0;
	const result = await runNode({
		type: ACTION_TYPE,
		parameters,
		credentials: credentials(
			apiKey,
			options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {},
		),
		inputItems: options.inputItems as never,
		nodeSettings: options.continueOnFail ? { continueOnFail: true } : undefined,
		nodeTypes: { [ACTION_TYPE]: new RecordingBusinessMessaging() },
	});
	expectNoSecret('the error as thrown (with its cause)', thrownErrors);
	return result;
}

describe('action node: every operation, success and failure, with and without Continue On Fail', () => {
	beforeEach(async () => {
		sandbox.reset();
		// A registered webhook, so the account has a live signing secret to leak.
		await registerWebhook();
	});

	it.each(OPERATIONS.map((op) => [op.label, op] as const))('%s: success', async (label, op) => {
		const prepared = await op.prepare(sandbox);
		const result = await runOp(prepared.parameters, sandbox.keys.all, {
			inputItems: prepared.inputItems,
		});
		expect(result.error).toBeUndefined();
		op.succeeded(result.output('Business Messaging'));
		expectRunClean(label, result);
		expectMediaHostNeverSawTheKey(label);
	});

	const failures: Array<[string, (op: (typeof OPERATIONS)[number]) => Promise<string>]> = [
		['401 (revoked key)', async () => sandbox.keys.revoked],
		[
			'403 (key without the scope)',
			async (op) => {
				if (op.label === 'Account → Ping') return sandbox.keys.noBalance;
				if (op.label === 'Message → Reply') return sandbox.keys.noSend;
				const key = await createKey(sandbox, ['balance:read']);
				remember(key.value);
				return key.value;
			},
		],
		[
			'500 on every attempt',
			async (op) => {
				await injectFault(sandbox, { kind: 'status_500', count: 4, path_prefix: op.prefix });
				return sandbox.keys.all;
			},
		],
		[
			'connection reset on every attempt',
			async (op) => {
				await injectFault(sandbox, { kind: 'reset', count: 4, path_prefix: op.prefix });
				return sandbox.keys.all;
			},
		],
		[
			'a body that is not JSON',
			async (op) => {
				await injectFault(sandbox, { kind: 'malformed_json', count: 1, path_prefix: op.prefix });
				return sandbox.keys.all;
			},
		],
	];

	describe.each(failures)('%s', (_failure, arrange) => {
		it.each(
			OPERATIONS.flatMap(
				(op) =>
					[
						[op.label, op, false],
						[op.label, op, true],
					] as const,
			),
		)('%s (continueOnFail %s)', async (label, op, continueOnFail) => {
			const prepared = await op.prepare(sandbox);
			const key = await arrange(op);
			const result = await runOp(prepared.parameters, key, {
				inputItems: prepared.inputItems,
				continueOnFail,
			});
			const items = result.output('Business Messaging');
			const error = result.nodeError('Business Messaging');
			if (continueOnFail) {
				// Console endpoints need no scope: a 403 key still reads them.
				if (items[0]?.json.error === undefined) expect(_failure).toMatch(/403/);
				else expect(typeof items[0].json.error).toBe('string');
			} else if (!error) {
				expect(_failure).toMatch(/403/);
			} else {
				expect(thrownErrors).toHaveLength(1);
				expectNoSecret(`${label}: error message`, error.message);
				expectNoSecret(
					`${label}: error description`,
					(error as { description?: unknown }).description,
				);
			}
			expectRunClean(`${label} ${_failure}`, result);
			expectMediaHostNeverSawTheKey(label);
		});
	});

	it('a malformed key (wrong prefix) or the key pasted into Base URL: refused without echoing it', async () => {
		const wrongPrefix = `sk_test_${'9a'.repeat(24)}`;
		const pastedKey = `sk_live_${'7b'.repeat(24)}`;
		remember(wrongPrefix, pastedKey);
		const first = await runOp({ resource: 'account', operation: 'ping' }, wrongPrefix);
		expect(first.nodeError('Business Messaging')?.message).toMatch(/must start with "sk_live_"/);
		expectRunClean('wrong prefix', first);
		const second = await runOp({ resource: 'account', operation: 'ping' }, sandbox.keys.all, {
			baseUrl: pastedKey,
		});
		expect(second.nodeError('Business Messaging')?.message).toMatch(/^Base URL/);
		expectRunClean('key in Base URL', second);
		// Only beforeEach's registration reached the service: neither run sent anything.
		expect(sandbox.state().requests.map((r) => `${r.method} ${r.path}`)).toEqual([
			'POST /v1/console/webhook',
		]);
	});

	it("the credential's Test button: success and failures say nothing of the key", async () => {
		for (const apiKey of [
			sandbox.keys.all,
			sandbox.keys.revoked,
			sandbox.keys.noBalance,
			`sk_live_${'5d'.repeat(24)}`,
			'not-a-key-1234567890abcdef',
		]) {
			remember(apiKey);
			const result = await testCredential(CREDENTIAL_TYPE, { apiKey, baseUrl: sandbox.baseUrl });
			expectNoSecret(`credential test (${result.status})`, result);
		}
	});

	it('node and credential descriptions carry no key or secret (nor anything shaped like one)', () => {
		for (const [label, description] of [
			['Business Messaging', new BusinessMessaging().description],
			['Business Messaging Trigger', new BusinessMessagingTrigger().description],
			['credential', new BusinessMessagingApi()],
		] as const) {
			expectNoSecret(label, description);
			const text = reachableText(description).join('\n');
			expect({ label, keys: text.match(/sk_live_[0-9a-zA-Z]{8,}/g) }).toEqual({
				label,
				keys: null,
			});
			expect({ label, secrets: text.match(/whsec_[0-9a-zA-Z]{8,}/g) }).toEqual({
				label,
				secrets: null,
			});
		}
	});
});

describe('action node against a service that misbehaves and returns secrets on reads', () => {
	let fake: Server;
	let baseUrl = '';
	const leakedKey = `sk_live_${'e1'.repeat(24)}`;
	const leakedSecret = `whsec_${'d2'.repeat(32)}`;
	beforeAll(async () => {
		remember(leakedKey, leakedSecret);
		fake = createServer((req, res) => {
			res.setHeader('content-type', 'application/json');
			if (req.url?.startsWith('/v1/console/webhook')) {
				res.end(
					JSON.stringify({
						url: 'https://x.example/h',
						configured: true,
						secret: leakedSecret,
						signing_secret: leakedSecret,
					}),
				);
			} else if (req.url?.startsWith('/v1/console/keys')) {
				res.end(
					JSON.stringify({
						data: [
							{
								id: 'key_1',
								prefix: 'sk_live_',
								key: leakedKey,
								value: leakedKey,
								allowed_numbers: null,
							},
						],
						has_more: false,
					}),
				);
			} else {
				res.statusCode = 404;
				res.end('{}');
			}
		});
		await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
		baseUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		await new Promise<void>((resolve) => fake.close(() => resolve()));
	});

	it.each([
		['Webhook → Get', { resource: 'webhook', operation: 'get' }],
		['Key → Get Many', { resource: 'key', operation: 'getMany', returnAll: true }],
	])('%s drops secret-looking fields and key values from its output', async (label, parameters) => {
		const result = await runOp(parameters as INodeParameters, sandbox.keys.all, { baseUrl });
		expect(result.error).toBeUndefined();
		expect(result.output('Business Messaging').length).toBeGreaterThan(0);
		expectRunClean(label, result);
	});
});

describe('trigger: registration, receiving, media, failures', () => {
	let harness: WebhookHarness;
	const event = () =>
		inboundEnvelope({ number: sandbox.numbers[0].phone_number_id, wa_message_id: 'wamid.abc' });

	async function activeTrigger(parameters: INodeParameters = {}, apiKey = sandbox.keys.all) {
		sandbox.reset();
		const made = await webhookHarness({
			type: TRIGGER_TYPE,
			parameters,
			credentials: credentials(apiKey),
		});
		await made.activate();
		remember(sandbox.state().webhook.secret);
		// Stored sealed: the static data never holds the secret itself (security item 4).
		expect(JSON.stringify(made.staticData)).not.toContain(
			String(sandbox.state().webhook.secret).slice('whsec_'.length),
		);
		return made;
	}

	it('Automatic: genuine and tampered events, answers and outputs carry neither key nor secret', async () => {
		harness = await activeTrigger();
		const secret = sandbox.state().webhook.secret as string;
		expect(secret).toMatch(/^whsec_/);
		const body = Buffer.from(JSON.stringify(event()));
		const answers = [
			await harness.receive(signedRequest(body, secret)),
			await harness.receive(signedRequest(body, WRONG_SECRET)),
			await harness.receive({ headers: { 'content-type': 'application/json' }, rawBody: body }),
			await harness.receive({
				headers: {
					'content-type': 'application/json',
					'x-service-signature': signBody(body, secret),
				},
				rawBody: Buffer.concat([body, Buffer.from(' ')]),
			}),
		];
		expect(answers.map((a) => a.status)).toEqual([200, 401, 401, 401]);
		for (const [i, answer] of answers.entries()) {
			expectNoSecret(`trigger answer ${i}`, answer);
			// A refusal never shows the signature the body would have needed (no signing oracle).
			expect(JSON.stringify(answer.body)).not.toContain(signBody(body, secret).slice(7));
			expect(JSON.stringify(answer.body)).not.toContain(
				signBody(Buffer.concat([body, Buffer.from(' ')]), secret).slice(7),
			);
		}
		await harness.deactivate();
		expect(harness.staticData.sealedSecret).toBeUndefined();
	});

	it("Manual: the credential's secret verifies, and never shows", async () => {
		harness = await webhookHarness({
			type: TRIGGER_TYPE,
			parameters: { registration: 'manual' },
			credentials: credentials(sandbox.keys.all),
		});
		await harness.activate();
		const body = Buffer.from(JSON.stringify(event()));
		const good = await harness.receive(signedRequest(body, CREDENTIAL_SECRET));
		const bad = await harness.receive(signedRequest(body, 'nope'));
		expect([good.status, bad.status]).toEqual([200, 401]);
		expectNoSecret('manual good', good);
		expectNoSecret('manual bad', bad);
		const none = await webhookHarness({
			type: TRIGGER_TYPE,
			parameters: { registration: 'manual' },
			credentials: credentials(sandbox.keys.all, { webhookSecret: '' }),
		});
		const refused = await none.activate().then(
			() => undefined,
			(error: unknown) => error,
		);
		expect((refused as Error).message).toMatch(/no Webhook Signing Secret/);
		expectNoSecret('manual without a secret', refused);
	});

	it('Download Media: the file arrives, the media host never sees the key', async () => {
		sandbox.reset();
		const made = await webhookHarness({
			type: TRIGGER_TYPE,
			parameters: { options: { downloadMedia: true } },
			credentials: credentials(sandbox.keys.all),
		});
		await made.activate();
		const secret = sandbox.state().webhook.secret as string;
		remember(secret);
		const record = await inbound(sandbox, {
			type: 'image',
			text: '',
			media: { mime: 'image/png', data_base64: PNG_1PX },
		});
		const body = Buffer.from(
			JSON.stringify({
				...event(),
				data: {
					...event().data,
					type: 'image',
					text: '',
					media_id: record.media_id,
					media_url: record.media_url,
				},
			}),
		);
		const answer = await made.receive(signedRequest(body, secret));
		expect(answer.status).toBe(200);
		// Downloaded in the execution n8n stored (the trigger's execute()), not in webhook().
		const ran = await made.execute(answer.workflowData ?? []);
		const item = ran[0][0];
		expect(item?.json.media_download).toMatchObject({ downloaded: true });
		expect(sandbox.state().media_requests.length).toBeGreaterThan(0);
		expectNoSecret('trigger with media', answer);
		expectNoSecret('trigger with media, its execution', ran);
		expectMediaHostNeverSawTheKey('trigger Download Media');
	});

	it('activation failures (revoked key, another webhook registered) say nothing of the key or the secret', async () => {
		sandbox.reset();
		const revoked = await webhookHarness({
			type: TRIGGER_TYPE,
			parameters: {},
			credentials: credentials(sandbox.keys.revoked),
		});
		const first = await revoked.activate().then(
			() => undefined,
			(error: unknown) => error,
		);
		expect((first as Error).message).toMatch(/revoked or unknown/);
		expectNoSecret('activation with a revoked key', first);

		await registerWebhook('https://crm.example.org/hooks');
		const blocked = await webhookHarness({
			type: TRIGGER_TYPE,
			parameters: {},
			credentials: credentials(sandbox.keys.all),
		});
		const second = await blocked.activate().then(
			() => undefined,
			(error: unknown) => error,
		);
		expect((second as Error).message).toMatch(/Another webhook is registered/);
		expectNoSecret('activation with a foreign webhook', second);
	});
});
