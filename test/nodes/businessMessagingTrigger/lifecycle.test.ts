// Registration lifecycle against the sandbox, through n8n-core's real HookContext.
import { randomUUID } from 'crypto';

import { Logger } from '@n8n/backend-common';
import { WebhookPathTakenError } from 'n8n-workflow';

import type { WebhookHarness } from '../../harness';
import { createKey } from '../businessMessaging/helpers';
import { HarnessCredentialsHelper } from '../../harness/credentials';
import {
	CREDENTIAL_TYPE,
	FOREIGN_URL,
	inboundEnvelope,
	serviceTimestamp,
	signedRequest,
	SIGNING_SECRET,
	useSandbox,
	WRONG_SECRET,
} from '../../support';
import { api, apiCalls, control, registerForeign, trigger, storedSecret } from './helpers';

const WEBHOOK = '/v1/console/webhook';

const foreignRefusal = (url: string) =>
	'Another webhook is registered for this account. To use this trigger, delete it in the console, ' +
	`turn on Take Over Existing Webhook (Options) or set Registration to Manual. Registered: ${url}`;

/** The error activation failed with (message and the description n8n shows under it). */
async function activationError(
	harness: WebhookHarness,
): Promise<{ message: string; description: string; thrown: unknown }> {
	try {
		await harness.activate();
	} catch (error) {
		const { message, description } = error as { message: string; description?: string };
		return { message, description: description ?? '', thrown: error };
	}
	throw new Error('activation succeeded');
}

const sb = useSandbox();

