// When the holder goes away (docs/several-workflows.md §6) and membership gaps (§7): triggers of
// one n8n (one origin, one real HTTP server) against the sandbox, through n8n-core's real contexts.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';
import { request } from 'undici';

import type { StartedTrigger, WebhookHarness } from '../../harness';
import { STATIC_DATA_KEY as WAITING_KEY } from '../../../nodes/shared/replyAndWait';
import {
	HANDOFF_HEADER,
	signHandOff,
} from '../../../nodes/BusinessMessagingTrigger/registration/handOff';
import { startHeartbeat } from '../../../nodes/BusinessMessagingTrigger/registration/heartbeat';
import { afterLeaving } from '../../../nodes/BusinessMessagingTrigger/registration/webhookMethods';
import { MEMBERS_KEY } from '../../../nodes/BusinessMessagingTrigger/registration/members';
import { SETTLE_MS } from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import { CONTACT, useSandbox } from '../../support';
import {
	apiCalls,
	control,
	executionsOf,
	textsOf,
	inboundText,
	postJson,
	registerUrl,
	storedSecret,
	until,
	useTriggersOfOneN8n,
	type Json,
} from './helpers';

const sb = useSandbox({ reset: 'never' });
const WEBHOOK = '/v1/console/webhook';
const number = () => sb.numbers[0].phone_number_id;

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
	jest.restoreAllMocks();
	for (const close of open.splice(0).reverse()) await close();
	sb.reset();
});

const oneN8n = useTriggersOfOneN8n(sb);

/**
 * Activates as n8n does: the webhook methods, then trigger() (here its heartbeat, which enters
 * the process's registry of live triggers; only those are offered the webhook).
 */
async function activateLive(...harnesses: WebhookHarness[]): Promise<void> {
	for (const harness of harnesses) {
		await harness.activate();
		const heartbeat = await startHeartbeat.call(harness.triggerContext().context);
		open.push(async () => heartbeat.close());
	}
}

const executions = executionsOf;
const texts = textsOf;

async function statusOfAReply(status: string) {
	const reply = await request(`${sb.baseUrl}/v1/messages/reply`, {
		method: 'POST',
		headers: { authorization: `Bearer ${sb.keys.all}`, 'content-type': 'application/json' },
		body: JSON.stringify({ to: CONTACT, text: 'thanks', from: number() }),
	});
	const { id } = (await reply.body.json()) as Json;
	return await control(sb, 'POST', '/status', { id, status });
}

function handOffBody(holder: WebhookHarness, overrides: Json = {}): string {
	return JSON.stringify({
		from_url: holder.webhookUrl,
		waiting: {},
		members: {},
		instance_id: holder.triggerContext().context.getInstanceId(),
		issued_at_ms: Date.now(),
		...overrides,
	});
}

