// Several triggers on one account (docs/several-workflows.md §4, §5): triggers of one n8n (one
// origin, one real HTTP server) against the sandbox, through n8n-core's real contexts.
import { createHmac, randomUUID } from 'crypto';
import { createServer, type Server } from 'http';
import type { AddressInfo } from 'net';

import { Logger } from '@n8n/backend-common';

import { request } from 'undici';

import type { WebhookHarness } from '../../harness';
import { createKey } from '../businessMessaging/helpers';
import { accountId } from '../../../nodes/shared/replyAndWait';
import { signJoin } from '../../../nodes/BusinessMessagingTrigger/registration/join';
import {
	DELIVERY_HEADER,
	FIRST_ANSWER_WAIT_MS,
	FORWARDED_AT_HEADER,
	FORWARD_HEADER,
	signForward,
} from '../../../nodes/BusinessMessagingTrigger/receiving/forward';
import { startHeartbeat } from '../../../nodes/BusinessMessagingTrigger/registration/heartbeat';
import { MEMBERS_KEY } from '../../../nodes/BusinessMessagingTrigger/registration/members';
import { CONTACT, inboundEnvelope, signedRequest, useSandbox } from '../../support';
import {
	apiCalls,
	control,
	executionsOf,
	textsOf,
	inboundText,
	postJson,
	registerUrl,
	until,
	useTriggersOfOneN8n,
	type Json,
} from './helpers';

const sb = useSandbox({ reset: 'never' });
const WEBHOOK = '/v1/console/webhook';
const number = () => sb.numbers[0].phone_number_id;

afterEach(() => {
	jest.restoreAllMocks();
	sb.reset();
});

/** Triggers of one n8n behind one server (not activated yet). */
const oneN8n = useTriggersOfOneN8n(sb);

const executions = executionsOf;

function joinBody(member: WebhookHarness, overrides: Json = {}) {
	return JSON.stringify({
		member_url: member.webhookUrl,
		workflow_id: 'wf',
		events: ['message.inbound'],
		account: accountId(sb.keys.all),
		instance_id: INSTANCE_ID(),
		issued_at_ms: Date.now(),
		...overrides,
	});
}

/** n8n's instance id as the harness gives it to every trigger (one n8n). */
let instanceId = '';
const INSTANCE_ID = () => instanceId;

describe('a second trigger on the account joins the first (§4)', () => {
	it('one registration; the member is in the holder static data; activation succeeds', async () => {
		const { harnesses } = await oneN8n({}, { events: ['message.status'] });
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		instanceId = holder.triggerContext().context.getInstanceId();
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		expect(sb.state().webhook.url).toBe(holder.webhookUrl);
		expect(holder.globalStaticData[MEMBERS_KEY]).toEqual({
			[member.webhookUrl]: {
				events: ['message.status'],
				account: accountId(sb.keys.all),
				workflowId: expect.any(String),
				joinedAtMs: expect.any(Number),
				seenAtMs: expect.any(Number),
			},
		});
		expect(member.staticData).toEqual({
			membership: { holderUrl: holder.webhookUrl },
			activatedAtMs: expect.any(Number),
		});
	});

	it('activated at the same moment: exactly one registration (the account lock)', async () => {
		const { harnesses } = await oneN8n({}, {}, {});
		await Promise.all(harnesses.map(async (harness) => await harness.activate()));
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		const holder = harnesses.find((harness) => harness.webhookUrl === sb.state().webhook.url)!;
		expect(Object.keys(holder.globalStaticData[MEMBERS_KEY] as Json)).toHaveLength(2);
	});

	it('same account, another API key: refused naming the same-credential way out', async () => {
		const other = (await createKey(sb, ['messages:read', 'balance:read'])).value;
		const { harnesses } = await oneN8n({}, { apiKey: other });
		await harnesses[0].activate();
		await expect(harnesses[1].activate()).rejects.toThrow(
			/held by another Business Messaging Trigger of this n8n, which uses a different API key.*select the same Business Messaging credential/,
		);
		expect(harnesses[0].globalStaticData[MEMBERS_KEY]).toBeUndefined();
	});

	it("the holder's URL answering n8n's 404 (its workflow gone): the trigger registers itself", async () => {
		const { harnesses } = await oneN8n({});
		const [next] = harnesses;
		// A trigger's URL of this n8n that no active workflow serves any more.
		await registerUrl(sb, next.webhookUrl.replace(/\/[^/]+\/webhook$/, `/${randomUUID()}/webhook`));
		await next.activate();
		expect(sb.state().webhook.url).toBe(next.webhookUrl);
		expect(next.staticData.sealedSecret).toEqual(expect.any(String));
		expect(next.staticData.membership).toBeUndefined();
	});

	it('the holder answering 503 (busy, restarting): activation succeeds, nothing registered (the heartbeat joins later)', async () => {
		const { harnesses } = await oneN8n({}, {});
		const [busy, member] = harnesses;
		busy.receive = async () => ({ status: 503, body: { busy: true }, headers: {} });
		await registerUrl(sb, busy.webhookUrl);
		await member.activate();
		expect(sb.state().webhook.url).toBe(busy.webhookUrl);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		expect(member.staticData).toEqual({
			membership: { holderUrl: busy.webhookUrl },
			activatedAtMs: expect.any(Number),
		});
	});

	it('a member that is deactivated leaves: the holder drops it', async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		expect(Object.keys(holder.globalStaticData[MEMBERS_KEY] as Json)).toEqual([member.webhookUrl]);
		await member.deactivate();
		expect(holder.globalStaticData[MEMBERS_KEY]).toEqual({});
		expect(sb.state().webhook.url).toBe(holder.webhookUrl);
	});
});

