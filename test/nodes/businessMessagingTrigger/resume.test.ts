// The trigger's side of Reply and Wait for Answer: an inbound message of a contact an execution
// waits for is posted to that execution's resume URL (here a real HTTP server standing in for
// n8n's /webhook-waiting/ endpoint; the whole path runs in real n8n in test/e2e/checks/conversation.ts),
// and every failure falls back to a normal execution: the answer is never lost.
import { createServer, type Server } from 'node:http';
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';
import type { AddressInfo } from 'node:net';
import { Logger } from '@n8n/backend-common';

import { REGISTRATION_HEADER } from '../../../nodes/shared/replyAndWait/registration';
import {
	RESUME_KEY_LABEL,
	WAIT_REGISTRATION_LABEL,
	deriveKey,
	accountId,
} from '../../../nodes/shared/credentialKeys';
import {
	RESUME_PATIENCE,
	classifyResumeAnswer,
	resumeToken,
} from '../../../nodes/shared/replyAndWait/resume';
import {
	STATIC_DATA_KEY,
	TRIGGER_MARKER_KEY,
	answersAfterAsking,
	findWaiting,
	keepWaitingEntriesCurrent,
	registerWaiting,
	removeWaiting,
	triggerRunsHere,
	waitingKey,
} from '../../../nodes/shared/replyAndWait/waitingEntries';
import { answerWaiting } from '../../../nodes/shared/replyAndWait/forTrigger';
import { ANSWERS_KEY } from '../../../nodes/shared/replyAndWait/answeredHere';
import { signWithDerivedKey } from '../../../nodes/shared/signedPost';
import { runWorkflow, webhookHarness } from '../../harness';
import { HarnessCredentialsHelper } from '../../harness/credentials';
import { ASK, replyAndWaitWorkflow } from '../businessMessaging/helpers';
import type { WebhookHarness } from '../../harness';
import {
	ACTION_TYPE,
	CONTACT,
	OTHER_CONTACT,
	inboundEnvelope,
	inboundItem,
	NUMBER,
	serviceTimestamp,
	signedRequest,
	useSandbox,
} from '../../support';
import {
	control,
	credentialsFor,
	registerForeign,
	servedTrigger,
	storedSecret,
	trigger,
	resumer,
	scriptedResumer,
	captureLogs,
	until,
	type LoggedLines,
	type Resumer,
	answeredIn,
	owedIn,
} from './helpers';

const sb = useSandbox({ reset: 'afterEach' });
afterEach(() => jest.restoreAllMocks());
/** The signature header of a registration body, as Reply and Wait signs it. */
const signRegistration = (apiKey: string, rawBody: string) =>
	signWithDerivedKey(apiKey, WAIT_REGISTRATION_LABEL, rawBody);
/** The account of the key the trigger's credential holds (sb.keys.all). */
let ACCOUNT = '';
beforeAll(() => {
	ACCOUNT = accountId(sb.keys.all);
});

/** Another execution's copy of the workflow's static data, brought up to date as Reply and Wait does before n8n saves it. */
function currentCopy(workflowId: string): IDataObject {
	const copy: IDataObject = { [TRIGGER_MARKER_KEY]: true };
	keepWaitingEntriesCurrent(copy, workflowId);
	return copy;
}

/** A live wait of execution `executionId` at `resumeUrl`, of the trigger's account (node Ask). */
const waitAt = (resumeUrl: string, executionId: string) => ({
	resumeUrl,
	waitId: 'w1',
	executionId,
	expiresAtMs: Date.now() + 60_000,
	alsoStart: false,
	node: 'Ask',
	account: ACCOUNT,
});

async function activeTrigger(): Promise<{ harness: WebhookHarness; secret: string }> {
	const harness = await trigger(sb, {} as never);
	await harness.activate();
	return { harness, secret: storedSecret(harness.staticData, sb.keys.all) as string };
}

/**
 * An answer that resumed a waiting execution starts an execution too, marked with the resumed
 * execution's id: the trigger's execute() records it as run (n8n's deduplication store) and, the
 * wait not asking to Also Start, passes nothing on. No catch-up can then run it again (issue 32).
 */
async function expectRecordedOnly(
	harness: WebhookHarness,
	answer: { workflowData?: INodeExecutionData[][] },
	executionId: string,
): Promise<void> {
	const items = (answer.workflowData ?? []).flat();
	expect(items).toHaveLength(1);
	expect(items[0].json.resumed_execution).toBe(executionId);
	expect((await harness.execute(answer.workflowData ?? [])).flat()).toEqual([]);
}

