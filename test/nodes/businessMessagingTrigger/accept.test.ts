import {
	acceptEvent,
	type EventParameters,
} from '../../../nodes/BusinessMessagingTrigger/receiving/accept';
import { eventItem, workflowDataFor } from '../../../nodes/BusinessMessagingTrigger/routing/route';
import { signBody, SIGNING_SECRET, WRONG_SECRET } from '../../support';
import { asEmitted } from './helpers';

// 1.9 s after the event's timestamp: within the Late Delivery Cutoff (5 s).
const NOW = Date.UTC(2025, 0, 2, 3, 4, 7);
const inbound = {
	event: 'message.inbound',
	data: { from: '+15550001111', number: '1098', text: 'hi', media_id: null, media_url: null },
	timestamp: '2025-01-02T03:04:05.123456+00:00',
};
const bytes = (value: unknown) => Buffer.from(JSON.stringify(value));
const params = (overrides: Partial<EventParameters> = {}): EventParameters => ({
	events: ['message.inbound'],
	options: {},
	separateOutputs: false,
	...overrides,
});

describe('acceptEvent (the receive path without n8n context)', () => {
	it('emits a verified inbound event with its options and layout', () => {
		const body = bytes(inbound);
		const result = acceptEvent(body, signBody(body, SIGNING_SECRET), SIGNING_SECRET, NOW, () =>
			params(),
		);
		expect(result).toEqual({
			kind: 'emit',
			envelope: inbound,
			timestampMs: Date.parse(inbound.timestamp),
			options: expect.objectContaining({ maxAgeSeconds: 300 }),
			layout: null,
		});
	});

	it('rejects a wrong signature with 401 before reading the parameters or the body', () => {
		const body = Buffer.from('not even json');
		const readParameters = jest.fn(params);
		const result = acceptEvent(
			body,
			signBody(body, WRONG_SECRET),
			SIGNING_SECRET,
			NOW,
			readParameters,
		);
		expect(result).toEqual({
			kind: 'reject',
			status: 401,
			reason: 'the signature does not match the body',
		});
		expect(readParameters).not.toHaveBeenCalled();
	});

	it('rejects a signed body that is not an envelope with 400, without reading the parameters', () => {
		const body = bytes({ hello: 'world' });
		const readParameters = jest.fn(params);
		const result = acceptEvent(
			body,
			signBody(body, SIGNING_SECRET),
			SIGNING_SECRET,
			NOW,
			readParameters,
		);
		expect(result).toMatchObject({
			kind: 'reject',
			status: 400,
			reason: expect.stringMatching(/^not a valid event envelope/),
		});
		expect(readParameters).not.toHaveBeenCalled();
	});

	it('rejects an event older than Maximum Event Age with 401', () => {
		const body = bytes(inbound);
		const result = acceptEvent(
			body,
			signBody(body, SIGNING_SECRET),
			SIGNING_SECRET,
			NOW + 400_000,
			() => params(),
		);
		expect(result).toMatchObject({
			kind: 'reject',
			status: 401,
			reason: expect.stringMatching(/^replay protection/),
		});
		expect(
			acceptEvent(body, signBody(body, SIGNING_SECRET), SIGNING_SECRET, NOW + 400_000, () =>
				params({ catchUp: false, options: { maxAge: 0 } }),
			).kind,
		).toBe('emit');
	});

	it('refuses (late) an event older than the Late Delivery Cutoff while catch-up is on, and emits it with catch-up off', () => {
		const body = bytes(inbound);
		const at = (ms: number, overrides: Partial<EventParameters> = {}) =>
			acceptEvent(
				body,
				signBody(body, SIGNING_SECRET),
				SIGNING_SECRET,
				Date.parse(inbound.timestamp) + ms,
				() => params(overrides),
			);
		expect(at(4_900).kind).toBe('emit');
		expect(at(5_100)).toEqual({
			kind: 'late',
			reason: expect.stringMatching(
				/^the event is 5\.1 s old \(Late Delivery Cutoff 5 s\): not run here, the catch-up recovers it$/,
			),
			// What it would have been: receive.ts still routes it when it answers a wait known there.
			emit: expect.objectContaining({ kind: 'emit', envelope: inbound }),
		});
		// Late and filtered out: nothing to route.
		expect(at(5_100, { events: ['message.echo'] })).toEqual({
			kind: 'late',
			reason: expect.any(String),
		});
		expect(at(5_100, { catchUp: true }).kind).toBe('late');
		expect(at(6_500, { options: { lateDeliveryCutoff: 7 } }).kind).toBe('emit');
		expect(at(7_100, { options: { lateDeliveryCutoff: 7 } }).kind).toBe('late');
		expect(at(60_000, { catchUp: false }).kind).toBe('emit');
		// An event from the future (clock skew) is not late.
		expect(at(-2_000).kind).toBe('emit');
	});

	it('runs a status event older than the Late Delivery Cutoff: the service keeps no status, so no catch-up could run it later', () => {
		const status = {
			event: 'message.status',
			data: { id: 'msg_1', status: 'delivered' },
			timestamp: inbound.timestamp,
		};
		const body = bytes(status);
		const result = acceptEvent(
			body,
			signBody(body, SIGNING_SECRET),
			SIGNING_SECRET,
			Date.parse(status.timestamp) + 7_500,
			() => params({ events: ['message.status'], catchUp: true }),
		);
		expect(result.kind).toBe('emit');
	});

	it('ignores an event that is not selected', () => {
		const body = bytes(inbound);
		expect(
			acceptEvent(body, signBody(body, SIGNING_SECRET), SIGNING_SECRET, NOW, () =>
				params({ events: ['message.status'] }),
			),
		).toEqual({
			kind: 'ignore',
			reason: 'event message.inbound is not selected',
		});
	});

	it('with separate outputs, puts the item on its event output', () => {
		const body = bytes(inbound);
		const result = acceptEvent(body, signBody(body, SIGNING_SECRET), SIGNING_SECRET, NOW, () =>
			params({ events: ['message.echo', 'message.inbound'], separateOutputs: true }),
		);
		if (result.kind !== 'emit') throw new Error(`expected emit, got ${result.kind}`);
		expect(result.layout).toEqual(['message.inbound', 'message.echo']);
		expect(
			workflowDataFor(eventItem(result.envelope), result.envelope.event, result.layout),
		).toEqual([[{ json: asEmitted(inbound) }], []]);
	});
});
