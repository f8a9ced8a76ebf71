// Regular mode (issue 43): the service is answered before the wait is resumed. n8n 2.x answered a
// request only after its resume request had been answered, which under a burst of answers took
// longer than the service's 8 s. The request now writes the answer as owed into the static data
// n8n saves before it answers, and the trigger running in this process resumes the wait right
// after: a refusal runs the message once through the trigger's emit, and a restart in between
// finds the answer owed and posts it again.
import { Logger } from '@n8n/backend-common';
import type { IDataObject } from 'n8n-workflow';

import { catchUpOnce } from '../../../nodes/BusinessMessagingTrigger/catchUp/catchUp';
import { recoveredItem } from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import {
	nodeParameters,
	readNodeSettings,
} from '../../../nodes/BusinessMessagingTrigger/receiving/accept';
import { nodeKeyOf, accountId } from '../../../nodes/shared/credentialKeys';
import { routeEvent } from '../../../nodes/BusinessMessagingTrigger/routing/route';
import { STATIC_DATA_KEY, waitingKey } from '../../../nodes/shared/replyAndWait/waitingEntries';
import { ANSWERS_KEY } from '../../../nodes/shared/replyAndWait/answeredHere';
import { NUMBER, inboundEnvelope, signedRequest, useSandbox } from '../../support';
import {
	captureLogs,
	control,
	scriptedResumer,
	storedSecret,
	trigger,
	until,
	type LoggedLines,
	type Resumer,
	answeredIn,
	owedIn,
} from './helpers';
import type { WebhookHarness } from '../../harness';
import { RecordingResponse } from '../../harness/express';

const sb = useSandbox({ reset: 'afterEach' });
const servers: Resumer[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
	await Promise.all(stops.splice(0).map(async (stop) => await stop()));
	await Promise.all(servers.splice(0).map(async (s) => await s.close()));
	jest.restoreAllMocks();
});

/** n8n's resume endpoint of execution `executionId`, answering as scripted. */
async function waitingExecution(
	executionId: string,
	steps: Parameters<typeof scriptedResumer>[0],
	port = 0,
) {
	const server = await scriptedResumer(steps, `/webhook-waiting/${executionId}?signature=t`, port);
	servers.push(server);
	return server;
}

/** A trigger of the n8n at `origin`, its trigger() running (regular mode: main), as n8n loads it. */
async function runningTrigger(
	origin: string,
	saved: { node?: IDataObject; global?: IDataObject; nodeId?: string } = {},
	beside?: WebhookHarness,
) {
	const harness = await trigger(sb, {} as never, {
		webhookUrl: `${origin}/webhook`,
		...(saved.node && { staticData: saved.node }),
		nodeId: saved.nodeId,
		...(beside && { sameWorkflowAs: beside }),
	});
	if (!saved.node) await harness.activate();
	Object.assign(harness.globalStaticData, saved.global ?? {});
	const started = await harness.startTrigger();
	stops.push(async () => await started.close());
	const secret = storedSecret(harness.staticData, sb.keys.all) as string;
	return { harness, started, secret };
}

/**
 * Another account's trigger (another API key), its trigger() running: in the same workflow as
 * `beside`, or first in a workflow whose static data n8n loads as `global`.
 */
async function otherAccountTrigger(workflow: { beside?: WebhookHarness; global?: IDataObject }) {
	const harness = await trigger(sb, {} as never, {
		credentialExtra: { apiKey: sb.keys.oneNumber },
		...(workflow.beside && { sameWorkflowAs: workflow.beside }),
	});
	Object.assign(harness.globalStaticData, workflow.global ?? {});
	const started = await harness.startTrigger();
	stops.push(async () => await started.close());
	return { harness, started };
}

/** Execution `executionId` waits for `contact` (its entry in the workflow's static data, as n8n loads it). */
function waits(
	globalStaticData: IDataObject,
	contact: string,
	server: Resumer,
	executionId: string,
	{ number = NUMBER, lifeMs = 120_000 } = {},
) {
	globalStaticData[STATIC_DATA_KEY] = {
		[waitingKey(contact, number)]: {
			resumeUrl: server.url,
			waitId: 'w1',
			executionId,
			expiresAtMs: Date.now() + lifeMs,
			alsoStart: false,
			node: 'Ask',
			account: accountId(sb.keys.all),
		},
	};
}

