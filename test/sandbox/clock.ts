import { performance } from 'node:perf_hooks';

/** Real time plus an offset that tests move forward; every time rule of the sandbox reads this clock. */
export class SandboxClock {
	private offsetMs = 0;
	private lastMicros = 0;

	/**
	 * Epoch milliseconds with a sub-millisecond fraction, so timestamps carry real-looking
	 * microseconds; never earlier than the last reading (CONTRACT C1: records are ordered by it).
	 * Read from the monotonic clock: Date.now() can step back (CI 2026-11-25: an hour's advance
	 * measured 3599999 ms), and a wall clock step must not undo an advance a test asked for.
	 */
	nowMs(): number {
		const reading = Math.floor((performance.timeOrigin + performance.now() + this.offsetMs) * 1000);
		this.lastMicros = Math.max(reading, this.lastMicros + 1);
		return this.lastMicros / 1000;
	}

	now(): Date {
		return new Date(Math.floor(this.nowMs()));
	}

	nowUnixSeconds(): number {
		return Math.floor(this.nowMs() / 1000);
	}

	advance(seconds: number): void {
		this.offsetMs += seconds * 1000;
	}

	reset(): void {
		this.offsetMs = 0;
		this.lastMicros = 0;
	}

	/** The service's timestamp shape: 2026-11-22T10:15:30.123456+00:00. */
	timestamp(): string {
		return formatMicroTimestamp(this.nowMs());
	}
}

export function formatMicroTimestamp(epochMs: number): string {
	const wholeMs = Math.floor(epochMs);
	const micros = Math.min(999, Math.round((epochMs - wholeMs) * 1000));
	const iso = new Date(wholeMs).toISOString(); // 2026-11-22T10:15:30.123Z
	return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}+00:00`;
}
