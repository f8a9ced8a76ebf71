/**
 * What n8n stored, read straight from its Postgres database (the truth every process writes
 * to): executions of a workflow, their status, and the items the trigger emitted in each.
 */
import { sleep } from '../../real-n8n/util';
import type { Topology } from './topology';

export interface StoredExecution {
	id: string;
	status: string;
	mode: string;
	/** data.wa_message_id of each item the trigger emitted (all outputs). */
	waIds: string[];
	/** json.recovered of each item the trigger emitted. */
	recovered: boolean[];
	/** json.event of each item the trigger emitted (message.inbound, message.status, ...). */
	events: string[];
	/** Per item: `status:<data.id>:<data.status>` for a status event, else data.wa_message_id. */
	keys: string[];
	/** Nodes that ran, by name. */
	nodes: string[];
	/** The execution's error message, if it has one. */
	error?: string;
	/** When a worker started and finished it (ms since the epoch; undefined if it never did). */
	startedAtMs?: number;
	stoppedAtMs?: number;
}

type Items = Array<Array<{ json?: Record<string, unknown> }> | null>;
type RunData = Record<string, Array<{ data?: { main?: Items } }>>;
interface StoredData {
	resultData?: { runData?: RunData; error?: { message?: string } };
	/** Where a webhook processor puts the trigger's items for the worker to run (queue mode). */
	executionData?: {
		nodeExecutionStack?: Array<{ node?: { name?: string }; data?: { main?: Items } }>;
	};
}

function quote(value: string): string {
	return `'${value.replace(/'/g, "''")}'`;
}

/** The workflow's static data as n8n stored it (JSON text): where the trigger keeps its sealed secret and waiting entries. */
export function storedStaticData(topology: Topology, workflowId: string): string {
	return topology.postgres.psql(
		`SELECT "staticData"::text FROM workflow_entity WHERE id = ${quote(workflowId)}`,
	);
}

/** Executions of `workflowId` (counts only, no data). */
export function executionStatuses(topology: Topology, workflowId: string): Record<string, number> {
	const out = topology.postgres.psql(
		`SELECT status, COUNT(*) FROM execution_entity WHERE "workflowId" = ${quote(workflowId)} GROUP BY status`,
	);
	const statuses: Record<string, number> = {};
	for (const line of out.split('\n').filter(Boolean)) {
		const [status, count] = line.split('|');
		statuses[status] = Number(count);
	}
	return statuses;
}

export function executionCount(topology: Topology, workflowId: string): number {
	return Object.values(executionStatuses(topology, workflowId)).reduce((a, b) => a + b, 0);
}

/** Every execution of the workflow with the trigger's items (execution data parsed with n8n's flatted). */
export function storedExecutions(
	topology: Topology,
	workflowId: string,
	triggerName: string,
	/** Only executions with one of these statuses (e.g. new, running: what a kill may take away). */
	statuses?: string[],
): StoredExecution[] {
	const parse = topology.flatted();
	const only = statuses ? ` AND e.status IN (${statuses.map(quote).join(', ')})` : '';
	const json = topology.postgres.psql(
		`SELECT coalesce(json_agg(json_build_object('id', e.id, 'status', e.status, 'mode', e.mode, 'startedAt', e."startedAt", 'stoppedAt', e."stoppedAt", 'data', d.data) ORDER BY e.id), '[]') FROM execution_entity e LEFT JOIN execution_data d ON d."executionId" = e.id WHERE e."workflowId" = ${quote(workflowId)}${only}`,
	);
	const rows = JSON.parse(json) as Array<{
		id: number | string;
		status: string;
		mode: string;
		startedAt: string | null;
		stoppedAt: string | null;
		data: string | null;
	}>;
	const ms = (at: string | null) =>
		at ? Date.parse(at.endsWith('Z') || /[+-]\d\d(:?\d\d)?$/.test(at) ? at : `${at}Z`) : undefined;
	return rows.map((row) => {
		let data: StoredData = {};
		try {
			data = row.data ? (parse(row.data) as StoredData) : {};
		} catch {
			data = {};
		}
		const runData = data.resultData?.runData ?? {};
		// An execution no worker finished still holds the trigger's items where the webhook processor put them.
		const pending = data.executionData?.nodeExecutionStack?.find(
			(entry) => entry.node?.name === triggerName,
		)?.data?.main;
		const items = (runData[triggerName]?.[0]?.data?.main ?? pending ?? []).flatMap(
			(output) => output ?? [],
		);
		return {
			id: String(row.id),
			status: row.status,
			mode: row.mode,
			waIds: items.map((item) =>
				String((item.json?.data as Record<string, unknown> | undefined)?.wa_message_id ?? ''),
			),
			recovered: items.map((item) => item.json?.recovered === true),
			events: items.map((item) => String(item.json?.event ?? '')),
			keys: items.map((item) => eventKey(item.json ?? {})),
			nodes: Object.keys(runData),
			error: data.resultData?.error?.message,
			startedAtMs: ms(row.startedAt),
			stoppedAtMs: ms(row.stoppedAt),
		};
	});
}