describe('forged and replayed joins (§4, §9)', () => {
	it('wrong key, another n8n, another origin, own URL, stale, replayed: 401, nothing stored, no execution', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		instanceId = holder.triggerContext().context.getInstanceId();
		const wrongKey = `sk_live_${'cd'.repeat(24)}`;
		const send = async (body: string, key = sb.keys.all) =>
			await postJson(holder.webhookUrl, { 'x-business-messaging-join': signJoin(key, body) }, body);

		expect((await send(joinBody(member), wrongKey)).status).toBe(401);
		expect((await send(joinBody(member, { instance_id: 'another-n8n' }))).status).toBe(401);
		expect(
			(
				await send(
					joinBody(member, {
						member_url: `http://127.0.0.2:1/webhook/${randomUUID()}/webhook`,
					}),
				)
			).status,
		).toBe(401);
		expect((await send(joinBody(member, { member_url: holder.webhookUrl }))).status).toBe(401);
		expect((await send(joinBody(member, { issued_at_ms: Date.now() - 6 * 60_000 }))).status).toBe(
			401,
		);
		expect(
			(
				await postJson(
					holder.webhookUrl,
					{ 'x-business-messaging-join': 'sha256=00' },
					joinBody(member),
				)
			).status,
		).toBe(401);
		expect(holder.globalStaticData[MEMBERS_KEY]).toBeUndefined();

		const good = joinBody(member);
		expect((await send(good)).status).toBe(200);
		expect((await send(good)).status).toBe(401);
		expect(Object.keys(holder.globalStaticData[MEMBERS_KEY] as Json)).toEqual([member.webhookUrl]);
		expect(executions(results[0])).toHaveLength(0);
	});
});

