// Regular mode: the trigger's catch-up runs in the process that takes the answers. An answer that
// only resumes a wait then starts no execution of the trigger's workflow (issue 43): n8n answers
// the service at once and saves the request's static data, which records the answer for the
// catch-up (after a restart too) in place of an execution in n8n's deduplication store.
import type { IDataObject } from 'n8n-workflow';

import { routeEvent } from '../../../nodes/BusinessMessagingTrigger/routing/route';
import {
	ANSWERED_KEEP_MS,
	ANSWERS_KEY,
	MAX_OWED,
	keepAnsweredCurrent,
	recordOwed,
	settleOwed,
	wasAnswered,
	type OwedAnswer,
} from '../../../nodes/shared/replyAndWait/answeredHere';
import {
	STATIC_DATA_KEY,
	keepWaitingEntriesCurrent,
	registerWaiting,
	waitingKey,
} from '../../../nodes/shared/replyAndWait/waitingEntries';
import { accountId } from '../../../nodes/shared/credentialKeys';
import { recoveredItem } from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import { NUMBER, inboundEnvelope, signedRequest, useSandbox } from '../../support';
import { resumer, storedSecret, trigger, until, type Resumer, answeredIn, owedIn } from './helpers';

const sb = useSandbox({ reset: 'afterEach' });
const servers: Resumer[] = [];
afterEach(async () => {
	await Promise.all(servers.splice(0).map(async (s) => await s.close()));
});

/** An answer owed by this process (its resume under way elsewhere). */
const owedRecord = (i: number): OwedAnswer => ({
	key: waitingKey(`+1555000${1000 + i}`, NUMBER),
	entry: {
		resumeUrl: `http://127.0.0.1:1/webhook-waiting/${i}`,
		waitId: 'w1',
		executionId: String(i),
		expiresAtMs: Date.now() + 60_000,
		alsoStart: false,
		node: 'Ask',
		account: 'a'.repeat(32),
	},
	answer: { event: 'message.inbound' },
	node: 'trigger-node',
	mac: '0'.repeat(64),
});

async function waitingTrigger(contact: string, executionId: string, alsoStart = false) {
	const server = await resumer(200, executionId);
	servers.push(server);
	const harness = await trigger(sb, {} as never, {
		webhookUrl: `${new URL(server.url).origin}/webhook`,
	});
	await harness.activate();
	const secret = storedSecret(harness.staticData, sb.keys.all) as string;
	const entry = {
		resumeUrl: server.url,
		waitId: 'w1',
		executionId,
		expiresAtMs: Date.now() + 60_000,
		alsoStart,
		node: 'Ask',
		account: accountId(sb.keys.all),
	};
	// As n8n loads it: the entry only in the workflow's static data.
	harness.globalStaticData[STATIC_DATA_KEY] = { [waitingKey(contact, NUMBER)]: entry };
	return { harness, secret, server, entry };
}

