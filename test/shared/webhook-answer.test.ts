// The one reader of GET /v1/console/webhook (webhookAnswer.ts): only an answer that says no
// webhook is configured means none; a contradictory one is an answer the node cannot read.
import { decideRegistration } from '../../nodes/BusinessMessagingTrigger/registration/decision';
import { readWebhookAnswer } from '../../nodes/shared/webhookAnswer';

const OURS = 'https://n8n.example.org/webhook/3f0c8c4e-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook';

describe('readWebhookAnswer (pure)', () => {
	it.each([
		['null', { configured: true, url: null }],
		['empty', { configured: true, url: '' }],
		['blank', { configured: true, url: ' \t ' }],
		['missing', { configured: true }],
	])('configured: true with a url that is %s is unreadable, never "none"', (_what, body) => {
		const read = readWebhookAnswer(body);
		expect(read).toEqual({
			unreadable: expect.stringMatching(/says a webhook is configured but gives no URL/),
		});
	});

	it('configured: false means none, whatever url it keeps; configured with a URL is that URL', () => {
		expect(readWebhookAnswer({ configured: false, url: null })).toEqual({
			configured: false,
			url: null,
		});
		expect(readWebhookAnswer({ configured: false, url: 'https://old.example/hook' })).toEqual({
			configured: false,
			url: null,
		});
		expect(readWebhookAnswer({ configured: true, url: ` ${OURS} ` })).toEqual({
			configured: true,
			url: OURS,
		});
	});

	it('another shape is unreadable', () => {
		for (const body of [null, 'text', [], { url: OURS }, { configured: 'yes', url: OURS }])
			expect(readWebhookAnswer(body)).toHaveProperty('unreadable');
	});

	it('activation registers only on an answer that says none', () => {
		const input = { ourUrl: OURS, hasSecret: false, takeOver: false, isTest: false };
		const none = readWebhookAnswer({ configured: false, url: null });
		if ('unreadable' in none) throw new Error('unreadable');
		expect(decideRegistration({ ...input, remote: none }).action).toBe('register');
	});
});