describe('the holder deactivated hands the webhook off to a member (§6)', () => {
	it('one POST by the member, no DELETE; inbound and status events keep flowing, the other members still get theirs', async () => {
		const { harnesses, results } = await oneN8n(
			{},
			{ events: ['message.inbound', 'message.status'] },
			{ events: ['message.inbound'] },
		);
		const [holder, next, other] = harnesses;
		await activateLive(...harnesses);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);

		await holder.deactivate();
		// The member that joined first took it over: it registered, nobody deleted.
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2);
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0);
		expect(sb.state().webhook.url).toBe(next.webhookUrl);
		expect(storedSecret(next.staticData, sb.keys.all)).toBe(sb.state().webhook.secret);
		expect(next.staticData.membership).toBeUndefined();
		expect(holder.staticData.sealedSecret).toBeUndefined();
		// The other member moved with the registration, so it is forwarded to before it joins again.
		expect(Object.keys(next.globalStaticData[MEMBERS_KEY] as Json)).toEqual([other.webhookUrl]);

		expect((await inboundText(sb, 'after the hand-off')).body.delivery).toMatchObject({
			delivered: true,
			status: 200,
		});
		expect((await statusOfAReply('delivered')).body.delivery).toMatchObject({
			delivered: true,
			status: 200,
		});
		await until(() => executions(results[2]).length === 1);
		expect(texts(results[1])).toEqual(['after the hand-off', 'status:delivered']);
		expect(texts(results[2])).toEqual(['after the hand-off']);
		expect(executions(results[0])).toHaveLength(0);
	});

	it("only a member live in this process (the registry) is offered it; the registration is written into main's copy (adopt)", async () => {
		const { harnesses } = await oneN8n({}, {}, {});
		const [holder, older, live] = harnesses;
		for (const harness of harnesses) await harness.activate();
		// Only `live` runs its trigger() here: the other member joined earlier but is not in this process.
		const context = live.triggerContext().context;
		const adopted: IDataObject = {};
		jest.spyOn(context, 'getWorkflowStaticData').mockImplementation(() => adopted);
		const heartbeat = await startHeartbeat.call(context);
		open.push(async () => heartbeat.close());
		await holder.deactivate();
		expect(sb.state().webhook.url).toBe(live.webhookUrl);
		expect(older.staticData.sealedSecret).toBeUndefined();
		// main's activation-time copy holds the registration the member's webhook() made.
		expect(adopted).toMatchObject({
			webhookUrl: live.webhookUrl,
			sealedSecret: live.staticData.sealedSecret,
		});
	});

	it("Reply and Wait's waiting entries move to the new holder", async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, next] = harnesses;
		await activateLive(...harnesses);
		const entry = {
			resumeUrl: `${new URL(holder.webhookUrl).origin}/webhook-waiting/42`,
			executionId: '42',
			expiresAtMs: Date.now() + 3600_000,
			alsoStart: false,
			node: 'Reply and Wait',
			account: 'acct',
			home: 'the holder',
		};
		holder.globalStaticData[WAITING_KEY] = {
			[`${number()}|${CONTACT}`]: entry,
			'*|+33600000000': { ...entry, executionId: '7', expiresAtMs: Date.now() - 1 },
		};
		await holder.deactivate();
		expect(sb.state().webhook.url).toBe(next.webhookUrl);
		expect(next.globalStaticData[WAITING_KEY]).toEqual({
			[`${number()}|${CONTACT}`]: { ...entry, home: expect.not.stringMatching(/^the holder$/) },
		});
	});

	it('no member takes it (none, or the only one busy): the webhook is deleted as before', async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, busy] = harnesses;
		await activateLive(...harnesses);
		const receive = busy.receive;
		busy.receive = async () => ({ status: 503, body: { busy: true }, headers: {} });
		await holder.deactivate();
		busy.receive = receive;
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(1);
		expect(sb.state().webhook.configured).toBe(false);
		expect(busy.staticData.sealedSecret).toBeUndefined();

		const alone = (await oneN8n({})).harnesses[0];
		await alone.activate();
		await alone.deactivate();
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(2);
		expect(sb.state().webhook.configured).toBe(false);
	});

	it('a member that registered but whose answer was lost keeps the webhook: the holder reads it again before deleting', async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, next] = harnesses;
		await activateLive(...harnesses);
		const receive = next.receive;
		next.receive = async (input) => {
			await receive(input);
			return { status: 503, body: {}, headers: {} };
		};
		await holder.deactivate();
		next.receive = receive;
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0);
		expect(sb.state().webhook.url).toBe(next.webhookUrl);
		expect(next.staticData.sealedSecret).toEqual(expect.any(String));
	});

	it('republishing the holder: it hands off, then joins the new holder as a member', async () => {
		const { harnesses } = await oneN8n({}, {});
		const [holder, next] = harnesses;
		await activateLive(...harnesses);
		await holder.deactivate();
		await holder.activate();
		expect(sb.state().webhook.url).toBe(next.webhookUrl);
		expect(holder.staticData).toEqual({
			membership: { holderUrl: next.webhookUrl },
			activatedAtMs: expect.any(Number),
		});
		expect(Object.keys(next.globalStaticData[MEMBERS_KEY] as Json)).toEqual([holder.webhookUrl]);
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(2);
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(0);
	});
});

