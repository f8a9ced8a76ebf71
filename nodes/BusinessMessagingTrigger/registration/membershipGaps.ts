/**
 * When each trigger of this process was not joined (docs/several-workflows.md §7): from its
 * delete() (a leave, a hand-off) to its next join or registration, e.g. during its own republish.
 * A delivery another trigger of this n8n got meanwhile was not forwarded to it, so its catch-up
 * must not count it as received. Kept in main's memory, where delete() and trigger() both run.
 */
export interface Gap {
	fromMs: number;
	/** Undefined while the gap is still open. */
	toMs?: number;
}

/** A delivery logged a little before delete() may not have been forwarded to it either. */
export const GAP_MARGIN_MS = 2000;
const KEEP_MS = 24 * 3600_000;
const BOUND = 10_000;
const gaps = new Map<string, Gap[]>();

/** Key: workflow:node, as the catch-up's scope. */
export function openGap(key: string, nowMs = Date.now()): void {
	const list = (gaps.get(key) ?? []).filter((gap) => (gap.toMs ?? nowMs) > nowMs - KEEP_MS);
	if (list.length > 0 && list[list.length - 1].toMs === undefined) return;
	if (!gaps.has(key) && gaps.size >= BOUND) gaps.delete(gaps.keys().next().value as string);
	gaps.set(key, [...list, { fromMs: nowMs }]);
}

export function closeGap(key: string, nowMs = Date.now()): void {
	const list = gaps.get(key);
	const last = list?.[list.length - 1];
	if (last && last.toMs === undefined) last.toMs = nowMs;
}

/** Whether a message stored at `atMs` came while the trigger at `key` was not joined. */
export function inGap(key: string, atMs: number, nowMs = Date.now()): boolean {
	return (gaps.get(key) ?? []).some(
		(gap) => atMs >= gap.fromMs - GAP_MARGIN_MS && atMs <= (gap.toMs ?? nowMs),
	);
}