describe('trigger: an answer resumes the waiting execution', () => {
	const servers: Resumer[] = [];
	afterEach(async () => {
		await Promise.all(servers.splice(0).map(async (s) => await s.close()));
	});

	it.each([
		// The same server under another name: another origin, as 169.254.169.254 would be.
		['another host', '//localhost/webhook-waiting/47'],
		['another path of this n8n', '/webhook-waiting/47/extra'],
		['a foreign account', '/webhook-waiting/47', { account: 'f'.repeat(32) }],
		['an expiry past any wait', '/webhook-waiting/47', { expiresAtMs: Date.parse('3001-01-01') }],
	])(
		'an entry written into static data by other code (a Code node) for %s is never posted to: the message starts a normal execution',
		async (_, where, extra: IDataObject = {}) => {
			const server = await resumer(200, '47');
			servers.push(server);
			const origin = new URL(server.url).origin;
			const port = new URL(server.url).port;
			const harness = await trigger(sb, {} as never, { webhookUrl: `${origin}/webhook` });
			await harness.activate();
			const secret = storedSecret(harness.staticData, sb.keys.all) as string;
			harness.globalStaticData[STATIC_DATA_KEY] = {
				[waitingKey('+15553334444', NUMBER)]: {
					resumeUrl: where.startsWith('//')
						? `http://localhost:${port}${where.slice('//localhost'.length)}`
						: `${origin}${where}`,
					// Its own wait: nothing answered before in this process stands in for the check.
					executionId: `47-${where}-${JSON.stringify(extra)}`,
					expiresAtMs: Date.now() + 60_000,
					alsoStart: false,
					node: 'Ask',
					account: ACCOUNT,
					...extra,
				},
			};
			const answer = await harness.receive(
				signedRequest(inboundEnvelope({ from: '+15553334444', number: NUMBER }), secret),
			);
			expect(answer.body).toEqual({ received: true });
			expect(answer.workflowData?.[0]).toHaveLength(1);
			expect(server.bodies).toEqual([]);
		},
	);

	it('posts the event to the resume URL; its execution is recorded as run and passes nothing on; the entry is used once', async () => {
		const server = await resumer(200);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), waitAt(server.url, '41'));
		const event = inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'A-42' });
		const answer = await harness.receive(signedRequest(event, secret));
		expect(answer.status).toBe(200);
		await expectRecordedOnly(harness, answer, '41');
		expect(answer.body).toEqual({ received: true, resumed: '41' });
		expect(server.bodies).toEqual([
			{
				answer: expect.objectContaining({
					event: 'message.inbound',
					data: expect.objectContaining({ text: 'A-42' }),
				}),
				wait: 'w1',
				key: waitingKey(CONTACT, NUMBER),
				// Made when the answer is sent, from the API key, this one wait and this answer: nothing stored holds it.
				token: resumeToken(
					deriveKey(sb.keys.all, RESUME_KEY_LABEL),
					'41',
					'Ask',
					waitingKey(CONTACT, NUMBER),
					'w1',
					(server.bodies[0] as { answer: unknown }).answer,
				),
			},
		]);
		// The next message of the contact is a new conversation.
		const next = await harness.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'again' }), secret),
		);
		expect(next.workflowData?.[0]).toHaveLength(1);
		expect(server.bodies).toHaveLength(1);
	});

	// Issue 49: code in the trigger's workflow (a Code node writing static data) copied contact D's
	// waiting entry under contact C's key, and C's answer resumed D's execution.
	it("a wait answers its own contact only: D's entry copied under C's key (a Code node) is refused by D's execution (403), C's message starts its own execution, D's answer still resumes D", async () => {
		// This n8n's /webhook-waiting/ endpoint: each resume request goes to the waiting node's webhook().
		let waiting: WebhookHarness | undefined;
		const statuses: number[] = [];
		const n8n = createServer((req, res) => {
			let raw = '';
			req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
			req.on('end', () => {
				void waiting!
					.receive({ headers: { 'content-type': 'application/json' }, rawBody: raw })
					.then((answer) => {
						statuses.push(answer.status);
						res
							.writeHead(answer.status, { 'content-type': 'application/json' })
							.end(JSON.stringify(answer.body ?? {}));
					});
			});
		});
		await new Promise<void>((resolve) => n8n.listen(0, '127.0.0.1', resolve));
		const origin = `http://127.0.0.1:${(n8n.address() as AddressInfo).port}`;
		try {
			const asked = await askAsAnotherProcess(origin, OTHER_CONTACT);
			expect(asked.execution.status).toBe('waiting');
			const keys = sb.numbers.map((n) => waitingKey(OTHER_CONTACT, n.phone_number_id));
			const dWaits = findWaiting(undefined, keys, ACCOUNT)!;
			expect(dWaits.entry.resumeUrl.startsWith(`${origin}/webhook-waiting/`)).toBe(true);
			// D's execution as n8n saved it, its webhook served where its resume URL points.
			waiting = await webhookHarness({
				type: ACTION_TYPE,
				parameters: { resource: 'message', operation: 'replyAndWait', text: 'Order number?' },
				credentials: credentialsFor(sb),
				executionId: dWaits.entry.executionId,
				runExecutionData: JSON.parse(JSON.stringify(asked.execution.data)),
				nodeName: ASK,
			});
			await waiting.activate();
			const harness = await trigger(sb, {} as never, { webhookUrl: `${origin}/webhook` });
			await harness.activate();
			const secret = storedSecret(harness.staticData, sb.keys.all) as string;
			// A Code node of the trigger's workflow copies D's entry under C's key.
			harness.globalStaticData[STATIC_DATA_KEY] = {
				[waitingKey(CONTACT, dWaits.key.split('|')[0])]: { ...dWaits.entry },
			};
			const fromC = await harness.receive(
				signedRequest(
					inboundEnvelope({ from: CONTACT, number: dWaits.key.split('|')[0], text: 'C-1' }),
					secret,
				),
			);
			expect(statuses).toEqual([403]);
			expect(fromC.body).toEqual({ received: true });
			const [item] = (await harness.execute(fromC.workflowData ?? [])).flat();
			expect(item.json).toMatchObject({ data: { from: CONTACT, text: 'C-1' } });
			expect(item.json).not.toHaveProperty('resumed_execution');
			// D's own answer still resumes D's execution.
			const fromD = await harness.receive(
				signedRequest(
					inboundEnvelope({ from: OTHER_CONTACT, number: dWaits.key.split('|')[0], text: 'D-1' }),
					secret,
				),
			);
			expect(statuses).toEqual([403, 200]);
			expect(fromD.body).toEqual({ received: true, resumed: dWaits.entry.executionId });
		} finally {
			await new Promise<void>((resolve) => n8n.close(() => resolve()));
		}
	});

	it("a trigger of another account (another API key) never resumes this account's wait: its message starts its own execution", async () => {
		const server = await resumer(200);
		servers.push(server);
		// The other account's trigger: another API key (the trigger's credential) than the waiting execution's.
		const other = await trigger(sb, {} as never, {
			credentialExtra: { apiKey: sb.keys.oneNumber },
		});
		await other.activate();
		const secret = storedSecret(other.staticData, sb.keys.oneNumber) as string;
		for (const key of [waitingKey(CONTACT, NUMBER), waitingKey(CONTACT, undefined)]) {
			registerWaiting(other.globalStaticData, key, waitAt(server.url, '43'));
		}
		const answer = await other.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'private' }), secret),
		);
		expect(answer.body).toEqual({ received: true });
		expect(answer.workflowData?.[0]).toHaveLength(1);
		expect(server.bodies).toEqual([]);
	});

	it("activation marks the workflow's static data (saved with it), so Reply and Wait in this workflow keeps its entries there", async () => {
		const { harness } = await activeTrigger();
		expect(harness.globalStaticData[TRIGGER_MARKER_KEY]).toBeUndefined();
		const started = await harness.startTrigger();
		try {
			expect(harness.globalStaticData[TRIGGER_MARKER_KEY]).toBe(true);
		} finally {
			await started.close();
		}
	});

	it("after a restart (the entry only in the workflow's static data, as n8n loads it): resumes too", async () => {
		const server = await resumer(200, '47');
		servers.push(server);
		// This n8n: the trigger's URL on the resume URL's origin (entries read from static data must be of it).
		const harness = await trigger(sb, {} as never, {
			webhookUrl: `${new URL(server.url).origin}/webhook`,
		});
		await harness.activate();
		const secret = storedSecret(harness.staticData, sb.keys.all) as string;
		const entry = waitAt(server.url, '47');
		harness.globalStaticData[STATIC_DATA_KEY] = { [waitingKey('+15553334444', NUMBER)]: entry };
		const answer = await harness.receive(
			signedRequest(inboundEnvelope({ from: '+15553334444', number: NUMBER }), secret),
		);
		expect(answer.body).toEqual({ received: true, resumed: '47' });
		await expectRecordedOnly(harness, answer, '47');
		expect(harness.globalStaticData[STATIC_DATA_KEY]).toEqual({});
	});

	// Queue mode: main's catch-up would bring the refused answer where no processor's wait is known.
	it('an answer past the Late Delivery Cutoff resumes the wait known here (the catch-up copy is then dropped as run); a late message nobody waits for is still refused 503', async () => {
		const server = await resumer(200, '48');
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), waitAt(server.url, '48'));
		const sixSecondsAgo = serviceTimestamp(Date.now() - 6_000);
		const answer = await harness.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER }, sixSecondsAgo), secret),
		);
		expect(answer.body).toEqual({ received: true, resumed: '48' });
		await expectRecordedOnly(harness, answer, '48');
		const nobodyWaits = await harness.receive(
			signedRequest(
				inboundEnvelope({ from: OTHER_CONTACT, number: NUMBER }, sixSecondsAgo),
				secret,
			),
		);
		expect(nobodyWaits.status).toBe(503);
		expect(nobodyWaits.workflowData).toBeUndefined();
	});

	it("where the trigger's catch-up runs in this process (n8n's main in regular mode), a late answer resumes the wait with no execution (recorded, so the catch-up's copy runs nothing); a late message nobody waits for is still refused 503", async () => {
		const server = await resumer(200, '49');
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), waitAt(server.url, '49'));
		const started = await harness.startTrigger();
		try {
			const event = inboundEnvelope(
				{ from: CONTACT, number: NUMBER },
				serviceTimestamp(Date.now() - 6_000),
			);
			const late = await harness.receive(signedRequest(event, secret));
			expect(late.status).toBe(200);
			expect(late.body).toEqual({ received: true, resumed: '49' });
			expect(late.workflowData).toBeUndefined();
			await until(() => answeredIn(harness.globalStaticData) !== undefined);
			expect(server.bodies).toHaveLength(1);
			expect(Object.keys(answeredIn(harness.globalStaticData) as IDataObject)).toEqual([
				event.data.wa_message_id,
			]);
			const nobodyWaits = await harness.receive(
				signedRequest(
					inboundEnvelope(
						{ from: OTHER_CONTACT, number: NUMBER },
						serviceTimestamp(Date.now() - 6_000),
					),
					secret,
				),
			);
			expect(nobodyWaits.status).toBe(503);
		} finally {
			await started.close();
		}
	});

	it('the message that started the conversation, or an older one, never answers it (a recovered copy comes after the question); a newer one does', async () => {
		const server = await resumer(200);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		const greeting = inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'hello' });
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), {
			resumeUrl: server.url,
			waitId: 'w1',
			executionId: '44',
			expiresAtMs: Date.now() + 60_000,
			alsoStart: false,
			node: 'Ask',
			account: ACCOUNT,
			askedAfter: { id: greeting.data.wa_message_id, at: greeting.timestamp },
		});
		const older = inboundEnvelope(
			{ from: CONTACT, number: NUMBER, text: 'sent before' },
			serviceTimestamp(Date.parse(greeting.timestamp) - 2000),
		);
		// The greeting itself, delivered again later (another signature: as the catch-up brings it, newer stamp or not).
		const again = { ...greeting, timestamp: serviceTimestamp(Date.now() + 1000) };
		for (const copy of [older, again]) {
			const answer = await harness.receive(signedRequest(copy, secret));
			expect(answer.body).toEqual({ received: true });
			expect(answer.workflowData?.[0]?.[0]?.json).not.toHaveProperty('resumed_execution');
		}
		expect(server.bodies).toHaveLength(0);
		const reply = await harness.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'A-42' }), secret),
		);
		expect(reply.body).toEqual({ received: true, resumed: '44' });
		expect(server.bodies).toHaveLength(1);
	});

	it("answersAfterAsking: by the service's id and timestamp (microseconds included); no record, or an unreadable time, does not block", () => {
		const asked = { askedAfter: { id: 'wamid.G', at: '2026-11-26T10:00:00.123456+00:00' } };
		expect(answersAfterAsking({ id: 'wamid.G', at: '2026-11-26T10:00:09+00:00' }, asked)).toBe(
			false,
		);
		expect(
			answersAfterAsking({ id: 'wamid.X', at: '2026-11-26T10:00:00.123456+00:00' }, asked),
		).toBe(false);
		expect(
			answersAfterAsking({ id: 'wamid.X', at: '2026-11-26T10:00:00.123455+00:00' }, asked),
		).toBe(false);
		expect(
			answersAfterAsking({ id: 'wamid.X', at: '2026-11-26T10:00:00.123457+00:00' }, asked),
		).toBe(true);
		expect(answersAfterAsking({ id: 'wamid.X', at: 'yesterday' }, asked)).toBe(true);
		expect(answersAfterAsking({ id: 'wamid.G' }, {})).toBe(true);
	});

	it("Also Start the Trigger's Workflow: resumes and starts an execution", async () => {
		const server = await resumer(200);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), {
			resumeUrl: server.url,
			waitId: 'w1',
			executionId: '42',
			expiresAtMs: Date.now() + 60_000,
			alsoStart: true,
			node: 'Ask',
			account: ACCOUNT,
		});
		const answer = await harness.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER }), secret),
		);
		expect(server.bodies).toHaveLength(1);
		// Passed on, marked: a router sends it to its CRM branch, not to the conversation again.
		const [item] = (await harness.execute(answer.workflowData ?? [])).flat();
		expect(item.json).toMatchObject({ resumed_execution: '42', data: { from: CONTACT } });
		expect(item.json).not.toHaveProperty('__businessMessagingRecordOnly');
	});

	it('fail safe: a refused resume (the execution finished) starts a normal execution', async () => {
		const server = await resumer(409);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), waitAt(server.url, '43'));
		const answer = await harness.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER }), secret),
		);
		expect(server.bodies).toHaveLength(1);
		const [item] = (await harness.execute(answer.workflowData ?? [])).flat();
		expect(item.json).toMatchObject({ data: { from: CONTACT } });
		expect(item.json).not.toHaveProperty('resumed_execution');
	});

	// Issue 49: ids from static data (anyone's code may write there) reached n8n's log raw.
	it('an execution id with a line feed and a zero-width mark reaches the log as one safe line', async () => {
		const server = await resumer(409);
		servers.push(server);
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { harness, secret } = await activeTrigger();
		registerWaiting(
			harness.staticData,
			waitingKey(CONTACT, NUMBER),
			waitAt(server.url, '43\nERROR forged line\u200b\u202e'),
		);
		await harness.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER }), secret),
		);
		const lines = logged.info.filter((line) => line.includes('refused the answer'));
		expect(lines).toEqual([
			'Business Messaging Trigger: execution 43 ERROR forged line was waiting for this contact but refused the answer (409); the message starts a new execution',
		]);
	});

	it('fail safe: an unreachable resume URL, an expired entry, another contact or number: a normal execution', async () => {
		const { harness, secret } = await activeTrigger();
		registerWaiting(
			harness.staticData,
			waitingKey(CONTACT, NUMBER),
			waitAt('http://127.0.0.1:9/webhook-waiting/44', '44'),
		);
		expect(
			(
				await harness.receive(
					signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER }), secret),
				)
			).workflowData?.[0],
		).toHaveLength(1);

		const server = await resumer(200);
		servers.push(server);
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), {
			resumeUrl: server.url,
			waitId: 'w1',
			executionId: '45',
			expiresAtMs: Date.now() - 1,
			alsoStart: false,
			node: 'Ask',
			account: ACCOUNT,
		});
		registerWaiting(
			harness.staticData,
			waitingKey('+15550000000', NUMBER),
			waitAt(server.url, '46'),
		);
		for (const data of [
			{ from: CONTACT, number: NUMBER },
			{ from: '+15550000000', number: '999' },
		]) {
			expect(
				(await harness.receive(signedRequest(inboundEnvelope(data), secret))).workflowData?.[0],
			).toHaveLength(1);
		}
		expect(server.bodies).toHaveLength(0);
	});
});