describe('Automatic registration', () => {
	it('fresh account: registers its URL, keeps the secret in static data, deletes on deactivation', async () => {
		const harness = await trigger(sb);
		await harness.activate();

		const { webhook } = sb.state();
		expect(webhook).toMatchObject({ configured: true, url: harness.webhookUrl });
		// The secret is stored sealed under the API key: the static data alone does not give it away.
		expect(harness.staticData).toEqual({
			// When the user activated it: where a restart's catch-up starts if its own state was saved away.
			activatedAtMs: expect.any(Number),
			webhookUrl: harness.webhookUrl,
			// Which workflow registered it (its id): only that workflow deletes it again.
			registeredBy: expect.stringMatching(/\S/),
			sealedSecret: expect.stringMatching(/^v1\./),
		});
		expect(JSON.stringify(harness.staticData)).not.toContain(
			String(webhook.secret).slice('whsec_'.length),
		);
		expect(storedSecret(harness.staticData, sb.keys.all)).toBe(webhook.secret);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);

		await harness.deactivate();
		expect(sb.state().webhook).toMatchObject({ configured: false, url: null });
		expect(harness.staticData).toEqual({});
	});

	it('own URL already registered with its secret (n8n restart): keeps it, registers nothing', async () => {
		const harness = await trigger(sb);
		await harness.activate();
		const secret = storedSecret(harness.staticData, sb.keys.all);

		await harness.activate();
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		expect(storedSecret(harness.staticData, sb.keys.all)).toBe(secret);
		expect(sb.state().webhook.secret).toBe(secret);
	});

	it('own URL registered but the secret is lost: registers again to get a new one', async () => {
		const harness = await trigger(sb);
		await harness.activate();
		const oldSecret = storedSecret(harness.staticData, sb.keys.all);
		delete harness.staticData.sealedSecret;

		await harness.activate();
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2);
		const { webhook } = sb.state();
		expect(webhook.url).toBe(harness.webhookUrl);
		expect(storedSecret(harness.staticData, sb.keys.all)).toBe(webhook.secret);
		expect(storedSecret(harness.staticData, sb.keys.all)).not.toBe(oldSecret);
	});

	it('a stored secret that the API key cannot open (the key was changed) leads to a new registration, with a log line', async () => {
		const webhookId = randomUUID();
		const harness = await trigger(sb, {}, { webhookId });
		await harness.activate();
		const otherKey = (await createKey(sb, ['messages:read'])).value;
		const changed = await trigger(
			sb,
			{},
			{ webhookId, staticData: harness.staticData, credentialExtra: { apiKey: otherKey } },
		);
		const warnings: string[] = [];
		jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: string) => {
			warnings.push(message);
		});
		await changed.activate();
		expect(
			warnings.some((line) => /cannot be opened with the credential's API key/.test(line)),
		).toBe(true);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2);
		expect(storedSecret(changed.staticData, otherKey)).toBe(sb.state().webhook.secret);
		jest.restoreAllMocks();
	});

	it('a secret stored in plain text by an older version is removed and registered again, sealed', async () => {
		const webhookId = randomUUID();
		const first = await trigger(sb, {}, { webhookId });
		await first.activate();
		const legacy = { webhookUrl: first.webhookUrl, secret: sb.state().webhook.secret };
		const harness = await trigger(sb, {}, { webhookId, staticData: legacy });
		await harness.activate();
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2);
		expect(harness.staticData.secret).toBeUndefined();
		expect(storedSecret(harness.staticData, sb.keys.all)).toBe(sb.state().webhook.secret);
	});

	it('a secret stored for another URL does not count as ours: registers again', async () => {
		const webhookId = randomUUID();
		const harness = await trigger(
			sb,
			{},
			{ webhookId, staticData: { webhookUrl: 'https://old.example.com/x', secret: 'whsec_old' } },
		);
		await registerForeign(sb, harness.webhookUrl);
		await harness.activate();
		expect(storedSecret(harness.staticData, sb.keys.all)).toBe(sb.state().webhook.secret);
		expect(storedSecret(harness.staticData, sb.keys.all)).not.toBe('whsec_old');
	});

	it('foreign URL registered: activation fails naming the URL and what to do; nothing changes', async () => {
		const foreignSecret = await registerForeign(sb);
		const harness = await trigger(sb);

		const error = await activationError(harness);
		expect(error.message).toBe(foreignRefusal(FOREIGN_URL));
		// The editor shows only the message: it carries the way out, not only the cause.
		expect(error.message).toMatch(
			/delete it in the console, turn on Take Over Existing Webhook \(Options\) or set Registration to Manual/,
		);
		// A deterministic refusal: n8n 2.x retries other activation errors 5 times (~15 s).
		expect(error.thrown).toBeInstanceOf(WebhookPathTakenError);
		expect(error.description).toMatch(/Take Over Existing Webhook/);
		expect(error.description).toMatch(/console/);

		expect(sb.state().webhook).toEqual({
			configured: true,
			url: FOREIGN_URL,
			secret: foreignSecret,
		});
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1); // only the foreign registration
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0); // n8n's clean-up delete left it alone
		expect(harness.staticData.sealedSecret).toBeUndefined();
	});

	it('foreign URL registered, with "Take Over Existing Webhook": replaces it', async () => {
		await registerForeign(sb);
		const harness = await trigger(sb, { options: { takeOver: true } });
		await harness.activate();
		const { webhook } = sb.state();
		expect(webhook.url).toBe(harness.webhookUrl);
		expect(storedSecret(harness.staticData, sb.keys.all)).toBe(webhook.secret);
	});

	it('deactivation never deletes a webhook that is no longer ours', async () => {
		const harness = await trigger(sb);
		await harness.activate();
		const foreignSecret = await registerForeign(sb); // someone re-pointed the account meanwhile

		await harness.deactivate();
		expect(sb.state().webhook).toEqual({
			configured: true,
			url: FOREIGN_URL,
			secret: foreignSecret,
		});
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0);
		expect(harness.staticData).toEqual({});
	});

	it("a copy of the active workflow (same webhookId, same n8n) deactivated, as n8n 1.x does after refusing it: the original's registration stays", async () => {
		const webhookId = randomUUID();
		const original = await trigger(sb, {}, { webhookId });
		await original.activate();
		const registered = sb.state().webhook;
		// n8n 1.x refuses the copy ("The URL path ... is already taken") and then calls its delete().
		const copy = await trigger(sb, {}, { webhookId });
		expect(copy.webhookUrl).toBe(original.webhookUrl);
		await copy.deactivate();
		// A copy whose static data came along (an export with it, say): still not the registering workflow.
		const copyWithData = await trigger(
			sb,
			{},
			{ webhookId, staticData: { ...original.staticData } },
		);
		await copyWithData.deactivate();
		expect(sb.state().webhook).toEqual(registered);
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0);
		// The original still removes its own registration, even with its static data not saved (as n8n 1.x may).
		for (const key of Object.keys(original.staticData)) delete original.staticData[key];
		await original.deactivate();
		expect(sb.state().webhook.configured).toBe(false);
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(1);
	});

	it('deactivation when nothing is configured any more: no DELETE, static data cleared', async () => {
		const harness = await trigger(sb);
		await harness.activate();
		expect((await api(sb, 'DELETE', WEBHOOK)).status).toBe(204); // removed in the console
		await harness.deactivate();
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(1); // only the outside one
		expect(harness.staticData).toEqual({});
	});

	it('a plain-http public n8n URL: the refusal says HTTPS is needed', async () => {
		const harness = await trigger(
			sb,
			{},
			{ webhookUrl: 'http://n8n.internal.example:5678/webhook' },
		);
		await expect(harness.activate()).rejects.toThrow(/accepts HTTPS addresses only/);
		expect(sb.state().webhook.configured).toBe(false);
	});

	it('a revoked key: activation fails with the transport’s explanation', async () => {
		const harness = await trigger(
			sb,
			{},
			{ credentials: { [CREDENTIAL_TYPE]: { apiKey: sb.keys.revoked, baseUrl: sb.baseUrl } } },
		);
		await expect(harness.activate()).rejects.toThrow(/revoked or unknown \(401\)/);
	});
});

