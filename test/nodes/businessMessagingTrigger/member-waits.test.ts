// Several triggers on one account (docs/several-workflows.md §8): Reply and Wait, hand over and
// Download Media for every member. Triggers of one n8n (one origin, one real HTTP server) against
// the sandbox; the waiting execution's resume URL is a real HTTP server standing in for n8n's
// /webhook-waiting/ (the whole path runs in real n8n in test/e2e/checks/severalWorkflows.ts, T10).
import { createHmac } from 'crypto';

import { request } from 'undici';

import type { WebhookHarness, WebhookReceiveResult } from '../../harness';
import {
	STATIC_DATA_KEY,
	accountId,
	registerWaiting,
	triggerIdentity,
	waitingKey,
	type WaitingEntry,
} from '../../../nodes/shared/replyAndWait';
import { RESUMED_BY_HOLDER } from '../../../nodes/BusinessMessagingTrigger/receiving/receive';
import {
	DELIVERY_HEADER,
	FORWARDED_AT_HEADER,
	FORWARD_HEADER,
	RESUMED_HEADER,
	signForward,
} from '../../../nodes/BusinessMessagingTrigger/receiving/forward';
import {
	membersWaits,
	ownWaits,
	type WaitRole,
} from '../../../nodes/BusinessMessagingTrigger/routing/whoseWait';
import { CONTACT, OTHER_CONTACT, inboundEnvelope, signedRequest, useSandbox } from '../../support';
import { catchUpOnce } from '../../../nodes/BusinessMessagingTrigger/catchUp/catchUp';
import { SETTLE_MS } from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import { readTriggerOptions } from '../../../nodes/BusinessMessagingTrigger/options';
import {
	apiCalls,
	control,
	executionsOf,
	resumer as waitingEndpoint,
	servedTrigger,
	type Json,
	type Resumer,
	textsOf,
	type TriggersOfOneN8n,
	until as untilShared,
	useTriggersOfOneN8n,
} from './helpers';

const sb = useSandbox({ reset: 'never' });
const number = () => sb.numbers[0].phone_number_id;

const resumers: Resumer[] = [];
afterEach(async () => {
	await Promise.all(resumers.splice(0).map(async (resumer) => await resumer.close()));
	sb.reset();
});
const triggersOfOneN8n = useTriggersOfOneN8n(sb);

/** Triggers of one n8n behind one server, activated in order: the first holds, the others join. */
async function oneN8n(...parameters: Json[]): Promise<TriggersOfOneN8n> {
	const running = await triggersOfOneN8n(...parameters);
	for (const harness of running.harnesses) await harness.activate();
	expect(sb.state().webhook.url).toBe(running.harnesses[0].webhookUrl);
	expect(apiCalls(sb, 'POST', '/v1/console/webhook')).toBe(1);
	return running;
}

/** n8n's /webhook-waiting/ for one waiting execution (77), closed after the test. */
async function resumer(status: number): Promise<Resumer> {
	const made = await waitingEndpoint(status, '77');
	resumers.push(made);
	return made;
}

const workflowOf = (harness: WebhookHarness) =>
	harness.triggerContext().context.getWorkflow().id as string;

/** A Reply and Wait of `workflowId` waiting for `contact`, as the operation registers it. */
function waitFor(resumeUrl: string, workflowId: string, overrides: Partial<WaitingEntry> = {}) {
	return {
		resumeUrl,
		executionId: '77',
		expiresAtMs: Date.now() + 60_000,
		alsoStart: false,
		node: 'Ask',
		account: accountId(sb.keys.all),
		workflowId,
		...overrides,
	};
}

const executions = executionsOf;
const texts = textsOf;

/** The forwards are not awaited by the holder: wait until `done` holds, then a little for any extra. */
const until = async (done: () => boolean) => await untilShared(done, 5000, 150);

async function answer(text: string, from = CONTACT, delivered = true) {
	const sent = await control(sb, 'POST', '/inbound', {
		from,
		contact_name: 'Ada',
		number: number(),
		text,
	});
	expect(sent.body.delivery).toMatchObject({ delivered });
}

