// Webhook triggers, as n8n drives them: activation runs the node's webhookMethods through
// n8n-core's HookContext, an incoming request runs webhook() through n8n-core's WebhookContext,
// and the HTTP answer follows the cli's webhook-helpers. Each function below stands for one
// piece of n8n (named in its comment), so that an n8n upgrade changes one of them.
import 'reflect-metadata';

import { ExecuteContext, HookContext, TriggerContext, WebhookContext } from 'n8n-core';
import type {
	ICredentialType,
	IDataObject,
	IExecuteFunctions,
	IHttpRequestMethods,
	INode,
	INodeExecutionData,
	INodeParameters,
	INodeType,
	IRun,
	IRunExecutionData,
	ITriggerFunctions,
	IVersionedNodeType,
	IWebhookData,
	IWebhookDescription,
	IWebhookResponseData,
	IWorkflowExecuteAdditionalData,
	WorkflowActivateMode,
	WebhookSetupMethodNames,
	WebhookType,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { NodeHelpers, Workflow, isNodeClassInstance } from 'n8n-workflow';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { DEFAULT_INSTANCE_BASE_URL, createAdditionalData } from './additional-data';
import type { HarnessCredentials } from './credentials';
import { HarnessCredentialTypes, HarnessCredentialsHelper } from './credentials';
import type { HarnessBinaryDataMode } from './environment';
import { harnessEnvironment, newWorkflowId } from './environment';
import { RecordingResponse, contentTypeOf, expressRequest, parseRequestBody } from './express';
import { gunzipSync, inflateSync } from 'node:zlib';
import { HarnessNodeTypes, describeNodeType } from './node-types';

export interface WebhookRequestInput {
	/** Header names in any case; n8n (node:http) hands them to the node lowercased. */
	headers: Record<string, string>;
	/** The exact body bytes; kept on req.rawBody as a Buffer. */
	rawBody: Buffer | string;
	/** Default 'POST'. */
	method?: string;
	/** Path of the request URL; default: the node's webhook path. A different path gets n8n's 404. */
	path?: string;
	/** Which of the node's webhooks the default path names (description.webhooks[].name); default the harness's. */
	webhookName?: WebhookType;
	query?: Record<string, string | string[]>;
}

export interface WebhookReceiveResult {
	status: number;
	/** The answer body: the parsed JSON value for res.json(), a string or Buffer for res.send(). */
	body: unknown;
	/** Response headers the node or n8n set, names lowercased. */
	headers: Record<string, string>;
	/** What webhook() returned for the execution n8n would start; undefined = no execution. */
	workflowData?: INodeExecutionData[][];
	/** webhook() said it answered the request itself (through getResponseObject()). */
	noWebhookResponse?: boolean;
	/** The error webhook() threw, if it did (the caller only sees n8n's generic 500 message). */
	error?: Error;
	/** How long after the request arrived the answer was written. */
	answeredAfterMs?: number;
	/** webhook() said it answers itself and had not yet: the answer, once the node writes it. */
	answered?: Promise<Pick<WebhookReceiveResult, 'status' | 'body' | 'headers'>>;
}

export interface WebhookHarness {
	/** As n8n on activation (or on "Listen for test event"): checkExists, then create if it returned false. */
	activate(): Promise<void>;
	/** As n8n on deactivation (or when a test webhook is done): delete. */
	deactivate(): Promise<void>;
	/** The node's static data (getWorkflowStaticData('node')), one object for the harness's whole life. */
	readonly staticData: IDataObject;
	/** The workflow's global static data (getWorkflowStaticData('global')). */
	readonly globalStaticData: IDataObject;
	/** The workflow's whole static data, as n8n saves it when its `__dataChanged` is set. */
	readonly workflowStaticData: IDataObject & { __dataChanged?: boolean };
	/** Delivers one HTTP request to webhook() as n8n's webhook server would, and answers as n8n would. */
	receive(req: WebhookRequestInput): Promise<WebhookReceiveResult>;
	/** The URL n8n gives this node (this.getNodeWebhookUrl('default')): <base>/<webhookId>/<path>. */
	readonly webhookUrl: string;
	/** The URL of another of the node's webhooks (n8n serves each one a node declares). */
	webhookUrlOf(name: WebhookType): string;
	/** The node as it sits in the one-node workflow (name, webhookId, credentials reference). */
	readonly node: INode;
	/** The workflow's id (sameWorkflowAs puts another node into it). */
	readonly workflowId: string;
	/**
	 * As n8n after addWebhooks on the leader main (ActiveWorkflows.add → TriggersAndPollers.runTrigger):
	 * the node's trigger() with n8n-core's real TriggerContext on the same workflow object; `emitted`
	 * collects what it emits (each emit is one execution), `close()` is the closeFunction n8n calls on
	 * deactivation. `saved` is the static data as n8n last saved it (on each emit, as n8n does).
	 */
	startTrigger(activation?: WorkflowActivateMode): Promise<StartedTrigger>;
	/**
	 * n8n-core's TriggerContext as startTrigger() gives trigger(), for calling a trigger's pieces
	 * directly. Its executions do not end by themselves: the test ends each (`executions[i].resolve`).
	 */
	triggerContext(activation?: WorkflowActivateMode): HeldTrigger;
	/**
	 * As n8n runs the execution webhook() or the catch-up started: the node's execute() with
	 * n8n-core's real ExecuteContext, these outputs as its input, the node's credentials.
	 */
	execute(
		workflowData: INodeExecutionData[][],
		mode?: WorkflowExecuteMode,
	): Promise<INodeExecutionData[][]>;
}

export interface HeldTrigger {
	context: ITriggerFunctions;
	emitted: INodeExecutionData[][][];
	/** Each emitted execution's donePromise, in emit order: resolve it to end that execution. */
	executions: Array<Parameters<ITriggerFunctions['emit']>[2]>;
}

export interface StartedTrigger {
	emitted: INodeExecutionData[][][];
	/** What trigger() reported through emitError() (n8n: deactivate, activation error, Error Workflow). */
	errors: Error[];
	close(): Promise<void>;
	/** The static data n8n would have in its database: a copy taken at each emit. */
	readonly saved: IDataObject;
}

export interface WebhookHarnessOptions {
	type: string;
	parameters: INodeParameters;
	credentials?: HarnessCredentials;
	/**
	 * Base of the webhook URLs, i.e. n8n's WEBHOOK_URL followed by 'webhook' (or 'webhook-test'
	 * when isTest); the node's URL is <base>/<webhookId>/<path>. Default
	 * http://localhost:5678/webhook (or /webhook-test). serveWebhook() replaces the origin with
	 * its own, so the URL the node registers is the one it serves.
	 */
	webhookUrl?: string;
	/** Test mode ('manual' execution mode, "Listen for test event"); default production ('trigger'/'webhook'). */
	isTest?: boolean;
	/** Initial static data of the node; this very object is used and updated. */
	staticData?: IDataObject;
	binaryDataMode?: HarnessBinaryDataMode;
	nodeTypes?: Record<string, INodeType | IVersionedNodeType>;
	credentialTypes?: ICredentialType[];
	typeVersion?: number;
	/** The node's webhookId (n8n gives every webhook node a UUID when it is added). */
	webhookId?: string;
	/** The node's id (kept across an n8n restart, as the saved workflow keeps it); default a new UUID. */
	nodeId?: string;
	/** The node's name in its workflow; default the type's default name. */
	nodeName?: string;
	/** Another node of the same workflow: its workflow id and global static data (this very object) are shared. */
	sameWorkflowAs?: { workflowId: string; globalStaticData: IDataObject };
	/** Which of the node's webhooks (description.webhooks[].name) to drive; default 'default'. */
	webhookName?: WebhookType;
	/** The execution a waiting webhook (restartWebhook) belongs to, as n8n's /webhook-waiting/<id> sets it. */
	executionId?: string;
	/** The waiting execution's saved data, as n8n's waiting webhooks hand it to WebhookContext. */
	runExecutionData?: IRunExecutionData;
}

/** The shape of n8n's error answers (response-helper sendErrorResponse). */
function errorAnswer(
	status: number,
	code: number,
	message: string,
	hint?: string,
): WebhookReceiveResult {
	return { status, body: hint ? { code, message, hint } : { code, message }, headers: {} };
}

/** The one-node workflow and its webhook, as n8n has them once the workflow is loaded. */
interface WebhookSetup {
	isTest: boolean;
	workflowId: string;
	executionId?: string;
	runExecutionData?: IRunExecutionData;
	workflow: Workflow;
	node: INode;
	nodeType: INodeType;
	webhookName: WebhookType;
	webhookDescription: IWebhookDescription;
	credentialsHelper: HarnessCredentialsHelper;
	/** Evaluates a webhook description value against the node's parameters. */
	evaluate(value: unknown, fallback?: string | number | boolean): unknown;
	/** n8n's path of the webhook (webhookId/path), from getNodeWebhooks. */
	webhookPath: string;
	httpMethods: string[];
	/** Path of the configured base (e.g. /webhook), without trailing slash. */
	basePath: string;
	/** <origin><basePath>; serveWebhook() changes the origin. */
	webhookBase: string;
	/** The webhook path answers requests (between activation and deactivation). */
	registered: boolean;
	/** Every webhook the node declares (restart webhooks aside), the driven one included: n8n serves each. */
	siblings: WebhookView[];
}

/** One of the node's webhooks: its name, description, path and methods. */
type WebhookView = Pick<
	WebhookSetup,
	'webhookName' | 'webhookDescription' | 'webhookPath' | 'httpMethods'
>;

interface Internals {
	setWebhookBase(origin: string): void;
	webhookPaths: string[];
	basePath: string;
}

const internals = new WeakMap<WebhookHarness, Internals>();

/** The node as n8n adds it to a workflow, and that workflow (active in production). */
function createWebhookWorkflow(
	options: WebhookHarnessOptions,
	nodeTypes: HarnessNodeTypes,
	workflowId: string,
) {
	const { description, typeVersion } = describeNodeType(
		nodeTypes.getByName(options.type),
		options.typeVersion,
	);
	const credentials: INode['credentials'] = {};
	for (const { name } of description.credentials ?? []) {
		if (options.credentials?.[name] !== undefined)
			credentials[name] = { id: `harness-${name}`, name: `${name} account` };
	}
	const nodeName = options.nodeName ?? description.defaults.name ?? description.displayName;
	const node: INode = {
		id: options.nodeId ?? randomUUID(),
		name: nodeName,
		type: options.type,
		typeVersion,
		position: [0, 0],
		parameters: options.parameters,
		webhookId: options.webhookId ?? randomUUID(),
		...(Object.keys(credentials).length > 0 ? { credentials } : {}),
	};
	const workflow = new Workflow({
		id: workflowId,
		name: 'Harness webhook workflow',
		nodes: [node],
		connections: {},
		active: options.isTest !== true,
		nodeTypes,
		staticData: {
			[`node:${nodeName}`]: options.staticData ?? {},
			...(options.sameWorkflowAs && { global: options.sameWorkflowAs.globalStaticData }),
		},
		settings: { executionOrder: 'v1' },
	});
	return { description, workflow, node: workflow.getNode(nodeName) as INode };
}

/**
 * As the cli's WebhookService.getNodeWebhooks: path and methods come from the description,
 * evaluated against the node's parameters.
 */
function getNodeWebhooks(
	setup: Pick<WebhookSetup, 'workflowId' | 'node' | 'webhookDescription' | 'evaluate'>,
) {
	const { workflowId, node, webhookDescription, evaluate } = setup;
	const nodeWebhookPath = String(evaluate(webhookDescription.path))
		.replace(/^\/+/, '')
		.replace(/\/+$/, '');
	const isFullPath = evaluate(webhookDescription.isFullPath, false) as boolean;
	const restartWebhook = evaluate(webhookDescription.restartWebhook, false) as boolean;
	const webhookPath = NodeHelpers.getNodeWebhookPath(
		workflowId,
		node,
		nodeWebhookPath,
		isFullPath,
		restartWebhook,
	);
	const httpMethods = String(evaluate(webhookDescription.httpMethod, 'GET'))
		.split(',')
		.map((method) => method.trim().toUpperCase())
		.filter(Boolean);
	return { webhookPath, httpMethods };
}

/** The additional data n8n passes to hook and webhook contexts (webhook base URLs, credentials). */
function additionalDataFor(
	setup: WebhookSetup,
	extra: Partial<IWorkflowExecuteAdditionalData> = {},
): IWorkflowExecuteAdditionalData {
	return {
		...createAdditionalData({
			credentialsHelper: setup.credentialsHelper,
			webhookBaseUrl: setup.isTest ? undefined : setup.webhookBase,
			webhookTestBaseUrl: setup.isTest ? setup.webhookBase : undefined,
		}),
		...(setup.executionId !== undefined ? { executionId: setup.executionId } : {}),
		...extra,
	};
}

/** The IWebhookData n8n builds for the node's webhook (WebhookService / NodeHelpers.getNodeWebhooks). */
function webhookDataFor(
	setup: WebhookSetup,
	additionalData: IWorkflowExecuteAdditionalData,
	httpMethod: string,
): IWebhookData {
	return {
		httpMethod: httpMethod as IHttpRequestMethods,
		node: setup.node.name,
		path: setup.webhookPath,
		webhookDescription: setup.webhookDescription,
		workflowId: setup.workflowId,
		workflowExecuteAdditionalData: additionalData,
		webhookId: setup.node.webhookId,
		isTest: setup.isTest,
	};
}

/** n8n-core's HookContext for the node's webhook, as the cli creates it. */
function hookContext(
	setup: WebhookSetup,
	mode: WorkflowExecuteMode,
	activation: WorkflowActivateMode,
): HookContext {
	const additionalData = additionalDataFor(setup);
	const webhookData = webhookDataFor(setup, additionalData, setup.httpMethods[0]);
	return new HookContext(setup.workflow, setup.node, additionalData, mode, activation, webhookData);
}

/** As the cli's WebhookService.runWebhookMethod: one of checkExists / create / delete. */
async function runWebhookMethod(
	setup: WebhookSetup,
	method: WebhookSetupMethodNames,
	mode: WorkflowExecuteMode,
	activation: WorkflowActivateMode,
): Promise<boolean | undefined> {
	const webhookFn = setup.nodeType.webhookMethods?.[setup.webhookName]?.[method];
	if (webhookFn === undefined) return undefined;
	return await webhookFn.call(hookContext(setup, mode, activation));
}

/** As n8n for each of the node's webhooks: only a webhook with its own webhookMethods entry runs one. */
async function runEachWebhookMethod(
	setup: WebhookSetup,
	method: WebhookSetupMethodNames,
	mode: WorkflowExecuteMode,
	activation: WorkflowActivateMode,
): Promise<boolean | undefined> {
	let answer: boolean | undefined;
	for (const view of setup.siblings) {
		const result = await runWebhookMethod({ ...setup, ...view }, method, mode, activation);
		if (view.webhookName === setup.webhookName) answer = result;
	}
	return answer;
}

/**
 * Removing the webhooks: real n8n runs delete with mode 'internal' and activation 'update', for
 * production (ActiveWorkflowManager.clearWebhooks) and test webhooks (TestWebhooks.deactivateWebhooks).
 */
async function clearWebhooks(setup: WebhookSetup): Promise<void> {
	setup.registered = false;
	await runEachWebhookMethod(setup, 'delete', 'internal', 'update');
}

/**
 * Production: ActiveWorkflowManager.addWebhooks (mode 'trigger', activation 'activate').
 * Test: TestWebhooks.needsWebhook (mode 'manual', activation 'manual').
 * checkExists, then create if it returned false.
 */
async function addWebhooks(setup: WebhookSetup): Promise<void> {
	const mode: WorkflowExecuteMode = setup.isTest ? 'manual' : 'trigger';
	const activation: WorkflowActivateMode = setup.isTest ? 'manual' : 'activate';
	// n8n registers the webhook path before creating it at the service, so a confirmation
	// request the service sends during create() is already answered.
	setup.registered = true;
	try {
		for (const view of setup.siblings) {
			const one = { ...setup, ...view };
			const exists = await runWebhookMethod(one, 'checkExists', mode, activation);
			if (!exists) await runWebhookMethod(one, 'create', mode, activation);
		}
	} catch (error) {
		// As n8n: a failed activation removes the workflow's webhooks (runs delete), then fails.
		await clearWebhooks(setup).catch(() => undefined);
		throw error;
	}
}

/**
 * As the cli's LiveWebhooks / TestWebhooks findWebhook (and WebhookRequestHandler): n8n's 404
 * for a path that is not registered or a method the webhook does not take; undefined when found.
 */
function findWebhook(
	setup: WebhookSetup,
	method: string,
	requestPath: string,
): WebhookReceiveResult | undefined {
	const { isTest, webhookPath, basePath, httpMethods } = setup;
	const expectedPath = `${basePath}/${webhookPath}`.replace(/^\/+/, '').replace(/\/+$/, '');
	if (!setup.registered || requestPath !== expectedPath) {
		const hint = isTest
			? "Click the 'Execute workflow' button on the canvas, then try again. (In test mode, the webhook only works for one call after you click this button)"
			: "The workflow must be active for a production URL to run successfully. You can activate the workflow using the toggle in the top-right of the editor. Note that unlike test URL calls, production URL calls aren't shown on the canvas (only in the executions list)";
		return errorAnswer(
			404,
			404,
			`The requested webhook "${method} ${webhookPath}" is not registered.`,
			hint,
		);
	}
	if (!httpMethods.includes(method)) {
		const methods =
			httpMethods.length === 1
				? httpMethods[0]
				: `${httpMethods.slice(0, -1).join(', ')} or ${httpMethods.at(-1)}`;
		return errorAnswer(
			404,
			404,
			`This webhook is not registered for ${method} requests. Did you mean to make a ${methods} request?`,
		);
	}
	return undefined;
}

/**
 * As the cli's WebhookHelpers.executeWebhook up to invoking the node: n8n-core's WebhookContext
 * over the request and response, then the node's webhook(). If it throws, as invokeWebhook: the
 * caller gets a generic 500, and an execution is still started (with the error) from one empty item.
 */
async function invokeWebhook(
	setup: WebhookSetup,
	method: string,
	req: ReturnType<typeof expressRequest>,
	res: RecordingResponse,
): Promise<{ result: IWebhookResponseData; error?: Error }> {
	const additionalData = additionalDataFor(setup, {
		httpRequest: req as unknown as IWorkflowExecuteAdditionalData['httpRequest'],
		httpResponse: res as unknown as IWorkflowExecuteAdditionalData['httpResponse'],
	});
	const mode: WorkflowExecuteMode = setup.isTest ? 'manual' : 'webhook';
	const webhookData = webhookDataFor(setup, additionalData, method);
	const context = new WebhookContext(
		setup.workflow,
		setup.node,
		additionalData,
		mode,
		webhookData,
		[],
		setup.runExecutionData ?? null,
	);
	const { nodeType } = setup;
	try {
		if (nodeType.webhook === undefined) throw new Error('Node does not have any webhooks defined');
		const result = isNodeClassInstance(nodeType)
			? await nodeType.webhook(context)
			: ((await nodeType.webhook.call(context)) as IWebhookResponseData);
		return { result };
	} catch (thrown) {
		const error = thrown instanceof Error ? thrown : new Error(String(thrown));
		res
			.status(500)
			.json({ code: 0, message: 'Workflow Webhook Error: Workflow could not be started!' });
		return { result: { noWebhookResponse: true, workflowData: [[{ json: {} }]] }, error };
	}
}

/**
 * The answer n8n sends when webhook() did not answer itself: evaluateResponseOptions (from the
 * webhook description, defaults 'onReceived' and 200), then handleImmediateWebhookResponse (no
 * execution) or extractWebhookOnReceivedResponse.
 */
function respondAsN8n(
	setup: WebhookSetup,
	result: IWebhookResponseData,
	res: RecordingResponse,
	error: Error | undefined,
): void {
	const { evaluate, webhookDescription } = setup;
	const answer = (data: unknown, code: number) => {
		if (res.writableEnded) return;
		res.status(code);
		if (typeof data === 'string') res.send(data);
		else res.json(data);
	};
	const responseCode = Number(evaluate(webhookDescription.responseCode, 200));
	if (result.noWebhookResponse === true && !error) return;
	if (result.workflowData === undefined) {
		answer(
			result.webhookResponse !== undefined
				? result.webhookResponse
				: { message: 'Webhook call received' },
			responseCode,
		);
		return;
	}
	if (res.writableEnded) return;
	const responseMode = String(evaluate(webhookDescription.responseMode, 'onReceived'));
	if (responseMode !== 'onReceived') {
		throw new Error(
			`The harness answers webhooks only in responseMode 'onReceived' (this one is '${responseMode}', which needs the whole workflow run)`,
		);
	}
	// n8n's default when a webhook sets none (2.x and 1.x send it as that word).
	const responseData = evaluate(webhookDescription.responseData, 'firstEntryJson');
	if (responseData === 'noData') answer(undefined, responseCode);
	else if (responseData) answer(responseData, responseCode);
	else if (result.webhookResponse !== undefined) answer(result.webhookResponse, responseCode);
	else answer({ message: 'Workflow was started' }, responseCode);
}

/** One HTTP request through n8n's webhook server: find the webhook, parse, webhook(), answer. */
async function receiveWebhookRequest(
	setup: WebhookSetup,
	input: WebhookRequestInput,
): Promise<WebhookReceiveResult> {
	const method = (input.method ?? 'POST').toUpperCase();
	const named = setup.siblings.find((view) => view.webhookName === input.webhookName) ?? setup;
	const requestPath = (input.path ?? `${setup.basePath}/${named.webhookPath}`)
		.replace(/^\/+/, '')
		.replace(/\/+$/, '');
	// n8n finds the webhook by its path: the one of the node's webhooks the request names.
	const served = setup.siblings.find(
		(view) =>
			`${setup.basePath}/${view.webhookPath}`.replace(/^\/+/, '').replace(/\/+$/, '') ===
			requestPath,
	);
	const primary = setup;
	if (served) setup = { ...setup, ...served };
	const notFound = findWebhook(setup, method, requestPath);
	if (notFound) return notFound;

	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(input.headers)) headers[name.toLowerCase()] = value;
	const sent = Buffer.isBuffer(input.rawBody) ? input.rawBody : Buffer.from(input.rawBody, 'utf-8');
	// n8n's readRawBody decompresses a gzip or deflate body before anything reads it.
	const encodingHeader = headers['content-encoding'];
	const rawBody =
		encodingHeader === 'gzip'
			? gunzipSync(sent)
			: encodingHeader === 'deflate'
				? inflateSync(sent)
				: sent;
	const { contentType, encoding } = contentTypeOf(headers);
	const parsed = parseRequestBody(contentType, encoding, rawBody);
	if (parsed.parseError)
		return errorAnswer(422, 422, 'Failed to parse request body', parsed.parseError.message);

	const req = expressRequest({
		method,
		requestPath,
		headers,
		rawBody,
		body: parsed.body,
		query: input.query ?? {},
		contentType,
		encoding,
	});
	const res = new RecordingResponse();
	const arrivedAtMs = Date.now();
	const { result, error } = await invokeWebhook(setup, method, req, res);
	respondAsN8n(setup, result, res, error);

	// Real n8n now starts an execution with workflowData as this node's output; the harness
	// returns it instead. A test webhook serves one call: once a call starts an execution,
	// TestWebhooks deactivates the workflow's test webhooks (runs delete).
	if (setup.isTest && result.workflowData !== undefined) await clearWebhooks(primary);

	const written = () => ({ status: res.statusCode, body: res.body, headers: { ...res.headers } });
	const answered =
		result.noWebhookResponse === true && !res.writableEnded
			? new Promise<ReturnType<typeof written>>((resolve) =>
					res.once('finish', () => resolve(written())),
				)
			: undefined;
	return {
		...written(),
		workflowData: result.workflowData,
		noWebhookResponse: result.noWebhookResponse,
		answeredAfterMs: res.answeredAtMs === undefined ? undefined : res.answeredAtMs - arrivedAtMs,
		...(answered ? { answered } : {}),
		...(error ? { error } : {}),
	};
}