describe('events forwarded to each member (§5)', () => {
	it("each selected event once per trigger; the holder's own filters never stop a forward", async () => {
		const { harnesses, results } = await oneN8n(
			{ events: ['message.status'] },
			{ events: ['message.inbound'] },
			{ events: ['message.inbound', 'message.status'] },
		);
		for (const harness of harnesses) await harness.activate();
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);

		for (let i = 0; i < 3; i++) {
			const sent = await inboundText(sb, `hello ${i}`);
			expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		}
		const reply = await request(`${sb.baseUrl}/v1/messages/reply`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sb.keys.all}`, 'content-type': 'application/json' },
			body: JSON.stringify({ to: CONTACT, text: 'thanks', from: number() }),
		});
		const { id } = (await reply.body.json()) as Json;
		await control(sb, 'POST', '/status', { id, status: 'delivered' });

		await until(() => executions(results[1]).length === 3 && executions(results[2]).length === 4);
		const texts = textsOf;
		expect(texts(results[0])).toEqual(['status:delivered']);
		expect(texts(results[1]).sort()).toEqual(['hello 0', 'hello 1', 'hello 2']);
		expect(texts(results[2]).sort()).toEqual(['hello 0', 'hello 1', 'hello 2', 'status:delivered']);
		// The forwarded item is the service's event, byte for byte.
		const delivered = sb
			.state()
			.deliveries.find((d: Json) => JSON.parse(d.body).data.text === 'hello 0');
		if (!delivered) throw new Error('no delivery of hello 0');
		const forwarded = executions(results[1]).find(
			(r) => (r.workflowData![0][0].json as Json).data.text === 'hello 0',
		)!;
		expect((forwarded.workflowData![0][0].json as Json).data).toEqual(
			JSON.parse(String(delivered.body)).data,
		);
	});

	it('forged, stale or replayed forwards, and service-signed events sent straight to a member: no execution', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		const { rawBody, headers } = signedRequest(
			inboundEnvelope({ number: number() }),
			String(sb.state().webhook.secret),
		);
		const fwdKey = createHmac('sha256', sb.keys.all)
			.update('business-messaging forward v1')
			.digest('hex');
		const forward = (atMs: number, key = fwdKey, delivery = headers['x-service-signature']) => ({
			[FORWARD_HEADER]: signForward(key, atMs, '', rawBody),
			[FORWARDED_AT_HEADER]: String(atMs),
			[DELIVERY_HEADER]: delivery,
		});
		// Straight from the service to the member: it holds no secret. n8n's log says why, without the
		// advice meant for a lost registration (a hand-off to it is being saved: no republish needed).
		const errors: string[] = [];
		jest.spyOn(Logger.prototype, 'error').mockImplementation((message: string) => {
			errors.push(message);
		});
		expect((await postJson(member.webhookUrl, headers, rawBody)).status).toBe(401);
		jest.restoreAllMocks();
		expect(errors.join('\n')).toMatch(/joined the trigger at .* holds no signing secret.*hand-off/);
		expect(errors.join('\n')).not.toMatch(/registration was lost/);
		// Signed with another key, or the join key (a captured join is no forward), or stale.
		const joinKey = createHmac('sha256', sb.keys.all)
			.update('business-messaging membership v1')
			.digest('hex');
		expect(
			(await postJson(member.webhookUrl, forward(Date.now(), 'x'.repeat(64)), rawBody)).status,
		).toBe(401);
		expect((await postJson(member.webhookUrl, forward(Date.now(), joinKey), rawBody)).status).toBe(
			401,
		);
		expect(
			(await postJson(member.webhookUrl, forward(Date.now() - 6 * 60_000), rawBody)).status,
		).toBe(401);
		// Another body under a valid forward signature.
		const other = Buffer.from(rawBody.toString().replace('"text"', '"text" '));
		expect((await postJson(member.webhookUrl, forward(Date.now()), other)).status).toBe(401);
		expect(executions(results[1])).toHaveLength(0);
		// A good one runs once; the same delivery again (a holder's retry) does not.
		expect((await postJson(member.webhookUrl, forward(Date.now()), rawBody)).status).toBe(200);
		expect(
			(await postJson(member.webhookUrl, forward(Date.now() + 1), rawBody)).body,
		).toMatchObject({
			ignored: expect.stringMatching(/already received/),
		});
		expect(executions(results[1])).toHaveLength(1);
		// A forward sent to the holder is no service event: it holds no forward for itself to run twice.
		expect(executions(results[0])).toHaveLength(0);
	});

	/** A member URL served by a stub that answers each request after `delayMs` (or never), recording when. */
	async function slowMember(delayMs: number | 'never') {
		const answeredAt: number[] = [];
		const server = createServer((req, res) => {
			req.resume();
			if (delayMs === 'never') return;
			setTimeout(() => {
				answeredAt.push(Date.now());
				res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
			}, delayMs);
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		const { port } = server.address() as AddressInfo;
		stubs.push(server);
		return { url: `http://127.0.0.1:${port}/webhook/${randomUUID()}/webhook`, answeredAt };
	}
	const stubs: Server[] = [];
	afterEach(async () => {
		for (const server of stubs.splice(0)) {
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		}
	});

	it('the holder answers the service only once each member answered its forward: a holder that dies first leaves a failure the catch-ups recover', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		const slow = await slowMember(500);
		const state = holder.globalStaticData[MEMBERS_KEY] as Json;
		holder.globalStaticData[MEMBERS_KEY] = {
			...state,
			[slow.url]: { ...state[member.webhookUrl] },
		};
		const sent = await inboundText(sb, 'to a slow member');
		const answeredServiceAt = Date.now();
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		// Both members had it when the service got its 2xx, not some time after.
		expect(slow.answeredAt).toHaveLength(1);
		expect(slow.answeredAt[0]).toBeLessThanOrEqual(answeredServiceAt);
		expect(executions(results[1])).toHaveLength(1);
	});

	it('a member that never answers holds the service back 4 s at most: the event is delivered, the retries go on', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		const hung = await slowMember('never');
		const state = holder.globalStaticData[MEMBERS_KEY] as Json;
		holder.globalStaticData[MEMBERS_KEY] = {
			...state,
			[hung.url]: { ...state[member.webhookUrl] },
		};
		const started = Date.now();
		const sent = await inboundText(sb, 'to a hung member');
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		expect(Date.now() - started).toBeGreaterThanOrEqual(FIRST_ANSWER_WAIT_MS - 100);
		expect(Date.now() - started).toBeLessThan(FIRST_ANSWER_WAIT_MS + 3000);
		expect(executions(results[0])).toHaveLength(1);
		expect(executions(results[1])).toHaveLength(1);
	});

	it("a member answering n8n's 404 is dropped from the holder's members", async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		// Gone without leaving (n8n 2.x removes the row before delete(), or a crash): a URL no workflow serves.
		const state = holder.globalStaticData[MEMBERS_KEY] as Json;
		const stranger = member.webhookUrl.replace(/\/[^/]+\/webhook$/, `/${randomUUID()}/webhook`);
		holder.globalStaticData[MEMBERS_KEY] = { [stranger]: { ...state[member.webhookUrl] } };
		expect((await inboundText(sb, 'to a gone member')).body.delivery).toMatchObject({
			delivered: true,
		});
		await until(() => !(stranger in (holder.globalStaticData[MEMBERS_KEY] as Json)), 1000);
		await inboundText(sb, 'next');
		// Dropped; the member that is still active stays (this process saw it join).
		expect(Object.keys(holder.globalStaticData[MEMBERS_KEY] as Json)).toEqual([member.webhookUrl]);
	});
});