describe("an answer taken where the catch-up runs: no execution of the trigger's workflow", () => {
	it('resumes the wait, starts nothing, and writes the removal and its record into the static data n8n saves after the request', async () => {
		const contact = '+15554440001';
		const { harness, secret, server } = await waitingTrigger(contact, '61');
		const started = await harness.startTrigger();
		try {
			const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'A-61' });
			const answer = await harness.receive(signedRequest(event, secret));
			expect(answer.status).toBe(200);
			expect(answer.body).toEqual({ received: true, resumed: '61' });
			expect(answer.workflowData).toBeUndefined();
			expect(harness.globalStaticData[STATIC_DATA_KEY]).toEqual({});
			const id = event.data.wa_message_id;
			// What n8n saves before it answers: the answer owed, its resume right after.
			expect(Object.keys(owedIn(harness.globalStaticData) as IDataObject)).toEqual([id]);
			await until(() => answeredIn(harness.globalStaticData) !== undefined);
			expect(server.bodies).toHaveLength(1);
			expect(Object.keys(answeredIn(harness.globalStaticData) as IDataObject)).toEqual([id]);
			expect(owedIn(harness.globalStaticData)).toBeUndefined();

			// Another copy of the same message (the catch-up's, or a delivery signed again) runs nothing.
			const again = await harness.receive(
				signedRequest({ ...event, timestamp: inboundEnvelope().timestamp }, secret),
			);
			expect(again.workflowData).toBeUndefined();
			expect(server.bodies).toHaveLength(1);
			const held = harness.triggerContext();
			const copy = recoveredItem({
				event: 'message.inbound',
				record: { ...event.data, direction: 'in', created_at: event.timestamp },
				reason: 'timeout after 8000 ms',
			});
			const routed = await routeEvent.call(held.context, copy, 'message.inbound', null, {
				mode: 'off',
				minutes: 30,
			});
			expect(routed).toEqual({ kind: 'answered' });
			expect(server.bodies).toHaveLength(1);
		} finally {
			await started.close();
		}
	});

	it('after a restart (only the saved static data): the record still stops the copy, for a day', () => {
		const saved = {} as IDataObject;
		settleOwed('wf-restart', 'wamid.answered', Date.now());
		keepWaitingEntriesCurrent(saved, 'wf-restart');
		// What a new process loads: the saved JSON, none of this process's memory (another home).
		const loaded = JSON.parse(JSON.stringify(saved)) as IDataObject;
		expect(wasAnswered(loaded, 'wf-other-process', 'wamid.answered')).toBe(true);
		expect(wasAnswered(loaded, 'wf-other-process', 'wamid.new')).toBe(false);
		expect(
			wasAnswered(loaded, undefined, 'wamid.answered', Date.now() + ANSWERED_KEEP_MS + 1),
		).toBe(false);
	});

	it('every copy brought up to date carries every answer this process recorded (an older copy saved last drops none); at most 500, the oldest dropped', () => {
		const home = 'wf-copies';
		const older = {} as IDataObject;
		const newer = {} as IDataObject;
		settleOwed(home, 'wamid.a');
		keepWaitingEntriesCurrent(newer, home);
		settleOwed(home, 'wamid.b');
		// A Reply and Wait execution's copy loaded before both, brought up to date before its save.
		registerWaiting(older, waitingKey('+15554440009', NUMBER), {
			resumeUrl: 'http://127.0.0.1:1/webhook-waiting/9',
			waitId: 'w1',
			executionId: '9',
			expiresAtMs: Date.now() + 60_000,
			alsoStart: false,
			node: 'Ask',
			account: 'a'.repeat(32),
			home,
		});
		expect(Object.keys(answeredIn(older) as IDataObject).sort()).toEqual(['wamid.a', 'wamid.b']);
		const many = {} as IDataObject;
		for (let i = 0; i < 600; i++) settleOwed('wf-many', `wamid.${i}`, Date.now() + i);
		keepAnsweredCurrent(many, 'wf-many');
		const kept = Object.keys(answeredIn(many) as IDataObject);
		expect(kept).toHaveLength(500);
		expect(kept).toContain('wamid.599');
		expect(kept).not.toContain('wamid.0');
	});

	it('ids someone else wrote far into the future (a Code node) are passed over, so they evict no real one', () => {
		const home = 'wf-far-future';
		const forged: IDataObject = {};
		for (let i = 0; i < 600; i++) forged[`wamid.forged.${i}`] = Date.now() + 365 * 86_400_000;
		const copy: IDataObject = { [ANSWERS_KEY]: forged };
		settleOwed(home, 'wamid.real');
		keepAnsweredCurrent(copy, home);
		expect(Object.keys(answeredIn(copy) as IDataObject)).toEqual(['wamid.real']);
		expect(wasAnswered({ [ANSWERS_KEY]: forged }, undefined, 'wamid.forged.1')).toBe(false);
	});

	it('one record per answer: whichever copy says answered and whichever says owed, the copy brought up to date says answered, once', () => {
		const home = 'wf-one-record';
		const until = Date.now() + 3_600_000;
		const owedOne = owedRecord(7);
		for (const [base, copy] of [
			[{ [ANSWERS_KEY]: { 'wamid.one': until } }, { [ANSWERS_KEY]: { 'wamid.one': owedOne } }],
			[{ [ANSWERS_KEY]: { 'wamid.one': owedOne } }, { [ANSWERS_KEY]: { 'wamid.one': until } }],
		] as IDataObject[][]) {
			keepAnsweredCurrent(copy, home, Date.now(), base);
			expect(copy[ANSWERS_KEY]).toEqual({ 'wamid.one': until });
		}
		// While this process resumes it, its owed record is the current one.
		recordOwed(home, 'wamid.two', owedOne);
		const copy: IDataObject = { [ANSWERS_KEY]: { 'wamid.two': until } };
		keepAnsweredCurrent(copy, home);
		expect(owedIn(copy)).toEqual({ 'wamid.two': owedOne });
		settleOwed(home, 'wamid.two');
		keepAnsweredCurrent(copy, home);
		expect([owedIn(copy), Object.keys(answeredIn(copy) ?? {})]).toEqual([undefined, ['wamid.two']]);
	});

	it('answers owed beyond the bound take the slower path that keeps them: resumed before n8n answers, recorded by their own execution; none is dropped from the saved copy', async () => {
		const contact = '+15554440031';
		const { harness, secret, server } = await waitingTrigger(contact, '31');
		const started = await harness.startTrigger();
		const home = harness.workflowId;
		// This process owes MAX_OWED answers already (their resumes under way).
		const owedNow = Object.fromEntries(
			Array.from({ length: MAX_OWED }, (_, i) => [`wamid.owed.${i}`, owedRecord(i)]),
		);
		for (const [id, record] of Object.entries(owedNow)) recordOwed(home, id, record);
		const event = inboundEnvelope({ from: contact, number: NUMBER });
		const answer = await harness.receive(signedRequest(event, secret));
		expect(answer.status).toBe(200);
		// Resumed before the answer: the request carries the recording execution.
		expect(server.bodies).toHaveLength(1);
		expect(answer.workflowData?.flat()[0].json).toMatchObject({ resumed_execution: '31' });
		const saved = Object.keys(owedIn(harness.globalStaticData) as IDataObject);
		expect(saved).toHaveLength(MAX_OWED);
		expect(saved).not.toContain(event.data.wa_message_id);
		for (const id of Object.keys(owedNow)) settleOwed(home, id);
		await started.close();
	});

	it('Also Start: the answer starts its execution as before, with no record (that execution records it in the deduplication store)', async () => {
		const contact = '+15554440002';
		const alsoStart = await waitingTrigger(contact, '62', true);
		const startedA = await alsoStart.harness.startTrigger();
		try {
			const answer = await alsoStart.harness.receive(
				signedRequest(inboundEnvelope({ from: contact, number: NUMBER }), alsoStart.secret),
			);
			expect(answer.body).toEqual({ received: true, resumed: '62' });
			expect(answer.workflowData?.flat()).toHaveLength(1);
			expect(answeredIn(alsoStart.harness.globalStaticData)).toBeUndefined();
			expect(alsoStart.harness.globalStaticData[STATIC_DATA_KEY]).toEqual({});
		} finally {
			await startedA.close();
		}
	});

	it('where the catch-up runs elsewhere (queue mode: a webhook processor): the answer starts its recording execution as before, and the copy n8n saves records it (owed while its resume was under way)', async () => {
		const contactB = '+15554440003';
		const processor = await waitingTrigger(contactB, '63');
		const event = inboundEnvelope({ from: contactB, number: NUMBER });
		const answer = await processor.harness.receive(signedRequest(event, processor.secret));
		expect(answer.body).toEqual({ received: true, resumed: '63' });
		expect(answer.workflowData?.flat()).toHaveLength(1);
		expect(Object.keys(answeredIn(processor.harness.globalStaticData) as object)).toEqual([
			event.data.wa_message_id,
		]);
		expect(owedIn(processor.harness.globalStaticData)).toBeUndefined();
		expect(processor.harness.globalStaticData[STATIC_DATA_KEY]).toEqual({});
	});
});