describe('Listen for test event', () => {
	it('test URL while the production URL is registered: refused, production untouched and still receiving', async () => {
		const webhookId = randomUUID();
		const production = await trigger(sb, {}, { webhookId });
		await production.activate();
		const prodSecret = storedSecret(production.staticData, sb.keys.all) as string;

		for (const takeOver of [false, true]) {
			// n8n copies the workflow's stored static data into the test run.
			const test = await trigger(
				sb,
				{ options: { takeOver } },
				{ webhookId, isTest: true, staticData: { ...production.staticData } },
			);
			expect(test.webhookUrl).not.toBe(production.webhookUrl);
			const error = await activationError(test);
			expect(error.message).toBe(
				"This workflow is active (published), so the account's only webhook points at its production URL. " +
					'To test here, deactivate (unpublish) it first; its real events are in its executions. ' +
					`Production URL: ${production.webhookUrl}`,
			);
			expect(error.description).toMatch(/deactivate \(unpublish\) the workflow first/);
		}

		expect(sb.state().webhook).toEqual({
			configured: true,
			url: production.webhookUrl,
			secret: prodSecret,
		});
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0);
		const answer = await production.receive(signedRequest(inboundEnvelope(), prodSecret));
		expect(answer.status).toBe(200);
		expect(answer.workflowData?.[0]).toHaveLength(1);
	});

	it('test URL while another workflow’s URL is registered: refused without take-over', async () => {
		await registerForeign(sb);
		const test = await trigger(sb, {}, { isTest: true });
		const error = await activationError(test);
		expect(error.message).toContain(FOREIGN_URL);
		expect(error.description).toMatch(/another active n8n workflow/);
		expect(sb.state().webhook.url).toBe(FOREIGN_URL);
	});

	it('fresh account: registers the test URL, receives one event, then n8n removes it', async () => {
		const test = await trigger(sb, {}, { isTest: true });
		await test.activate();
		expect(sb.state().webhook.url).toBe(test.webhookUrl);
		expect(test.webhookUrl).toMatch(/\/webhook-test\//);

		const answer = await test.receive(
			signedRequest(inboundEnvelope(), storedSecret(test.staticData, sb.keys.all) as string),
		);
		expect(answer.status).toBe(200);
		expect(answer.workflowData?.[0]).toHaveLength(1);
		// The harness, as n8n, deactivates the test webhook after one execution.
		expect(sb.state().webhook.configured).toBe(false);
	});

	it('production activation does not replace a leftover test registration of the same node without Take Over', async () => {
		// A URL that only ends in this node's webhook ID may be a copy of this workflow elsewhere:
		// only the exact URL this node gets now is ours.
		const webhookId = randomUUID();
		const test = await trigger(sb, {}, { webhookId, isTest: true });
		await test.activate();
		const production = await trigger(sb, {}, { webhookId });
		const refused = await activationError(production);
		expect(refused.message).toBe(foreignRefusal(test.webhookUrl));
		expect(sb.state().webhook.url).toBe(test.webhookUrl);

		const takingOver = await trigger(sb, { options: { takeOver: true } }, { webhookId });
		await takingOver.activate();
		expect(sb.state().webhook.url).toBe(takingOver.webhookUrl);
		// The test listener ends later: its delete must not remove production.
		await test.deactivate();
		expect(sb.state().webhook.url).toBe(takingOver.webhookUrl);
		expect(sb.state().webhook.secret).toBe(storedSecret(takingOver.staticData, sb.keys.all));
	});

	it('a copy of the workflow on another n8n (same webhookId, other host) never takes the production webhook', async () => {
		const webhookId = randomUUID();
		const production = await trigger(sb, {}, { webhookId });
		await production.activate();
		const staging = await trigger(
			sb,
			{},
			{ webhookId, webhookUrl: 'https://staging.example.com/webhook' },
		);
		const refused = await activationError(staging);
		expect(refused.message).toBe(foreignRefusal(production.webhookUrl));
		expect(refused.description).toMatch(/copy of this workflow/);
		expect(sb.state().webhook.url).toBe(production.webhookUrl);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
	});
});