// Issue 24: under a burst n8n took more than 4 s to take answers, and each slow resume started a
// new execution too: every contact was asked the question twice.
describe('trigger: a slow resume is not a failed one (never a second execution on a doubt)', () => {
	const servers: Resumer[] = [];
	afterEach(async () => {
		await Promise.all(servers.splice(0).map(async (s) => await s.close()));
	});
	const waitFor = (harness: WebhookHarness, url: string, executionId: string) =>
		registerWaiting(harness.staticData, waitingKey(CONTACT, NUMBER), {
			resumeUrl: url,
			waitId: 'w1',
			executionId,
			expiresAtMs: Date.now() + 60_000,
			alsoStart: false,
			node: 'Ask',
			account: ACCOUNT,
		});

	it('n8n takes 5 s to take the answer: the service is answered once it took it (never before the execution is stored), within its 8 s; nothing else starts', async () => {
		const server = await scriptedResumer([{ status: 200, delayMs: 5000 }]);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		waitFor(harness, server.url, '61');
		const answer = await harness.receive(
			signedRequest(inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'A-1' }), secret),
		);
		expect(answer.status).toBe(200);
		expect(answer.body).toEqual({ received: true, resumed: '61' });
		expect(answer.answeredAfterMs).toBeGreaterThanOrEqual(5000);
		expect(answer.answeredAfterMs).toBeLessThan(8000);
		await expectRecordedOnly(harness, answer, '61');
		expect(server.bodies).toHaveLength(1);
	}, 20_000);

	/** The contact writes (`text`) to a wait of `executionId` whose resume URL answers `steps`. */
	const answerThrough = async (
		steps: Parameters<typeof scriptedResumer>[0],
		executionId: string,
		text?: string,
	) => {
		const server = await scriptedResumer(steps);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		waitFor(harness, server.url, executionId);
		const answer = await harness.receive(
			signedRequest(
				inboundEnvelope({ from: CONTACT, number: NUMBER, ...(text && { text }) }),
				secret,
			),
		);
		return { harness, answer, server };
	};

	it('the execution has sent its question but is not waiting yet (409 "is running already"): asked again until it takes the answer', async () => {
		const running = { code: 409, message: 'The execution "62" is running already.' };
		const { harness, answer, server } = await answerThrough(
			[{ status: 409, body: running }, { status: 409, body: running }, { status: 200 }],
			'62',
		);
		expect(server.bodies).toHaveLength(3);
		await expectRecordedOnly(harness, answer, '62');
		expect(answer.body).toEqual({ received: true, resumed: '62' });
	}, 20_000);

	// Queue mode: a processor that registered a wait still holds it after another processor's answer
	// resumed it, and the contact writes again while that execution runs on: n8n says "running"
	// until the patience ends. It never took this message, so the message must not be dropped.
	/** The contact writes `text` to a wait of `executionId` whose resume URL answers `steps`; patience 1.5 s. */
	const untilPatienceEnds = async (
		steps: Parameters<typeof scriptedResumer>[0],
		executionId: string,
		text?: string,
	) => {
		jest.replaceProperty(RESUME_PATIENCE, 'totalMs', 1500);
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { harness, answer: message, server } = await answerThrough(steps, executionId, text);
		return { harness, message, logged, server };
	};

	it('"is running already" until the patience ends: n8n never took the message, so it starts a new execution (said), never dropped', async () => {
		const running = { code: 409, message: 'The execution "64" is running already.' };
		const { harness, message, logged, server } = await untilPatienceEnds(
			[{ status: 409, body: running }],
			'64',
			'and one more thing',
		);
		expect(server.bodies.length).toBeGreaterThanOrEqual(2);
		expect(message.body).toEqual({ received: true });
		const [item] = (await harness.execute(message.workflowData ?? [])).flat();
		expect(item.json).toMatchObject({ data: { from: CONTACT, text: 'and one more thing' } });
		expect(item.json).not.toHaveProperty('resumed_execution');
		expect(logged.warn.join('\n')).toMatch(
			/execution 64 was still running \(or not served yet\) after 1\.5 s and never took/,
		);
	}, 20_000);

	it('n8n answers 500 three times in a row (an execution a restart ended, its run data gone): the message starts a new execution after three attempts, said with its id, not posted for the whole patience', async () => {
		const gone = { message: "Cannot read properties of undefined (reading 'inputOverride')" };
		const { harness, message, logged, server } = await untilPatienceEnds(
			[{ status: 500, body: gone }],
			'66',
			'are you there?',
		);
		expect(server.bodies).toHaveLength(3);
		expect(message.body).toEqual({ received: true });
		const [item] = (await harness.execute(message.workflowData ?? [])).flat();
		expect(item.json).toMatchObject({ data: { from: CONTACT, text: 'are you there?' } });
		expect(item.json).not.toHaveProperty('resumed_execution');
		const id = (item.json.data as { wa_message_id: string }).wa_message_id;
		expect(logged.warn.join('\n')).toContain(
			`execution 66 waiting for this contact cannot take the answer: n8n answers 500`,
		);
		expect(logged.warn.join('\n')).toContain(`message ${id}: the message starts a new execution`);
	}, 20_000);

	it('no clear answer from n8n until the patience ends (502 each time): it may have been resumed, nothing else starts (said)', async () => {
		const { harness, message, logged } = await untilPatienceEnds([{ status: 502 }], '65');
		await expectRecordedOnly(harness, message, '65');
		expect(logged.warn.join('\n')).toMatch(/execution 65 waiting for this contact did not confirm/);
	}, 20_000);

	it('an attempt that may have reached n8n (no answer, 502), then "finished already": it was resumed, nothing else starts', async () => {
		const { harness, answer, server } = await answerThrough(
			[
				{ status: 502 },
				{ status: 409, body: { code: 409, message: 'The execution "63 has finished already.' } },
			],
			'63',
		);
		expect(server.bodies).toHaveLength(2);
		await expectRecordedOnly(harness, answer, '63');
	}, 20_000);

	// Queue kill-storm seed 20261205: a processor killed under an attempt (the balancer's 502), the next
	// attempt reached the processor starting again, whose 404 was taken for the first attempt's doing:
	// the answer counted as resumed and was lost with nothing said.
	it('an attempt that may have reached n8n (502), then a 404 of a process not serving resume URLs yet: not taken as resumed, asked again until n8n answers', async () => {
		const { harness, answer, server } = await answerThrough(
			[{ status: 502 }, { status: 404, body: 'Cannot POST /webhook-waiting/66' }, { status: 200 }],
			'66',
		);
		expect(server.bodies).toHaveLength(3);
		await expectRecordedOnly(harness, answer, '66');
	}, 20_000);

	it('n8n starting answers 200 "n8n is starting up. Please wait": not the waiting node, asked again until it takes the answer', async () => {
		const { harness, answer, server } = await answerThrough(
			[{ status: 200, body: 'n8n is starting up. Please wait' }, { status: 200 }],
			'68',
		);
		expect(server.bodies).toHaveLength(2);
		await expectRecordedOnly(harness, answer, '68');
	}, 20_000);

	it('a 502, then only 404s of a process not serving resume URLs until the patience ends: said, never counted as resumed in silence', async () => {
		const { harness, message, logged, server } = await untilPatienceEnds(
			[{ status: 502 }, { status: 404, body: 'Cannot POST /webhook-waiting/67' }],
			'67',
		);
		expect(server.bodies.length).toBeGreaterThanOrEqual(3);
		await expectRecordedOnly(harness, message, '67');
		expect(logged.warn.join('\n')).toMatch(/execution 67 waiting for this contact did not confirm/);
	}, 20_000);

	// Issue 49, kill -9 run o (n8n 2.41.1): n8n serves webhooks while it starts, before trigger() runs.
	// An answer then resumed its wait before n8n answered; another execution's save meanwhile dropped
	// the wait with nothing saying the answer was taken; a kill before the request's own save, and the
	// catch-up's copy of the answer (its delivery reset) started the conversation again.
	it('while the resume is under way, a copy another execution saves says the answer was taken (owed, then answered), never neither', async () => {
		const server = await scriptedResumer([{ status: 200, delayMs: 1000 }]);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		waitFor(harness, server.url, '71');
		const event = inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'A-1' });
		const messageId = String(event.data.wa_message_id);
		const answering = harness.receive(signedRequest(event, secret));
		await until(() => server.bodies.length === 1);
		const savedMeanwhile = currentCopy(harness.workflowId);
		expect(savedMeanwhile[STATIC_DATA_KEY] ?? {}).toEqual({});
		expect(Object.keys(owedIn(savedMeanwhile) as IDataObject)).toEqual([messageId]);
		const answer = await answering;
		await expectRecordedOnly(harness, answer, '71');
		const savedAfter = currentCopy(harness.workflowId);
		expect(owedIn(savedAfter)).toBeUndefined();
		expect(Object.keys(answeredIn(savedAfter) as IDataObject)).toContain(messageId);
	}, 20_000);

	it('a resume refused while no trigger runs here: the message starts its own execution, and no copy says it was answered, not even one saved during the resume', async () => {
		const server = await scriptedResumer([
			{ status: 403, body: { reason: 'not this wait' }, delayMs: 500 },
		]);
		servers.push(server);
		const { harness, secret } = await activeTrigger();
		waitFor(harness, server.url, '72');
		const event = inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'A-2' });
		const answering = harness.receive(signedRequest(event, secret));
		await until(() => server.bodies.length === 1);
		const savedMeanwhile = currentCopy(harness.workflowId);
		expect(Object.keys(owedIn(savedMeanwhile) as IDataObject)).toHaveLength(1);
		const answer = await answering;
		const [item] = (await harness.execute(answer.workflowData ?? [])).flat();
		expect(item.json).not.toHaveProperty('resumed_execution');
		// That copy, loaded again and brought up to date, no longer owes it: a restart posts nothing.
		keepWaitingEntriesCurrent(savedMeanwhile, harness.workflowId);
		for (const saved of [currentCopy(harness.workflowId), savedMeanwhile]) {
			expect(owedIn(saved)).toBeUndefined();
			expect((answeredIn(saved) ?? {}) as IDataObject).not.toHaveProperty(
				String(event.data.wa_message_id),
			);
		}
	});

	it("what n8n's answers mean (its waiting-webhooks.js)", () => {
		expect(classifyResumeAnswer({ statusCode: 200, body: { resumed: true } })).toBe('resumed');
		// Any other 2xx is not the waiting node's: n8n starting (it answers everything so while it
		// migrates), a proxy's page.
		expect(classifyResumeAnswer({ statusCode: 200, body: {} })).toBe('notServed');
		expect(classifyResumeAnswer({ statusCode: 200, body: 'n8n is starting up. Please wait' })).toBe(
			'notServed',
		);
		expect(
			classifyResumeAnswer({
				statusCode: 409,
				body: { message: 'The execution "5" is running already.' },
			}),
		).toBe('notYetWaiting');
		for (const message of [
			'The execution "5 has finished already.',
			'The execution "5" has finished with error.',
		])
			expect(classifyResumeAnswer({ statusCode: 409, body: { message } })).toBe('refused');
		for (const message of [
			'The execution "5" does not exist.',
			'The workflow for execution "5" does not contain a waiting webhook with a matching path/method.',
		])
			expect(classifyResumeAnswer({ statusCode: 404, body: { message } })).toBe('refused');
		// Not n8n's answer about the execution: a process not serving resumes yet, or a proxy.
		expect(classifyResumeAnswer({ statusCode: 404, body: {} })).toBe('notServed');
		expect(classifyResumeAnswer({ statusCode: 404, body: 'Cannot POST /webhook-waiting/5' })).toBe(
			'notServed',
		);
		expect(classifyResumeAnswer({ statusCode: 401, body: { error: 'Invalid token' } })).toBe(
			'refused',
		);
		expect(classifyResumeAnswer({ statusCode: 500, body: {} })).toBe('unclear');
		expect(
			classifyResumeAnswer({ error: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) }),
		).toBe('refused');
		expect(
			classifyResumeAnswer({
				error: Object.assign(new Error('timeout'), { code: 'ECONNABORTED' }),
			}),
		).toBe('unclear');
	});
});

