/** Keys kept until they expire, in memory, bounded: the first sighting of a key passes, a second before it expires does not. */
export class ReplayGuard {
	private readonly seen = new Map<string, number>();

	constructor(private readonly capacity = 100_000) {}

	/** True the first time `key` is seen while it can still pass the age check. */
	firstSighting(key: string, expiresAtMs: number, nowMs: number): boolean {
		if (this.has(key, nowMs)) return false;
		this.keep(key, expiresAtMs, nowMs);
		return true;
	}

	keep(key: string, expiresAtMs: number, nowMs: number): void {
		if (this.seen.size >= this.capacity) this.prune(nowMs);
		this.seen.delete(key);
		this.seen.set(key, expiresAtMs);
	}

	drop(key: string): void {
		this.seen.delete(key);
	}

	has(key: string, nowMs: number): boolean {
		const expiry = this.seen.get(key);
		return expiry !== undefined && expiry > nowMs;
	}

	get size(): number {
		return this.seen.size;
	}

	private prune(nowMs: number): void {
		for (const [key, expiry] of this.seen) if (expiry <= nowMs) this.seen.delete(key);
		// Still full (a flood of genuine events): forget the oldest tenth rather than grow without bound.
		if (this.seen.size >= this.capacity) {
			let drop = Math.ceil(this.capacity / 10);
			for (const key of this.seen.keys()) {
				if (drop-- <= 0) break;
				this.seen.delete(key);
			}
		}
	}
}

/** `map`'s value for `key`, made when missing; past `max` keys, the least recently used goes. */
export function lruOf<V>(map: Map<string, V>, key: string, max: number, make: () => V): V {
	const value = map.get(key) ?? make();
	map.delete(key);
	if (map.size >= max) map.delete(map.keys().next().value as string);
	map.set(key, value);
	return value;
}