async function startTrigger(
	setup: WebhookSetup,
	activation: WorkflowActivateMode,
): Promise<StartedTrigger> {
	const emitted: INodeExecutionData[][][] = [];
	let saved: IDataObject = {};
	const snapshot = () => {
		saved = JSON.parse(
			JSON.stringify(setup.workflow.getStaticData('node', setup.node)),
		) as IDataObject;
	};
	// n8n would start an execution here; the harness has none to run, so it has "ended" at once (donePromise).
	const emit: ITriggerFunctions['emit'] = (data, _responsePromise, donePromise) => {
		snapshot();
		emitted.push(data);
		donePromise?.resolve({} as IRun);
	};
	const mode = setup.isTest ? 'manual' : 'trigger';
	const errors: Error[] = [];
	let response: Awaited<ReturnType<NonNullable<typeof setup.nodeType.trigger>>> = {};
	const context = new TriggerContext(
		setup.workflow,
		setup.node,
		additionalDataFor(setup),
		mode,
		activation,
		emit,
		(error: Error) => {
			// As n8n: the failure is recorded and the trigger closed (it retries the activation later).
			errors.push(error);
			void response?.closeFunction?.();
		},
	);
	const trigger = setup.nodeType.trigger;
	if (!trigger) throw new Error(`Node type "${setup.node.type}" has no trigger()`);
	response = (await trigger.call(context as unknown as ITriggerFunctions)) ?? {};
	return {
		emitted,
		errors,
		close: async () => await response.closeFunction?.(),
		get saved() {
			return saved;
		},
	};
}