// Issue 24: n8n saves static data whole, each request and execution from its own copy; with ten
// registrations at the same instant the last save kept one entry, and after a restart nine of ten
// answers started a new execution.
describe('waiting entries survive saves from older copies (last save wins)', () => {
	const entry = (executionId: string) => ({
		resumeUrl: `http://127.0.0.1:5678/webhook-waiting/${executionId}`,
		waitId: 'w1',
		executionId,
		expiresAtMs: Date.now() + 60_000,
		alsoStart: false,
		node: 'Ask',
		account: ACCOUNT,
		home: 'workflow-survive',
	});

	it('ten registrations, each into its own copy loaded before the others saved: the last copy, and any copy refreshed before its save, holds all ten', () => {
		const loaded = JSON.stringify({ other: 'kept' });
		const copies = Array.from({ length: 10 }, () => JSON.parse(loaded) as Record<string, unknown>);
		copies.forEach((copy, i) =>
			registerWaiting(copy as never, `n|+3360000000${i}`, entry(`${900 + i}`)),
		);
		expect(Object.keys(copies[9][STATIC_DATA_KEY] as object)).toHaveLength(10);
		// What Reply and Wait does right before n8n saves its execution's copy, and every request of the trigger.
		keepWaitingEntriesCurrent(copies[3] as never, 'workflow-survive');
		for (const saved of [copies[9], copies[3]]) {
			expect(saved.other).toBe('kept');
			// After a restart only the saved copy is left: every contact's answer finds its execution.
			for (let i = 0; i < 10; i++)
				expect(findWaiting(saved as never, [`n|+3360000000${i}`], ACCOUNT)?.entry.executionId).toBe(
					`${900 + i}`,
				);
		}
		for (let i = 0; i < 10; i++) removeWaiting(undefined, `n|+3360000000${i}`, `${900 + i}`);
	});

	it('an answered entry brought back by an older copy is neither resumed again nor kept', () => {
		const older: Record<string, unknown> = {};
		registerWaiting(older as never, 'n|+33611112222', entry('950'));
		const stale = JSON.parse(JSON.stringify(older)) as Record<string, unknown>;
		removeWaiting(older as never, 'n|+33611112222', '950');
		expect(findWaiting(stale as never, ['n|+33611112222'], ACCOUNT)).toBeUndefined();
		keepWaitingEntriesCurrent(stale as never, 'workflow-survive');
		expect(stale[STATIC_DATA_KEY]).toEqual({});
		// The same execution waiting again at the same node (a loop) is a new wait.
		registerWaiting(stale as never, 'n|+33611112222', entry('950'));
		expect(findWaiting(stale as never, ['n|+33611112222'], ACCOUNT)?.entry.executionId).toBe('950');
		removeWaiting(stale as never, 'n|+33611112222', '950');
	});

	// Queue mode: main's catch-up saves its copy (loaded at activation) over the processors' entries.
	it('a copy missing a wait this process wrote into a saved copy 15 s ago or more: written back and counted, so the trigger says so', () => {
		const now = Date.now();
		const first: Record<string, unknown> = {};
		registerWaiting(first as never, 'n|+33633334444', entry('970'), now);
		const wipedByMain: Record<string, unknown> = { other: 'kept' };
		// A copy loaded right after (a save in flight, not a drop): written back, not counted.
		expect(
			keepWaitingEntriesCurrent(wipedByMain as never, 'workflow-survive', now + 5_000),
		).toEqual({
			restored: 0,
		});
		const later: Record<string, unknown> = { other: 'kept' };
		expect(keepWaitingEntriesCurrent(later as never, 'workflow-survive', now + 16_000)).toEqual({
			restored: 1,
		});
		expect(findWaiting(later as never, ['n|+33633334444'], ACCOUNT)?.entry.executionId).toBe('970');
		// A copy that holds it: nothing to say.
		expect(keepWaitingEntriesCurrent(later as never, 'workflow-survive', now + 17_000)).toEqual({
			restored: 0,
		});
		removeWaiting(undefined, 'n|+33633334444', '970');
		expect(keepWaitingEntriesCurrent({} as never, 'workflow-survive', now + 18_000)).toEqual({
			restored: 0,
		});
	});

	// Issue 49, kill -9 run (2.41.1): n8n runs an execution stored before a kill again at boot from
	// the workflow as it was then; its save dropped what processes since had saved (answered ids),
	// and a later catch-up ran an answer again as a new conversation.
	it("a copy from an older snapshot keeps what the running trigger's copy holds from before this process: a wait, an answered id", () => {
		const home = 'workflow-base';
		const answered = 'wamid.answered-before-this-process';
		const triggerCopy: Record<string, unknown> = {
			[STATIC_DATA_KEY]: { 'n|+33655556666': { ...entry('980'), home } },
			[ANSWERS_KEY]: { [answered]: Date.now() + 3_600_000 },
		};
		const leave = triggerRunsHere({
			getWorkflow: () => ({ id: home }),
			getNode: () => ({ id: 'trigger' }),
			getWorkflowStaticData: () => triggerCopy,
		} as never);
		try {
			const snapshot: Record<string, unknown> = { other: 'kept' };
			registerWaiting(snapshot as never, 'n|+33677778888', { ...entry('981'), home });
			expect(snapshot.other).toBe('kept');
			expect(findWaiting(snapshot as never, ['n|+33655556666'], ACCOUNT)?.entry.executionId).toBe(
				'980',
			);
			expect(findWaiting(snapshot as never, ['n|+33677778888'], ACCOUNT)?.entry.executionId).toBe(
				'981',
			);
			expect(Object.keys(answeredIn(snapshot as IDataObject) as object)).toEqual([answered]);
		} finally {
			leave();
			removeWaiting(undefined, 'n|+33677778888', '981');
		}
	});

	it('the trigger logs a warning naming the cause when it writes dropped waits back, once a minute at most', async () => {
		const now = Date.now();
		registerWaiting({} as never, 'n|+33644445555', entry('971'), now);
		const warn = jest.fn();
		const context = {
			getWorkflowStaticData: () => ({}),
			getWorkflow: () => ({ id: 'workflow-survive' }),
			logger: { warn },
		};
		const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 20_000);
		try {
			await answerWaiting.call(context as never, undefined);
			await answerWaiting.call(context as never, undefined);
			expect(warn).toHaveBeenCalledTimes(1);
			expect(warn.mock.calls[0][0]).toMatch(
				/1 Reply and Wait for Answer wait\(s\) .* missing from the workflow's static data .* main's catch-up.* new execution/,
			);
		} finally {
			clock.mockRestore();
			removeWaiting(undefined, 'n|+33644445555', '971');
		}
	});

	it("another workflow's entries are never written into this workflow's static data", () => {
		registerWaiting(undefined, 'n|+33622223333', { ...entry('960'), home: 'another-workflow' });
		const copy: Record<string, unknown> = {};
		keepWaitingEntriesCurrent(copy as never, 'workflow-survive');
		expect(JSON.stringify(copy)).not.toContain('+33622223333');
		removeWaiting(undefined, 'n|+33622223333', '960');
	});
});

