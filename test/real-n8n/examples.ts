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
	return JSON.parse(
		readFileSync(join(REPO_ROOT, 'examples', EXAMPLES[key]), 'utf8'),
	) as WorkflowJson;
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
 * cachedResultName, and a webhook node without a webhookId gets a new random one, as the
 * editor gives it on import (the examples carry none: a fixed one would make every
 * imported trigger's production URL the same, guessable one). Returns a copy.
 */
export function mapExample(
	workflow: WorkflowJson,
	credentials: Record<string, string>,
	tables: Record<string, string>,
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