describe('Reply and Wait with several triggers (§8)', () => {
	it("the conversation's workflow is a member: its wait resumed once, it is not started; every other workflow starts once", async () => {
		const waiting = await resumer(200);
		// auto-reply holds; the conversation and the CRM sync are members.
		const { harnesses, results } = await oneN8n({}, {}, {});
		const [, conversation] = harnesses;
		registerWaiting(
			conversation.globalStaticData,
			waitingKey(CONTACT, number()),
			waitFor(waiting.url, workflowOf(conversation), { home: workflowOf(conversation) }),
		);
		await answer('A-42');
		await until(() => executions(results[2]).length === 1 && results[1].length === 1);
		expect(waiting.bodies).toHaveLength(1);
		expect(waiting.bodies[0].answer.data.text).toBe('A-42');
		expect(texts(results[0])).toEqual(['A-42']);
		expect(texts(results[2])).toEqual(['A-42']);
		expect(executions(results[1])).toHaveLength(0);
		expect(results[1].map((r) => r.body)).toEqual([{ received: true, ignored: RESUMED_BY_HOLDER }]);
		// The next message of the contact is a new conversation, in every workflow.
		await answer('again');
		await until(() => executions(results[1]).length === 1 && executions(results[2]).length === 2);
		expect(waiting.bodies).toHaveLength(1);
		expect([texts(results[0]), texts(results[1]), texts(results[2])]).toEqual([
			['A-42', 'again'],
			['again'],
			['A-42', 'again'],
		]);
	});

	it('Also Start the Trigger’s Workflow: resumed once, and the conversation’s workflow starts once too', async () => {
		const waiting = await resumer(200);
		const { harnesses, results } = await oneN8n({}, {});
		const [, conversation] = harnesses;
		registerWaiting(
			conversation.globalStaticData,
			waitingKey(CONTACT, number()),
			waitFor(waiting.url, workflowOf(conversation), { alsoStart: true }),
		);
		await answer('yes, and start');
		await until(() => executions(results[1]).length === 1);
		expect(waiting.bodies).toHaveLength(1);
		expect(texts(results[0])).toEqual(['yes, and start']);
		expect(texts(results[1])).toEqual(['yes, and start']);
	});

	it("the wait's workflow has no member trigger: the holder's workflow plays that part, as with one trigger", async () => {
		const waiting = await resumer(200);
		const { results } = await oneN8n({}, {});
		registerWaiting(
			undefined,
			waitingKey(CONTACT, number()),
			waitFor(waiting.url, 'a-workflow-without-a-trigger'),
		);
		await answer('for the holder');
		await until(() => executions(results[1]).length === 1);
		expect(waiting.bodies).toHaveLength(1);
		expect(executions(results[0])).toHaveLength(0);
		expect(results[0].map((r) => r.body)).toContainEqual({ received: true, resumed: '77' });
		expect(texts(results[1])).toEqual(['for the holder']);
	});

	it('fail safe: the execution refuses the answer (finished): the conversation’s workflow starts instead', async () => {
		const waiting = await resumer(404);
		const { harnesses, results } = await oneN8n({}, {});
		const [, conversation] = harnesses;
		registerWaiting(
			undefined,
			waitingKey(CONTACT, number()),
			waitFor(waiting.url, workflowOf(conversation)),
		);
		await answer('too late');
		await until(() => executions(results[1]).length === 1);
		expect(waiting.bodies).toHaveLength(1);
		expect(texts(results[0])).toEqual(['too late']);
		expect(texts(results[1])).toEqual(['too late']);
	});

	it("a wait only in the member's own static data (the holder never saw it, as after a restart): the member resumes it", async () => {
		const waiting = await resumer(200);
		const { harnesses, results } = await oneN8n({}, {});
		const [, conversation] = harnesses;
		// As n8n loads it after a restart: in the workflow's static data, in no process's memory.
		conversation.globalStaticData[STATIC_DATA_KEY] = {
			[waitingKey(OTHER_CONTACT, number())]: waitFor(waiting.url, workflowOf(conversation), {
				home: workflowOf(conversation),
			}),
		};
		await answer('after a restart', OTHER_CONTACT);
		await until(() => results[1].length === 1);
		expect(waiting.bodies).toHaveLength(1);
		expect(executions(results[1])).toHaveLength(0);
		expect(results[1][0].body).toEqual({ received: true, resumed: '77' });
		expect(texts(results[0])).toEqual(['after a restart']);
	});

	it('the resumed header is signed: one added to, or changed in, a forward is refused (401), nothing runs', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [, member] = harnesses;
		const { rawBody, headers } = signedRequest(
			inboundEnvelope({ number: number() }),
			String(sb.state().webhook.secret),
		);
		const forwardKey = createHmac('sha256', sb.keys.all)
			.update('business-messaging forward v1')
			.digest('hex');
		const send = async (signedFor: string, sent: string | undefined) => {
			const at = Date.now();
			const response = await request(member.webhookUrl, {
				method: 'POST',
				headers: {
					'content-type': 'application/json',
					[FORWARD_HEADER]: signForward(forwardKey, at, signedFor, rawBody),
					[FORWARDED_AT_HEADER]: String(at),
					[DELIVERY_HEADER]: `${headers['x-service-signature']}${signedFor}`,
					...(sent !== undefined && { [RESUMED_HEADER]: sent }),
				},
				body: rawBody,
			});
			await response.body.text();
			return response.statusCode;
		};
		const own = workflowOf(member);
		// Added (would silence the member), changed (would start it), removed.
		expect(await send('', own)).toBe(401);
		expect(await send(`${own};also-start`, own)).toBe(401);
		expect(await send(own, undefined)).toBe(401);
		expect(results[1].filter((r) => r.workflowData !== undefined)).toHaveLength(0);
		// Signed as sent: nothing runs in the workflow whose wait was resumed.
		expect(await send(own, own)).toBe(200);
		expect(executions(results[1])).toHaveLength(0);
	});

	it('whose wait a trigger resumes (pure): its own; the holder also those of workflows with no member trigger', () => {
		const holder: WaitRole = { workflowId: 'H', memberWorkflows: new Set(['C']) };
		const member: WaitRole = { workflowId: 'C' };
		const entry = (workflowId?: string, home?: string) =>
			({ ...waitFor('u', ''), workflowId, home }) as WaitingEntry;
		const own = (role: WaitRole) =>
			[entry('H'), entry('C'), entry('X'), entry(undefined, 'C'), entry(undefined, 'H')].map(
				ownWaits(role),
			);
		expect(own(holder)).toEqual([true, false, true, true, true]);
		expect(own(member)).toEqual([false, true, false, true, false]);
		expect([entry('H'), entry('C'), entry('X'), entry()].map(membersWaits(holder))).toEqual([
			false,
			true,
			false,
			false,
		]);
	});
});

