// A message runs once, whatever brought it to the trigger's execute() (routing/runOnce.ts).
// n8n's deduplication store needs n8n's database: here n8n-core's real ExecuteContext and
// DataDeduplicationService call a stand-in for n8n 2.41.1's DeduplicationHelper (entries mode)
// that keeps its flaw: a read-modify-write of one row with the database's latency in between,
// no lock, a primary key on (workflow, context). The proof against the real store is the queue
// suite's load and same-delivery checks (test/queue/checks.ts).
import { createHash } from 'node:crypto';

import type {
	ICheckProcessedContextData,
	ICheckProcessedOptions,
	IDataObject,
	IDeduplicationOutput,
	IExecuteFunctions,
	INodeExecutionData,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { Logger } from '@n8n/backend-common';
import { DataDeduplicationService } from 'n8n-core/dist/data-deduplication-service';

import { harnessEnvironment } from '../../harness/environment';
import { triggerExecuteContext, triggerNode } from './helpers';

import { BusinessMessagingTrigger } from '../../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node';
import {
	CALL_GAP,
	callGapMs,
	distribute,
	GroupCommit,
	RUN_ONCE_MAX_ENTRIES,
	runOnce,
	RUN_ONCE_MODES,
	runOnceKey,
	type StoreAnswer,
} from '../../../nodes/BusinessMessagingTrigger/routing/runOnce';

const tick = async (ms = 2) => await new Promise((resolve) => setTimeout(resolve, ms));
const md5 = (value: string) => createHash('md5').update(value).digest('base64');

/** n8n 2.41.1's handleHashedItems over an in-memory table, with latency between read and write. */
class RacyStore {
	rows = new Map<string, { mode: string; data: string[] }>();
	calls = 0;
	/** Keys a write removed: another call had added them after this one read the row. */
	erased = 0;
	/** Written by another process: read before our next write, written after it. */
	foreignWriteOnNextCall = false;

	async checkProcessedAndRecord(
		items: Array<string | number>,
		scope: 'node' | 'workflow',
		context: ICheckProcessedContextData,
		options: ICheckProcessedOptions,
	): Promise<IDeduplicationOutput> {
		this.calls++;
		const id = `${context.workflow.id}|${scope === 'node' ? `n:${context.node!.id}` : ''}`;
		const read = this.rows.get(id);
		const row = read && { mode: read.mode, data: [...read.data] };
		if (this.foreignWriteOnNextCall) {
			this.foreignWriteOnNextCall = false;
			const stale = row && { mode: row.mode, data: [...row.data, md5('foreign')] };
			setTimeout(() => stale && this.rows.set(id, stale), 10);
		}
		await tick();
		const hashed = items.map((item) => md5(String(item)));
		if (!row) {
			if (this.rows.has(id)) throw new Error('duplicate key value violates unique constraint');
			if (options.maxEntries) hashed.splice(0, hashed.length - options.maxEntries);
			this.rows.set(id, { mode: options.mode, data: hashed });
			return { new: items, processed: [] };
		}
		const known = new Set(row.data);
		const answer: IDeduplicationOutput = { new: [], processed: [] };
		hashed.forEach((hash, index) => {
			if (known.has(hash)) answer.processed.push(items[index]);
			else {
				answer.new.push(items[index]);
				row.data.push(hash);
			}
		});
		if (options.maxEntries) row.data.splice(0, row.data.length - options.maxEntries);
		await tick();
		const written = new Set(row.data);
		this.erased += (this.rows.get(id)?.data ?? []).filter((hash) => !written.has(hash)).length;
		this.rows.set(id, row);
		return answer;
	}
}

const store = new RacyStore();
const trigger = new BusinessMessagingTrigger();
const inbound = (wa: string): INodeExecutionData => ({
	json: { event: 'message.inbound', data: { wa_message_id: wa, from: '+33612345678', text: 'hi' } },
});
const status = (id: string, value: string): INodeExecutionData => ({
	json: { event: 'message.status', data: { id, wa_message_id: `wamid.${id}`, status: value } },
});

let workflowCounter = 0;
/** n8n-core's ExecuteContext for the trigger with these items as its input (what webhook() or the catch-up produced). */
function contextFor(
	items: INodeExecutionData[],
	mode: WorkflowExecuteMode = 'webhook',
	workflowId = 'w1',
	parameters: Record<string, unknown> = {},
) {
	return triggerExecuteContext(trigger, triggerNode(parameters, 2), items, mode, { workflowId });
}
const execute = async (
	items: INodeExecutionData[],
	mode: WorkflowExecuteMode = 'webhook',
	workflowId = 'w1',
) => await trigger.execute!.call(contextFor(items, mode, workflowId));
const fresh = () => `wf-${++workflowCounter}`;

beforeAll(async () => {
	await harnessEnvironment();
	await DataDeduplicationService.init(store as never);
});

describe('run once: the key of an event', () => {
	it('inbound and echo: the platform id; status: the id and the status', () => {
		expect(runOnceKey(inbound('wamid.A').json)).toBe('m:wamid.A');
		expect(runOnceKey({ event: 'message.echo', data: { wa_message_id: 'wamid.E' } })).toBe(
			'm:wamid.E',
		);
		expect(runOnceKey(status('msg_1', 'delivered').json)).toBe('s:msg_1:delivered');
		expect(runOnceKey(status('msg_1', 'read').json)).not.toBe(
			runOnceKey(status('msg_1', 'delivered').json),
		);
	});

	it('nothing to key on: no key (the item passes)', () => {
		for (const json of [
			{},
			{ event: 'message.inbound' },
			{ event: 'message.inbound', data: { wa_message_id: '' } },
			{ event: 'message.status', data: { id: 'msg_1' } },
			{ event: 'other', data: { wa_message_id: 'x' } },
		] as IDataObject[])
			expect(runOnceKey(json)).toBeUndefined();
	});

	it('applies to webhook and catch-up executions, not to a test event or a retry', () => {
		expect(RUN_ONCE_MODES.has('webhook')).toBe(true);
		expect(RUN_ONCE_MODES.has('trigger')).toBe(true);
		for (const mode of ['manual', 'retry', 'internal', 'integrated', 'cli', 'evaluation'])
			expect(RUN_ONCE_MODES.has(mode)).toBe(false);
	});
});

describe('run once: one combined call (pure)', () => {
	it('a key goes to one claim only, verifications keep theirs', () => {
		const owned = distribute(
			[
				{ keys: ['a', 'b'], verify: false },
				{ keys: ['a'], verify: false },
				{ keys: ['c'], verify: true },
				{ keys: ['c', 'd'], verify: false },
			],
			new Set(['a', 'c', 'd']),
		);
		expect(owned.map((s) => [...s])).toEqual([['a'], [], ['c'], ['d']]);
	});

	it('calls waiting while one runs are made as one call', async () => {
		const seen: string[][] = [];
		const recorded = new Set<string>();
		const call = async (values: string[]): Promise<StoreAnswer> => {
			seen.push(values);
			await tick(5);
			const answer = {
				new: values.filter((v) => !recorded.has(v)),
				processed: values.filter((v) => recorded.has(v)),
			};
			values.forEach((v) => recorded.add(v));
			return answer;
		};
		const row = new GroupCommit();
		const results = await Promise.all([
			row.submit(call, ['a'], false),
			row.submit(call, ['b'], false),
			row.submit(call, ['a', 'c'], false),
		]);
		// The second call carries 'a' again: the store answers for it, the first claim keeps it.
		expect(seen).toEqual([['a'], ['b', 'a', 'c']]);
		expect(results.map((s) => [...s])).toEqual([['a'], ['b'], ['c']]);
	});

	it('a process pauses between two calls a few times the last call, within bounds', async () => {
		expect(callGapMs(1)).toBe(CALL_GAP.minMs);
		expect(callGapMs(100)).toBe(CALL_GAP.factor * 100);
		expect(callGapMs(60_000)).toBe(CALL_GAP.maxMs);
		const startedAt: number[] = [];
		const call = async (values: string[]): Promise<StoreAnswer> => {
			startedAt.push(Date.now());
			await tick(10);
			return { new: values, processed: [] };
		};
		const row = new GroupCommit({ factor: 3, minMs: 5, maxMs: 1000 });
		await row.submit(call, ['a'], false);
		await Promise.all([row.submit(call, ['b'], false), row.submit(call, ['c'], false)]);
		// The two later submissions wait out the pause together: one call, 15 to 45 ms after the first ended.
		expect(startedAt).toHaveLength(2);
		expect(startedAt[1] - startedAt[0]).toBeGreaterThanOrEqual(10 + 14);
	});

	it('a failed call (two first inserts) is made again once', async () => {
		let calls = 0;
		const call = async (values: string[]): Promise<StoreAnswer> => {
			if (++calls === 1) throw new Error('duplicate key');
			return { new: values, processed: [] };
		};
		expect([...(await new GroupCommit().submit(call, ['a'], false))]).toEqual(['a']);
		expect(calls).toBe(2);
	});
});

describe("run once: execute() with n8n-core's ExecuteContext and deduplication service", () => {
	it('the same message a second time (catch-up after a late answer) runs nothing', async () => {
		const workflowId = fresh();
		expect(await execute([inbound('wamid.LATE')], 'webhook', workflowId)).toEqual([
			[inbound('wamid.LATE')],
		]);
		expect(
			await execute(
				[{ json: { ...inbound('wamid.LATE').json, recovered: true } }],
				'trigger',
				workflowId,
			),
		).toEqual([[]]);
		expect(await execute([inbound('wamid.LATE')], 'webhook', workflowId)).toEqual([[]]);
	});

	it('an answer that resumed a wait is recorded as run though it passes nothing on: its copy from the catch-up runs nothing (issue 32)', async () => {
		const workflowId = fresh();
		const answer = inbound('wamid.ANSWER');
		const resumed = {
			json: { ...answer.json, resumed_execution: '77', __businessMessagingRecordOnly: true },
		};
		expect(await execute([resumed], 'webhook', workflowId)).toEqual([[]]);
		// After a restart the catch-up recovers it (n8n answered the service too late): not a new conversation.
		expect(
			await execute([{ json: { ...answer.json, recovered: true } }], 'trigger', workflowId),
		).toEqual([[]]);
	});

	// Issue 49: the service's message id reached n8n's log raw (line feeds, invisible characters).
	it('a message id with a line feed and a zero-width mark reaches the log as one safe line', async () => {
		const debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
		try {
			const workflowId = fresh();
			const id = 'wamid.A\nERROR forged line\u200b\u202eB';
			await execute([inbound(id)], 'webhook', workflowId);
			expect(await execute([inbound(id)], 'webhook', workflowId)).toEqual([[]]);
			const lines = debug.mock.calls
				.map(([line]) => String(line))
				.filter((line) => line.includes('already run'));
			expect(lines).toEqual([
				'Business Messaging Trigger: already run, not run again: m:wamid.A ERROR forged lineB',
			]);
		} finally {
			debug.mockRestore();
		}
	});

	it('an answer whose wait asked to Also Start passes on, marked with the resumed execution', async () => {
		const [[item]] = await execute(
			[{ json: { ...inbound('wamid.ALSO').json, resumed_execution: '78' } }],
			'webhook',
			fresh(),
		);
		expect(item.json).toMatchObject({ resumed_execution: '78' });
	});

	it('another message, another workflow, or a later status of a message runs', async () => {
		const workflowId = fresh();
		await execute([inbound('wamid.1')], 'webhook', workflowId);
		expect(await execute([inbound('wamid.2')], 'webhook', workflowId)).toEqual([
			[inbound('wamid.2')],
		]);
		expect(await execute([inbound('wamid.1')], 'webhook', fresh())).toEqual([[inbound('wamid.1')]]);
		await execute([status('msg_9', 'sent')], 'webhook', workflowId);
		expect(await execute([status('msg_9', 'delivered')], 'webhook', workflowId)).toEqual([
			[status('msg_9', 'delivered')],
		]);
		expect(await execute([status('msg_9', 'delivered')], 'webhook', workflowId)).toEqual([[]]);
	});

	it('a test event (manual) runs every time and records nothing', async () => {
		const workflowId = fresh();
		expect(await execute([inbound('wamid.T')], 'manual', workflowId)).toEqual([
			[inbound('wamid.T')],
		]);
		expect(await execute([inbound('wamid.T')], 'manual', workflowId)).toEqual([
			[inbound('wamid.T')],
		]);
		expect(await execute([inbound('wamid.T')], 'webhook', workflowId)).toEqual([
			[inbound('wamid.T')],
		]);
	});

	it('50 executions at once, 25 messages each twice: each message runs once, no record lost', async () => {
		const workflowId = fresh();
		const ids = Array.from({ length: 25 }, (_, i) => `wamid.C${i}`);
		const first = await Promise.all(
			ids.map(async (id) => await execute([inbound(id)], 'webhook', workflowId)),
		);
		const second = await Promise.all(
			ids.map(async (id) => await execute([inbound(id)], 'trigger', workflowId)),
		);
		const ran = [...first, ...second].filter((outputs) => outputs[0].length > 0).length;
		expect(ran).toBe(25);
		const again = await Promise.all(
			ids.map(async (id) => await execute([inbound(id)], 'webhook', workflowId)),
		);
		expect(again.every((outputs) => outputs[0].length === 0)).toBe(true);
	});

	it('a record erased by another process is written again by the later check', async () => {
		const workflowId = fresh();
		await execute([inbound('wamid.seed')], 'webhook', workflowId);
		store.foreignWriteOnNextCall = true;
		const context = contextFor([inbound('wamid.ERASED')], 'webhook', workflowId);
		expect(await runOnce.call(context, [[inbound('wamid.ERASED')]], [30])).toEqual([
			[inbound('wamid.ERASED')],
		]);
		await tick(200);
		expect(await execute([inbound('wamid.ERASED')], 'trigger', workflowId)).toEqual([[]]);
	});

	it('two processes claiming at once under load, then the catch-up copies: each message runs once', async () => {
		// Two webhook processors or workers: two copies of the module, each with its own group commit,
		// sharing the racy row. Their writes erase each other's keys; the later checks restore them.
		let other: typeof import('../../../nodes/BusinessMessagingTrigger/routing/runOnce');
		jest.isolateModules(() => {
			other = require('../../../nodes/BusinessMessagingTrigger/routing/runOnce');
		});
		// The scenario is real only if the processes' writes did erase keys: on a loaded machine the
		// two may not overlap at all, so it is tried again (a fresh row each time), up to five times.
		for (let attempt = 1; attempt <= 5; attempt++) {
			const workflowId = fresh();
			const erasedBefore = store.erased;
			const processes = [runOnce, other!.runOnce];
			const ids = (p: number) =>
				Array.from({ length: 200 }, (_, i) => `wamid.A${attempt}P${p}-${i}`);
			await Promise.all(
				processes.map(async (claim, p) => {
					await Promise.all(
						ids(p).map(async (id, i) => {
							await tick(i * 2);
							const items = [inbound(id)];
							await claim.call(
								contextFor(items, 'webhook', workflowId),
								[items],
								[30, 60, 100, 150, 220, 300],
							);
						}),
					);
				}),
			);
			await tick(600);
			const all = [...ids(0), ...ids(1)];
			const copies = await Promise.all(
				all.map(async (id) => await execute([inbound(id)], 'trigger', workflowId)),
			);
			expect(all.filter((_, i) => copies[i][0].length > 0)).toEqual([]);
			if (store.erased > erasedBefore) return;
		}
		throw new Error("in five attempts the two processes never erased each other's keys");
	});

	it('the row keeps at most the newest RUN_ONCE_MAX_ENTRIES keys', async () => {
		const workflowId = fresh();
		await execute(
			Array.from({ length: 5 }, (_, i) => inbound(`wamid.M${i}`)),
			'webhook',
			workflowId,
		);
		const row = [...store.rows.entries()].find(([id]) => id.startsWith(`${workflowId}|`));
		expect(row?.[1].data).toHaveLength(5);
		expect(RUN_ONCE_MAX_ENTRIES).toBeGreaterThanOrEqual(5000);
		expect(RUN_ONCE_MAX_ENTRIES).toBeLessThanOrEqual(20000);
	});

	it('without the helper (n8n before the store) or with a failing store, items pass', async () => {
		const context = contextFor([inbound('wamid.X')]);
		const withoutHelper = Object.create(context) as IExecuteFunctions;
		Object.defineProperty(withoutHelper, 'helpers', {
			value: { ...context.helpers, checkProcessedAndRecord: undefined },
		});
		for (let i = 0; i < 2; i++)
			expect(await runOnce.call(withoutHelper, [[inbound('wamid.X')]])).toEqual([
				[inbound('wamid.X')],
			]);
		const failing = Object.create(context) as IExecuteFunctions;
		Object.defineProperty(failing, 'helpers', {
			value: {
				...context.helpers,
				checkProcessedAndRecord: async () => await Promise.reject(new Error('database down')),
			},
		});
		expect(await runOnce.call(failing, [[inbound('wamid.Y')]])).toEqual([[inbound('wamid.Y')]]);
	});
});
