// The replay guard and the log throttle, as pure code (the receive path's use of them is in receive.test.ts).
import { LogThrottle } from '../../../nodes/BusinessMessagingTrigger/receiving/rejection';
import { ReplayGuard, lruOf } from '../../../nodes/shared/replayGuard';

describe('ReplayGuard', () => {
	it('lets a delivery through once while it could pass the age check, and again only after that', () => {
		const guard = new ReplayGuard();
		expect(guard.firstSighting('a', 1_000, 0)).toBe(true);
		expect(guard.firstSighting('a', 1_000, 999)).toBe(false);
		expect(guard.firstSighting('b', 1_000, 999)).toBe(true);
		// Past its expiry the age check refuses the event anyway; the key may be reused.
		expect(guard.firstSighting('a', 5_000, 1_000)).toBe(true);
	});

	it('stays within its capacity under a flood, dropping expired entries first', () => {
		const guard = new ReplayGuard(100);
		for (let i = 0; i < 100; i++) guard.firstSighting(`old${i}`, 10, 0);
		for (let i = 0; i < 50; i++) guard.firstSighting(`new${i}`, 1_000, 20);
		expect(guard.size).toBe(50);
		for (let i = 0; i < 1_000; i++) guard.firstSighting(`flood${i}`, 1_000, 20);
		expect(guard.size).toBeLessThanOrEqual(100);
		// The newest are still remembered.
		expect(guard.firstSighting('flood999', 1_000, 21)).toBe(false);
	});
});

describe('lruOf (the replay guards per trigger, at most 1,000)', () => {
	it('keeps at most `max` keys, each its own value; the least recently used is dropped', () => {
		const map = new Map<string, string[]>();
		const of = (key: string) => lruOf(map, key, 3, () => [key]);
		const a = of('a');
		of('b');
		of('c');
		expect(of('a')).toBe(a);
		of('d');
		expect([...map.keys()]).toEqual(['c', 'a', 'd']);
		expect(of('b')).not.toBe(undefined);
		expect(map.size).toBe(3);
		expect(map.has('c')).toBe(false);
	});
});

describe('LogThrottle', () => {
	it('allows 10 lines a minute, then says how many it left out', () => {
		const throttle = new LogThrottle(10);
		const flushed: number[] = [];
		const allowed = Array.from({ length: 1_000 }, (_, i) =>
			throttle.allow(1_000 + i, (n) => flushed.push(n)),
		).filter(Boolean);
		expect(allowed).toHaveLength(10);
		expect(flushed).toEqual([]);
		expect(throttle.allow(61_000, (n) => flushed.push(n))).toBe(true);
		expect(flushed).toEqual([990]);
	});
});
