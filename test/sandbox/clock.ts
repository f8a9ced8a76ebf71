import { performance } from 'node:perf_hooks';

/** Real time plus an offset that tests move forward; every time rule of the sandbox reads this clock. */
export class SandboxClock {
	private offsetMs = 0;

	/** Epoch milliseconds with a sub-millisecond fraction, so timestamps carry real-looking microseconds. */
	nowMs(): number {
		return Date.now() + (performance.now() % 1) + this.offsetMs;
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
	}

	/** The service's timestamp shape: 2026-11-22T10:15:30.123456+00:00. */
	timestamp(): string {
		return formatMicroTimestamp(this.nowMs());
	}
}

export function formatMicroTimestamp(epochMs: number): string {
	const wholeMs = Math.floor(epochMs);
	const micros = Math.min(999, Math.floor((epochMs - wholeMs) * 1000));
	const iso = new Date(wholeMs).toISOString(); // 2026-11-22T10:15:30.123Z
	return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}+00:00`;
}