describe('heartbeat (§4)', () => {
	it('the holder deactivated and every hand-off failed: a member registers and holds within one beat; events reach it directly', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		// The member busy during the hand-off (§6): the holder deletes the webhook.
		const receive = member.receive;
		member.receive = async () => ({ status: 503, body: {}, headers: {} });
		await holder.deactivate();
		member.receive = receive;
		expect(sb.state().webhook.configured).toBe(false);
		const heartbeat = await startHeartbeat.call(member.triggerContext().context);
		try {
			expect(await heartbeat.beat()).toBe('registered');
			expect(sb.state().webhook.url).toBe(member.webhookUrl);
			expect(member.staticData.sealedSecret).toEqual(expect.any(String));
			expect(await heartbeat.beat()).toBe('holder');
			expect((await inboundText(sb, 'after the hand-over')).body.delivery).toMatchObject({
				delivered: true,
				status: 200,
			});
			expect(executions(results[1])).toHaveLength(1);
			expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2);
		} finally {
			heartbeat.close();
		}
	});

	it("the holder's URL dead in this n8n (n8n's 404): a member registers in its place within one beat", async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		// The holder's workflow is gone without deleting the webhook (n8n's row removed, delete() failed).
		const dead = member.webhookUrl.replace(/\/[^/]+\/webhook$/, `/${randomUUID()}/webhook`);
		await registerUrl(sb, dead);
		const heartbeat = await startHeartbeat.call(member.triggerContext().context);
		try {
			expect(await heartbeat.beat()).toBe('registered');
			expect(sb.state().webhook.url).toBe(member.webhookUrl);
			expect(member.staticData.sealedSecret).toEqual(expect.any(String));
		} finally {
			heartbeat.close();
		}
	});

	it('a member re-joins (a join lost to a concurrent save is repaired); a foreign webhook is never taken', async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await holder.activate();
		await member.activate();
		delete holder.globalStaticData[MEMBERS_KEY];
		const heartbeat = await startHeartbeat.call(member.triggerContext().context);
		try {
			expect(await heartbeat.beat()).toBe('member');
			expect(Object.keys(holder.globalStaticData[MEMBERS_KEY] as Json)).toEqual([
				member.webhookUrl,
			]);
			await registerUrl(sb, 'https://crm.example.org/hooks/messaging');
			expect(await heartbeat.beat()).toBe('foreign');
			expect(sb.state().webhook.url).toBe('https://crm.example.org/hooks/messaging');
		} finally {
			heartbeat.close();
		}
	});

	it("before each emit the holder copies the registry's live members into its static data", async () => {
		const { harnesses } = await oneN8n({}, { events: ['message.status'] });
		const [holder, member] = harnesses;
		await holder.activate();
		// The member's join never reached the holder (busy): only the registry knows it.
		const receive = holder.receive;
		holder.receive = async () => ({ status: 503, body: {}, headers: {} });
		await member.activate();
		holder.receive = receive;
		expect(holder.globalStaticData[MEMBERS_KEY]).toBeUndefined();
		const holderBeat = await startHeartbeat.call(holder.triggerContext().context);
		const memberBeat = await startHeartbeat.call(member.triggerContext().context);
		try {
			holderBeat.beforeEmit();
			expect(holder.globalStaticData[MEMBERS_KEY]).toMatchObject({
				[member.webhookUrl]: { events: ['message.status'] },
			});
			memberBeat.beforeEmit();
			expect(member.globalStaticData[MEMBERS_KEY]).toBeUndefined();
		} finally {
			holderBeat.close();
			memberBeat.close();
		}
	});
	/**
	 * A holder and a member whose trigger() started before its webhook methods (n8n 2.x runs both
	 * side by side), activated while the holder answers 503: its join never reached the holder (a
	 * processor's save that main's copy lacks), so only the registry can tell the holder.
	 */
	const heartbeats: Array<{ close(): void }> = [];
	afterEach(() => {
		for (const heartbeat of heartbeats.splice(0)) heartbeat.close();
	});

	async function memberWithLostJoin() {
		const { harnesses } = await oneN8n({}, { events: ['message.status'] });
		const [holder, member] = harnesses;
		await holder.activate();
		const holderBeat = await startHeartbeat.call(holder.triggerContext().context);
		const memberBeat = await startHeartbeat.call(member.triggerContext().context);
		const receive = holder.receive;
		holder.receive = async () => ({ status: 503, body: {}, headers: {} });
		await member.activate();
		holder.receive = receive;
		heartbeats.push(holderBeat, memberBeat);
		return { holder, member, holderBeat, memberBeat };
	}

	it("a member whose trigger() starts before its webhook methods ran (n8n 2.x runs both side by side) enters the registry once its URL is known: the holder's emit keeps it", async () => {
		const { holder, member, holderBeat, memberBeat } = await memberWithLostJoin();
		expect(holder.globalStaticData[MEMBERS_KEY]).toBeUndefined();
		// n8n's save of the holder's activation-time copy at its next emit: the member must be in it.
		await until(() => {
			holderBeat.beforeEmit();
			return holder.globalStaticData[MEMBERS_KEY] !== undefined;
		});
		expect(holder.globalStaticData[MEMBERS_KEY]).toMatchObject({
			[member.webhookUrl]: { events: ['message.status'] },
		});
		// And its heartbeat runs: it joins again (repairing a join lost to a save).
		delete holder.globalStaticData[MEMBERS_KEY];
		expect(await memberBeat.beat()).toBe('member');
		expect(Object.keys(holder.globalStaticData[MEMBERS_KEY] as Json)).toEqual([member.webhookUrl]);
	});

	it("a member is in the registry as soon as its webhook methods know its URL: main's save right after its join keeps it (T6)", async () => {
		const { holder, member, holderBeat } = await memberWithLostJoin();
		// main emits for the holder at once (a recovered message): its whole save must hold the
		// member, not wait for the member's heartbeat to look its URL up again a second later.
		holderBeat.beforeEmit();
		expect(holder.globalStaticData[MEMBERS_KEY]).toMatchObject({
			[member.webhookUrl]: { events: ['message.status'] },
		});
	});
});