describe('a recovered answer (the catch-up): each trigger resumes only its own part (§8)', () => {
	// It failed now and then (2026-11-24/25) when the first answer was stored in the millisecond of `since`: the
	// watermark compared created_at texts ('.383807+00:00' before '.383Z'); nodes/shared/watermark.ts now reads micros.
	it("a member's catch-up resumes its own workflow's wait, and starts its workflow for another workflow's (that one's trigger resumes it)", async () => {
		// Contacts of their own: a recovered message waits behind its contact's earlier recovered executions, and
		// the other tests' contacts may still have one held in this process.
		const OWN_CONTACT = '+33699990001';
		const ANOTHER_CONTACT = '+33699990002';
		const waiting = await resumer(200);
		const served = await servedTrigger(sb, {});
		try {
			const since = { createdAt: sb.now().toISOString(), ids: [] };
			await served.down();
			await answer('answered while n8n was down', OWN_CONTACT, false);
			await answer('to another workflow', ANOTHER_CONTACT, false);
			await served.up();
			const held = served.harness.triggerContext('init');
			const own = workflowOf(served.harness);
			// A member: its node static data names the holder.
			(held.context.getWorkflowStaticData('node') as Json).membership = {
				holderUrl: 'http://127.0.0.1:1/webhook/00000000-0000-4000-8000-000000000000/webhook',
			};
			const hour = { expiresAtMs: Date.now() + 3600_000 };
			registerWaiting(
				undefined,
				waitingKey(OWN_CONTACT, number()),
				waitFor(waiting.url, own, { ...hour, executionId: '81' }),
			);
			registerWaiting(
				undefined,
				waitingKey(ANOTHER_CONTACT, number()),
				waitFor(waiting.url, 'another-workflow', { ...hour, executionId: '82' }),
			);
			// n8n's clock past the settle time of what the service stored.
			const now = Date.now();
			jest.spyOn(Date, 'now').mockImplementation(() => now + SETTLE_MS + 5000);
			await catchUpOnce.call(
				held.context,
				{ watermarks: { 'message.inbound': since } },
				readTriggerOptions({}),
				triggerIdentity(sb.keys.all),
				() => false,
				() => undefined,
			);
			// Up to 20 s: under the full suite (parallel Jest workers on 2 cores) the recovered resume comes late.
			for (let i = 0; i < 400 && (held.emitted.length < 1 || waiting.bodies.length < 1); i++) {
				for (const execution of held.executions) execution?.resolve({} as never);
				await new Promise((resolve) => setTimeout(resolve, 50));
			}
			await new Promise((resolve) => setTimeout(resolve, 300));
			for (const execution of held.executions) execution?.resolve({} as never);
			expect(waiting.bodies.map((body) => body.answer.data.text)).toEqual([
				'answered while n8n was down',
			]);
			expect(held.emitted.map((data) => (data.flat()[0].json.data as Json).text)).toEqual([
				'to another workflow',
			]);
		} finally {
			jest.restoreAllMocks();
			await served.close();
		}
	});
});

