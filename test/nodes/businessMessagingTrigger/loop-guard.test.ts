// No loop (docs/several-workflows.md §5, test plan T11): a member never forwards, a forwarded
// request is never taken for a service event, and a holder forwards only what the service
// signed, even if two triggers wrongly both think they hold. Triggers of one n8n (one real HTTP
// server) against the sandbox; every request each trigger gets is counted at its URL.
import { createHmac } from 'crypto';

import type { WebhookHarness } from '../../harness';
import {
	DELIVERY_HEADER,
	FORWARDED_AT_HEADER,
	FORWARD_HEADER,
	signForward,
} from '../../../nodes/BusinessMessagingTrigger/receiving/forward';
import { MEMBERS_KEY } from '../../../nodes/BusinessMessagingTrigger/registration/members';
import type { TriggerStaticData } from '../../../nodes/BusinessMessagingTrigger/registration/signingSecrets';
import { inboundEnvelope, signedRequest, useSandbox } from '../../support';
import {
	executionsOf,
	inboundText,
	postJson,
	textsOf,
	until,
	useTriggersOfOneN8n,
	type Json,
} from './helpers';

const sb = useSandbox({ reset: 'never' });
const number = () => sb.numbers[0].phone_number_id;

afterEach(() => {
	sb.reset();
});

const oneN8n = useTriggersOfOneN8n(sb);

/** The forward key as the holder derives it from the API key (credentialKeys.ts FORWARD_LABEL). */
const forwardKey = () =>
	createHmac('sha256', sb.keys.all).update('business-messaging forward v1').digest('hex');

/** The delivery ids of the forwards that reached this trigger's URL, in arrival order. */
function forwardsReaching(harness: WebhookHarness): string[] {
	const got: string[] = [];
	const receive = harness.receive.bind(harness);
	harness.receive = async (input) => {
		if (input.headers[FORWARD_HEADER] !== undefined) got.push(input.headers[DELIVERY_HEADER]);
		return await receive(input);
	};
	return got;
}

/** A service event, signed as the service signs it, and the same bytes forwarded (signed with the forward key). */
function serviceEvent(text: string) {
	const { rawBody, headers } = signedRequest(
		inboundEnvelope({ number: number(), text }),
		String(sb.state().webhook.secret),
	);
	const forwardHeaders = (atMs = Date.now()) => ({
		[FORWARD_HEADER]: signForward(forwardKey(), atMs, '', rawBody),
		[FORWARDED_AT_HEADER]: String(atMs),
		[DELIVERY_HEADER]: headers['x-service-signature'],
	});
	return { rawBody, serviceHeaders: headers, forwardHeaders };
}

/** Lets any forward or retry that would follow an answer arrive (the first retry comes after 2 s). */
const SETTLE_MS = 2500;
const settle = async () => await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

describe('no loop between the triggers of one account (§5, T11)', () => {
	it("a forward posted to the holder's own URL, or the holder's URL among its members (URLs mixed up): the holder runs it at most once and forwards it to no member, so no workflow runs a message twice", async () => {
		const { harnesses, results } = await oneN8n({}, {}, {});
		for (const harness of harnesses) await harness.activate();
		const [holder, ...members] = harnesses;
		expect(sb.state().webhook.url).toBe(holder.webhookUrl);
		expect(Object.keys(holder.globalStaticData[MEMBERS_KEY] as Json).sort()).toEqual(
			members.map((member) => member.webhookUrl).sort(),
		);
		const forwards = harnesses.map(forwardsReaching);

		const event = serviceEvent('forwarded to the holder');
		const first = await postJson(holder.webhookUrl, event.forwardHeaders(), event.rawBody);
		expect(first.status).toBe(200);
		// The same delivery forwarded again (a retry of the mixed-up forward).
		const again = await postJson(holder.webhookUrl, event.forwardHeaders(), event.rawBody);
		expect(again.status).toBe(200);
		await settle();

		expect(forwards[0]).toHaveLength(2);
		expect(executionsOf(results[0]).length).toBeLessThanOrEqual(1);
		// 0 re-forwards: no member got anything, so none ran it.
		expect(forwards[1]).toEqual([]);
		expect(forwards[2]).toEqual([]);
		expect(executionsOf(results[1])).toHaveLength(0);
		expect(executionsOf(results[2])).toHaveLength(0);

		// The holder's own URL mixed up into its members: a service event reaches each member once
		// (the counting sees forwards), and the holder never forwards to itself.
		const table = holder.globalStaticData[MEMBERS_KEY] as Json;
		holder.globalStaticData[MEMBERS_KEY] = {
			...table,
			[holder.webhookUrl]: { ...table[members[0].webhookUrl] },
		};
		const sent = await inboundText(sb, 'from the service');
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		await until(() => forwards[1].length + forwards[2].length >= 2, 5000, SETTLE_MS);
		expect(forwards[0]).toHaveLength(2);
		expect(forwards[1]).toHaveLength(1);
		expect(forwards[2]).toHaveLength(1);
		expect(textsOf(results[0]).filter((text) => text === 'from the service')).toHaveLength(1);
		expect(textsOf(results[1])).toEqual(['from the service']);
		expect(textsOf(results[2])).toEqual(['from the service']);
	});

	it('two triggers that both believe they hold (each with the secret, the other among its members): forwards = members × events, never a forward of a forward (no ping-pong), so each workflow runs each message exactly once', async () => {
		const { harnesses, results } = await oneN8n({}, {}, {});
		for (const harness of harnesses) await harness.activate();
		const [a, b, c] = harnesses;
		expect(sb.state().webhook.url).toBe(a.webhookUrl);
		// b wrongly holds too: the registration's secret in its node static data, a and c as its members.
		const held = a.staticData as TriggerStaticData;
		const bNode = b.staticData as TriggerStaticData;
		delete bNode.membership;
		bNode.webhookUrl = b.webhookUrl;
		bNode.registeredBy = held.registeredBy;
		bNode.sealedSecret = held.sealedSecret;
		const aMembers = a.globalStaticData[MEMBERS_KEY] as Json;
		const entry = aMembers[b.webhookUrl];
		b.globalStaticData[MEMBERS_KEY] = {
			[a.webhookUrl]: { ...entry },
			[c.webhookUrl]: { ...aMembers[c.webhookUrl] },
		};
		// a holds b and c (both joined it).
		expect(Object.keys(aMembers).sort()).toEqual([b.webhookUrl, c.webhookUrl].sort());
		const forwards = harnesses.map(forwardsReaching);

		// Events the service sends to a (its registered URL), and service-signed events that reach b.
		const events = 3;
		for (let i = 0; i < events; i++) {
			const sent = await inboundText(sb, `to a ${i}`);
			expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		}
		for (let i = 0; i < events; i++) {
			const event = serviceEvent(`to b ${i}`);
			expect((await postJson(b.webhookUrl, event.serviceHeaders, event.rawBody)).status).toBe(200);
		}
		await until(() => forwards.every((got) => got.length >= events), 5000, SETTLE_MS);

		// Forwards = members × events for each holder: a's 3 to b and c, b's 3 to a and c.
		expect(forwards[0]).toHaveLength(events);
		expect(forwards[1]).toHaveLength(events);
		expect(forwards[2]).toHaveLength(2 * events);
		// Every trigger ran every event exactly once.
		const all = [0, 1, 2].flatMap((i) => [`to a ${i}`, `to b ${i}`]).sort();
		expect(textsOf(results[0]).sort()).toEqual(all);
		expect(textsOf(results[1]).sort()).toEqual(all);
		expect(textsOf(results[2]).sort()).toEqual(all);
	});
});
