/**
 * Resident memory of a process, sampled from /proc/<pid>/status (VmRSS) every `intervalMs`.
 * VmHWM (the kernel's peak) cannot be reset between runs, so each run's peak is the largest
 * sample taken while it ran, against a baseline sampled just before it.
 */
import { readFileSync } from 'node:fs';

import { sleep } from '../../test/real-n8n/util';
import { median } from './stats';

export function rssBytes(pid: number): number {
	const status = readFileSync(`/proc/${pid}/status`, 'utf8');
	const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
	if (!match) throw new Error(`no VmRSS for pid ${pid}`);
	return Number(match[1]) * 1024;
}

export class RssSampler {
	private samples: number[] = [];
	private timer: NodeJS.Timeout | undefined;

	constructor(
		readonly pid: number,
		readonly intervalMs = 50,
	) {}

	start(): void {
		this.samples = [rssBytes(this.pid)];
		this.timer = setInterval(() => {
			try {
				this.samples.push(rssBytes(this.pid));
			} catch {
				/* the process is gone: the run will fail on its own */
			}
		}, this.intervalMs);
	}

	stop(): { peak: number; samples: number } {
		if (this.timer) clearInterval(this.timer);
		this.timer = undefined;
		this.samples.push(rssBytes(this.pid));
		return { peak: Math.max(...this.samples), samples: this.samples.length };
	}
}

/** Median of VmRSS over `ms` (sampled every 50 ms): the level before a run. */
export async function baselineRss(pid: number, ms = 1000): Promise<number> {
	const values: number[] = [];
	const until = Date.now() + ms;
	while (Date.now() < until) {
		values.push(rssBytes(pid));
		await sleep(50);
	}
	return median(values);
}