function heldTrigger(setup: WebhookSetup, activation: WorkflowActivateMode): HeldTrigger {
	const emitted: INodeExecutionData[][][] = [];
	const executions: HeldTrigger['executions'] = [];
	const emit: ITriggerFunctions['emit'] = (data, _responsePromise, donePromise) => {
		emitted.push(data);
		executions.push(donePromise);
	};
	const context = new TriggerContext(
		setup.workflow,
		setup.node,
		additionalDataFor(setup),
		setup.isTest ? 'manual' : 'trigger',
		activation,
		emit,
		() => undefined,
	);
	return { context: context as unknown as ITriggerFunctions, emitted, executions };
}

/** n8n-core's ExecuteContext for the node, its input the outputs webhook() returned, run as n8n would. */
async function executeNode(
	setup: WebhookSetup,
	workflowData: INodeExecutionData[][],
	mode: WorkflowExecuteMode,
): Promise<INodeExecutionData[][]> {
	const inputData = { main: workflowData };
	const context = new ExecuteContext(
		setup.workflow,
		setup.node,
		additionalDataFor(setup),
		mode,
		{ resultData: { runData: {} } } as IRunExecutionData,
		0,
		workflowData[0] ?? [],
		inputData,
		{ node: setup.node, data: inputData, source: null },
		[],
	);
	const execute = setup.nodeType.execute;
	if (!execute) throw new Error(`Node type "${setup.node.type}" has no execute()`);
	return (await execute.call(context as unknown as IExecuteFunctions)) as INodeExecutionData[][];
}

