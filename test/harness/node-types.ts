// The INodeTypes registry a Workflow looks node types up in.
//
// Real n8n fills it from the installed packages (LoadNodesAndCredentials reads each package's
// package.json "n8n.nodes" list from dist/). The harness registers a small stand-in for n8n's
// Manual Trigger plus this package's nodes loaded from their TypeScript sources, so tests run
// without a build, and lets a test add or replace types.
import type {
	IDataObject,
	INodeType,
	INodeTypeDescription,
	INodeTypes,
	ITriggerFunctions,
	ITriggerResponse,
	IVersionedNodeType,
} from 'n8n-workflow';
import { NodeConnectionTypes, NodeHelpers } from 'n8n-workflow';
import { existsSync } from 'node:fs';
import path from 'node:path';

export const MANUAL_TRIGGER_TYPE = 'n8n-nodes-base.manualTrigger';
export const MANUAL_TRIGGER_NODE_NAME = 'When clicking ‘Execute workflow’';

/**
 * Stand-in for n8n-nodes-base's ManualTrigger (n8n-nodes-base is not installed here). Same
 * type name, and the same behaviour: in a manual run n8n calls trigger() and then
 * manualTriggerFunction(), which emits one empty item.
 */
export class ManualTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Manual Trigger',
		name: 'manualTrigger',
		icon: 'fa:mouse-pointer',
		group: ['trigger'],
		version: 1,
		description: 'Runs the flow on clicking a button in n8n',
		eventTriggerDescription: '',
		maxNodes: 1,
		defaults: { name: MANUAL_TRIGGER_NODE_NAME, color: '#909298' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const manualTriggerFunction = async () => {
			this.emit([this.helpers.returnJsonArray([{}])]);
		};
		return { manualTriggerFunction };
	}
}

const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** This package's nodes: type name → source file (relative to the repo root) and class name. */
export const PACKAGE_NODE_SOURCES: Record<string, { file: string; className: string }> = {
	'n8n-nodes-business-messaging.businessMessaging': {
		file: 'nodes/BusinessMessaging/BusinessMessaging.node.ts',
		className: 'BusinessMessaging',
	},
	'n8n-nodes-business-messaging.businessMessagingTrigger': {
		file: 'nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node.ts',
		className: 'BusinessMessagingTrigger',
	},
	'n8n-nodes-business-messaging.businessMessagingPollingTrigger': {
		file: 'nodes/BusinessMessagingPollingTrigger/BusinessMessagingPollingTrigger.node.ts',
		className: 'BusinessMessagingPollingTrigger',
	},
};

const loadedPackageNodes = new Map<string, INodeType | IVersionedNodeType>();

/**
 * Loads one of this package's nodes from source, the first time it is asked for. Returns
 * undefined when the source file does not exist yet; a file that exists but fails to load
 * (syntax error, bad import, missing export) throws.
 */
function loadPackageNode(typeName: string): INodeType | IVersionedNodeType | undefined {
	const cached = loadedPackageNodes.get(typeName);
	if (cached) return cached;
	const source = PACKAGE_NODE_SOURCES[typeName];
	if (!source) return undefined;
	const absolute = path.join(REPO_ROOT, source.file);
	if (!existsSync(absolute)) return undefined; // not written yet: asked again next time
	// require() rather than import so the harness compiles and runs before the node files exist.
	const exported = (require(absolute) as Record<string, unknown>)[source.className];
	if (typeof exported !== 'function') {
		throw new Error(`${source.file} does not export a class named ${source.className}`);
	}
	const loaded = new (exported as new () => INodeType | IVersionedNodeType)();
	loadedPackageNodes.set(typeName, loaded);
	return loaded;
}

/** What the Workflow and the execution contexts call to find node types (INodeTypes). */
export class HarnessNodeTypes implements INodeTypes {
	private readonly extra: Record<string, INodeType | IVersionedNodeType>;

	constructor(extra: Record<string, INodeType | IVersionedNodeType> = {}) {
		this.extra = { [MANUAL_TRIGGER_TYPE]: new ManualTrigger(), ...extra };
	}

	getByName(nodeType: string): INodeType | IVersionedNodeType {
		const found = this.extra[nodeType] ?? loadPackageNode(nodeType);
		if (found) return found;
		const source = PACKAGE_NODE_SOURCES[nodeType];
		throw new Error(
			source
				? `Node type "${nodeType}" is not available: ${source.file} does not exist yet (pass it in options.nodeTypes to test a stand-in)`
				: `Unrecognized node type "${nodeType}": register it in options.nodeTypes (known: ${this.knownTypeNames().join(', ')})`,
		);
	}

	getByNameAndVersion(nodeType: string, version?: number): INodeType {
		return NodeHelpers.getVersionedNodeType(this.getByName(nodeType), version);
	}

	getKnownTypes(): IDataObject {
		const known: IDataObject = {};
		for (const name of this.knownTypeNames()) known[name] = { className: name, sourcePath: '' };
		return known;
	}

	private knownTypeNames(): string[] {
		const packageNodes = Object.keys(PACKAGE_NODE_SOURCES).filter(
			(name) => loadPackageNode(name) !== undefined,
		);
		return [...new Set([...Object.keys(this.extra), ...packageNodes])];
	}
}

/** The description of a node type's given (or latest) version. */
export function describeNodeType(
	type: INodeType | IVersionedNodeType,
	typeVersion?: number,
): { description: INodeTypeDescription; typeVersion: number } {
	const resolved = NodeHelpers.getVersionedNodeType(type, typeVersion);
	const { version } = resolved.description;
	const latest = Array.isArray(version) ? Math.max(...version) : version;
	const versioned = 'nodeVersions' in type ? type.currentVersion : latest;
	return { description: resolved.description, typeVersion: typeVersion ?? versioned };
}