describe('a hand-off never leaves the webhook at a URL n8n no longer serves', () => {
	it('a member whose deactivation has begun (its URL still routed, as n8n 1.x does until after delete()) is not offered the webhook: it is deleted', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [holder, leaving] = harnesses;
		await activateLive(...harnesses);
		// n8n deactivates both at once: the member's delete() first; its URL still answers.
		await leaving.deactivate();
		await holder.deactivate();
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(1);
		expect(apiCalls(sb, 'DELETE', WEBHOOK)).toBe(1);
		expect(sb.state().webhook.configured).toBe(false);
		expect(leaving.staticData.sealedSecret).toBeUndefined();
		expect(executions(results[1])).toHaveLength(0);
	});

	it('a hand-off reaching a trigger that is not live in this process (trigger() closed, being deactivated) is refused (409) and changes nothing', async () => {
		const { harnesses } = await oneN8n({}, {}, {});
		const [holder, live, notLive] = harnesses;
		await activateLive(holder, live);
		await notLive.activate();
		const before = JSON.parse(JSON.stringify(notLive.staticData)) as Json;
		const body = handOffBody(holder);
		const refused = await postJson(
			notLive.webhookUrl,
			{ [HANDOFF_HEADER]: signHandOff(sb.keys.all, body) },
			body,
		);
		expect(refused.status).toBe(409);
		expect(refused.body.reason).toMatch(/not active/);
		expect(sb.state().webhook.url).toBe(holder.webhookUrl);
		expect(notLive.staticData).toEqual(before);
	});

	it("the webhook found at a deactivated trigger's URL after its delete() (a hand-off that crossed it) is passed on to a live trigger, or deleted", async () => {
		const checksMs = afterLeaving.checksMs;
		afterLeaving.checksMs = [300, 1500];
		try {
			const { harnesses } = await oneN8n({}, {}, {});
			const [holder, gone, live] = harnesses;
			await activateLive(...harnesses);
			await gone.deactivate();
			// What a crossing hand-off would have done: the account's webhook at the gone URL.
			await registerUrl(sb, gone.webhookUrl);
			const liveUrls = [holder.webhookUrl, live.webhookUrl];
			await until(() => liveUrls.includes(String(sb.state().webhook.url)), 5000);
			const taker = [holder, live].find((h) => h.webhookUrl === sb.state().webhook.url);
			expect(taker).toBeDefined();
			expect(storedSecret(taker!.staticData, sb.keys.all)).toBe(sb.state().webhook.secret);

			// None live any more: deleted.
			await live.deactivate();
			await holder.deactivate();
			await registerUrl(sb, live.webhookUrl);
			await until(() => !sb.state().webhook.configured, 5000);
			expect(sb.state().webhook.configured).toBe(false);
		} finally {
			afterLeaving.checksMs = checksMs;
		}
	});
});

describe('forged, stale and replayed hand-offs (§6, §9): 401, nothing changes', () => {
	it('wrong key, another n8n, from its own URL, old, replayed; and a hand-off from a URL the webhook no longer points at', async () => {
		const { harnesses, results } = await oneN8n({}, {});
		const [holder, member] = harnesses;
		await activateLive(...harnesses);
		const memberData = JSON.parse(JSON.stringify(member.staticData)) as Json;
		const send = async (body: string, key = sb.keys.all) =>
			await postJson(member.webhookUrl, { [HANDOFF_HEADER]: signHandOff(key, body) }, body);

		expect((await send(handOffBody(holder), `sk_live_${'cd'.repeat(24)}`)).status).toBe(401);
		expect((await send(handOffBody(holder, { instance_id: 'another-n8n' }))).status).toBe(401);
		expect((await send(handOffBody(holder, { from_url: member.webhookUrl }))).status).toBe(401);
		expect(
			(await send(handOffBody(holder, { issued_at_ms: Date.now() - 6 * 60_000 }))).status,
		).toBe(401);
		expect(
			(await postJson(member.webhookUrl, { [HANDOFF_HEADER]: 'sha256=00' }, handOffBody(holder)))
				.status,
		).toBe(401);

		// Stale: the webhook was registered elsewhere after the hand-off was signed.
		const stale = handOffBody(holder);
		await registerUrl(sb, 'https://crm.example.org/hooks/messaging');
		const refused = await send(stale);
		expect(refused.status).toBe(401);
		expect(refused.body.reason).toMatch(/no longer points at the leaving trigger/);
		expect(sb.state().webhook.url).toBe('https://crm.example.org/hooks/messaging');
		// Replayed: the same signed hand-off again, even once the webhook is the holder's again.
		await registerUrl(sb, holder.webhookUrl);
		const replayed = await send(stale);
		expect(replayed.status).toBe(401);
		expect(replayed.body.reason).toMatch(/already received/);

		expect(sb.state().webhook.url).toBe(holder.webhookUrl);
		// The holder's activation and the test's two: the member registered nothing.
		expect(apiCalls(sb, 'POST', WEBHOOK)).toBe(3);
		expect(member.staticData).toEqual(memberData);
		expect(executions(results[1])).toHaveLength(0);
	});
});

