// One node in a workflow of its own, as the editor and the engine hold it: the Workflow
// constructor fills in the node's parameter defaults from its description, as n8n does. For the
// tests of what n8n computes from a node's description and parameters alone (its outputs, what it
// evaluates per request), without running anything.
import type { INode, INodeType, INodeTypes, IVersionedNodeType } from 'n8n-workflow';
import { NodeHelpers, Workflow } from 'n8n-workflow';

/** A workflow holding only `node`, its type answered by `nodeType`. */
export function singleNodeWorkflow(nodeType: INodeType, node: INode, active = false): Workflow {
	const nodeTypes: INodeTypes = {
		getByName: () => nodeType as INodeType | IVersionedNodeType,
		getByNameAndVersion: () => nodeType,
		getKnownTypes: () => ({}),
	};
	return new Workflow({ id: 'w1', nodes: [node], connections: {}, active, nodeTypes });
}

/** The node as such a workflow holds it: its parameters with the defaults filled in. */
export function nodeWithDefaults(nodeType: INodeType, node: INode, active = false): INode {
	return singleNodeWorkflow(nodeType, node, active).getNode(node.name)!;
}

/** The node's outputs as n8n computes them for the editor and the engine. */
export function nodeOutputs(nodeType: INodeType, node: INode) {
	const workflow = singleNodeWorkflow(nodeType, node);
	return NodeHelpers.getNodeOutputs(workflow, workflow.getNode(node.name)!, nodeType.description);
}
