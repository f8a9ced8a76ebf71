// Issue 49: the process-wide list of waiting entries (10,000) was shared by every workflow of every
// user, and when full a registration was answered `registered: 1` and kept nowhere. The list is per
// account now, and a full one is said: the trigger refuses the registration (507, with the reason),
// Reply and Wait logs it. Its own test file: the 10,000 waits filled here stay in this process's memory.
import { Logger } from '@n8n/backend-common';

import { REGISTRATION_HEADER } from '../../../nodes/shared/replyAndWait/registration';
import {
	findWaiting,
	registerWaiting,
	waitingKey,
} from '../../../nodes/shared/replyAndWait/waitingEntries';
import { WAIT_REGISTRATION_LABEL, accountId } from '../../../nodes/shared/credentialKeys';
import { signWithDerivedKey } from '../../../nodes/shared/signedPost';
import { runWorkflow } from '../../harness';
import { inboundItem, useSandbox } from '../../support';
import { replyAndWaitWorkflow } from '../businessMessaging/helpers';
import {
	captureLogs,
	control,
	credentialsFor,
	servedTrigger,
	trigger,
	type LoggedLines,
} from './helpers';

const sb = useSandbox({ reset: 'afterEach' });
afterEach(() => jest.restoreAllMocks());

/** 10,000 live waits of `account` in this process's memory. */
function fill(account: string, prefix: string): void {
	for (let i = 0; i < 10_000; i++)
		registerWaiting(undefined, waitingKey(`${prefix}${String(i).padStart(7, '0')}`, 'n'), {
			resumeUrl: `http://127.0.0.1:5678/webhook-waiting/${prefix}${i}`,
			waitId: 'w1',
			executionId: `${prefix}${i}`,
			expiresAtMs: Date.now() + 3_600_000,
			alsoStart: false,
			node: 'Ask',
			account,
		});
}

describe('the waiting list per account, a full list refused out loud', () => {
	it("a registration: kept when another account's list is full; refused 507 with the reason when its own account's is", async () => {
		const account = accountId(sb.keys.all);
		const harness = await trigger(sb, {} as never);
		await harness.activate();
		const origin = new URL(harness.webhookUrl).origin;
		const register = async (contact: string, id: string) => {
			const raw = JSON.stringify({
				business_messaging_wait: [
					{
						key: waitingKey(contact, '109876543210'),
						entry: {
							resumeUrl: `${origin}/webhook-waiting/${id}`,
							waitId: 'w1',
							executionId: id,
							expiresAtMs: Date.now() + 60_000,
							alsoStart: false,
							node: 'Ask',
							account,
						},
					},
				],
				issued_at_ms: Date.now(),
			});
			return await harness.receive({
				headers: {
					'content-type': 'application/json',
					[REGISTRATION_HEADER]: signWithDerivedKey(sb.keys.all, WAIT_REGISTRATION_LABEL, raw),
				},
				rawBody: raw,
				webhookName: 'setup',
			});
		};
		const found = (contact: string) =>
			findWaiting(undefined, [waitingKey(contact, '109876543210')], account)?.entry.executionId;
		// Another account (another workflow's key) fills its own list: this account's waits are kept.
		fill('f'.repeat(32), '+1777');
		const kept = await register('+15550000001', '201');
		expect([kept.status, kept.body]).toEqual([200, { registered: 1 }]);
		expect(found('+15550000001')).toBe('201');
		// This account's own list full of live waits: refused out loud, nothing claimed.
		fill(account, '+1666');
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const refused = await register('+15550000002', '202');
		expect([refused.status, refused.body, refused.workflowData]).toEqual([
			507,
			{
				error: 'full',
				reason:
					"waiting registration refused: 1 of 1 wait(s) not kept: this process's list of waits has no room for this account (at most 10000 live waits per account)",
			},
			undefined,
		]);
		expect(found('+15550000002')).toBeUndefined();
		expect(logged.warn.join('\n')).toMatch(
			/rejected a request \(507\): waiting registration refused/,
		);
	});

	it('Reply and Wait whose wait is kept nowhere (its account full here, nothing posted: the editor, or the trigger in this process) logs a warning naming the wait key on one line', async () => {
		fill(accountId(sb.keys.all), '+1555');
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const number = sb.numbers[0].phone_number_id;
		const contact = '+15550009999';
		const greeting = await control(sb, 'POST', '/inbound', {
			from: contact,
			contact_name: 'Ada',
			number,
			text: 'hello',
		});
		const run = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 5, waitUnit: 'minutes' }),
			credentials: credentialsFor(sb),
			inputItems: [inboundItem(greeting.body.record)],
		});
		expect(run.execution.status).toBe('waiting');
		expect(logged.warn).toEqual([
			expect.stringMatching(
				new RegExp(
					`^Business Messaging: Reply and Wait for Answer could not keep its wait for ${number}\\|\\${contact}: this process's list of waits has no room for this account \\(at most 10000 live waits per account\\); the contact's answer starts a new execution, and this one continues on Timed Out$`,
				),
			),
		]);
	});

	it('Reply and Wait in another process (a queue-mode worker) whose registration the trigger refuses 507 logs that it kept its entry in its own process only', async () => {
		const served = await servedTrigger(sb);
		try {
			fill(accountId(sb.keys.all), '+1444');
			const logged = {} as LoggedLines;
			captureLogs(logged, Logger);
			const greeting = await control(sb, 'POST', '/inbound', {
				from: '+15550008888',
				contact_name: 'Ada',
				number: sb.numbers[0].phone_number_id,
				text: 'hello',
			});
			const run = await runWorkflow({
				...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 5, waitUnit: 'minutes' }),
				credentials: credentialsFor(sb),
				inputItems: [inboundItem(greeting.body.record)],
				mode: 'webhook',
				staticData: {},
				webhookWaitingBaseUrl: `${new URL(served.served.url).origin}/webhook-waiting`,
			});
			expect(run.execution.status).toBe('waiting');
			// The sandbox's delivery of the greeting (200), then the registration.
			expect(served.results.map((r) => r.status)).toEqual([200, 507]);
			expect(logged.info).toContain(
				'Business Messaging: Reply and Wait for Answer kept its waiting entry in this process only (the trigger answered 507)',
			);
		} finally {
			await served.down();
		}
	});
});
