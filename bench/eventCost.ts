/**
 * Benchmark "event cost" (issue 49): what bringing a copy of a workflow's static data up to date costs
 * per event (keepWaitingEntriesCurrent, on every accepted event and registration), in-process, for a
 * workflow with 10 waits of its own in a process with nothing else (the baseline), then the same beside
 * 10,000 waits of 20 other workflows, and one with 10,000 answers recorded today. Prints ms per event
 * and each ratio to the baseline.
 *
 *   npx ts-node --transpile-only bench/eventCost.ts [events]
 */
import { settleOwed } from '../nodes/shared/replyAndWait/answeredHere';
import {
	keepWaitingEntriesCurrent,
	registerWaiting,
	waitingKey,
} from '../nodes/shared/replyAndWait/waitingEntries';

const events = Number(process.argv[2] ?? 500);

function msPerEvent(home: string): number {
	const copy = { businessMessagingTrigger: true };
	const started = process.hrtime.bigint();
	for (let i = 0; i < events; i++) keepWaitingEntriesCurrent(copy, home);
	return Number(process.hrtime.bigint() - started) / 1e6 / events;
}

const nowMs = Date.now();
const wait = (w: string, i: number, home: string) =>
	registerWaiting(undefined, waitingKey(`+1${w}${i}`, '+15550001'), {
		resumeUrl: 'http://127.0.0.1:5678/webhook-waiting/1',
		waitId: 'w1',
		executionId: `${w}-${i}`,
		expiresAtMs: nowMs + 3_600_000,
		alsoStart: false,
		node: 'Ask',
		account: w.padStart(32, '0'),
		home,
	});
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
// Each measured workflow holds 10 waits of its own.
for (let i = 0; i < 10; i++) wait('q', i, 'quiet');
for (let i = 0; i < 10; i++) wait('b', i, 'busy');
msPerEvent('quiet');
const alone = median([0, 1, 2, 3, 4].map(() => msPerEvent('quiet')));
// Then the process gets busy: 10,000 waits of 20 other workflows, 10,000 answers of `busy` today.
for (let i = 0; i < 10_000; i++) settleOwed('busy', `wamid.${i}`, nowMs + i);
for (let w = 0; w < 20; w++) for (let i = 0; i < 500; i++) wait(`${w}`, i, `other${w}`);
// Warm up both, then alternate so that both see the same machine.
msPerEvent('quiet');
msPerEvent('busy');
const runs = { quiet: [] as number[], busy: [] as number[] };
for (let r = 0; r < 5; r++) {
	runs.quiet.push(msPerEvent('quiet'));
	runs.busy.push(msPerEvent('busy'));
}
const [quiet, busy] = [median(runs.quiet), median(runs.busy)];
console.log(`events per run ${events}, 5 runs each, median ms per event (Node ${process.version})`);
console.log(`workflow with 10 waits, nothing else in the process   ${alone.toFixed(4)}`);
console.log(
	`the same, beside 10,000 waits of 20 other workflows     ${quiet.toFixed(4)}   ratio ${(quiet / alone).toFixed(1)}×`,
);
console.log(
	`and 10,000 answers recorded today in this workflow      ${busy.toFixed(4)}   ratio ${(busy / alone).toFixed(1)}×`,
);
