// A resume never follows a redirect: the contact's answer (with its resume token) goes to n8n's
// resume URL and nowhere else. Here the "resume URL" is a real HTTP server on 127.0.0.1 that
// answers with a redirect to a second local server; the trigger runs n8n-core's real
// WebhookContext, so the POST goes through n8n's own httpRequest helper.
import { classifyResumeAnswer } from '../../../nodes/shared/replyAndWait/resume';
import { registerWaiting, waitingKey } from '../../../nodes/shared/replyAndWait/waitingEntries';
import { accountId } from '../../../nodes/shared/credentialKeys';
import type { WebhookHarness } from '../../harness';
import { CONTACT, inboundEnvelope, NUMBER, signedRequest, useSandbox } from '../../support';
import { scriptedResumer, storedSecret, trigger, type Resumer } from './helpers';

const sb = useSandbox({ reset: 'afterEach' });

describe('trigger: a resume never follows a redirect', () => {
	const open: Resumer[] = [];
	afterEach(async () => {
		await Promise.all(open.splice(0).map(async (s) => await s.close()));
	});

	async function activeTrigger(): Promise<{ harness: WebhookHarness; secret: string }> {
		const harness = await trigger(sb, {} as never);
		await harness.activate();
		return { harness, secret: storedSecret(harness.staticData, sb.keys.all) as string };
	}

	it.each([301, 302, 303, 307, 308])(
		'the resume URL answers %i to another server: that server receives nothing, the answer is refused and starts a normal execution',
		async (status) => {
			// Would resume anything it is sent (200), were the redirect followed.
			const elsewhere = await scriptedResumer([{ status: 200 }], '/webhook-waiting/71');
			open.push(elsewhere);
			const redirecting = await scriptedResumer(
				[{ status, headers: { location: elsewhere.url } }],
				'/webhook-waiting/71',
			);
			open.push(redirecting);
			const { harness, secret } = await activeTrigger();
			registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), {
				resumeUrl: redirecting.url,
				waitId: 'w1',
				executionId: '71',
				expiresAtMs: Date.now() + 60_000,
				alsoStart: false,
				node: 'Ask',
				account: accountId(sb.keys.all),
			});

			const answer = await harness.receive(
				signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'A-71' }), secret),
			);

			// Asked once (a redirect is a definite "no", not a doubt to retry), never followed.
			expect(redirecting.bodies).toEqual([
				{
					answer: expect.objectContaining({ event: 'message.inbound' }),
					wait: expect.any(String),
					key: expect.any(String),
					token: expect.any(String),
				},
			]);
			expect(elsewhere.bodies).toEqual([]);
			// Not resumed: the message starts the trigger's own execution, as for any refused resume.
			expect(answer.status).toBe(200);
			expect(answer.body).toEqual({ received: true });
			const [item] = (await harness.execute(answer.workflowData ?? [])).flat();
			expect(item.json).toMatchObject({ event: 'message.inbound', data: { text: 'A-71' } });
			expect(item.json).not.toHaveProperty('resumed_execution');
		},
	);

	it('a 3xx from the resume URL is not n8n resuming: refused', () => {
		for (const statusCode of [300, 301, 302, 303, 304, 307, 308])
			expect(classifyResumeAnswer({ statusCode, body: '' })).toBe('refused');
	});
});
