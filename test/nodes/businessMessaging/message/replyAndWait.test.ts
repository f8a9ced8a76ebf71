// Message → Reply and Wait for Answer through n8n-core's WorkflowExecute: the reply is sent once,
// the execution waits (n8n's putExecutionToWait), the waiting entry the trigger looks for is
// registered, and a resume on n8n's timer (as the wait tracker does it: the stored run data run
// again) continues on the Timed Out output without sending again. The answer's path (the trigger
// posting to the resume URL) runs in real n8n: test/e2e/checks/conversation.ts.
import type { IDataObject } from 'n8n-workflow';

import { RESUME_KEY_LABEL, deriveKey, accountId } from '../../../../nodes/shared/credentialKeys';
import {
	WAIT_IDS_KEY,
	isCurrentWait,
	resumeToken,
} from '../../../../nodes/shared/replyAndWait/resume';
import {
	STATIC_DATA_KEY,
	TRIGGER_MARKER_KEY,
	findWaiting,
	waitingKey,
} from '../../../../nodes/shared/replyAndWait/waitingEntries';
import { runWorkflow, webhookHarness } from '../../../harness';
import { HarnessCredentialsHelper } from '../../../harness/credentials';
import {
	ACTION_TYPE,
	CONTACT,
	OTHER_CONTACT,
	describeWithSandbox,
	inboundEnvelope,
	inboundItem,
} from '../../../support';
import { ASK, credentialsFor, inbound, replyAndWaitWorkflow } from '../helpers';

/** What n8n hands back to the waiting node's webhook(): its saved execute data, listing the waits it is in. */
const waitingOn = (waits: Record<string, string>) =>
	({
		executionData: {
			nodeExecutionStack: [
				{ data: { main: [[]] }, source: null, metadata: { [WAIT_IDS_KEY]: waits } },
			],
		},
	}) as never;

