// Runs a workflow through n8n-core's WorkflowExecute, as n8n runs a manual execution
// (the "Execute workflow" button): real node execution contexts, real request and binary
// helpers, real error handling (continueOnFail, error outputs, workflow errors).
import 'reflect-metadata';

import { ExecutionLifecycleHooks, WorkflowExecute } from 'n8n-core';
import type {
	ExecutionError,
	ICredentialType,
	IConnections,
	IDataObject,
	WorkflowExecuteMode,
	INode,
	INodeExecutionData,
	INodeParameters,
	INodeType,
	IPinData,
	IRun,
	IRunData,
	IVersionedNodeType,
	IWorkflowBase,
	IWorkflowSettings,
} from 'n8n-workflow';
import { NodeHelpers, Workflow, createRunExecutionData } from 'n8n-workflow';
import { randomUUID } from 'node:crypto';

import { createAdditionalData } from './additional-data';
import type { HarnessCredentials } from './credentials';
import { HarnessCredentialTypes, HarnessCredentialsHelper } from './credentials';
import type { HarnessBinaryDataMode } from './environment';
import { harnessEnvironment, newWorkflowId, readBinary } from './environment';
import {
	HarnessNodeTypes,
	MANUAL_TRIGGER_NODE_NAME,
	MANUAL_TRIGGER_TYPE,
	describeNodeType,
} from './node-types';

export interface RunWorkflowOptions {
	nodes: INode[];
	connections: IConnections;
	/**
	 * Decrypted credential data by credential type. A node gets them through the reference in
	 * its `credentials` ({ businessMessagingApi: { id, name } }, as in workflow JSON); the
	 * harness matches on the type only. A node without that reference fails as in n8n.
	 */
	credentials?: HarnessCredentials;
	/** Extra node types by type name, e.g. { 'test.myNode': new MyNode() }; they win over the defaults. */
	nodeTypes?: Record<string, INodeType | IVersionedNodeType>;
	/** Extra credential types (the package's credentials/*.credentials.ts are always known). */
	credentialTypes?: ICredentialType[];
	/** 'default': binary data kept in memory (base64 in the item). 'filesystem': written to a temp dir. */
	binaryDataMode?: HarnessBinaryDataMode;
	/** Default: the first node (in `nodes` order) without incoming connections. */
	startNode?: string;
	/**
	 * Items fed to the start node, as if they were the output of a preceding trigger/manual
	 * node. When the start node is itself a trigger, they become its pinned output (as when
	 * data is pinned on a trigger in the editor), since a trigger takes no input.
	 */
	inputItems?: INodeExecutionData[];
	/** Workflow settings; default { executionOrder: 'v1' } as for workflows made in n8n 1.0+. */
	settings?: IWorkflowSettings;
	/**
	 * Resume a waiting execution: the run data a previous run ended with (its execution.data),
	 * as n8n's wait tracker does on the timer; it is copied through JSON as n8n stores it.
	 */
	resumeFrom?: IRun['data'];
	/**
	 * The workflow's static data as n8n hands it to the execution (default {}): this very object
	 * is used, so a test sees what the nodes changed and n8n's __dataChanged flag (n8n saves the
	 * whole object after the execution when it is true).
	 */
	staticData?: IDataObject;
	/** n8n's execution mode; default 'manual' (the editor's Execute workflow). 'webhook' or 'trigger' as for an active workflow. */
	mode?: WorkflowExecuteMode;
	/** Base of resume URLs ($execution.resumeUrl); default http://localhost:5678/webhook-waiting. */
	webhookWaitingBaseUrl?: string;
}

export interface WorkflowRunResult {
	/** As n8n stores it: node name → one task per run of that node. */
	runData: IRunData;
	/** Workflow-level error: a node failed without continueOnFail / error output. */
	error?: ExecutionError;
	/** The whole IRun WorkflowExecute returned (status, timings, resultData). */
	execution: IRun;
	/** Items of the node's last run on the given output (0 by default); [] if it did not run. */
	output(nodeName: string, outputIndex?: number): INodeExecutionData[];
	/** The error of the node's last run, if it failed. */
	nodeError(nodeName: string): ExecutionError | undefined;
	/** Binary data of an output-0 item of the node's last run, read back through n8n's binary data service. */
	binary(nodeName: string, itemIndex: number, property?: string): Promise<Buffer>;
}

function isTriggerType(type: INodeType): boolean {
	return (
		type.trigger !== undefined ||
		type.poll !== undefined ||
		type.webhook !== undefined ||
		NodeHelpers.isTriggerNode(type.description)
	);
}

function findStartNode(workflow: Workflow, nodes: INode[], startNode?: string): INode {
	if (startNode !== undefined) {
		const node = workflow.getNode(startNode);
		if (!node) throw new Error(`startNode "${startNode}" is not a node of the workflow`);
		return node;
	}
	const first = nodes.find((node) => {
		const incoming = workflow.connectionsByDestinationNode[node.name]?.main ?? [];
		return incoming.every((connections) => !connections || connections.length === 0);
	});
	if (!first) throw new Error('Every node has incoming connections: pass options.startNode');
	return workflow.getNode(first.name) as INode;
}

