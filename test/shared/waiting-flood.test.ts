// Far-future registrations and floods: an entry lives no longer than a wait can (the longest
// limit plus a margin), and a flood of entries never evicts the live waits already kept, in this
// process's memory or in the trigger's static data.
import type { IDataObject } from 'n8n-workflow';

import {
	MAX_ENTRY_LIFE_MS,
	entryExpiry,
	isEntryInBounds,
} from '../../nodes/shared/replyAndWait/registration';
import {
	STATIC_DATA_KEY,
	findWaiting,
	registerWaiting,
	waitingKey,
	type WaitingEntry,
} from '../../nodes/shared/replyAndWait/waitingEntries';

const ACCOUNT = 'a'.repeat(32);
const ORIGIN = 'https://n8n.example.org';
const NOW = Date.now();

function entry(executionId: string, expiresAtMs: number): WaitingEntry {
	return {
		resumeUrl: `${ORIGIN}/webhook-waiting/${executionId}`,
		executionId,
		expiresAtMs,
		alsoStart: false,
		node: 'Ask',
		account: ACCOUNT,
	};
}

describe('an entry lives no longer than a wait can', () => {
	const bounds = { ownOrigin: ORIGIN, account: ACCOUNT, nowMs: NOW };
	it('the year 2999 is refused; the longest limit (plus its margin) is taken', () => {
		expect(isEntryInBounds(entry('1', Date.parse('2999-01-01')), bounds)).toBe(false);
		expect(isEntryInBounds(entry('1', NOW + MAX_ENTRY_LIFE_MS + 60_000), bounds)).toBe(true);
		expect(isEntryInBounds(entry('1', NOW + MAX_ENTRY_LIFE_MS + 3_600_000), bounds)).toBe(false);
	});

	it('a wait without a limit (year 3000) registers an entry that ends after the longest limit', () => {
		expect(entryExpiry(new Date('3000-01-01T00:00:00.000Z'), NOW)).toBe(NOW + MAX_ENTRY_LIFE_MS);
		expect(entryExpiry(new Date(NOW + 60_000), NOW)).toBe(NOW + 60_000);
	});
});

describe('a flood of entries never evicts live waits', () => {
	it("in this process's memory: 10,000 more entries leave the live wait findable", () => {
		const real = waitingKey('+15550000001', '100000000000001');
		registerWaiting(undefined, real, entry('real', NOW + 3_600_000), NOW);
		for (let i = 0; i < 10_000; i++)
			registerWaiting(
				undefined,
				waitingKey(`+1666${String(i).padStart(7, '0')}`, '100000000000001'),
				entry(`flood-${i}`, NOW + MAX_ENTRY_LIFE_MS),
				NOW,
			);
		expect(findWaiting(undefined, [real], ACCOUNT, NOW)?.entry.executionId).toBe('real');
	});

	it("in the trigger's static data: 300 more entries leave the live wait kept there", () => {
		const staticData: IDataObject = {};
		const real = waitingKey('+15550000002', '100000000000001');
		registerWaiting(staticData, real, { ...entry('real-2', NOW + 3_600_000), home: 'wf' }, NOW);
		for (let i = 0; i < 300; i++)
			registerWaiting(
				staticData,
				waitingKey(`+1777${String(i).padStart(7, '0')}`, '100000000000001'),
				{ ...entry(`flood-s-${i}`, NOW + MAX_ENTRY_LIFE_MS), home: 'wf' },
				NOW,
			);
		const kept = staticData[STATIC_DATA_KEY] as IDataObject;
		expect(Object.keys(kept)).toHaveLength(200);
		expect((kept[real] as WaitingEntry).executionId).toBe('real-2');
	});
});