const copyOf = (value: unknown) => JSON.parse(JSON.stringify(value)) as IDataObject;

/** The catch-up's copy of an inbound event (its delivery logged failed), routed as the trigger routes it. */
async function catchUpCopy(
	harness: { triggerContext: () => { context: ThisParameterType<typeof routeEvent> } },
	event: ReturnType<typeof inboundEnvelope>,
) {
	const copy = recoveredItem({
		event: 'message.inbound',
		record: { ...event.data, direction: 'in', created_at: event.timestamp },
		reason: 'timeout after 8000 ms',
	});
	return await routeEvent.call(harness.triggerContext().context, copy, 'message.inbound', null, {
		mode: 'off',
		minutes: 30,
	});
}

describe('an answer where the catch-up runs: the service is answered first, the wait resumed right after', () => {
	it('answered 2xx before n8n took the resume (5 s); resumed once; nothing started; then recorded as answered', async () => {
		const contact = '+15554450001';
		const server = await waitingExecution('71', [{ status: 200, delayMs: 5000 }]);
		const { harness, started, secret } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '71');
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'A-71' });
		const answer = await harness.receive(signedRequest(event, secret));
		expect(answer.status).toBe(200);
		expect(answer.body).toEqual({ received: true, resumed: '71' });
		expect(answer.workflowData).toBeUndefined();
		expect(answer.answeredAfterMs).toBeLessThan(1000);
		// What n8n saves before it answers: the wait gone, the answer owed (with its wait and event).
		const id = event.data.wa_message_id;
		const saved = copyOf(harness.globalStaticData);
		expect(saved[STATIC_DATA_KEY]).toEqual({});
		expect((owedIn(saved) as IDataObject)[id]).toMatchObject({
			entry: { executionId: '71' },
			answer: { data: { wa_message_id: id } },
		});

		await until(() => answeredIn(harness.globalStaticData) !== undefined, 8000);
		expect(server.bodies).toHaveLength(1);
		expect(server.bodies[0].answer).toEqual(owedIn(saved) && (owedIn(saved) as any)[id].answer);
		expect(Object.keys(answeredIn(harness.globalStaticData) as IDataObject)).toEqual([id]);
		expect(owedIn(harness.globalStaticData)).toBeUndefined();
		expect(started.emitted).toHaveLength(0);
	}, 20_000);

	it('the wait is resumed only once n8n has answered the request (it saves the owed answer first): killed before that, nothing was resumed with nothing saved saying so', async () => {
		const contact = '+15554450016';
		const server = await waitingExecution('86', [{ status: 200 }]);
		const { harness, secret } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '86');
		// n8n's save before its answer, slow: the response ends 600 ms after webhook() returned.
		const json = RecordingResponse.prototype.json;
		jest.spyOn(RecordingResponse.prototype, 'json').mockImplementation(function (
			this: RecordingResponse,
			body: unknown,
		) {
			setTimeout(() => json.call(this, body), 600);
			return this;
		});
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'A-86' });
		const receiving = harness.receive(signedRequest(event, secret));
		await new Promise((resolve) => setTimeout(resolve, 400));
		expect(server.bodies).toHaveLength(0);
		expect((await receiving).status).toBe(200);
		await until(() => server.bodies.length === 1, 5000);
		expect(server.bodies[0].answer).toMatchObject({ data: { text: 'A-86' } });
	}, 20_000);

	it('a copy of the answer (the catch-up, n8n answered after 8 s) runs nothing while its resume is under way', async () => {
		const contact = '+15554450002';
		const server = await waitingExecution('72', [{ status: 200, delayMs: 2000 }]);
		const { harness, started, secret } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '72');
		const event = inboundEnvelope({ from: contact, number: NUMBER });
		await harness.receive(signedRequest(event, secret));
		const routed = await catchUpCopy(harness, event);
		expect(routed).toEqual({ kind: 'answered' });
		await until(() => answeredIn(harness.globalStaticData) !== undefined, 8000);
		expect(server.bodies).toHaveLength(1);
		expect(started.emitted).toHaveLength(0);
	}, 20_000);

	it('a resume refused after the 2xx (the execution finished) still runs the message once, through the trigger (run-once key, recorded; a copy runs nothing)', async () => {
		const contact = '+15554450003';
		const finished = { code: 409, message: 'The execution "73" has finished already.' };
		const server = await waitingExecution('73', [{ status: 409, body: finished }]);
		const { harness, started, secret } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '73');
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'late answer' });
		const answer = await harness.receive(signedRequest(event, secret));
		expect(answer.status).toBe(200);
		expect(answer.workflowData).toBeUndefined();
		await until(() => started.emitted.length > 0, 5000);
		expect(started.emitted).toHaveLength(1);
		const [item] = started.emitted[0].flat();
		expect(item.json).toMatchObject({ event: 'message.inbound', data: { text: 'late answer' } });
		expect(item.json).not.toHaveProperty('resumed_execution');
		// As the trigger's execute() runs it: the message passes (a refused resume is not record-only).
		expect((await harness.execute(started.emitted[0], 'trigger')).flat()).toHaveLength(1);
		// n8n saved the trigger's copy with the emit: the answer counts as run, no longer owed.
		const id = event.data.wa_message_id;
		expect(Object.keys(started.saved).length).toBeGreaterThan(0);
		expect(Object.keys(answeredIn(harness.globalStaticData) as IDataObject)).toEqual([id]);
		expect(owedIn(harness.globalStaticData)).toBeUndefined();
		const again = await harness.receive(
			signedRequest({ ...event, timestamp: inboundEnvelope().timestamp }, secret),
		);
		expect(again.workflowData).toBeUndefined();
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(started.emitted).toHaveLength(1);
		expect(server.bodies).toHaveLength(1);
	}, 20_000);

	it("a 404 that is not n8n's answer about the execution (a webhook processor starting, kill-storm) is asked again: resumed once, nothing started", async () => {
		const contact = '+15554450025';
		const server = await waitingExecution('95', [
			{ status: 404, body: 'Cannot POST /webhook-waiting/95' },
			{ status: 200 },
		]);
		const { harness, started, secret } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '95');
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'A-95' });
		expect((await harness.receive(signedRequest(event, secret))).status).toBe(200);
		await until(() => answeredIn(harness.globalStaticData) !== undefined, 5000);
		expect(server.bodies).toHaveLength(2);
		expect(started.emitted).toHaveLength(0);
	}, 20_000);

	it('a refused resume whose emit throws is not recorded as answered: the catch-up copy of the message runs it', async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const contact = '+15554450008';
		const finished = { code: 409, message: 'The execution "78" has finished already.' };
		const server = await waitingExecution('78', [{ status: 409, body: finished }]);
		const { harness, started, secret } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '78');
		// The harness's emit copies the node's static data first: this makes that emit throw.
		harness.staticData.unsaveable = {
			toJSON: () => {
				throw new Error('emit failed');
			},
		} as unknown as IDataObject;
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'answer 78' });
		expect((await harness.receive(signedRequest(event, secret))).status).toBe(200);
		await until(() => logged.error.length > 0, 5000);
		delete harness.staticData.unsaveable;
		expect(logged.error.join('\n')).toContain('could not be started: emit failed');
		expect(started.emitted).toHaveLength(0);
		const id = event.data.wa_message_id;
		expect(Object.keys(answeredIn(harness.globalStaticData) ?? {})).not.toContain(id);
		const routed = await catchUpCopy(harness, event);
		expect(routed).toMatchObject({ kind: 'start' });
	}, 20_000);
});