export async function webhookHarness(options: WebhookHarnessOptions): Promise<WebhookHarness> {
	await harnessEnvironment();
	const isTest = options.isTest === true;
	const workflowId =
		options.sameWorkflowAs?.workflowId ?? newWorkflowId(options.binaryDataMode ?? 'default');
	const nodeTypes = new HarnessNodeTypes(options.nodeTypes);
	const credentialsHelper = new HarnessCredentialsHelper(
		new HarnessCredentialTypes(options.credentialTypes),
		options.credentials,
	);
	const { description, workflow, node } = createWebhookWorkflow(options, nodeTypes, workflowId);
	const webhookName: WebhookType = options.webhookName ?? 'default';
	const webhookDescription: IWebhookDescription | undefined = description.webhooks?.find(
		(w) => w.name === webhookName,
	);
	if (!webhookDescription) {
		throw new Error(
			`Node type "${options.type}" has no webhook named "${webhookName}" in description.webhooks`,
		);
	}
	const evaluate = (value: unknown, fallback?: string | number | boolean) =>
		workflow.expression.getSimpleParameterValue(
			node,
			value as string,
			'internal',
			{},
			undefined,
			fallback,
		);
	const configuredBase = new URL(
		options.webhookUrl ?? `${DEFAULT_INSTANCE_BASE_URL}/${isTest ? 'webhook-test' : 'webhook'}`,
	);
	const setup: WebhookSetup = {
		isTest,
		workflowId,
		executionId: options.executionId,
		runExecutionData: options.runExecutionData,
		workflow,
		node,
		nodeType: nodeTypes.getByNameAndVersion(node.type, node.typeVersion),
		webhookName,
		webhookDescription,
		credentialsHelper,
		evaluate,
		...getNodeWebhooks({ workflowId, node, webhookDescription, evaluate }),
		basePath: configuredBase.pathname.replace(/\/+$/, ''),
		webhookBase: configuredBase.toString().replace(/\/+$/, ''),
		registered: false,
		siblings: [],
	};
	setup.siblings = (description.webhooks ?? [])
		.filter((one) => one.name === webhookName || evaluate(one.restartWebhook, false) !== true)
		.map((one) => ({
			webhookName: one.name,
			webhookDescription: one,
			...getNodeWebhooks({ workflowId, node, webhookDescription: one, evaluate }),
		}));

	const harness: WebhookHarness = {
		activate: async () => await addWebhooks(setup),
		deactivate: async () => await clearWebhooks(setup),
		receive: async (input) => await receiveWebhookRequest(setup, input),
		startTrigger: async (activation = 'activate') => await startTrigger(setup, activation),
		triggerContext: (activation = 'activate') => heldTrigger(setup, activation),
		execute: async (workflowData, mode = 'webhook') => await executeNode(setup, workflowData, mode),
		node,
		workflowId,
		get staticData() {
			return workflow.getStaticData('node', node);
		},
		get globalStaticData() {
			return workflow.getStaticData('global');
		},
		get workflowStaticData() {
			return workflow.staticData as IDataObject & { __dataChanged?: boolean };
		},
		get webhookUrl() {
			return harness.webhookUrlOf(webhookName);
		},
		webhookUrlOf(name: WebhookType) {
			// n8n-core's own computation (HookContext.getNodeWebhookUrl).
			const url = hookContext(setup, isTest ? 'manual' : 'trigger', 'activate').getNodeWebhookUrl(
				name,
			);
			if (url === undefined)
				throw new Error(`n8n gives node "${node.name}" no URL for webhook "${name}"`);
			return url;
		},
	};
	internals.set(harness, {
		setWebhookBase: (origin) => {
			setup.webhookBase = `${origin}${setup.basePath}`;
		},
		webhookPaths: setup.siblings.map((view) => view.webhookPath),
		basePath: setup.basePath,
	});
	return harness;
}

