// One trigger per account (issue 32): a second trigger of this n8n on the same account is refused
// at activation; the event URL takes the service's signed events only, and refuses everything
// else with one generic reason, reading no credential.
import { createHmac } from 'node:crypto';
import { WebhookPathTakenError } from 'n8n-workflow';

import { HarnessCredentialsHelper } from '../../harness/credentials';
import { inboundEnvelope, signedRequest, useSandbox } from '../../support';
import { apiCalls, storedSecret, trigger, useTriggersOfOneN8n } from './helpers';

const sb = useSandbox();
const triggersOfOneN8n = useTriggersOfOneN8n(sb);

afterEach(() => jest.restoreAllMocks());

const NOT_SIGNED = { error: 'unauthorized', reason: 'the request is not signed for this webhook' };

describe('one trigger per account in one n8n', () => {
	it('a second trigger on the same account is refused at activation, naming the ways that work; the first keeps the webhook', async () => {
		const { harnesses } = await triggersOfOneN8n({}, {});
		const [first, second] = harnesses;
		await first.activate();
		const registrations = () => apiCalls(sb, 'POST', '/v1/console/webhook');
		expect(registrations()).toBe(1);

		const refusal = await second.activate().then(
			() => undefined,
			(error: Error) => error,
		);
		expect(refusal?.message).toMatch(/one trigger per account/);
		expect(refusal?.message).toMatch(/Execute Workflow/);
		expect(refusal?.message).toMatch(/Polling Trigger/);
		expect(refusal?.message).toContain(first.webhookUrl);
		expect(refusal).toBeInstanceOf(WebhookPathTakenError);
		expect(sb.state().webhook.url).toBe(first.webhookUrl);
		expect(registrations()).toBe(1);
		expect(apiCalls(sb, 'DELETE', '/v1/console/webhook')).toBe(0);

		// The first still receives: nothing about it changed.
		const secret = storedSecret(first.staticData, sb.keys.all) as string;
		expect((await first.receive(signedRequest(inboundEnvelope(), secret))).status).toBe(200);
	});

	it('a trigger without a webhook ID (imported through the REST API) is refused with what to do', async () => {
		const harness = await trigger(sb, {}, { webhookId: '' });
		const refusal = await harness.activate().then(
			() => undefined,
			(error: Error) => error,
		);
		expect(refusal?.message).toMatch(/no webhook ID/);
		// Final: n8n 2.x retries any other activation error 5 times (about 17 s) before showing it.
		expect(refusal).toBeInstanceOf(WebhookPathTakenError);
		expect(sb.state().webhook.url ?? null).toBeNull();
	});
});

describe('the public URL takes only what the service signed', () => {
	const OLD_INTERNAL_HEADERS = [
		'x-business-messaging-join',
		'x-business-messaging-claim',
		'x-business-messaging-handoff',
		'x-business-messaging-forward',
	];

	it.each(OLD_INTERNAL_HEADERS)(
		'a request with %s (signed with a key derived from the API key) is refused 401, generic, with no credential read and no execution',
		async (header) => {
			const harness = await trigger(sb, { catchUp: false });
			await harness.activate();
			const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
			const rawBody = Buffer.from(JSON.stringify(inboundEnvelope()));
			const derived = createHmac('sha256', sb.keys.all)
				.update('business-messaging forward v1')
				.digest('hex');
			const answer = await harness.receive({
				headers: {
					'content-type': 'application/json',
					[header]: `sha256=${createHmac('sha256', derived).update(rawBody).digest('hex')}`,
					'x-business-messaging-delivery': 'replayed-1',
				},
				rawBody,
			});
			expect(answer.status).toBe(401);
			expect(answer.body).toEqual(NOT_SIGNED);
			expect(answer.workflowData).toBeUndefined();
			expect(reads).not.toHaveBeenCalled();
		},
	);

	it('an unsigned or malformed signature costs no credential read', async () => {
		const harness = await trigger(sb, { catchUp: false });
		await harness.activate();
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		for (const signature of [undefined, 'sha256=00', 'md5=abc', '']) {
			const answer = await harness.receive({
				headers: {
					'content-type': 'application/json',
					...(signature !== undefined && { 'x-service-signature': signature }),
				},
				rawBody: JSON.stringify(inboundEnvelope()),
			});
			expect(answer.status).toBe(401);
			expect(answer.body).toEqual(NOT_SIGNED);
		}
		expect(reads).not.toHaveBeenCalled();
	});

	it.each([
		[
			'Automatic, the API key changed (the stored secret no longer opens)',
			{},
			{ apiKey: 'sk_changed_0123456789' },
		],
		[
			'Manual, the Webhook Signing Secret removed',
			{ registration: 'manual' },
			{ webhookSecret: '' },
		],
	])(
		'%s: 300 forged events cost at most one credential read, each refused 401',
		async (_, parameters, changed) => {
			const harness = await trigger(
				sb,
				{ catchUp: false, ...parameters },
				{ credentialExtra: { webhookSecret: `whsec_${'ab'.repeat(32)}` } },
			);
			await harness.activate();
			const original = HarnessCredentialsHelper.prototype.getDecrypted;
			const reads = jest
				.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted')
				.mockImplementation(async function (this: HarnessCredentialsHelper, ...args) {
					return { ...(await original.apply(this, args)), ...changed };
				});
			for (let i = 0; i < 300; i++) {
				const forged = signedRequest(inboundEnvelope({ text: `f${i}` }), `whsec_forged${i}`);
				const answer = await harness.receive(forged);
				expect([answer.status, answer.body, answer.workflowData]).toEqual([
					401,
					NOT_SIGNED,
					undefined,
				]);
			}
			expect(reads.mock.calls.length).toBeLessThanOrEqual(1);
		},
	);

	it('a credential that cannot be read is read once, not per request; every event is refused (fail closed)', async () => {
		const harness = await trigger(sb, { catchUp: false });
		await harness.activate();
		const secret = storedSecret(harness.staticData, sb.keys.all) as string;
		const reads = jest
			.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted')
			.mockRejectedValue(new Error('the encryption key changed'));
		for (let i = 0; i < 30; i++) {
			const answer = await harness.receive(signedRequest(inboundEnvelope(), secret));
			expect(answer.status).toBe(401);
			expect(answer.body).toEqual(NOT_SIGNED);
			expect(answer.workflowData).toBeUndefined();
		}
		expect(reads).toHaveBeenCalledTimes(1);
	});
});
