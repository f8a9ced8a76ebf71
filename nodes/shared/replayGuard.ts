/**
 * Replay protection within an age window: the first sighting of a key passes, a second one
 * before it expires does not. The service delivers each event once and never retries, so a
 * second copy of a correctly signed delivery is a replay. Pure and in memory: it holds within
 * one n8n process, bounded in size.
 */
export class ReplayGuard {
	/** Key → the time after which the age check alone refuses the delivery. */
	private readonly seen = new Map<string, number>();

	constructor(private readonly capacity = 100_000) {}

	/** True the first time `key` is seen while it can still pass the age check. */
	firstSighting(key: string, expiresAtMs: number, nowMs: number): boolean {
		const expiry = this.seen.get(key);
		if (expiry !== undefined && expiry > nowMs) return false;
		if (this.seen.size >= this.capacity) this.prune(nowMs);
		this.seen.delete(key);
		this.seen.set(key, expiresAtMs);
		return true;
	}

	/** Whether `key` was seen and has not expired; records nothing. */
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