describe('the waiting registry (nodes/shared/replyAndWait/waitingEntries.ts)', () => {
	it('static data keeps live entries only; removal is by the same execution only', () => {
		const staticData: Record<string, unknown> = {};
		const now = Date.now();
		registerWaiting(
			staticData as never,
			'n|a',
			{
				resumeUrl: 'u1',
				waitId: 'w1',
				executionId: '1',
				expiresAtMs: now + 1000,
				alsoStart: false,
				node: 'Ask',
				account: ACCOUNT,
			},
			now,
		);
		registerWaiting(
			staticData as never,
			'n|b',
			{
				resumeUrl: 'u2',
				waitId: 'w1',
				executionId: '2',
				expiresAtMs: now - 1,
				alsoStart: false,
				node: 'Ask',
				account: ACCOUNT,
			},
			now - 10,
		);
		registerWaiting(
			staticData as never,
			'n|c',
			{
				resumeUrl: 'u3',
				waitId: 'w1',
				executionId: '3',
				expiresAtMs: now + 1000,
				alsoStart: false,
				node: 'Ask',
				account: ACCOUNT,
			},
			now,
		);
		expect(Object.keys(staticData[STATIC_DATA_KEY] as object).sort()).toEqual(['n|a', 'n|c']);
		removeWaiting(staticData as never, 'n|a', 'another execution');
		expect(findWaiting(staticData as never, ['n|a'], ACCOUNT, now)?.entry.executionId).toBe('1');
		removeWaiting(staticData as never, 'n|a', '1');
		expect(findWaiting(staticData as never, ['n|a'], ACCOUNT, now)).toBeUndefined();
		expect(findWaiting(staticData as never, ['n|b'], ACCOUNT, now)).toBeUndefined();
	});

	it('resume tokens: one per wait (execution, node, contact on number, wait id), key and answer', () => {
		const key = deriveKey('sk_live_0123456789abcdef', RESUME_KEY_LABEL);
		const wait = waitingKey(CONTACT, NUMBER);
		const answer = inboundEnvelope({ from: CONTACT, number: NUMBER, text: 'A-42' });
		const token = resumeToken(key, '57', 'Ask', wait, 'w1', answer);
		expect(token).toMatch(/^[0-9a-f]{64}$/);
		expect(key).not.toContain('sk_live_');
		expect(resumeToken(key, '57', 'Ask', wait, 'w1', JSON.parse(JSON.stringify(answer)))).toBe(
			token,
		);
		for (const other of [
			resumeToken(key, '570', 'Ask', wait, 'w1', answer),
			resumeToken(key, '57', 'Ask 2', wait, 'w1', answer),
			resumeToken(key, '57', 'Ask', waitingKey(OTHER_CONTACT, NUMBER), 'w1', answer),
			resumeToken(key, '57', 'Ask', wait, 'w2', answer),
			resumeToken(key, '57', 'Ask', wait, 'w1', { ...answer, data: { ...answer.data, text: 'B' } }),
			resumeToken(
				deriveKey('sk_live_0123456789abcdeF', RESUME_KEY_LABEL),
				'57',
				'Ask',
				wait,
				'w1',
				answer,
			),
		])
			expect(other).not.toBe(token);
		// An entry of an older version (a token stored in it, no node) is not used: the answer starts a normal execution.
		const staticData: Record<string, unknown> = {
			[STATIC_DATA_KEY]: {
				'n|a': {
					resumeUrl: 'u',
					executionId: '1',
					expiresAtMs: Date.now() + 1000,
					alsoStart: false,
					token: 't',
					account: ACCOUNT,
				},
			},
		};
		expect(findWaiting(staticData as never, ['n|a'], ACCOUNT)).toBeUndefined();
	});
});