export interface ServedWebhook {
	/** Equal to harness.webhookUrl once served: the URL the node registers on activate(). */
	url: string;
	close(): Promise<void>;
}

/**
 * Keeps what each request delivered to the harness produced (as n8n would answer it and the
 * execution it would start), in order; `keep` leaves out results a test does not count.
 */
export function recordReceived(
	harness: WebhookHarness,
	keep: (result: WebhookReceiveResult) => boolean = () => true,
): WebhookReceiveResult[] {
	const results: WebhookReceiveResult[] = [];
	const receive = harness.receive.bind(harness);
	harness.receive = async (input) => {
		const result = await receive(input);
		if (keep(result)) results.push(result);
		return result;
	};
	return results;
}

/**
 * Serves the harness's webhook over real HTTP on 127.0.0.1, so another process (the sandbox)
 * can deliver to it: each request's raw bytes are collected and handed to harness.receive(),
 * and its status, headers and body are sent back. Points the harness's webhook base at this
 * server, so call it before harness.activate().
 */
export async function serveWebhook(harness: WebhookHarness, port = 0): Promise<ServedWebhook> {
	return await serveWebhooks([harness], port);
}

/**
 * Several harnesses behind one server, as one n8n serves every active workflow's webhooks on
 * one origin: each request goes to the harness whose path it names (the first one answers
 * n8n's 404 for any other path).
 */
