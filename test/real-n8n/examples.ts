/**
 * The example workflows in examples/ and what importing them into an n8n needs:
 * the credential they reference by name, and the Data Tables they write to.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { REPO_ROOT, type N8nClient, type SavedWorkflow, type WorkflowJson } from './n8n';
import { CREDENTIAL_TYPE } from '../support/constants';

export const CREDENTIAL_NAME = 'Business Messaging (sandbox)';

export const EXAMPLES = {
	autoReply: 'auto-reply.json',
	syncToCrm: 'sync-inbound-to-crm.json',
	deliveryStatus: 'delivery-status.json',
	conversation: 'conversation.json',
} as const;
export type ExampleKey = keyof typeof EXAMPLES;

/**
 * Several workflows on one account: the router (one Business Messaging Trigger) and the
 * sub-workflows its Execute Workflow nodes start. The sub-workflows first: the router's
 * workflow locators name them (cachedResultName) and get their ids when it is imported.
 */
export const ROUTER_EXAMPLES = {
	autoReply: 'router-auto-reply.json',
	crmSync: 'router-crm-sync.json',
	deliveryStatus: 'router-delivery-status.json',
	conversation: 'router-conversation.json',
	router: 'router.json',
} as const;
export type RouterKey = keyof typeof ROUTER_EXAMPLES;
export type SubWorkflowKey = Exclude<RouterKey, 'router'>;
export const SUB_WORKFLOWS = Object.keys(ROUTER_EXAMPLES).filter(
	(key) => key !== 'router',
) as SubWorkflowKey[];
/** The start node of every sub-workflow (n8n's Execute Workflow Trigger). */
export const SUB_WORKFLOW_START = 'When Executed by Another Workflow';

/** Data Tables the examples write to, all columns text. */
export const TABLES: Record<string, string[]> = {
	Contacts: [
		'phone',
		'name',
		'last_message',
		'last_message_type',
		'last_message_at',
		'receiving_number',
	],
	'Delivery status': ['message_id', 'wa_message_id', 'status', 'recipient', 'error', 'updated_at'],
};

export function readExample(key: ExampleKey): WorkflowJson {
	return readExampleFile(EXAMPLES[key]);
}

export function readExampleFile(file: string): WorkflowJson {
	return JSON.parse(readFileSync(join(REPO_ROOT, 'examples', file), 'utf8')) as WorkflowJson;
}

/** The example's trigger node name. */
export function triggerName(workflow: Pick<WorkflowJson, 'name' | 'nodes'>): string {
	const trigger = workflow.nodes.find((node) => node.type.endsWith('.businessMessagingTrigger'));
	if (!trigger) throw new Error(`${workflow.name} has no Business Messaging Trigger`);
	return trigger.name;
}

/**
 * Points the workflow at this instance: credentials referenced by name get the id of the
 * credential with that name, Data Table locators get the id of the table named in
 * cachedResultName, workflow locators (Execute Workflow) the id of the workflow named there,
 * and a webhook node without a webhookId gets a new random one, as the
 * editor gives it on import (the examples carry none: a fixed one would make every
 * imported trigger's production URL the same, guessable one). Returns a copy.
 */
export function mapExample(
	workflow: WorkflowJson,
	credentials: Record<string, string>,
	tables: Record<string, string>,
	workflows: Record<string, string> = {},
): WorkflowJson {
	const copy = JSON.parse(JSON.stringify(workflow)) as WorkflowJson;
	for (const node of copy.nodes) {
		if (node.type.endsWith('.businessMessagingTrigger') && !node.webhookId)
			node.webhookId = randomUUID();
		const refs = node.credentials as Record<string, { id: string; name: string }> | undefined;
		for (const ref of Object.values(refs ?? {})) {
			const id = credentials[ref.name];
			if (!id) throw new Error(`${workflow.name}: no credential named "${ref.name}"`);
			ref.id = id;
		}
		const locator = node.parameters?.dataTableId as
			{ value: string; cachedResultName?: string } | undefined;
		if (locator?.cachedResultName) {
			const id = tables[locator.cachedResultName];
			if (!id)
				throw new Error(`${workflow.name}: no Data Table named "${locator.cachedResultName}"`);
			locator.value = id;
		}
		const called = node.parameters?.workflowId as
			{ value: string; cachedResultName?: string } | undefined;
		if (typeof called === 'object' && called?.cachedResultName) {
			const id = workflows[called.cachedResultName];
			if (!id) throw new Error(`${workflow.name}: no workflow named "${called.cachedResultName}"`);
			called.value = id;
		}
	}
	return copy;
}

export interface Imported {
	credentialId: string;
	projectId: string;
	tables: Record<string, string>;
	workflows: Record<ExampleKey, SavedWorkflow>;
}

/**
 * A credential named CREDENTIAL_NAME pointing at the sandbox, the Data Tables, and the three
 * examples (inactive). Existing ones with the same names are reused (credential updated).
 */