/**
 * A contact writes (stored in the sandbox), and Reply and Wait asks them as an execution of another
 * process would: the given copy of the static data, resume URLs on the served trigger's origin.
 */
async function askAsAnotherProcess(
	origin: string,
	contact: string,
	staticData: IDataObject = {},
): Promise<Awaited<ReturnType<typeof runWorkflow>>> {
	const sent = await control(sb, 'POST', '/inbound', {
		from: contact,
		contact_name: 'Ada',
		number: sb.numbers[0].phone_number_id,
		text: 'hello',
	});
	return await runWorkflow({
		...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 5, waitUnit: 'minutes' }),
		credentials: credentialsFor(sb),
		inputItems: [inboundItem(sent.body.record)],
		mode: 'webhook',
		staticData,
		webhookWaitingBaseUrl: `${origin}/webhook-waiting`,
	});
}

// Queue mode: Reply and Wait runs on a worker with an empty static data copy it must not save, and
// the answer reaches a webhook processor. So it posts its entries to the account's webhook (the
// trigger), which keeps them in its workflow's static data: what every n8n process reads.
describe('Reply and Wait registers through the trigger (no shared memory, as between n8n processes)', () => {
	it("the entry lands in the trigger's static data from a worker-like execution (empty copy, nothing saved there)", async () => {
		const served = await servedTrigger(sb);
		try {
			const origin = new URL(served.served.url).origin;
			const number = sb.numbers[0].phone_number_id;
			const emptyCopy = {};
			const run = await askAsAnotherProcess(origin, CONTACT, emptyCopy);
			expect(run.execution.status).toBe('waiting');
			// Nothing for n8n to save from the worker's copy (reading it created an empty "global", not a change).
			expect((emptyCopy as { __dataChanged?: boolean }).__dataChanged).toBe(false);
			expect(JSON.stringify(emptyCopy)).not.toContain(STATIC_DATA_KEY);
			const registrations = served.results.filter(
				(r) => (r.body as { registered?: number })?.registered !== undefined,
			);
			expect(registrations.map((r) => [r.status, r.body, r.workflowData])).toEqual([
				[200, { registered: 1 }, undefined],
			]);
			const stored = findWaiting(
				served.harness.globalStaticData,
				[waitingKey(CONTACT, number)],
				ACCOUNT,
			);
			expect(stored?.entry.resumeUrl.startsWith(`${origin}/webhook-waiting/`)).toBe(true);
			// Static data holds the resume URL and what identifies the wait, never a token.
			expect(stored?.entry).toEqual({
				resumeUrl: expect.any(String),
				executionId: expect.any(String),
				node: 'Ask',
				// New each time the node waits: a token answers this wait only.
				waitId: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
				expiresAtMs: expect.any(Number),
				alsoStart: false,
				account: ACCOUNT,
				// The trigger's workflow: every save of its static data from this process carries the entry.
				home: expect.any(String),
				// The message it was answering, never its answer.
				askedAfter: { id: expect.any(String), at: expect.any(String) },
			});
		} finally {
			await served.down();
		}
	});

	// Issue 49, kill -9 run (2.41.1, seed 777): n8n re-runs the executions a kill left `new` at boot,
	// from the workflow stored with them and before any trigger runs; Reply and Wait saving that older
	// copy dropped an answered record saved since, and the answer ran again as a new conversation.
	it("an execution with an older copy of the trigger's workflow (re-run at boot): the trigger takes the entry, and the execution leaves its copy unchanged, so n8n saves nothing older over the database", async () => {
		const served = await servedTrigger(sb);
		try {
			const origin = new URL(served.served.url).origin;
			const number = sb.numbers[0].phone_number_id;
			const olderCopy: IDataObject = {
				global: { [TRIGGER_MARKER_KEY]: true, other: 'as at the kill' },
			};
			const run = await askAsAnotherProcess(origin, CONTACT, olderCopy);
			expect(run.execution.status).toBe('waiting');
			expect(olderCopy.global).toEqual({ [TRIGGER_MARKER_KEY]: true, other: 'as at the kill' });
			expect((olderCopy.global as { __dataChanged?: boolean }).__dataChanged).toBe(false);
			expect(
				findWaiting(served.harness.globalStaticData, [waitingKey(CONTACT, number)], ACCOUNT),
			).toBeDefined();
		} finally {
			await served.down();
		}
	});

	it('posts the registration a second time 1.5 s later (behind a balancer it usually reaches another webhook processor, which then holds the entry too)', async () => {
		const served = await servedTrigger(sb);
		try {
			const origin = new URL(served.served.url).origin;
			const run = await askAsAnotherProcess(origin, OTHER_CONTACT);
			expect(run.execution.status).toBe('waiting');
			const registered = () =>
				served.results
					.filter((r) => (r.body as { registered?: number })?.registered !== undefined)
					.map((r) => [r.status, r.body]);
			expect(registered()).toEqual([[200, { registered: 1 }]]);
			await new Promise((resolve) => setTimeout(resolve, 2500));
			// Each a fresh, separately signed request: the replay guard takes both.
			expect(registered()).toEqual([
				[200, { registered: 1 }],
				[200, { registered: 1 }],
			]);
		} finally {
			await served.down();
		}
	});

	it('refuses a registration not signed with its API key (401), and keeps none whose resume URL is not of its own n8n', async () => {
		const { harness } = await activeTrigger();
		const origin = new URL(harness.webhookUrl).origin;
		const entry = waitAt(`${origin}/webhook-waiting/77?signature=s`, '77');
		const register = async (body: unknown, sign: (raw: string) => string) => {
			const raw = JSON.stringify(body);
			return await harness.receive({
				headers: { 'content-type': 'application/json', [REGISTRATION_HEADER]: sign(raw) },
				rawBody: raw,
				webhookName: 'setup',
			});
		};
		const body = {
			business_messaging_wait: [{ key: waitingKey(CONTACT, NUMBER), entry }],
			issued_at_ms: Date.now(),
		};
		for (const sign of [
			(raw: string) => signRegistration(sb.keys.oneNumber, raw),
			() => 'sha256=00',
			(raw: string) => signRegistration(sb.keys.all, `${raw} `),
		]) {
			const refused = await register(body, sign);
			expect([refused.status, refused.body, refused.workflowData]).toEqual([
				401,
				{
					error: 'unauthorized',
					reason: 'the request is not signed for this webhook',
				},
				undefined,
			]);
		}
		expect(harness.globalStaticData[STATIC_DATA_KEY]).toBeUndefined();
		const elsewhere = {
			business_messaging_wait: [
				{
					key: waitingKey(CONTACT, NUMBER),
					entry: { ...entry, resumeUrl: 'https://attacker.example/webhook-waiting/77' },
				},
				{
					key: waitingKey(CONTACT, NUMBER),
					// Not anchored on 2458c7e: any path containing /webhook-waiting/<id> was taken.
					entry: { ...entry, resumeUrl: `${origin}/rest/webhook-waiting/77/x` },
				},
				{
					key: waitingKey(CONTACT, NUMBER),
					entry: { ...entry, resumeUrl: `${origin}/webhook-waiting/77/extra` },
				},
			],
			issued_at_ms: Date.now(),
		};
		expect((await register(elsewhere, (raw) => signRegistration(sb.keys.all, raw))).body).toEqual({
			registered: 0,
		});
		expect(harness.globalStaticData[STATIC_DATA_KEY]).toBeUndefined();
		const taken = await register(body, (raw) => signRegistration(sb.keys.all, raw));
		expect([taken.status, taken.body, taken.workflowData]).toEqual([
			200,
			{ registered: 1 },
			undefined,
		]);
		expect(
			findWaiting(harness.globalStaticData, [waitingKey(CONTACT, NUMBER)], ACCOUNT)?.entry
				.executionId,
		).toBe('77');
	});

	it('takes a signed registration once and only while fresh: a captured one replayed, or an old one, is refused (401)', async () => {
		const { harness } = await activeTrigger();
		const origin = new URL(harness.webhookUrl).origin;
		const entry = (id: string) => waitAt(`${origin}/webhook-waiting/${id}`, id);
		const post = async (body: unknown) => {
			const raw = JSON.stringify(body);
			return await harness.receive({
				headers: {
					'content-type': 'application/json',
					[REGISTRATION_HEADER]: signRegistration(sb.keys.all, raw),
				},
				rawBody: raw,
				webhookName: 'setup',
			});
		};
		const first = {
			business_messaging_wait: [{ key: waitingKey(CONTACT, NUMBER), entry: entry('81') }],
			issued_at_ms: Date.now(),
		};
		expect((await post(first)).body).toEqual({ registered: 1 });
		// The contact answered (entry removed), then a newer wait for the same contact was registered.
		removeWaiting(harness.globalStaticData, waitingKey(CONTACT, NUMBER), '81');
		const newer = {
			business_messaging_wait: [{ key: waitingKey(CONTACT, NUMBER), entry: entry('82') }],
			issued_at_ms: Date.now(),
		};
		expect((await post(newer)).body).toEqual({ registered: 1 });
		// The captured first registration, replayed byte for byte: refused, the newer wait stays.
		const replayed = await post(first);
		expect([replayed.status, replayed.body]).toEqual([
			401,
			{
				error: 'unauthorized',
				reason: 'the request is not signed for this webhook',
			},
		]);
		// The guard is this process's: another process takes the same bytes while they are fresh, so
		// fresh is short (a minute), and a registration issued 90 s ago (or 30 s ahead) is refused.
		for (const issued of [Date.now() - 90_000, Date.now() + 30_000]) {
			const late = await post({ ...first, issued_at_ms: issued });
			expect([late.status, late.body]).toEqual([
				401,
				{ error: 'unauthorized', reason: 'the request is not signed for this webhook' },
			]);
		}
		const stale = { ...first, issued_at_ms: Date.now() - 6 * 60_000 };
		const old = await post(stale);
		expect(old.status).toBe(401);
		expect(old.body).toEqual({
			error: 'unauthorized',
			reason: 'the request is not signed for this webhook',
		});
		const unstamped = { business_messaging_wait: first.business_messaging_wait };
		expect((await post(unstamped)).status).toBe(401);
		// Signed, but not an object (a list of them): refused as malformed, nothing taken.
		expect((await post([newer])).status).toBe(400);
		expect(
			findWaiting(harness.globalStaticData, [waitingKey(CONTACT, NUMBER)], ACCOUNT)?.entry
				.executionId,
		).toBe('82');
	});

	it('1,000 forged registrations cost one credential read, as forged events do (not one each)', async () => {
		const { harness } = await activeTrigger();
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		const raw = JSON.stringify({ business_messaging_wait: [], issued_at_ms: Date.now() });
		for (let i = 0; i < 1000; i++) {
			const answer = await harness.receive({
				headers: {
					'content-type': 'application/json',
					[REGISTRATION_HEADER]: `sha256=${i.toString(16).padStart(64, '0')}`,
				},
				rawBody: raw,
				webhookName: 'setup',
			});
			expect(answer.status).toBe(401);
		}
		expect(reads.mock.calls.length).toBeLessThanOrEqual(1);
	});

	it("a registration is bounded: at most 100 entries, each of the trigger's account and ending no later than a wait can; 1,500 entries answered at once, not after seconds", async () => {
		const { harness } = await activeTrigger();
		const origin = new URL(harness.webhookUrl).origin;
		const entry = (i: number, extra: IDataObject = {}) => ({
			key: waitingKey(`+1555000${String(i).padStart(4, '0')}`, NUMBER),
			entry: {
				resumeUrl: `${origin}/webhook-waiting/${i}`,
				waitId: 'w1',
				executionId: String(i),
				expiresAtMs: Date.now() + 60 * 60_000,
				alsoStart: false,
				node: 'Ask',
				account: ACCOUNT,
				...extra,
			},
		});
		const post = async (entries: unknown[]) => {
			const raw = JSON.stringify({ business_messaging_wait: entries, issued_at_ms: Date.now() });
			const startedAt = Date.now();
			const answer = await harness.receive({
				headers: {
					'content-type': 'application/json',
					[REGISTRATION_HEADER]: signRegistration(sb.keys.all, raw),
				},
				rawBody: raw,
				webhookName: 'setup',
			});
			return { ...answer, ms: Date.now() - startedAt };
		};
		const many = await post(Array.from({ length: 1500 }, (_, i) => entry(i)));
		expect([many.status, many.body]).toEqual([
			400,
			{ error: 'bad_request', reason: 'the request is not a valid event of the service' },
		]);
		// Before the bound (and linear registration) one such request blocked n8n's event loop 2.1 s here.
		expect(many.ms).toBeLessThan(500);
		expect(harness.globalStaticData[STATIC_DATA_KEY]).toBeUndefined();
		const mixed = await post([
			entry(1),
			entry(2, { account: 'f'.repeat(32) }),
			entry(3, { expiresAtMs: Date.parse('3001-01-01') }),
			entry(4, { expiresAtMs: Date.now() - 1 }),
		]);
		expect([mixed.status, mixed.body]).toEqual([200, { registered: 1 }]);
		expect(Object.keys(harness.globalStaticData[STATIC_DATA_KEY] as IDataObject)).toEqual([
			entry(1).key,
		]);
		// 100 in one request, and 15 such requests in a row, register in linear time.
		const startedAt = Date.now();
		for (let at = 0; at < 1500; at += 100) {
			const answer = await post(Array.from({ length: 100 }, (_, i) => entry(10_000 + at + i)));
			expect(answer.body).toEqual({ registered: 100 });
		}
		expect(Date.now() - startedAt).toBeLessThan(3000);
	});

	it('a changed API key takes over within 5 minutes: a registration signed with the old key is refused after that', async () => {
		const { harness } = await activeTrigger();
		const origin = new URL(harness.webhookUrl).origin;
		let now = Date.now();
		jest.spyOn(Date, 'now').mockImplementation(() => now);
		const post = async (apiKey: string, id: string) => {
			const raw = JSON.stringify({
				business_messaging_wait: [
					{
						key: waitingKey(CONTACT, NUMBER),
						entry: {
							resumeUrl: `${origin}/webhook-waiting/${id}`,
							waitId: 'w1',
							executionId: id,
							expiresAtMs: now + 60 * 60_000,
							alsoStart: false,
							node: 'Ask',
							account: accountId(apiKey),
						},
					},
				],
				issued_at_ms: now,
			});
			return await harness.receive({
				headers: {
					'content-type': 'application/json',
					[REGISTRATION_HEADER]: signRegistration(apiKey, raw),
				},
				rawBody: raw,
				webhookName: 'setup',
			});
		};
		expect((await post(sb.keys.all, '101')).status).toBe(200);
		// The credential's API key is changed (the old one revoked at the service).
		const original = HarnessCredentialsHelper.prototype.getDecrypted;
		jest
			.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted')
			.mockImplementation(async function (this: HarnessCredentialsHelper, ...args) {
				return { ...(await original.apply(this, args)), apiKey: sb.keys.oneNumber };
			});
		now += 6 * 60_000;
		const old = await post(sb.keys.all, '102');
		expect(old.status).toBe(401);
		expect((await post(sb.keys.oneNumber, '103')).status).toBe(200);
	});

	it('the event URL takes no registration: a signed one there gets the generic 401, no credential read, nothing stored', async () => {
		const { harness } = await activeTrigger();
		const origin = new URL(harness.webhookUrl).origin;
		const raw = JSON.stringify({
			business_messaging_wait: [
				{
					key: waitingKey(CONTACT, NUMBER),
					entry: waitAt(`${origin}/webhook-waiting/91`, '91'),
				},
			],
			issued_at_ms: Date.now(),
		});
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		reads.mockClear();
		const answer = await harness.receive({
			headers: {
				'content-type': 'application/json',
				[REGISTRATION_HEADER]: signRegistration(sb.keys.all, raw),
			},
			rawBody: raw,
		});
		expect([answer.status, answer.body, answer.workflowData]).toEqual([
			401,
			{ error: 'unauthorized', reason: 'the request is not signed for this webhook' },
			undefined,
		]);
		expect(reads).not.toHaveBeenCalled();
		expect(harness.globalStaticData[STATIC_DATA_KEY]).toBeUndefined();
		// Its own URL: the event URL's last segment replaced, on the same webhook id.
		expect(harness.webhookUrlOf('setup')).toBe(
			harness.webhookUrl.replace(/\/webhook$/, '/wait-registration'),
		);
	});

	it("posts registrations only to a trigger's URL of this n8n, and never along a redirect", async () => {
		// A server on "this n8n's" origin that answers every request with a redirect to the real trigger.
		const served = await servedTrigger(sb);
		const hits: string[] = [];
		const redirector: Server = createServer((req, res) => {
			hits.push(`${req.method} ${req.url}`);
			req.resume();
			res.writeHead(307, { location: served.served.url }).end();
		});
		await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
		const origin = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
		try {
			const number = sb.numbers[0].phone_number_id;
			const sent = await control(sb, 'POST', '/inbound', {
				from: CONTACT,
				contact_name: 'Ada',
				number,
				text: 'hi',
			});
			const ask = async () =>
				await runWorkflow({
					...replyAndWaitWorkflow({ limitWaitTime: true, waitAmount: 5, waitUnit: 'minutes' }),
					credentials: credentialsFor(sb),
					inputItems: [inboundItem(sent.body.record)],
					mode: 'webhook',
					staticData: {},
					webhookWaitingBaseUrl: `${origin}/webhook-waiting`,
				});
			// The account's webhook on this n8n's origin, but not a trigger's URL: nothing is posted.
			await registerForeign(sb, `${origin}/rest/oauth2-credential/callback`);
			expect((await ask()).execution.status).toBe('waiting');
			expect(hits).toEqual([]);
			// A trigger-shaped URL that redirects: posted once, the redirect is not followed.
			await registerForeign(sb, `${origin}/3f0c8c4e-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook`);
			expect((await ask()).execution.status).toBe('waiting');
			// To the trigger's registration URL: its event URL's last segment replaced.
			expect(hits).toEqual(['POST /3f0c8c4e-1b2a-4c5d-9e8f-0a1b2c3d4e5f/wait-registration']);
			expect(
				served.results.filter((r) => (r.body as { registered?: number })?.registered !== undefined),
			).toEqual([]);
		} finally {
			await new Promise<void>((r) => redirector.close(() => r()));
			await served.down();
		}
	});
});
