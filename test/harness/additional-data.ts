// IWorkflowExecuteAdditionalData: what the cli's WorkflowExecuteAdditionalData.getBase() builds
// for every execution. Real values where n8n-core provides them, stubs (each commented) where
// the real thing lives in the cli and needs a database, a queue or a task runner.
import { Container } from '@n8n/di';
import { ExternalSecretsProxy } from 'n8n-core';
import type { ExecutionLifecycleHooks } from 'n8n-core';
import type { IWorkflowExecuteAdditionalData } from 'n8n-workflow';

import type { HarnessCredentialsHelper } from './credentials';

/** n8n's defaults for N8N_HOST/N8N_PORT/N8N_PROTOCOL with no WEBHOOK_URL set. */
export const DEFAULT_INSTANCE_BASE_URL = 'http://localhost:5678';

export interface AdditionalDataOptions {
	credentialsHelper: HarnessCredentialsHelper;
	hooks?: ExecutionLifecycleHooks;
	/** Base of production webhook URLs, n8n's `${WEBHOOK_URL}webhook`. */
	webhookBaseUrl?: string;
	/** Base of test webhook URLs, n8n's `${WEBHOOK_URL}webhook-test`. */
	webhookTestBaseUrl?: string;
	/** Base of waiting executions' resume URLs ($execution.resumeUrl), n8n's `${WEBHOOK_URL}webhook-waiting`. */
	webhookWaitingBaseUrl?: string;
}

export function createAdditionalData(
	options: AdditionalDataOptions,
): IWorkflowExecuteAdditionalData {
	const base = DEFAULT_INSTANCE_BASE_URL;
	return {
		credentialsHelper: options.credentialsHelper,
		hooks: options.hooks,
		// Must stay undefined: with an execution id n8n-core treats the run as stored (binary data
		// paths, resume URLs) and expects a runner identity to go with it.
		executionId: undefined,
		encryptedRunnerIdentity: undefined,
		currentNodeExecutionIndex: 0,
		restApiUrl: `${base}/rest`,
		instanceBaseUrl: `${base}/`,
		formBaseUrl: `${base}/form`,
		formWaitingBaseUrl: `${base}/form-waiting`,
		formTestBaseUrl: `${base}/form-test`,
		webhookBaseUrl: options.webhookBaseUrl ?? `${base}/webhook`,
		webhookWaitingBaseUrl: options.webhookWaitingBaseUrl ?? `${base}/webhook-waiting`,
		webhookTestBaseUrl: options.webhookTestBaseUrl ?? `${base}/webhook-test`,
		mcpBaseUrl: `${base}/mcp`,
		mcpTestBaseUrl: `${base}/mcp-test`,
		// Real n8n: the instance's $vars (an enterprise feature); none here.
		variables: {},
		// Real n8n: the (enterprise) external secrets manager behind $secrets. n8n-core's own
		// proxy with no manager set, so $secrets has no providers.
		externalSecretsProxy: Container.get(ExternalSecretsProxy),
		// Stub. Real n8n: loads the called workflow from the database and runs it (Execute
		// Workflow node, sub-workflow tools).
		executeWorkflow: async () => {
			throw new Error('The test harness does not run sub-workflows (executeWorkflow)');
		},
		// Stub. Real n8n: reads a stored execution from the database (used when resuming).
		getRunExecutionData: async () => undefined,
		// Stub. Real n8n: looks up a credential supplied at runtime by alias (dynamic credentials).
		getRuntimeCredential: async () => undefined,
		// Stub. Real n8n: sends AI node events to the event bus / log streaming.
		logAiEvent: () => {},
		// Stub. Real n8n: hands Code-node style tasks to the task runner process.
		startRunnerTask: async () => {
			throw new Error('The test harness has no task runner (Code node)');
		},
	};
}