/**
 * Waits until the workflow has at least `expected` executions none of which is still new or
 * running, or until the count has not moved for `quietMs` past `timeoutMs`. Returns the last count.
 */
export async function settle(
	topology: Topology,
	workflowId: string,
	expected: number,
	timeoutMs: number,
	quietMs = 3000,
): Promise<number> {
	const deadline = Date.now() + timeoutMs;
	let last = -1;
	let since = Date.now();
	for (;;) {
		const statuses = executionStatuses(topology, workflowId);
		const count = Object.values(statuses).reduce((a, b) => a + b, 0);
		const busy = (statuses.new ?? 0) + (statuses.running ?? 0);
		if (count !== last) {
			last = count;
			since = Date.now();
		}
		if (count >= expected && busy === 0 && Date.now() - since > quietMs) return count;
		if (Date.now() > deadline && Date.now() - since > quietMs) return count;
		await sleep(500);
	}
}

/** What identifies one event: a status event by message id and status, any other by wa_message_id. */
export function eventKey(json: Record<string, unknown>): string {
	const data = (json.data ?? {}) as Record<string, unknown>;
	return json.event === 'message.status'
		? `status:${String(data.id ?? '')}:${String(data.status ?? '')}`
		: String(data.wa_message_id ?? '');
}

/** eventKey → how many executions carry it. */
export function perEvent(executions: StoredExecution[]): Map<string, number> {
	const counts = new Map<string, number>();
	for (const execution of executions)
		for (const key of new Set(execution.keys)) counts.set(key, (counts.get(key) ?? 0) + 1);
	return counts;
}

/** wa_message_id → how many executions carry it. */
export function perMessage(executions: StoredExecution[]): Map<string, number> {
	const counts = new Map<string, number>();
	for (const execution of executions.filter(wasStarted))
		for (const id of new Set(execution.waIds)) counts.set(id, (counts.get(id) ?? 0) + 1);
	return counts;
}

/**
 * Whether a worker (or main) started the execution. A webhook processor killed between storing it
 * and queueing its job leaves one never started (`new`, later `crashed` by main's queue recovery):
 * it ran nothing, and the catch-up runs its message.
 */
export function wasStarted(execution: StoredExecution): boolean {
	return execution.startedAtMs !== undefined || execution.nodes.length > 0;
}

/** One line per message id: each execution holding it (id, status, mode, recovered?, started?), for a failed count. */
export function whereRan(ids: string[], executions: StoredExecution[]): string[] {
	return ids.map((waId) => {
		const held = executions
			.filter((e) => e.waIds.includes(waId))
			.map((e) => {
				const recovered = e.recovered[e.waIds.indexOf(waId)] ? ' recovered' : '';
				const ran = e.startedAtMs === undefined ? ' never started' : '';
				return `#${e.id} ${e.status} ${e.mode}${recovered}${ran}`;
			});
		return `    ${waId}: ${held.join('; ') || 'no execution'}`;
	});
}
