import {
	decideRegistration,
	isOtherTriggerUrl,
	isSameNodeUrl,
	sameUrl,
	type DecisionInput,
} from '../../../nodes/BusinessMessagingTrigger/registration/decision';
import { FOREIGN_URL } from '../../support';

const WEBHOOK_ID = '3f0c8c4e-1b2a-4c5d-9e8f-0a1b2c3d4e5f';
const PROD = `https://n8n.example.com/webhook/${WEBHOOK_ID}/webhook`;
const TEST = `https://n8n.example.com/webhook-test/${WEBHOOK_ID}/webhook`;

const input = (overrides: Partial<DecisionInput>): DecisionInput => ({
	remote: { configured: false, url: null },
	ourUrl: PROD,
	hasSecret: false,
	takeOver: false,
	isTest: false,
	webhookId: WEBHOOK_ID,
	...overrides,
});

describe('decideRegistration', () => {
	it('registers on a fresh account', () => {
		expect(decideRegistration(input({})).action).toBe('register');
	});

	it('keeps its own webhook when it holds the secret', () => {
		expect(
			decideRegistration(input({ remote: { configured: true, url: PROD }, hasSecret: true })),
		).toEqual({
			action: 'keep',
		});
	});

	it('registers again when its own URL is configured but the secret is lost', () => {
		const decision = decideRegistration(
			input({ remote: { configured: true, url: PROD }, hasSecret: false }),
		);
		expect(decision).toMatchObject({ action: 'register', reason: expect.stringMatching(/secret/) });
	});

	it('refuses a foreign webhook, naming it and what to do', () => {
		const decision = decideRegistration(input({ remote: { configured: true, url: FOREIGN_URL } }));
		expect(decision).toMatchObject({ action: 'refuse' });
		if (decision.action !== 'refuse') throw new Error('expected refuse');
		expect(decision.message).toContain(FOREIGN_URL);
		expect(decision.description).toMatch(/Take Over Existing Webhook/);
		expect(decision.description).toMatch(/console/);
	});

	it('replaces a foreign webhook only with take-over', () => {
		expect(
			decideRegistration(input({ remote: { configured: true, url: FOREIGN_URL }, takeOver: true })),
		).toEqual({
			action: 'register',
			reason: expect.any(String),
			replacing: FOREIGN_URL,
		});
	});

	it('a test listener never replaces this workflow’s production webhook, take-over or not', () => {
		for (const takeOver of [false, true]) {
			const decision = decideRegistration(
				input({ remote: { configured: true, url: PROD }, ourUrl: TEST, isTest: true, takeOver }),
			);
			expect(decision.action).toBe('refuse');
			if (decision.action !== 'refuse') continue;
			expect(decision.message).toContain(PROD);
			expect(decision.description).toMatch(/deactivate/i);
		}
	});

	it('a test listener on a foreign webhook is refused, or replaces it with take-over', () => {
		expect(
			decideRegistration(
				input({ remote: { configured: true, url: FOREIGN_URL }, ourUrl: TEST, isTest: true }),
			).action,
		).toBe('refuse');
		expect(
			decideRegistration(
				input({
					remote: { configured: true, url: FOREIGN_URL },
					ourUrl: TEST,
					isTest: true,
					takeOver: true,
				}),
			).action,
		).toBe('register');
	});

	it("a URL that only ends in this node's webhook ID is not ours: a copied workflow (staging) never takes it without Take Over", () => {
		// webhookId survives export/import, so a staging copy sees production's URL ending in its own ID.
		const production = `https://n8n.example.com/webhook/${WEBHOOK_ID}/webhook`;
		const staging = `https://staging.example.com/webhook/${WEBHOOK_ID}/webhook`;
		const decision = decideRegistration(
			input({ ourUrl: staging, remote: { configured: true, url: production } }),
		);
		expect(decision).toMatchObject({
			action: 'refuse',
			message: expect.stringMatching(
				/^Another webhook is registered for this account\. .*Take Over Existing Webhook/,
			),
		});
		expect((decision as { message: string }).message.endsWith(`Registered: ${production}`)).toBe(
			true,
		);
		expect((decision as { description: string }).description).toMatch(/copy of this workflow/);
		expect(
			decideRegistration(
				input({ ourUrl: staging, remote: { configured: true, url: production }, takeOver: true }),
			),
		).toMatchObject({
			action: 'register',
			replacing: production,
		});
		// A leftover test URL or an old address of this node is refused the same way: only Take Over replaces it.
		for (const url of [TEST, `http://localhost:5678/webhook/${WEBHOOK_ID}/webhook`]) {
			expect(decideRegistration(input({ remote: { configured: true, url } })).action).toBe(
				'refuse',
			);
			expect(
				decideRegistration(input({ remote: { configured: true, url }, takeOver: true })),
			).toMatchObject({ action: 'register', replacing: url });
		}
	});

	it('another node (other webhookId) of another n8n is foreign', () => {
		const other =
			'https://staging.example.com/webhook/aaaaaaaa-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook';
		expect(decideRegistration(input({ remote: { configured: true, url: other } })).action).toBe(
			'refuse',
		);
	});

	describe('one trigger per account in this n8n (issue 32)', () => {
		const OTHER = 'https://n8n.example.com/webhook/aaaaaaaa-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook';
		it("another trigger's URL of this n8n is refused, naming Execute Workflow and the Polling Trigger", () => {
			const decision = decideRegistration(input({ remote: { configured: true, url: OTHER } }));
			expect(decision.action).toBe('refuse');
			const { message } = decision as { message: string };
			expect(message).toMatch(/one trigger per account/);
			expect(message).toMatch(/Execute Workflow/);
			expect(message).toMatch(/Polling Trigger/);
			expect(message).toContain(OTHER);
		});
		it("another trigger's test URL of this n8n is refused too", () => {
			const test =
				'https://n8n.example.com/webhook-test/aaaaaaaa-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook';
			const decision = decideRegistration(input({ remote: { configured: true, url: test } }));
			expect(decision.action).toBe('refuse');
			expect((decision as { message: string }).message).toMatch(/Execute Workflow/);
		});
		it('Take Over Existing Webhook still replaces it: the user asked for it', () => {
			expect(
				decideRegistration(input({ remote: { configured: true, url: OTHER }, takeOver: true })),
			).toEqual({
				action: 'register',
				reason: '"Take Over Existing Webhook" is on',
				replacing: OTHER,
			});
		});
		it('another origin, another path, a query string, or this very node: not another trigger of this n8n', () => {
			for (const url of [
				'https://n8n.example.com:8443/webhook/aaaaaaaa-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook',
				'https://n8n.example.com/webhook/aaaaaaaa-1b2a-4c5d-9e8f-0a1b2c3d4e5f/other',
				'https://n8n.example.com/webhook/not-a-uuid/webhook',
				`${OTHER}?x=1`,
				FOREIGN_URL,
			]) {
				expect(isOtherTriggerUrl(url, PROD)).toBe(false);
				const decision = decideRegistration(input({ remote: { configured: true, url } }));
				expect((decision as { message?: string }).message ?? '').not.toMatch(/Execute Workflow/);
			}
			expect(isOtherTriggerUrl(PROD, PROD)).toBe(false);
			expect(isOtherTriggerUrl(`${PROD}/`, PROD)).toBe(false);
		});
		it('a test listener of this node still refuses while its production URL holds the webhook', () => {
			expect(
				decideRegistration(
					input({ remote: { configured: true, url: PROD }, ourUrl: TEST, isTest: true }),
				).action,
			).toBe('refuse');
		});
	});
});

describe('helpers', () => {
	it('sameUrl ignores a trailing slash and host case, nothing else', () => {
		expect(sameUrl(PROD, `${PROD}/`)).toBe(true);
		expect(sameUrl(PROD, PROD.replace('n8n.example.com', 'N8N.Example.com'))).toBe(true);
		expect(sameUrl(PROD, TEST)).toBe(false);
		expect(sameUrl(PROD, null)).toBe(false);
	});

	it('isSameNodeUrl matches by webhookId and path', () => {
		expect(isSameNodeUrl(TEST, WEBHOOK_ID)).toBe(true);
		expect(isSameNodeUrl(FOREIGN_URL, WEBHOOK_ID)).toBe(false);
		expect(isSameNodeUrl(TEST, undefined)).toBe(false);
		expect(isSameNodeUrl('not a url', WEBHOOK_ID)).toBe(false);
	});
});