export async function importExamples(
	client: N8nClient,
	credentialData: { apiKey: string; baseUrl: string; webhookSecret?: string },
): Promise<Imported> {
	const data = { webhookSecret: '', ...credentialData };
	const existing = await client.request<Array<{ id: string; name: string; type: string }>>(
		'GET',
		'/rest/credentials',
	);
	let credentialId = existing.find(
		(c) => c.name === CREDENTIAL_NAME && c.type === CREDENTIAL_TYPE,
	)?.id;
	if (credentialId) {
		await client.request('PATCH', `/rest/credentials/${credentialId}`, {
			name: CREDENTIAL_NAME,
			type: CREDENTIAL_TYPE,
			data,
		});
	} else {
		credentialId = (await client.createCredential(CREDENTIAL_NAME, CREDENTIAL_TYPE, data)).id;
	}

	const projectId = await client.personalProjectId();
	const listed = await client.request<
		{ data: Array<{ id: string; name: string }> } | Array<{ id: string; name: string }>
	>('GET', `/rest/projects/${projectId}/data-tables?take=100`);
	const existingTables = Array.isArray(listed) ? listed : listed.data;
	const tables: Record<string, string> = {};
	for (const [name, columns] of Object.entries(TABLES)) {
		const found = existingTables.find((t) => t.name === name);
		tables[name] = found
			? found.id
			: (
					await client.createDataTable(
						name,
						columns.map((column) => ({ name: column, type: 'string' as const })),
					)
				).id;
	}

	const saved = await client.listWorkflows();
	const workflows = {} as Record<ExampleKey, SavedWorkflow>;
	for (const key of Object.keys(EXAMPLES) as ExampleKey[]) {
		const example = readExample(key);
		const found = saved.find((w) => w.name === example.name);
		workflows[key] = found
			? await client.getWorkflow(found.id)
			: await client.createWorkflow(
					mapExample(example, { [CREDENTIAL_NAME]: credentialId }, tables),
				);
	}
	return { credentialId, projectId, tables, workflows };
}

export interface ImportedRouter {
	router: SavedWorkflow;
	subWorkflows: Record<SubWorkflowKey, SavedWorkflow>;
}

/**
 * The router and its sub-workflows, created (inactive) after importExamples made the credential
 * and tables: the sub-workflows first, then the router pointing at their ids. `label` makes a
 * fresh set (names suffixed " (label)"); `triggerOptions` are merged into the router trigger's
 * options. Without a label, a set already there (same names) is reused.
 */
export async function importRouter(
	client: N8nClient,
	imported: Pick<Imported, 'credentialId' | 'tables'>,
	{ label, triggerOptions }: { label?: string; triggerOptions?: Record<string, unknown> } = {},
): Promise<ImportedRouter> {
	const named = (name: string) => (label ? `${name} (${label})` : name);
	const saved = label ? [] : await client.listWorkflows();
	const credentials = { [CREDENTIAL_NAME]: imported.credentialId };
	const ids: Record<string, string> = {};
	const create = async (key: RouterKey): Promise<SavedWorkflow> => {
		const example = readExampleFile(ROUTER_EXAMPLES[key]);
		const found = saved.find((w) => w.name === example.name);
		if (found) return await client.getWorkflow(found.id);
		const json = mapExample(example, credentials, imported.tables, ids);
		for (const node of json.nodes)
			if (triggerOptions && node.type.endsWith('.businessMessagingTrigger'))
				node.parameters = {
					...node.parameters,
					options: { ...(node.parameters?.options as object), ...triggerOptions },
				};
		return await client.createWorkflow({ ...json, name: named(example.name) });
	};
	const subWorkflows = {} as Record<SubWorkflowKey, SavedWorkflow>;
	for (const key of SUB_WORKFLOWS) {
		subWorkflows[key] = await create(key);
		ids[readExampleFile(ROUTER_EXAMPLES[key]).name] = subWorkflows[key].id;
	}
	return { router: await create('router'), subWorkflows };
}

/**
 * Activates the sub-workflows, then the router. n8n 2.x runs only a published sub-workflow; n8n
 * 1.x runs a saved one and refuses to activate a workflow whose only trigger is "When Executed by
 * Another Workflow", so there a refusal is not an error. Throws with n8n's message otherwise.
 */
export async function activateRouter(client: N8nClient, set: ImportedRouter): Promise<void> {
	for (const sub of Object.values(set.subWorkflows)) {
		const outcome = await client.activateAndSettle(sub.id);
		if (!outcome.ok && client.line === 2)
			throw new Error(`Activating "${sub.name}" failed: ${outcome.message}`);
	}
	const outcome = await client.activateAndSettle(set.router.id);
	if (!outcome.ok) throw new Error(`Activating "${set.router.name}" failed: ${outcome.message}`);
}