describe('membership gaps (§7)', () => {
	const later = (seconds: number) => {
		const now = Date.now();
		jest
			.spyOn(Date, 'now')
			.mockImplementation(() => now + seconds * 1000 + (performance.now() % 1));
	};
	async function emittedAtLeast(run: StartedTrigger, count: number, ms = 10_000) {
		// performance.now(): Date.now() is held still by later().
		const end = performance.now() + ms;
		while (run.emitted.length < count && performance.now() < end)
			await new Promise((resolve) => setTimeout(resolve, 50));
		return run.emitted.map((data) => data.flat()).flat() as INodeExecutionData[];
	}

	it('a member recovers, once, what the holder got while it was not joined; what it got live is not run again', async () => {
		const { harnesses, results } = await oneN8n({}, { catchUp: true });
		const [holder, member] = harnesses;
		for (const harness of harnesses) await harness.activate();
		const first = await member.startTrigger('activate');
		await first.close();
		expect((await inboundText(sb, 'before')).body.delivery).toMatchObject({ delivered: true });
		await until(() => executions(results[1]).length === 1);

		await member.deactivate();
		// Delivered (a success in the log, to another trigger of this n8n), not forwarded to it.
		expect((await inboundText(sb, 'while away')).body.delivery).toMatchObject({
			delivered: true,
			status: 200,
		});
		await member.activate();
		expect((await inboundText(sb, 'after')).body.delivery).toMatchObject({ delivered: true });
		await until(() => executions(results[1]).length === 2);
		expect(texts(results[1])).toEqual(['before', 'after']);
		expect(executions(results[0])).toHaveLength(3);
		expect(sb.state().webhook.url).toBe(holder.webhookUrl);

		later(SETTLE_MS / 1000 + 5);
		const run = await member.startTrigger('activate');
		open.push(async () => await run.close());
		const items = await emittedAtLeast(run, 1);
		await new Promise((resolve) => setTimeout(resolve, 1000));
		expect(
			items.map((item) => [(item.json.data as IDataObject).text, item.json.recovered]),
		).toEqual([['while away', true]]);
		expect(items[0].json.delivery_failure).toMatch(/not joined/);
	});

	it('a trigger published while events come in recovers what the holder got before its join was stored (n8n 2.x starts trigger() beside the webhook methods)', async () => {
		const { harnesses, results } = await oneN8n({}, { catchUp: true });
		const [holder, member] = harnesses;
		await holder.activate();
		// trigger() first, as 2.x may: its catch-up starts from now.
		const first = await member.startTrigger('activate');
		await first.close();
		expect((await inboundText(sb, 'before the join')).body.delivery).toMatchObject({
			delivered: true,
			status: 200,
		});
		await member.activate();
		expect(executions(results[1])).toHaveLength(0);
		expect((await inboundText(sb, 'after the join')).body.delivery).toMatchObject({
			delivered: true,
		});
		await until(() => executions(results[1]).length === 1);

		later(SETTLE_MS / 1000 + 5);
		const run = await member.startTrigger('init');
		open.push(async () => await run.close());
		const items = await emittedAtLeast(run, 1);
		await new Promise((resolve) => setTimeout(resolve, 1000));
		expect(
			items.map((item) => [(item.json.data as IDataObject).text, item.json.recovered]),
		).toEqual([['before the join', true]]);
		expect(executions(results[0])).toHaveLength(2);
		expect(sb.state().webhook.url).toBe(holder.webhookUrl);
	});
});