// Issue 49, kill -9 run (2.41.1): the catch-up resumed a wait and emitted the recording execution;
// a kill ended that execution before its trigger node recorded the answer, and the catch-up of a
// later start ran the answer again as a new conversation (asked twice after the confirmation).
describe('the catch-up resumes a wait with a copy of its answer (delivery logged failed)', () => {
	it("the answer is owed in the copy n8n saves as the catch-up emits the recording execution, the wait resumed only after it: killed between the two, the next start resumes it; the catch-up's next copy runs nothing", async () => {
		const contact = '+15554450021';
		const server = await waitingExecution('91', [{ status: 200 }]);
		const origin = new URL(server.url).origin;
		const before = await runningTrigger(origin);
		waits(before.harness.globalStaticData, contact, server, '91');
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'A-91' });
		const id = event.data.wa_message_id;
		const routed = await catchUpCopy(before.harness, event);
		expect(routed).toMatchObject({ kind: 'start', resumed: '91' });
		const recording = (routed as { workflowData: Array<Array<{ json: IDataObject }>> })
			.workflowData;
		expect(recording[0][0].json).toMatchObject({ __businessMessagingRecordOnly: true });
		// Not resumed before the recording execution ran.
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(server.bodies).toHaveLength(0);
		// What n8n saves as the catch-up emits: the wait gone and the answer owed, in one copy.
		const saved = {
			node: copyOf(before.harness.staticData),
			global: copyOf(before.harness.globalStaticData),
			nodeId: before.harness.node.id,
		};
		expect(saved.global[STATIC_DATA_KEY]).toEqual({});
		expect(Object.keys(owedIn(saved.global) as IDataObject)).toEqual([id]);
		// n8n killed before the recording execution ran: the next start posts the owed answer.
		await before.started.close();
		const after = await runningTrigger(origin, saved);
		await until(() => server.bodies.length > 0, 5000);
		expect(server.bodies).toHaveLength(1);
		expect(await catchUpCopy(after.harness, event)).toEqual({ kind: 'answered' });
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(server.bodies).toHaveLength(1);
		expect(after.started.emitted).toHaveLength(0);
	}, 20_000);

	it('in the catch-up loop the recording execution is emitted first, and the wait resumed only once that execution ended', async () => {
		const server = await waitingExecution('94', [{ status: 200 }]);
		const origin = new URL(server.url).origin;
		// Not registered with the service: nothing is delivered, the catch-up brings the message.
		const harness = await trigger(sb, {} as never, { webhookUrl: `${origin}/webhook` });
		// Where trigger() reads its own origin from (the event URL it registers at activation).
		harness.staticData.webhookUrl = `${origin}/webhook`;
		const number = sb.numbers[0].phone_number_id;
		const contact = '+15554450024';
		// Alive past the clock moved on below.
		waits(harness.globalStaticData, contact, server, '94', { number, lifeMs: 600_000 });
		const since = { createdAt: new Date(Date.now() - 60_000).toISOString(), ids: [] };
		await control(sb, 'POST', '/inbound', {
			from: contact,
			contact_name: 'Ada',
			number,
			text: 'A-94',
		});
		const now = Date.now();
		jest.spyOn(Date, 'now').mockImplementation(() => now + 120_000 + (performance.now() % 1));
		const held = harness.triggerContext('init');
		const settings = readNodeSettings(nodeParameters.call(held.context));
		const state = { watermarks: { 'message.inbound': since, 'message.echo': since } };
		await catchUpOnce.call(held.context, {
			scope: nodeKeyOf.call(held.context),
			state,
			settings,
			isClosed: () => false,
			webhook: { kind: 'ours' },
			persist: () => undefined,
		});
		await until(() => held.emitted.length > 0, 5000);
		expect(held.emitted.flat(2)).toMatchObject([
			{ json: { resumed_execution: '94', __businessMessagingRecordOnly: true } },
		]);
		await new Promise((resolve) => setTimeout(resolve, 500));
		expect(server.bodies).toHaveLength(0);
		held.executions[0]?.resolve({} as never);
		await until(() => server.bodies.length > 0, 5000);
		expect(server.bodies).toHaveLength(1);
	}, 20_000);

	it('the recording execution ran: the wait is resumed once, and the answer is recorded as answered, no longer owed', async () => {
		const contact = '+15554450022';
		const server = await waitingExecution('92', [{ status: 200 }]);
		const { harness, started } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '92');
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'A-92' });
		const routed = (await catchUpCopy(harness, event)) as { afterEmit?: () => void };
		routed.afterEmit?.();
		await until(() => answeredIn(harness.globalStaticData) !== undefined, 5000);
		expect(server.bodies).toHaveLength(1);
		expect(Object.keys(answeredIn(harness.globalStaticData) as IDataObject)).toEqual([
			event.data.wa_message_id,
		]);
		expect(owedIn(harness.globalStaticData)).toBeUndefined();
		expect(started.emitted).toHaveLength(0);
	}, 20_000);

	it('a wait that refuses the recorded answer starts nothing (run-once has the message): said with the message id', async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const contact = '+15554450023';
		const finished = { code: 409, message: 'The execution "93" has finished already.' };
		const server = await waitingExecution('93', [{ status: 409, body: finished }]);
		const { harness, started } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '93');
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'A-93' });
		const routed = (await catchUpCopy(harness, event)) as { afterEmit?: () => void };
		routed.afterEmit?.();
		await until(() => logged.warn.length > 0, 5000);
		expect(logged.warn.join('\n')).toContain(
			`message ${event.data.wa_message_id}, brought by the catch-up and recorded as run, was refused by its waiting execution 93: it is not started again`,
		);
		expect(started.emitted).toHaveLength(0);
		expect(owedIn(harness.globalStaticData)).toBeUndefined();
	}, 20_000);
});