describe('hand over and Download Media run in each member with its own options (§8)', () => {
	const PNG = Buffer.from(
		'89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489',
		'hex',
	);

	it('hand over only where it is on: the Hand Over output in that member, the main output elsewhere', async () => {
		const { results } = await oneN8n(
			{},
			{ options: { handOver: 'output', handOverMinutes: 30 } },
			{ options: { handOver: 'drop' } },
		);
		await control(sb, 'POST', '/echo', { to: CONTACT, number: number(), text: 'A person here' });
		await answer('to a person');
		const dropped = (list: WebhookReceiveResult[]) =>
			list.filter((r) => /person is answering/.test(String((r.body as Json)?.ignored)));
		await until(() => executions(results[1]).length === 1 && dropped(results[2]).length === 1);
		const outputs = (list: WebhookReceiveResult[]) =>
			executions(list).map((r) =>
				r.workflowData!.map((output) => output.map((item) => (item.json.data as Json).text)),
			);
		expect(outputs(results[0])).toEqual([[['to a person']]]);
		expect(outputs(results[1])).toEqual([[[], ['to a person']]]);
		expect(outputs(results[2])).toEqual([]);
		expect(dropped(results[2])).toHaveLength(1);
	});

	it('Download Media in two members, each into its own field; a member without it gets no file', async () => {
		const { results } = await oneN8n(
			{},
			{ options: { downloadMedia: true } },
			{ options: { downloadMedia: true, binaryPropertyName: 'photo' } },
		);
		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			media: { mime: 'image/png', data_base64: PNG.toString('base64'), filename: 'photo.png' },
		});
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		await until(() => executions(results[1]).length === 1 && executions(results[2]).length === 1);
		const item = (list: WebhookReceiveResult[]) => executions(list)[0].workflowData![0][0];
		expect(item(results[0]).binary).toBeUndefined();
		expect(item(results[0]).json.media_download).toBeUndefined();
		expect((item(results[0]).json.data as Json).media_url).toEqual(expect.any(String));
		for (const [list, field] of [
			[results[1], 'data'],
			[results[2], 'photo'],
		] as const) {
			expect(Object.keys(item(list).binary ?? {})).toEqual([field]);
			expect(Buffer.from(item(list).binary![field].data, 'base64').equals(PNG)).toBe(true);
			expect(item(list).json.media_download).toMatchObject({
				downloaded: true,
				binary_field: field,
			});
		}
		expect(sb.state().media_requests).toHaveLength(2);
	});
});
