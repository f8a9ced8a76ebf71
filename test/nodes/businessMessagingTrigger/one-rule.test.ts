// One place for each rule: the webhook and the catch-up apply the same filter to a message, and
// the webhook log's times are read as stored messages' times are (where seconds end).
import type { IDataObject } from 'n8n-workflow';

import {
	entryTimeMs,
	readEntry,
} from '../../../nodes/BusinessMessagingTrigger/catchUp/deliveryLog';
import {
	decideRecoveries,
	SETTLE_MS,
} from '../../../nodes/BusinessMessagingTrigger/catchUp/recoveries';
import {
	acceptEvent,
	filterReason,
	readNodeSettings,
	type EventParameters,
} from '../../../nodes/BusinessMessagingTrigger/receiving/accept';
import { recordCreatedAt } from '../../../nodes/shared/storedRecord';
import { signBody, SIGNING_SECRET } from '../../support';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const TIMESTAMP = new Date(NOW - 1000).toISOString();

/** What the webhook does with a message: run it, or not. */
function webhookRuns(event: string, data: IDataObject, parameters: EventParameters): boolean {
	const body = Buffer.from(JSON.stringify({ event, data, timestamp: TIMESTAMP }));
	const verdict = acceptEvent(
		body,
		signBody(body, SIGNING_SECRET),
		SIGNING_SECRET,
		NOW,
		() => parameters,
	);
	return verdict.kind === 'emit';
}

/** What the catch-up does with the same message, stored and missed: recover it, or not. */
function catchUpRecovers(
	event: 'message.inbound' | 'message.echo',
	data: IDataObject,
	parameters: EventParameters,
): boolean {
	const settings = readNodeSettings(parameters);
	const record = { ...data, id: 'm1', wa_message_id: 'wamid.m1', created_at: TIMESTAMP };
	const decision = decideRecoveries(
		[{ event, records: [record] }],
		{ [event]: { createdAt: new Date(NOW - 60_000).toISOString(), ids: [] } },
		new Map(),
		NOW + SETTLE_MS,
		500,
		(stored, storedEvent) => filterReason(storedEvent, stored, settings) === undefined,
	);
	return decision.recover.length === 1;
}

describe('one trigger filter for the webhook and the catch-up', () => {
	const cases: Array<[string, 'message.inbound' | 'message.echo', IDataObject, EventParameters]> = [
		[
			'no filter',
			'message.inbound',
			{ number: '100' },
			{ events: ['message.inbound'], options: {}, separateOutputs: false },
		],
		[
			'its number',
			'message.inbound',
			{ number: '100' },
			{ events: ['message.inbound'], options: { numbers: '100, 200' }, separateOutputs: false },
		],
		[
			'another number',
			'message.inbound',
			{ number: '300' },
			{ events: ['message.inbound'], options: { numbers: '100' }, separateOutputs: false },
		],
		[
			'a number with spaces',
			'message.inbound',
			{ number: ' 100 ' },
			{ events: ['message.inbound'], options: { numbers: '100' }, separateOutputs: false },
		],
		[
			'a number given as a number',
			'message.inbound',
			{ number: 100 },
			{ events: ['message.inbound'], options: { numbers: '100' }, separateOutputs: false },
		],
		[
			'no number',
			'message.inbound',
			{},
			{ events: ['message.inbound'], options: { numbers: '100' }, separateOutputs: false },
		],
		[
			'an echo not selected',
			'message.echo',
			{ number: '100' },
			{ events: ['message.inbound'], options: {}, separateOutputs: false },
		],
		[
			'an echo selected, its number',
			'message.echo',
			{ number: '100' },
			{ events: ['message.echo'], options: { numbers: '100' }, separateOutputs: false },
		],
		[
			'Events left unset (inbound only)',
			'message.echo',
			{ number: '100' },
			{ events: undefined, options: {}, separateOutputs: false },
		],
	];

	it.each(cases)(
		'%s: a recovered message obeys the filter the webhook applies',
		(_, event, data, parameters) => {
			expect(catchUpRecovers(event, data, parameters)).toBe(webhookRuns(event, data, parameters));
		},
	);

	it('the filter does filter (not everything passes)', () => {
		const verdicts = cases.map(([, event, data, parameters]) =>
			webhookRuns(event, data, parameters),
		);
		expect(verdicts).toEqual([true, true, false, true, true, false, false, true, false]);
	});
});

describe("the webhook log's times, read as stored messages' times are", () => {
	it.each([
		['ISO with microseconds', '2026-11-27T09:15:30.123456+00:00'],
		['unix seconds', 1795770930],
		['unix seconds as text', '1795770930'],
		['unix milliseconds', 1795770930123],
		['unix milliseconds before 2001 (12 digits)', 150_000_000_000],
	])('%s', (_, created) => {
		const expected = Date.parse(recordCreatedAt({ created }) as string);
		expect(Number.isNaN(expected)).toBe(false);
		expect(entryTimeMs({ created })).toBe(expected);
		expect(entryTimeMs({ created_at: created })).toBe(expected);
	});

	it('12 digits are milliseconds (1974), not seconds in the year 6723', () => {
		expect(new Date(entryTimeMs({ created: 150_000_000_000 })).getUTCFullYear()).toBe(1974);
	});

	it('no time: NaN', () => {
		expect(entryTimeMs({})).toBeNaN();
		expect(entryTimeMs({ created_at: 'yesterday' })).toBeNaN();
	});

	it("a log entry's event list is the stored messages' (inbound and echo), not status", () => {
		expect(readEntry({ event: 'message.echo', wa_message_id: 'w1' })).toEqual({
			kind: 'message',
			id: 'w1',
		});
		expect(readEntry({ event: 'message.status', wa_message_id: 'w1' })).toEqual({ kind: 'other' });
	});
});
