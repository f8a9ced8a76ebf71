/**
 * Replay protection within the event age window. The service delivers each event once and
 * never retries, so a second copy of a correctly signed delivery is a replay: it is
 * acknowledged and not executed. Pure and in memory: it holds within one n8n process.
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

/**
 * The messages webhook() handed to n8n in this process, per workflow and node, for two hours.
 * The catch-up (same process in regular mode: triggers and webhooks both run on main) counts
 * them as received even when n8n answered the service too late (then the service logs a
 * timeout although the execution runs): exactly once without a shared store. In queue mode
 * the webhook processors are other processes, and only the Late Delivery Cutoff stands.
 */
const acceptedHere = new ReplayGuard();
const ACCEPTED_MEMORY_MS = 2 * 3600_000;

export function rememberAccepted(scope: string, waMessageId: string, nowMs: number): void {
	acceptedHere.firstSighting(`${scope}:${waMessageId}`, nowMs + ACCEPTED_MEMORY_MS, nowMs);
}

export function wasAcceptedHere(scope: string, waMessageId: string, nowMs: number): boolean {
	return acceptedHere.has(`${scope}:${waMessageId}`, nowMs);
}
