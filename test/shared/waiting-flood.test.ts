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
	keepWaitingEntriesCurrent,
	registerWaiting,
	waitingKey,
} from '../../nodes/shared/replyAndWait/waitingEntries';
import { type WaitingEntry } from '../../nodes/shared/replyAndWait/entry';

const ACCOUNT = 'a'.repeat(32);
const ORIGIN = 'https://n8n.example.org';
const NOW = Date.now();

function entry(executionId: string, expiresAtMs: number): WaitingEntry {
	return {
		resumeUrl: `${ORIGIN}/webhook-waiting/${executionId}`,
		waitId: 'w1',
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

// Issue 49: one process-wide list of 10,000 waits served every workflow of every user, and a
// registration into a full list was kept nowhere while it was answered `registered: 1`.
describe('the waiting list in memory is per account, and a full one says so', () => {
	const NUMBER = '100000000000001';
	const keyOf = (prefix: string, i: number) =>
		waitingKey(`${prefix}${String(i).padStart(7, '0')}`, NUMBER);
	const fill = (account: string, prefix: string) => {
		for (let i = 0; i < 10_000; i++)
			registerWaiting(
				undefined,
				keyOf(prefix, i),
				{ ...entry(`${prefix}-${i}`, NOW + MAX_ENTRY_LIFE_MS), account },
				NOW,
			);
	};

	it("another account's 10,000 live waits leave this account's wait kept and findable", () => {
		fill('b'.repeat(32), '+1888');
		const mine = waitingKey('+15550000003', NUMBER);
		const account = 'c'.repeat(32);
		expect(
			registerWaiting(undefined, mine, { ...entry('mine', NOW + 3_600_000), account }, NOW),
		).toBe(true);
		expect(findWaiting(undefined, [mine], account, NOW)?.entry.executionId).toBe('mine');
	});

	it("an account's list full of live waits refuses the next one (registerWaiting false), unless the copy of static data keeps it", () => {
		const account = 'd'.repeat(32);
		fill(account, '+1999');
		const next = waitingKey('+15550000004', NUMBER);
		const wait = { ...entry('next', NOW + 3_600_000), account, home: 'wf-full' };
		expect(registerWaiting(undefined, next, wait, NOW)).toBe(false);
		expect(findWaiting(undefined, [next], account, NOW)).toBeUndefined();
		// Its waits stay findable.
		expect(findWaiting(undefined, [keyOf('+1999', 0)], account, NOW)?.entry.executionId).toBe(
			'+1999-0',
		);
		const staticData: IDataObject = {};
		expect(registerWaiting(staticData, next, wait, NOW)).toBe(true);
		expect(findWaiting(staticData, [next], account, NOW)?.entry.executionId).toBe('next');
	});
});

// Issue 49: every event walked every wait of every workflow in the process to bring one copy up to
// date; the walk now reads the waits of that copy's workflow only (bench/eventCost.ts measures it).
describe("a copy is brought up to date from its own workflow's waits", () => {
	const account = 'c'.repeat(32);
	const at = (executionId: string, home: string, expiresAtMs = NOW + 60_000) => ({
		...entry(executionId, expiresAtMs),
		account,
		home,
	});
	const keptIn = (copy: IDataObject) =>
		Object.values((copy[STATIC_DATA_KEY] ?? {}) as Record<string, WaitingEntry>).map(
			(one) => one.executionId,
		);

	it('a wait taken over under its key by another workflow leaves the first copy; each copy gets its own', () => {
		const key = waitingKey('+15557770001', 'n');
		registerWaiting(undefined, key, at('idx-1', 'wf-index-a'));
		registerWaiting(undefined, key, at('idx-2', 'wf-index-b'));
		const [a, b] = [{}, {}] as IDataObject[];
		keepWaitingEntriesCurrent(a, 'wf-index-a');
		keepWaitingEntriesCurrent(b, 'wf-index-b');
		expect({ a: keptIn(a), b: keptIn(b) }).toEqual({ a: [], b: ['idx-2'] });
	});

	it('a wait that ended is neither written into a copy nor found again', () => {
		const key = waitingKey('+15557770002', 'n');
		let now = NOW;
		registerWaiting(undefined, key, at('idx-3', 'wf-index-c', NOW + 1000), now);
		const before: IDataObject = {};
		keepWaitingEntriesCurrent(before, 'wf-index-c', now);
		now = NOW + 2000;
		const after: IDataObject = {};
		keepWaitingEntriesCurrent(after, 'wf-index-c', now);
		expect({ before: keptIn(before), after: keptIn(after) }).toEqual({
			before: ['idx-3'],
			after: [],
		});
		expect(findWaiting(undefined, [key], account, now)).toBeUndefined();
	});
});