export async function runWorkflow(options: RunWorkflowOptions): Promise<WorkflowRunResult> {
	await harnessEnvironment();
	const workflowId = newWorkflowId(options.binaryDataMode ?? 'default');
	const nodeTypes = new HarnessNodeTypes(options.nodeTypes);
	const credentialsHelper = new HarnessCredentialsHelper(
		new HarnessCredentialTypes(options.credentialTypes),
		options.credentials,
	);
	const settings: IWorkflowSettings = options.settings ?? { executionOrder: 'v1' };
	const nodes = structuredClone(options.nodes);
	const connections = structuredClone(options.connections);
	const workflow = new Workflow({
		id: workflowId,
		name: 'Harness workflow',
		nodes,
		connections,
		active: false,
		nodeTypes,
		staticData: options.staticData ?? {},
		settings,
	});

	const startNode = findStartNode(workflow, nodes, options.startNode);
	const startType = nodeTypes.getByNameAndVersion(startNode.type, startNode.typeVersion);
	let pinData: IPinData | undefined;
	let startItems: INodeExecutionData[] = [{ json: {} }];
	if (options.inputItems && isTriggerType(startType))
		pinData = { [startNode.name]: options.inputItems };
	else if (options.inputItems) startItems = options.inputItems;

	const workflowData: IWorkflowBase = {
		id: workflowId,
		name: workflow.name ?? '',
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes,
		connections,
		settings,
	};
	// Real hooks object; real n8n adds handlers that save the execution, push progress to the
	// editor and save static data. None are needed here: the run's result is returned.
	const hooks = new ExecutionLifecycleHooks(options.mode ?? 'manual', randomUUID(), workflowData);
	const additionalData = createAdditionalData({
		credentialsHelper,
		hooks,
		webhookWaitingBaseUrl: options.webhookWaitingBaseUrl,
	});

	// What WorkflowExecute.run() builds, with the start node's input given by the test.
	const runExecutionData = options.resumeFrom
		? (JSON.parse(JSON.stringify(options.resumeFrom)) as IRun['data'])
		: createRunExecutionData({
				executionData: {
					nodeExecutionStack: [{ node: startNode, data: { main: [startItems] }, source: null }],
				},
				resultData: { runData: {}, pinData },
			});
	const execution = await new WorkflowExecute(
		additionalData,
		options.mode ?? 'manual',
		runExecutionData,
	).processRunExecutionData(workflow);
	return toResult(execution);
}

function toResult(execution: IRun): WorkflowRunResult {
	const { runData, error } = execution.data.resultData;
	const lastRun = (nodeName: string) => runData[nodeName]?.at(-1);
	const output = (nodeName: string, outputIndex = 0) =>
		lastRun(nodeName)?.data?.main?.[outputIndex] ?? [];
	return {
		runData,
		error,
		execution,
		output,
		nodeError: (nodeName) => lastRun(nodeName)?.error,
		binary: async (nodeName, itemIndex, property = 'data') => {
			const item = output(nodeName)[itemIndex];
			if (!item) throw new Error(`Node "${nodeName}" has no output item ${itemIndex}`);
			const binaryData = item.binary?.[property];
			if (!binaryData) {
				const present = Object.keys(item.binary ?? {});
				throw new Error(
					`Item ${itemIndex} of node "${nodeName}" has no binary property "${property}" (it has: ${present.join(', ') || 'none'})`,
				);
			}
			return await readBinary(binaryData);
		},
	};
}

export interface RunNodeOptions {
	/** Node type name, e.g. 'n8n-nodes-business-messaging.businessMessaging'. */
	type: string;
	parameters: INodeParameters;
	credentials?: HarnessCredentials;
	/** Items the node receives (by default the manual trigger's one empty item). */
	inputItems?: INodeExecutionData[];
	nodeTypes?: Record<string, INodeType | IVersionedNodeType>;
	credentialTypes?: ICredentialType[];
	binaryDataMode?: HarnessBinaryDataMode;
	/** Default: the type's latest (or, for a versioned type, default) version. */
	typeVersion?: number;
	/** Node settings as stored in the workflow JSON, e.g. { continueOnFail: true } or { onError: 'continueErrorOutput' }. */
	nodeSettings?: Partial<
		Pick<
			INode,
			| 'continueOnFail'
			| 'onError'
			| 'alwaysOutputData'
			| 'executeOnce'
			| 'retryOnFail'
			| 'maxTries'
			| 'waitBetweenTries'
		>
	>;
}

/**
 * Manual Trigger → one node with the given parameters, run as a manual execution. The node
 * gets a credential reference for every credential type it declares that the test passes.
 */
export async function runNode(
	options: RunNodeOptions,
): Promise<WorkflowRunResult & { items: INodeExecutionData[]; nodeName: string }> {
	const nodeTypes = new HarnessNodeTypes(options.nodeTypes);
	const { description, typeVersion } = describeNodeType(
		nodeTypes.getByName(options.type),
		options.typeVersion,
	);
	const nodeName = description.defaults.name ?? description.displayName;
	const credentials: INode['credentials'] = {};
	for (const { name } of description.credentials ?? []) {
		if (options.credentials?.[name] !== undefined)
			credentials[name] = { id: `harness-${name}`, name: `${name} account` };
	}
	const node: INode = {
		id: randomUUID(),
		name: nodeName,
		type: options.type,
		typeVersion,
		position: [220, 0],
		parameters: options.parameters,
		...(Object.keys(credentials).length > 0 ? { credentials } : {}),
		...(description.webhooks?.length ? { webhookId: randomUUID() } : {}),
		...options.nodeSettings,
	};
	const trigger: INode = {
		id: randomUUID(),
		name: MANUAL_TRIGGER_NODE_NAME,
		type: MANUAL_TRIGGER_TYPE,
		typeVersion: 1,
		position: [0, 0],
		parameters: {},
	};
	const result = await runWorkflow({
		nodes: [trigger, node],
		connections: { [trigger.name]: { main: [[{ node: nodeName, type: 'main', index: 0 }]] } },
		credentials: options.credentials,
		nodeTypes: options.nodeTypes,
		credentialTypes: options.credentialTypes,
		binaryDataMode: options.binaryDataMode,
		inputItems: options.inputItems,
	});
	return { ...result, items: result.output(nodeName), nodeName };
}