describe('Manual registration', () => {
	it('registers and deletes nothing; verifies with the credential’s secret', async () => {
		const foreignSecret = await registerForeign(sb, 'https://console-registered.example.com/hook');
		const harness = await trigger(
			sb,
			{ registration: 'manual' },
			{ credentialExtra: { webhookSecret: foreignSecret } },
		);
		await harness.activate();
		await harness.deactivate();
		await harness.activate();
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		expect(apiCalls(sb, 'GET', WEBHOOK)).toBe(0);
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0);
		expect(harness.staticData).toEqual({ activatedAtMs: expect.any(Number) });

		expect((await harness.receive(signedRequest(inboundEnvelope(), foreignSecret))).status).toBe(
			200,
		);
		expect((await harness.receive(signedRequest(inboundEnvelope(), WRONG_SECRET))).status).toBe(
			401,
		);
	});

	it('reads the credential once for many events, and again only when a signature does not match, at most every 10 s', async () => {
		const rotated = `whsec_${'cd'.repeat(32)}`;
		const harness = await trigger(
			sb,
			{ registration: 'manual' },
			{ credentialExtra: { webhookSecret: SIGNING_SECRET } },
		);
		await harness.activate();
		let current = SIGNING_SECRET;
		const original = HarnessCredentialsHelper.prototype.getDecrypted;
		const reads = jest
			.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted')
			.mockImplementation(async function (this: HarnessCredentialsHelper, ...args) {
				const data = await original.apply(this, args);
				return { ...data, webhookSecret: current };
			});
		let now = Date.now();
		jest.spyOn(Date, 'now').mockImplementation(() => now);
		const event = (text: string) =>
			signedRequest(inboundEnvelope({ text }, serviceTimestamp(now)), current);

		for (let i = 0; i < 20; i++) expect((await harness.receive(event(`m${i}`))).status).toBe(200);
		expect(reads.mock.calls.length).toBeLessThanOrEqual(1);
		const afterFirst = reads.mock.calls.length;

		// Forged signatures do not make the node read the credential again and again.
		for (let i = 0; i < 20; i++)
			expect(
				(await harness.receive(signedRequest(inboundEnvelope({ text: `f${i}` }), WRONG_SECRET)))
					.status,
			).toBe(401);
		now += 11_000;
		for (let i = 0; i < 20; i++)
			expect(
				(
					await harness.receive(
						signedRequest(inboundEnvelope({ text: `g${i}` }, serviceTimestamp(now)), WRONG_SECRET),
					)
				).status,
			).toBe(401);
		expect(reads.mock.calls.length - afterFirst).toBeLessThanOrEqual(1);

		// The secret is rotated in the credential: the first event signed with it is accepted once the interval has passed.
		current = rotated;
		now += 11_000;
		expect((await harness.receive(event('after rotation'))).status).toBe(200);
		expect((await harness.receive(event('after rotation, again'))).status).toBe(200);
		jest.restoreAllMocks();
	});

	it('without a Webhook Signing Secret in the credential, activation fails (fail closed)', async () => {
		const harness = await trigger(
			sb,
			{ registration: 'manual' },
			{ credentialExtra: { webhookSecret: '  ' } },
		);
		await expect(harness.activate()).rejects.toThrow(/no Webhook Signing Secret/);
	});
});

describe('A contradictory webhook answer', () => {
	it.each([
		['null', { configured: true, url: null }],
		['empty', { configured: true, url: '' }],
		['blank', { configured: true, url: '   ' }],
		['missing', { configured: true }],
	])(
		'{configured: true} with a url that is %s: activation fails saying so, nothing registered or replaced',
		async (_what, body) => {
			const harness = await trigger(sb);
			await registerForeign(sb);
			await control(sb, 'POST', '/faults', {
				count: 1,
				kind: 'json_body',
				path_prefix: WEBHOOK,
				body,
			});
			const { message } = await activationError(harness);
			expect(message).toMatch(
				/webhook configuration says a webhook is configured but gives no URL \(a contradiction, not read as "none"\), so nothing was registered or deleted/,
			);
			expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1); // the other tool's only
			expect(sb.state().webhook.url).toBe(FOREIGN_URL);
		},
	);
});