export async function serveWebhooks(harnesses: WebhookHarness[], port = 0): Promise<ServedWebhook> {
	const owns = harnesses.map((harness) => {
		const own = internals.get(harness);
		if (!own) throw new Error('serveWebhook() takes a harness made by webhookHarness()');
		return own;
	});
	const harnessFor = (pathname: string): WebhookHarness => {
		const path = pathname.replace(/^\/+/, '').replace(/\/+$/, '');
		const index = owns.findIndex((own) =>
			own.webhookPaths.some(
				(webhookPath) =>
					`${own.basePath}/${webhookPath}`.replace(/^\/+/, '').replace(/\/+$/, '') === path,
			),
		);
		return harnesses[Math.max(index, 0)];
	};
	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			const headers: Record<string, string> = {};
			for (const [name, value] of Object.entries(request.headers)) {
				if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
			}
			const url = new URL(request.url ?? '/', 'http://127.0.0.1');
			const query: Record<string, string | string[]> = {};
			for (const key of new Set(url.searchParams.keys())) {
				const values = url.searchParams.getAll(key);
				query[key] = values.length === 1 ? values[0] : values;
			}
			harnessFor(url.pathname)
				.receive({
					headers,
					rawBody: Buffer.concat(chunks),
					method: request.method,
					path: url.pathname,
					query,
				})
				// A node that answers itself later (noWebhookResponse): the answer it writes then.
				.then(async (result) => await (result.answered ?? result))
				.then(({ status, body, headers: answerHeaders }) => {
					const payload =
						body === undefined
							? Buffer.alloc(0)
							: Buffer.isBuffer(body)
								? body
								: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
					response.writeHead(status, {
						...answerHeaders,
						'content-length': String(payload.length),
					});
					response.end(payload);
				})
				.catch((error: unknown) => {
					response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
					response.end(
						JSON.stringify({ code: 0, message: `Harness error: ${(error as Error).message}` }),
					);
				});
		});
	});
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(port, '127.0.0.1', () => resolve());
	});
	const { port: boundPort } = server.address() as AddressInfo;
	for (const own of owns) own.setWebhookBase(`http://127.0.0.1:${boundPort}`);
	return {
		url: harnesses[0].webhookUrl,
		close: async () => {
			server.closeAllConnections();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}
