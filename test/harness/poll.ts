/**
 * A polling trigger as n8n drives it: the node in an active one-node workflow, and n8n-core's
 * real PollContext for each poll (ActiveWorkflows.activatePolling → executeTrigger, mode
 * 'trigger'; "Fetch Test Event" → mode 'manual'). The workflow object lives as long as the
 * harness, like the one n8n builds at activation, so the node's static data carries over from
 * poll to poll; `restart()` stands for n8n starting again and loading what it last saved.
 */
import 'reflect-metadata';
import { PollContext } from 'n8n-core';
import type {
	IDataObject,
	INode,
	INodeExecutionData,
	INodeParameters,
	IPollFunctions,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { Workflow } from 'n8n-workflow';
import { randomUUID } from 'node:crypto';

import { createAdditionalData } from './additional-data';
import type { HarnessCredentials } from './credentials';
import { HarnessCredentialTypes, HarnessCredentialsHelper } from './credentials';
import { harnessEnvironment, newWorkflowId } from './environment';
import { HarnessNodeTypes, describeNodeType } from './node-types';

export interface PollHarnessOptions {
	type: string;
	parameters: INodeParameters;
	credentials?: HarnessCredentials;
	staticData?: IDataObject;
}

export interface PollHarness {
	/** One poll; what the node returned (n8n starts an execution when it is not null). */
	poll(mode?: WorkflowExecuteMode): Promise<INodeExecutionData[][] | null>;
	/** n8n restarts: the workflow is built again from the static data n8n saved (only after a poll that emitted). */
	restart(): void;
	readonly staticData: IDataObject;
	readonly node: INode;
}

export async function pollHarness(options: PollHarnessOptions): Promise<PollHarness> {
	await harnessEnvironment();
	const nodeTypes = new HarnessNodeTypes();
	const credentialsHelper = new HarnessCredentialsHelper(
		new HarnessCredentialTypes(),
		options.credentials,
	);
	const { description, typeVersion } = describeNodeType(nodeTypes.getByName(options.type));
	const nodeName = description.defaults.name ?? description.displayName;
	const credentials: INode['credentials'] = {};
	for (const { name } of description.credentials ?? [])
		credentials[name] = { id: `harness-${name}`, name: `${name} account` };
	const node: INode = {
		id: randomUUID(),
		name: nodeName,
		type: options.type,
		typeVersion,
		position: [0, 0],
		parameters: options.parameters,
		credentials,
	};
	const workflowId = newWorkflowId('default');
	// What n8n has in its database: saved after a poll that emitted (ActiveWorkflows __emit → saveStaticData).
	let saved: IDataObject = structuredClone(options.staticData ?? {});
	const build = () =>
		new Workflow({
			id: workflowId,
			nodes: [node],
			connections: {},
			active: true,
			nodeTypes,
			staticData: { [`node:${nodeName}`]: structuredClone(saved) },
			settings: { executionOrder: 'v1' },
		});
	let workflow = build();
	const nodeType = nodeTypes.getByNameAndVersion(node.type, typeVersion);

	return {
		async poll(mode: WorkflowExecuteMode = 'trigger') {
			const context = new PollContext(
				workflow,
				workflow.getNode(nodeName) as INode,
				createAdditionalData({ credentialsHelper }),
				mode,
				'activate',
			);
			const result = await (
				nodeType.poll as (this: IPollFunctions) => Promise<INodeExecutionData[][] | null>
			).call(context);
			if (result !== null && mode !== 'manual')
				saved = JSON.parse(
					JSON.stringify(workflow.getStaticData('node', workflow.getNode(nodeName) as INode)),
				) as IDataObject;
			return result;
		},
		restart() {
			workflow = build();
		},
		get staticData() {
			return workflow.getStaticData('node', workflow.getNode(nodeName) as INode);
		},
		node,
	};
}
