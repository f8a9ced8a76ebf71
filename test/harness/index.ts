// Test harness: runs real workflows (nodes and connections as n8n stores them) through
// n8n-core's WorkflowExecute, with credentials applied as n8n applies them, against real HTTP.
//
//   runWorkflow({ nodes, connections, credentials })   a whole workflow, manual execution
//   runNode({ type, parameters, credentials })         Manual Trigger → one node
//   testCredential(type, data)                         the credential's "Test" button
//   webhookHarness({ type, parameters, ... })          a webhook trigger: activate / receive / deactivate
//   serveWebhook(harness)                              that trigger behind a real HTTP server
//   serveWebhooks([a, b])                              several triggers behind one server (one n8n origin)
//   nodeOutputs(nodeType, node)                        a node's outputs as n8n computes them
//
// 'reflect-metadata' must load before n8n-core's DI-decorated classes; every module here
// imports it first, so importing the harness is enough.
import 'reflect-metadata';

export type { HarnessCredentials } from './credentials';
export type { HarnessBinaryDataMode } from './environment';
export type { RunWorkflowOptions, RunNodeOptions, WorkflowRunResult } from './run-workflow';
export { runWorkflow, runNode } from './run-workflow';
export type { CredentialTestResult, TestCredentialOptions } from './credential-test';
export { testCredential } from './credential-test';
export type {
	ServedWebhook,
	StartedTrigger,
	HeldTrigger,
	WebhookHarness,
	WebhookHarnessOptions,
	WebhookReceiveResult,
	WebhookRequestInput,
} from './webhook';
export { recordReceived, serveWebhook, serveWebhooks, webhookHarness } from './webhook';
export {
	MANUAL_TRIGGER_NODE_NAME,
	MANUAL_TRIGGER_TYPE,
	ManualTrigger,
	PACKAGE_NODE_SOURCES,
} from './node-types';
export type { PollHarness, PollHarnessOptions } from './poll';
export { pollHarness } from './poll';
export { nodeOutputs, nodeWithDefaults, singleNodeWorkflow } from './single-node';
