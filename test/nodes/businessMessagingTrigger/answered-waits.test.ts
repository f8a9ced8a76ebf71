// Queue mode: two webhook processors, each with its own memory, and one copy of the workflow's
// static data in the database that n8n saves whole after each request (last save wins). A wait
// registered on one processor and answered on the other must stay answered on both: the holder
// neither resumes it again nor writes it back (and so does not warn about a wipe that never was).
// Each processor is its own instance of waitingEntries.ts (jest.isolateModules).
import type { IDataObject } from 'n8n-workflow';

import type * as Entries from '../../../nodes/shared/replyAndWait/waitingEntries';

function processInstance(): typeof Entries {
	let instance: typeof Entries | undefined;
	jest.isolateModules(() => {
		instance = require('../../../nodes/shared/replyAndWait/waitingEntries') as typeof Entries;
	});
	return instance as typeof Entries;
}

const HOME = 'workflow-answered';
const ACCOUNT = 'a'.repeat(32);
const KEY = 'n|+33655550000';

const wait = (executionId: string, waitId: string, nowMs: number): Entries.WaitingEntry => ({
	resumeUrl: `http://127.0.0.1:5678/webhook-waiting/${executionId}`,
	executionId,
	expiresAtMs: nowMs + 3_600_000,
	alsoStart: false,
	node: 'Ask',
	waitId,
	account: ACCOUNT,
	home: HOME,
});

/** The database's copy: what n8n loads for a request (a deep copy) and saves after it. */
class Database {
	private saved = '{}';
	load(): IDataObject {
		return JSON.parse(this.saved) as IDataObject;
	}
	save(copy: IDataObject): void {
		this.saved = JSON.stringify(copy);
	}
}

describe('a wait answered on another processor stays answered (its tombstone in the static data)', () => {
	it('registered on processor 1, answered on processor 2: processor 1 neither resumes it nor writes it back, and counts no wipe', () => {
		const [p1, p2] = [processInstance(), processInstance()];
		const db = new Database();
		const t0 = Date.now();
		const registration = db.load();
		p1.registerWaiting(registration, KEY, wait('81', 'w-81', t0), t0);
		db.save(registration);

		const answering = db.load();
		const found = p2.findWaiting(answering, [KEY], ACCOUNT, t0 + 1_000);
		expect(found?.entry.executionId).toBe('81');
		p2.removeWaiting(answering, KEY, '81', t0 + 1_000);
		p2.keepWaitingEntriesCurrent(answering, HOME, t0 + 1_000);
		db.save(answering);

		// The contact writes again 20 s later; the balancer sends it to processor 1.
		const next = db.load();
		expect(p1.findWaiting(next, [KEY], ACCOUNT, t0 + 20_000)).toBeUndefined();
		expect(p1.keepWaitingEntriesCurrent(next, HOME, t0 + 20_000)).toEqual({ restored: 0 });
		expect(next[p1.STATIC_DATA_KEY]).toEqual({});
		// Learnt for good: a copy without the tombstone does not bring it back either.
		expect(p1.findWaiting({}, [KEY], ACCOUNT, t0 + 21_000)).toBeUndefined();
	});

	it('an older copy saved over the tombstone: the answering processor writes it again, and the holder learns it from the next copy', () => {
		const [p1, p2] = [processInstance(), processInstance()];
		const db = new Database();
		const t0 = Date.now();
		const registration = db.load();
		p1.registerWaiting(registration, KEY, wait('82', 'w-82', t0), t0);
		db.save(registration);
		// Processor 1 loads a copy for another request before processor 2's answer is saved.
		const olderOnP1 = db.load();

		const answering = db.load();
		p2.removeWaiting(answering, KEY, '82', t0 + 1_000);
		p2.keepWaitingEntriesCurrent(answering, HOME, t0 + 1_000);
		db.save(answering);
		// ...and saves it last: the entry is back, the tombstone gone.
		p1.keepWaitingEntriesCurrent(olderOnP1, HOME, t0 + 2_000);
		db.save(olderOnP1);
		expect(Object.keys(db.load()[p1.STATIC_DATA_KEY] as object)).toEqual([KEY]);

		// Processor 2's next request: the entry dropped again, the tombstone written again.
		const onP2 = db.load();
		expect(p2.findWaiting(onP2, [KEY], ACCOUNT, t0 + 3_000)).toBeUndefined();
		p2.keepWaitingEntriesCurrent(onP2, HOME, t0 + 3_000);
		db.save(onP2);
		expect(db.load()[p2.STATIC_DATA_KEY]).toEqual({});
		expect(Object.keys(db.load()[p2.ANSWERED_KEY] as object)).toHaveLength(1);

		const onP1 = db.load();
		expect(p1.findWaiting(onP1, [KEY], ACCOUNT, t0 + 30_000)).toBeUndefined();
		expect(p1.keepWaitingEntriesCurrent(onP1, HOME, t0 + 30_000)).toEqual({ restored: 0 });
	});

	it('the same execution asking again at the same node (a new wait id) is a new wait, whatever the tombstone of the first', () => {
		const [p1, p2] = [processInstance(), processInstance()];
		const db = new Database();
		const t0 = Date.now();
		const first = db.load();
		p1.registerWaiting(first, KEY, wait('83', 'w-83-a', t0), t0);
		db.save(first);
		const answering = db.load();
		p2.removeWaiting(answering, KEY, '83', t0 + 1_000);
		db.save(answering);

		const again = db.load();
		p1.registerWaiting(again, KEY, wait('83', 'w-83-b', t0 + 5_000), t0 + 5_000);
		db.save(again);
		const onP2 = db.load();
		expect(p2.findWaiting(onP2, [KEY], ACCOUNT, t0 + 6_000)?.entry.waitId).toBe('w-83-b');
	});

	it('a wipe by another save (main in queue mode) is still written back and counted', () => {
		const [p1] = [processInstance()];
		const t0 = Date.now();
		const registration: IDataObject = {};
		p1.registerWaiting(registration, KEY, wait('84', 'w-84', t0), t0);
		const wiped: IDataObject = { other: 'kept' };
		expect(p1.keepWaitingEntriesCurrent(wiped, HOME, t0 + 16_000)).toEqual({ restored: 1 });
		expect(Object.keys(wiped[p1.STATIC_DATA_KEY] as object)).toEqual([KEY]);
	});

	it('tombstones are bounded (200, the newest kept) and end with their wait', () => {
		const [p1] = [processInstance()];
		const t0 = Date.now();
		const copy: IDataObject = {};
		for (let i = 0; i < 250; i++) {
			const key = `n|+3366000${String(i).padStart(4, '0')}`;
			p1.registerWaiting(
				copy,
				key,
				{ ...wait(`${1000 + i}`, `w-${i}`, t0), expiresAtMs: t0 + 600_000 + i },
				t0,
			);
			p1.removeWaiting(copy, key, `${1000 + i}`, t0);
		}
		const tombstones = copy[p1.ANSWERED_KEY] as Record<string, number>;
		expect(Object.keys(tombstones)).toHaveLength(200);
		expect(Object.keys(tombstones).some((id) => id.includes('|1249|'))).toBe(true);
		expect(Object.keys(tombstones).some((id) => id.includes('|1000|'))).toBe(false);
		// Past every wait's end: none left.
		p1.keepWaitingEntriesCurrent(copy, HOME, t0 + 700_000);
		expect(copy[p1.ANSWERED_KEY]).toEqual({});
	});
});