describe('n8n restarted between the 2xx and the resume: the answer is neither lost nor run twice', () => {
	it('the trigger stopped (n8n stopping) before its wait answered: the stopped trigger starts nothing, the answer stays owed, and the next start resumes it', async () => {
		const contact = '+15554450006';
		// The first attempt is answered only after the trigger stopped, refused (a redirect); the next one takes it.
		const server = await waitingExecution('76', [
			{ status: 302, delayMs: 800, headers: { location: 'http://127.0.0.1:9/elsewhere' } },
			{ status: 200 },
		]);
		const { harness, started, secret } = await runningTrigger(new URL(server.url).origin);
		waits(harness.globalStaticData, contact, server, '76');
		const event = inboundEnvelope({ from: contact, number: NUMBER });
		expect((await harness.receive(signedRequest(event, secret))).status).toBe(200);
		await started.close();
		await new Promise((resolve) => setTimeout(resolve, 1200));
		expect(server.bodies).toHaveLength(1);
		expect(started.emitted).toHaveLength(0);
		const id = event.data.wa_message_id;
		expect(Object.keys(owedIn(harness.globalStaticData) as IDataObject)).toEqual([id]);
		expect(answeredIn(harness.globalStaticData)).toBeUndefined();

		const again = await harness.startTrigger();
		stops.push(async () => await again.close());
		await until(() => answeredIn(harness.globalStaticData) !== undefined, 5000);
		expect(server.bodies).toHaveLength(2);
		expect(Object.keys(answeredIn(harness.globalStaticData) as IDataObject)).toEqual([id]);
		expect(owedIn(harness.globalStaticData)).toBeUndefined();
		expect(again.emitted).toHaveLength(0);
	}, 20_000);

	/** The first process: takes the answer, n8n saves its copy and answers; the process ends before its resume is answered. */
	async function answeredThenStopped(contact: string, executionId: string) {
		const first = await waitingExecution(executionId, [{ status: 200, delayMs: 60_000 }]);
		const origin = new URL(first.url).origin;
		const port = Number(new URL(first.url).port);
		const before = await runningTrigger(origin);
		waits(before.harness.globalStaticData, contact, first, executionId);
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: `answer ${executionId}` });
		const answer = await before.harness.receive(signedRequest(event, before.secret));
		expect(answer.status).toBe(200);
		const saved = {
			node: copyOf(before.harness.staticData),
			global: copyOf(before.harness.globalStaticData),
			nodeId: before.harness.node.id,
		};
		await until(() => first.bodies.length === 1);
		// The process ends: its trigger stops, its connections drop (its resume never answered).
		await before.started.close();
		await first.close();
		servers.splice(servers.indexOf(first), 1);
		// The ended process's attempt is over (connection refused) before n8n is up again.
		await until(() => owedIn(before.harness.globalStaticData) === undefined, 5000, 200);
		return { event, saved, origin, port };
	}

	it('the wait still waits after the restart: the trigger posts the owed answer again at its start, it resumes once, nothing starts', async () => {
		const { event, saved, origin, port } = await answeredThenStopped('+15554450004', '74');
		const again = await waitingExecution('74', [{ status: 200 }], port);
		const after = await runningTrigger(origin, saved);
		const id = event.data.wa_message_id;
		await until(() => answeredIn(after.harness.globalStaticData) !== undefined, 5000);
		expect(again.bodies).toHaveLength(1);
		expect(again.bodies[0].answer).toMatchObject({ data: { wa_message_id: id } });
		expect(Object.keys(answeredIn(after.harness.globalStaticData) as IDataObject)).toEqual([id]);
		expect(owedIn(after.harness.globalStaticData)).toBeUndefined();
		expect(after.started.emitted).toHaveLength(0);
		// The catch-up's copy (the service may have logged the delivery failed) runs nothing.
		const routed = await catchUpCopy(after.harness, event);
		expect(routed).toEqual({ kind: 'answered' });
		expect(again.bodies).toHaveLength(1);
	}, 30_000);

	it('the wait refuses it after the restart while it has not ended (the first process resumed it): nothing starts, no warning', async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { saved, origin, port } = await answeredThenStopped('+15554450005', '75');
		const finished = { code: 409, message: 'The execution "75" has finished already.' };
		const again = await waitingExecution('75', [{ status: 409, body: finished }], port);
		const after = await runningTrigger(origin, saved);
		expect(again.bodies).toHaveLength(1);
		expect(after.started.emitted).toHaveLength(0);
		expect(owedIn(after.harness.globalStaticData)).toBeUndefined();
		expect(answeredIn(after.harness.globalStaticData)).toBeDefined();
		expect(logged.warn.join('\n')).not.toContain('answer(s) taken before n8n restarted');
	}, 30_000);

	it('the kill ended the execution that had taken the answer (n8n 2.41.1 answers 500 to its resume): not run again (it ran there), said with its message id and execution, after three 500s', async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { event, saved, origin, port } = await answeredThenStopped('+15554450014', '84');
		const broken = { message: "Cannot read properties of undefined (reading 'inputOverride')" };
		const crashed = await waitingExecution(
			'84',
			Array(40).fill({ status: 500, body: broken }),
			port,
		);
		const after = await runningTrigger(origin, saved);
		await until(() => answeredIn(after.harness.globalStaticData) !== undefined, 15_000);
		expect(after.started.emitted).toHaveLength(0);
		expect(logged.warn.join('\n')).toContain(
			`1 answer(s) taken before n8n restarted were taken by their waiting execution, which the restart ended (n8n lists it Crashed; retry it there): not run again: ${event.data.wa_message_id} (execution 84)`,
		);
		expect(owedIn(after.harness.globalStaticData)).toBeUndefined();
		expect(crashed.bodies).toHaveLength(3);
		// The catch-up's copy of it runs nothing either.
		expect(await catchUpCopy(after.harness, event)).toEqual({ kind: 'answered' });
	}, 30_000);

	it('the wait ended while n8n was down: the answer runs anew once, said', async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { event, saved, origin, port } = await answeredThenStopped('+15554450015', '85');
		const owed = (owedIn(saved.global) as any)[event.data.wa_message_id];
		const again = await waitingExecution('85', [{ status: 200 }], port);
		// n8n up again after the wait's end.
		const shift = owed.entry.expiresAtMs + 1_000 - Date.now();
		jest
			.spyOn(Date, 'now')
			.mockImplementation(() => performance.timeOrigin + performance.now() + shift);
		const after = await runningTrigger(origin, saved);
		expect(again.bodies).toHaveLength(0);
		expect(after.started.emitted).toHaveLength(1);
		expect(logged.warn.join('\n')).toContain(
			`found their wait ended while n8n was down, so each starts a new execution (the workflow asks again): ${event.data.wa_message_id} (execution 85)`,
		);
	}, 30_000);

	it("an owed answer someone else's code wrote into the static data (no valid MAC of the trigger's key) is never posted", async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { event, saved, origin, port } = await answeredThenStopped('+15554450007', '77');
		const again = await waitingExecution('77', [{ status: 200 }], port);
		const owed = (owedIn(saved.global) as any)[event.data.wa_message_id];
		// A forged answer for the same wait: the content changed, the MAC kept.
		owed.answer = { ...owed.answer, data: { ...owed.answer.data, text: 'forged' } };
		const after = await runningTrigger(origin, saved);
		await until(() => answeredIn(after.harness.globalStaticData) !== undefined, 5000);
		expect(again.bodies).toHaveLength(0);
		expect(after.started.emitted).toHaveLength(0);
		expect(logged.warn.join('\n')).toContain('was not written by this trigger');
	}, 30_000);

	it('the outcome is in the copy n8n saves once activation returns: the next restart posts nothing again', async () => {
		const { event, saved, origin, port } = await answeredThenStopped('+15554450011', '81');
		const again = await waitingExecution('81', [{ status: 200 }], port);
		const after = await runningTrigger(origin, saved);
		// No waiting here: trigger() returned only once the owed answer was posted and settled.
		expect(again.bodies).toHaveLength(1);
		expect(owedIn(after.harness.globalStaticData)).toBeUndefined();
		expect(Object.keys(answeredIn(after.harness.globalStaticData) as IDataObject)).toEqual([
			event.data.wa_message_id,
		]);
	}, 30_000);

	it('the MAC covers the whole record whatever order a store keeps its keys in: a store that reorders them (MySQL) still posts it', async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { event, saved, origin, port } = await answeredThenStopped('+15554450012', '82');
		const again = await waitingExecution('82', [{ status: 200 }], port);
		const reversed = (value: unknown): unknown =>
			Array.isArray(value)
				? value.map(reversed)
				: value !== null && typeof value === 'object'
					? Object.fromEntries(
							Object.entries(value)
								.reverse()
								.map(([k, v]) => [k, reversed(v)]),
						)
					: value;
		const reordered = { ...saved, global: reversed(saved.global) as IDataObject };
		await runningTrigger(origin, reordered);
		expect(again.bodies).toHaveLength(1);
		expect(again.bodies[0].answer).toMatchObject({
			data: { wa_message_id: event.data.wa_message_id },
		});
	}, 30_000);

	it('the MAC covers the message id: an owed record moved under another message id is not posted', async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const moved = await answeredThenStopped('+15554450013', '83');
		const owed = moved.saved.global[ANSWERS_KEY] as IDataObject;
		owed['wamid.another'] = owed[moved.event.data.wa_message_id];
		delete owed[moved.event.data.wa_message_id];
		const refused = await waitingExecution('83', [{ status: 200 }], moved.port);
		await runningTrigger(moved.origin, moved.saved);
		expect(refused.bodies).toHaveLength(0);
		expect(logged.warn.join('\n')).toContain(
			'(wamid.another) taken before n8n restarted was not written by this trigger',
		);
	}, 60_000);

	it("at a restart another account's trigger in the same workflow leaves the owed answer to the trigger that took it, which posts it", async () => {
		const logged = {} as LoggedLines;
		captureLogs(logged, Logger);
		const { event, saved, origin, port } = await answeredThenStopped('+15554450010', '80');
		const again = await waitingExecution('80', [{ status: 200 }], port);
		// n8n starts again: the other account's trigger first, holding the saved static data.
		const other = await otherAccountTrigger({ global: saved.global });
		await new Promise((resolve) => setTimeout(resolve, 1000));
		const after = await runningTrigger(
			origin,
			{ node: saved.node, nodeId: saved.nodeId },
			other.harness,
		);
		await until(() => again.bodies.length > 0, 5000);
		expect(again.bodies[0].answer).toMatchObject({
			data: { wa_message_id: event.data.wa_message_id },
		});
		expect(after.started.emitted).toHaveLength(0);
		expect(other.started.emitted).toHaveLength(0);
		expect(logged.warn.join('\n')).not.toContain('was not written by this trigger');
	}, 30_000);
});

describe('two Business Messaging Triggers (two accounts) in one workflow', () => {
	it('an answer refused after the 2xx runs on the branch of the trigger that took it, not of the one started last', async () => {
		const contact = '+15554450009';
		const finished = { code: 409, message: 'The execution "79" has finished already.' };
		const server = await waitingExecution('79', [{ status: 409, body: finished }]);
		const taker = await runningTrigger(new URL(server.url).origin);
		const other = await otherAccountTrigger({ beside: taker.harness });
		waits(taker.harness.globalStaticData, contact, server, '79');
		const event = inboundEnvelope({ from: contact, number: NUMBER, text: 'answer 79' });
		expect((await taker.harness.receive(signedRequest(event, taker.secret))).status).toBe(200);
		await until(() => taker.started.emitted.length + other.started.emitted.length > 0, 5000);
		expect(taker.started.emitted).toHaveLength(1);
		expect(other.started.emitted).toHaveLength(0);
	}, 20_000);
});