describeWithSandbox('Message → Reply and Wait for Answer', (sandbox) => {
	it('sends the reply once, waits until the limit, registers the wait; the timer resume continues on Timed Out without sending again', async () => {
		const record = await inbound(sandbox, { number: sandbox.numbers[1].phone_number_id });
		const started = Date.now();
		const first = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 2, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(first.error).toBeUndefined();
		expect(first.execution.status).toBe('waiting');
		const waitTill = first.execution.waitTill!.getTime();
		expect(waitTill).toBeGreaterThanOrEqual(started + 120_000);
		expect(waitTill).toBeLessThan(Date.now() + 121_000);
		expect(sandbox.state().messages).toEqual([
			expect.objectContaining({
				to: CONTACT,
				from: sandbox.numbers[1].phone_number_id,
				text: 'What is your order number?',
			}),
		]);
		const found = findWaiting(
			undefined,
			[waitingKey(CONTACT, sandbox.numbers[1].phone_number_id)],
			accountId(sandbox.keys.all),
		);
		expect(found?.entry).toMatchObject({ expiresAtMs: waitTill, alsoStart: false });
		// The message it answered can never be the answer (a recovered copy of it comes later).
		const asked = inboundItem(record).json;
		expect(found?.entry.askedAfter).toEqual({
			id: (asked.data as { wa_message_id: string }).wa_message_id,
			at: asked.timestamp,
		});
		expect(found?.entry.resumeUrl).toMatch(/\/webhook-waiting\//);
		// The entry names the wait (execution, node); the token is made by the trigger when it answers.
		expect(found?.entry.node).toBe(ASK);
		expect(found?.entry).not.toHaveProperty('token');
		expect(JSON.stringify(found)).not.toContain(sandbox.keys.all);

		const resumed = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 2, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			resumeFrom: first.execution.data,
		});
		expect(resumed.error).toBeUndefined();
		expect(resumed.execution.status).toBe('success');
		expect(resumed.output(ASK, 0)).toEqual([]);
		const [timedOut] = resumed.output(ASK, 1);
		expect(timedOut.json).toMatchObject({
			timed_out: true,
			waited_for: { contact: CONTACT, number: sandbox.numbers[1].phone_number_id },
			reply: { to: CONTACT, text: 'What is your order number?' },
			data: { from: CONTACT },
		});
		expect(timedOut.pairedItem).toMatchObject({ item: 0 });
		expect(sandbox.state().messages).toHaveLength(1);
	});

	it("without a limit it waits indefinitely (as n8n's Wait node)", async () => {
		const record = await inbound(sandbox);
		const result = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: false }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(result.execution.status).toBe('waiting');
		expect(result.execution.waitTill!.getUTCFullYear()).toBe(3000);
		// The execution waits on, but an answer resumes it for the longest limit only (30 days).
		const keys = sandbox.numbers.map((number) => waitingKey(CONTACT, number.phone_number_id));
		const found = findWaiting(undefined, keys, accountId(sandbox.keys.all));
		expect(found).toBeDefined();
		expect(found?.entry.expiresAtMs).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000);
	});

	it('a limit longer than 30 days (the longest an answer can resume a wait) is refused before sending', async () => {
		const record = await inbound(sandbox);
		const result = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 31, waitUnit: 'days' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(result.execution.status).not.toBe('waiting');
		expect(result.nodeError(ASK)?.message).toMatch(/longer than 30 days/);
		expect(sandbox.state().messages).toHaveLength(0);
	});

	it('a resume is taken only for the wait the execution is in now (kept with the waiting execution, read back from what n8n saved): a token of an earlier wait gets 403', async () => {
		const record = await inbound(sandbox);
		const first = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 5, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(first.execution.status).toBe('waiting');
		const keys = sandbox.numbers.map((number) => waitingKey(CONTACT, number.phone_number_id));
		const found = findWaiting(undefined, keys, accountId(sandbox.keys.all));
		const current = found?.entry.waitId as string;
		expect(current).toMatch(/\S/);
		// What n8n saved for the waiting execution, as a fresh process (another webhook processor,
		// or after a restart) loads it: nothing of this process's memory comes with it.
		const saved = JSON.parse(JSON.stringify(first.execution.data)) as typeof first.execution.data;
		const harness = await webhookHarness({
			type: ACTION_TYPE,
			parameters: {
				resource: 'message',
				operation: 'replyAndWait',
				text: 'What is your order number?',
			},
			credentials: credentialsFor(sandbox, 'all'),
			executionId: '91',
			runExecutionData: saved,
		});
		await harness.activate();
		const answer = inboundEnvelope({
			from: CONTACT,
			text: 'A-42',
			number: found?.key.split('|')[0],
		});
		const key = found?.key as string;
		const post = async (wait: string) =>
			await harness.receive({
				headers: { 'content-type': 'application/json' },
				rawBody: JSON.stringify({
					answer,
					wait,
					key,
					token: resumeToken(
						deriveKey(sandbox.keys.all, RESUME_KEY_LABEL),
						'91',
						harness.node.name,
						key,
						wait,
						answer,
					),
				}),
			});
		// A request captured for an earlier wait of this execution (a loop that asks again), replayed.
		const replayed = await post('an-earlier-wait-of-this-execution');
		expect({ status: replayed.status, resumed: replayed.workflowData }).toEqual({
			status: 403,
			resumed: undefined,
		});
		const genuine = await post(current);
		expect(genuine.status).toBe(200);
		// The node's own answer (n8n would send its default 'firstEntryJson' otherwise): the trigger
		// counts the answer as taken on nothing else.
		expect(genuine.body).toEqual({ resumed: true });
		expect(genuine.workflowData?.[0][0].json).toMatchObject({ data: { text: 'A-42' } });
		// What n8n saves as the execution runs on no longer lists the wait: n8n 1.x resumes an
		// execution a kill ended from that save, and the restart's second post of the answer (another
		// process: none of this one's memory) is refused instead of running the rest twice.
		const metadata = saved.executionData!.nodeExecutionStack[0].metadata as Record<string, unknown>;
		expect(isCurrentWait(metadata[WAIT_IDS_KEY], current, key)).toBe(false);
	});

	it('isCurrentWait (pure): a wait id with its key; anything else (a plain list, nothing kept) is no wait', () => {
		expect(isCurrentWait(['w1'], 'w1', 'n|+1')).toBe(false);
		expect(isCurrentWait(undefined, 'w1', 'n|+1')).toBe(false);
		expect(isCurrentWait({ w1: 'n|+1' }, 'w1', 'n|+1')).toBe(true);
		expect(isCurrentWait({ w1: 'n|+1' }, 'w1', 'n|+2')).toBe(false);
		expect(isCurrentWait({ w1: 'n|+1' }, 'w2', 'n|+1')).toBe(false);
		expect(isCurrentWait({ w1: 'n|+1' }, '__proto__', 'n|+1')).toBe(false);
	});

	it('an execution whose saved data lists no wait refuses even a genuine token (fails closed): 403, not resumed', async () => {
		const record = await inbound(sandbox);
		const first = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 5, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		const keys = sandbox.numbers.map((number) => waitingKey(CONTACT, number.phone_number_id));
		const found = findWaiting(undefined, keys, accountId(sandbox.keys.all))!;
		const saved = JSON.parse(JSON.stringify(first.execution.data)) as typeof first.execution.data;
		const stack = saved.executionData!.nodeExecutionStack[0];
		expect(stack.metadata).toMatchObject({ [WAIT_IDS_KEY]: { [found.entry.waitId]: found.key } });
		stack.metadata = {} as never;
		const harness = await webhookHarness({
			type: ACTION_TYPE,
			parameters: { resource: 'message', operation: 'replyAndWait', text: 'Order number?' },
			credentials: credentialsFor(sandbox, 'all'),
			executionId: '92',
			runExecutionData: saved,
		});
		await harness.activate();
		const answer = inboundEnvelope({ from: CONTACT, text: 'A-7', number: found.key.split('|')[0] });
		const wait = found.entry.waitId;
		const token = resumeToken(
			deriveKey(sandbox.keys.all, RESUME_KEY_LABEL),
			'92',
			harness.node.name,
			found.key,
			wait,
			answer,
		);
		const refused = await harness.receive({
			headers: { 'content-type': 'application/json' },
			rawBody: JSON.stringify({ answer, wait, key: found.key, token }),
		});
		expect({ status: refused.status, resumed: refused.workflowData }).toEqual({
			status: 403,
			resumed: undefined,
		});
	});

	it('a failed reply does not wait: the error says why and nothing waits', async () => {
		const record = await inbound(sandbox);
		sandbox.advanceClock(24 * 60 * 60 + 60);
		const result = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 1, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
		});
		expect(result.execution.status).not.toBe('waiting');
		expect(result.nodeError(ASK)?.message).toMatch(/24-hour reply window is closed/);
	});

	// n8n 1.x's resume URL is /webhook-waiting/<execution id>, ids are sequential and nothing in it
	// is secret: without the token anyone who can reach n8n could post an "answer" into a conversation.
	it("the resume URL takes the trigger's answer only: no token, another execution's token, a token of another key: 403, nothing resumed", async () => {
		const harness = await webhookHarness({
			type: ACTION_TYPE,
			parameters: {
				resource: 'message',
				operation: 'replyAndWait',
				text: 'What is your order number?',
			},
			credentials: credentialsFor(sandbox, 'all'),
			executionId: '57',
			runExecutionData: waitingOn({ w1: waitingKey(CONTACT, undefined) }),
		});
		// n8n serves a restart webhook for the waiting execution; the harness serves what is active.
		await harness.activate();
		const answer = inboundEnvelope({ from: CONTACT, text: 'A-42' });
		const post = async (body: unknown) =>
			await harness.receive({
				headers: { 'content-type': 'application/json' },
				rawBody: JSON.stringify(body),
			});
		const key = deriveKey(sandbox.keys.all, RESUME_KEY_LABEL);
		const node = harness.node.name;
		const wait = waitingKey(CONTACT, undefined);
		const made = (over: Partial<{ id: string; node: string; key: string; wait: string }> = {}) =>
			resumeToken(
				over.key ?? key,
				over.id ?? '57',
				over.node ?? node,
				wait,
				over.wait ?? 'w1',
				answer,
			);
		const request = (token: unknown, extra: IDataObject = {}) => ({
			answer,
			wait: 'w1',
			key: wait,
			token,
			...extra,
		});
		const forged = [
			{ answer },
			request(''),
			request(made({ id: '58' })),
			request(made({ key: deriveKey(sandbox.keys.oneNumber, RESUME_KEY_LABEL) })),
			request(made({ node: `${node} 2` })),
			request(made({ wait: 'w2' })),
			// A token of this wait, with the answer of another contact, or another text.
			request(made(), { answer: { ...answer, data: { ...answer.data, from: OTHER_CONTACT } } }),
			request(made(), { answer: { ...answer, data: { ...answer.data, text: 'invented' } } }),
			request(made(), { key: waitingKey(OTHER_CONTACT, undefined) }),
			request(`${made()}0`),
			request(['x']),
		];
		for (const body of forged) {
			const refused = await post(body);
			expect({ status: refused.status, body: refused.body, resumed: refused.workflowData }).toEqual(
				{
					status: 403,
					body: {
						error: 'forbidden',
						reason: 'not an answer sent by the Business Messaging Trigger',
					},
					resumed: undefined,
				},
			);
		}
		// Signed for this wait, but no inbound message: the trigger never sends one.
		const status = { ...answer, event: 'message.status' };
		expect(
			(
				await post({
					...request(resumeToken(key, '57', node, wait, 'w1', status)),
					answer: status,
				})
			).status,
		).toBe(403);
		const taken = await post(request(made()));
		expect(taken.status).toBe(200);
		expect(taken.workflowData?.[0]).toEqual([
			{
				json: expect.objectContaining({
					event: 'message.inbound',
					data: expect.objectContaining({ text: 'A-42' }),
				}),
			},
		]);
		expect(JSON.stringify(taken)).not.toContain(sandbox.keys.all);
	});

	// Security review 4: the token was the same for every wait of one execution, node and contact,
	// so a token seen once resumed the next wait (a loop that asks again) with an invented answer.
	it('a token answers one wait once, with the answer it was made for: seen once, it resumes nothing again', async () => {
		const harness = await webhookHarness({
			type: ACTION_TYPE,
			parameters: { resource: 'message', operation: 'replyAndWait', text: 'Order number?' },
			credentials: credentialsFor(sandbox, 'all'),
			executionId: '61',
			runExecutionData: waitingOn({ w1: waitingKey(CONTACT, undefined) }),
		});
		await harness.activate();
		const answer = inboundEnvelope({ from: CONTACT, text: 'A-42' });
		const wait = waitingKey(CONTACT, undefined);
		const token = resumeToken(
			deriveKey(sandbox.keys.all, RESUME_KEY_LABEL),
			'61',
			harness.node.name,
			wait,
			'w1',
			answer,
		);
		const post = async (body: unknown) =>
			await harness.receive({
				headers: { 'content-type': 'application/json' },
				rawBody: JSON.stringify(body),
			});
		expect((await post({ answer, wait: 'w1', key: wait, token })).status).toBe(200);
		// The execution loops and waits again: the token seen once, with its answer or an invented one.
		expect((await post({ answer, wait: 'w1', key: wait, token })).status).toBe(403);
		const invented = { ...answer, data: { ...answer.data, text: 'cancel my order' } };
		expect((await post({ answer: invented, wait: 'w1', key: wait, token })).status).toBe(403);
		expect((await post({ answer: invented, wait: 'w2', key: wait, token })).status).toBe(403);
	});

	it('300 forged answers cost at most one credential read (an unreadable credential: 403, never an error)', async () => {
		const harness = await webhookHarness({
			type: ACTION_TYPE,
			parameters: { resource: 'message', operation: 'replyAndWait', text: 'Order number?' },
			credentials: credentialsFor(sandbox, 'all'),
			executionId: '62',
		});
		await harness.activate();
		const answer = inboundEnvelope({ from: CONTACT, text: 'A-42' });
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		reads.mockClear();
		for (let i = 0; i < 300; i++) {
			const forged = await harness.receive({
				headers: { 'content-type': 'application/json' },
				rawBody: JSON.stringify({
					answer,
					wait: `w${i}`,
					key: waitingKey(CONTACT, undefined),
					token: i.toString(16).padStart(64, '0'),
				}),
			});
			expect(forged.status).toBe(403);
		}
		expect(reads.mock.calls.length).toBeLessThanOrEqual(1);
		reads.mockRejectedValue(new Error('the encryption key changed'));
		const unreadable = await harness.receive({
			headers: { 'content-type': 'application/json' },
			rawBody: JSON.stringify({
				answer,
				wait: 'w',
				key: waitingKey(CONTACT, undefined),
				token: '0'.repeat(64),
			}),
		});
		expect([unreadable.status, unreadable.error]).toEqual([403, undefined]);
		reads.mockRestore();
	});

	// n8n 2.x in queue mode gives a new execution on a worker an EMPTY copy of the static data and
	// saves it whole when a node changed it: registering there wiped the trigger's sealed secret
	// (every event then refused with 401, measured in npm run test:queue).
	it("static data: written only when the execution's copy carries the trigger's marker; an empty copy (a queue-mode worker) is left unchanged", async () => {
		const record = await inbound(sandbox);
		const emptyCopy: IDataObject = {};
		const onWorker = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 1, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(record)],
			staticData: emptyCopy,
			mode: 'webhook',
		});
		expect(onWorker.execution.status).toBe('waiting');
		expect((emptyCopy as { __dataChanged?: boolean }).__dataChanged).toBe(false);
		expect(JSON.stringify(emptyCopy)).not.toContain(STATIC_DATA_KEY);

		const loaded: IDataObject = {
			global: { [TRIGGER_MARKER_KEY]: true },
			'node:Trigger': { sealedSecret: 'v1.sealed' },
		};
		const withTrigger = await runWorkflow({
			...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 1, waitUnit: 'minutes' }),
			credentials: credentialsFor(sandbox, 'all'),
			inputItems: [inboundItem(await inbound(sandbox, { from: '+15557659999' }))],
			staticData: loaded,
			mode: 'webhook',
		});
		expect(withTrigger.execution.status).toBe('waiting');
		expect((loaded as { __dataChanged?: boolean }).__dataChanged).toBe(true);
		expect(
			findWaiting(
				loaded.global as never,
				[waitingKey('+15557659999', sandbox.numbers[0].phone_number_id)],
				accountId(sandbox.keys.all),
			)?.entry.executionId,
		).toBeDefined();
		expect(loaded['node:Trigger']).toEqual({ sealedSecret: 'v1.sealed' });
	});
});
