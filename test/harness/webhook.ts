// Webhook triggers, as n8n drives them: activation runs the node's webhookMethods through
// n8n-core's HookContext, an incoming request runs webhook() through n8n-core's WebhookContext,
// and the HTTP answer follows the cli's webhook-helpers.
import 'reflect-metadata';

import { HookContext, WebhookContext } from 'n8n-core';
import type {
	ICredentialType,
	IDataObject,
	IHttpRequestMethods,
	INode,
	INodeExecutionData,
	INodeParameters,
	INodeType,
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
import { NodeHelpers, Workflow, isNodeClassInstance, jsonParse } from 'n8n-workflow';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseQueryString } from 'node:querystring';

import { DEFAULT_INSTANCE_BASE_URL, createAdditionalData } from './additional-data';
import type { HarnessCredentials } from './credentials';
import { HarnessCredentialTypes, HarnessCredentialsHelper } from './credentials';
import type { HarnessBinaryDataMode } from './environment';
import { harnessEnvironment, newWorkflowId } from './environment';
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
}

export interface WebhookHarness {
	/** As n8n on activation (or on "Listen for test event"): checkExists, then create if it returned false. */
	activate(): Promise<void>;
	/** As n8n on deactivation (or when a test webhook is done): delete. */
	deactivate(): Promise<void>;
	/** The node's static data (getWorkflowStaticData('node')), one object for the harness's whole life. */
	readonly staticData: IDataObject;
	/** Delivers one HTTP request to webhook() as n8n's webhook server would, and answers as n8n would. */
	receive(req: WebhookRequestInput): Promise<WebhookReceiveResult>;
	/** The URL n8n gives this node (this.getNodeWebhookUrl('default')): <base>/<webhookId>/<path>. */
	readonly webhookUrl: string;
	/** The node as it sits in the one-node workflow (name, webhookId, credentials reference). */
	readonly node: INode;
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
	/** Which of the node's webhooks (description.webhooks[].name) to drive; default 'default'. */
	webhookName?: WebhookType;
}

/**
 * Stand-in for express's Response, which real n8n passes as getResponseObject(). Records what
 * the node (or the harness, answering as n8n) writes. Covers the calls nodes make: status, set /
 * header / setHeader, json, send, end, writeHead, write.
 */
class RecordingResponse extends EventEmitter {
	statusCode = 200;

	headersSent = false;

	writableEnded = false;

	readonly headers: Record<string, string> = {};

	body: unknown = undefined;

	private chunks: Buffer[] = [];

	status(code: number) {
		this.statusCode = code;
		return this;
	}

	setHeader(name: string, value: string | number | readonly string[]) {
		this.headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
		return this;
	}

	set(field: string | Record<string, string>, value?: string) {
		if (typeof field === 'string') this.setHeader(field, value ?? '');
		else for (const [name, headerValue] of Object.entries(field)) this.setHeader(name, headerValue);
		return this;
	}

	header(field: string | Record<string, string>, value?: string) {
		return this.set(field, value);
	}

	getHeader(name: string) {
		return this.headers[name.toLowerCase()];
	}

	type(contentType: string) {
		return this.setHeader('content-type', contentType.includes('/') ? contentType : `application/${contentType}`);
	}

	json(body: unknown) {
		this.headers['content-type'] ??= 'application/json; charset=utf-8';
		this.body = body;
		return this.finish();
	}

	send(body?: unknown) {
		if (typeof body === 'object' && body !== null && !Buffer.isBuffer(body)) return this.json(body);
		if (typeof body === 'string') this.headers['content-type'] ??= 'text/html; charset=utf-8';
		if (Buffer.isBuffer(body)) this.headers['content-type'] ??= 'application/octet-stream';
		this.body = body;
		return this.finish();
	}

	writeHead(code: number, headers?: Record<string, string>) {
		this.statusCode = code;
		if (headers) this.set(headers);
		this.headersSent = true;
		return this;
	}

	write(chunk: string | Buffer) {
		this.headersSent = true;
		this.chunks.push(Buffer.from(chunk));
		return true;
	}

	end(chunk?: string | Buffer) {
		if (chunk !== undefined) this.write(chunk);
		if (this.body === undefined && this.chunks.length > 0) this.body = Buffer.concat(this.chunks);
		return this.finish();
	}

	private finish() {
		this.headersSent = true;
		this.writableEnded = true;
		this.emit('finish');
		this.emit('close');
		return this;
	}
}

/** The shape of n8n's error answers (response-helper sendErrorResponse). */
function errorAnswer(status: number, code: number, message: string, hint?: string) {
	return { status, body: hint ? { code, message, hint } : { code, message } };
}

interface Internals {
	setWebhookBase(origin: string): void;
	webhookPath: string;
	basePath: string;
}

const internals = new WeakMap<WebhookHarness, Internals>();

/** Content type without parameters, and charset, as n8n's parseIncomingMessage reads them. */
function contentTypeOf(headers: Record<string, string>): { contentType?: string; encoding: BufferEncoding } {
	const header = headers['content-type'];
	if (!header) return { encoding: 'utf-8' };
	const [type, ...params] = header.split(';');
	const charset = params.map((p) => p.trim().split('=')).find(([key]) => key.toLowerCase() === 'charset')?.[1];
	const encoding = charset && Buffer.isEncoding(charset.toLowerCase()) ? (charset.toLowerCase() as BufferEncoding) : 'utf-8';
	return { contentType: type.trim().toLowerCase(), encoding };
}

export async function webhookHarness(options: WebhookHarnessOptions): Promise<WebhookHarness> {
	await harnessEnvironment();
	const isTest = options.isTest === true;
	const workflowId = newWorkflowId(options.binaryDataMode ?? 'default');
	const nodeTypes = new HarnessNodeTypes(options.nodeTypes);
	const credentialsHelper = new HarnessCredentialsHelper(new HarnessCredentialTypes(options.credentialTypes), options.credentials);
	const { description, typeVersion } = describeNodeType(nodeTypes.getByName(options.type), options.typeVersion);
	const webhookName: WebhookType = options.webhookName ?? 'default';
	const webhookDescription: IWebhookDescription | undefined = description.webhooks?.find((w) => w.name === webhookName);
	if (!webhookDescription) {
		throw new Error(`Node type "${options.type}" has no webhook named "${webhookName}" in description.webhooks`);
	}

	const credentials: INode['credentials'] = {};
	for (const { name } of description.credentials ?? []) {
		if (options.credentials?.[name] !== undefined) credentials[name] = { id: `harness-${name}`, name: `${name} account` };
	}
	const nodeName = description.defaults.name ?? description.displayName;
	const node: INode = {
		id: randomUUID(),
		name: nodeName,
		type: options.type,
		typeVersion,
		position: [0, 0],
		parameters: options.parameters,
		webhookId: options.webhookId ?? randomUUID(),
		...(Object.keys(credentials).length > 0 ? { credentials } : {}),
	};
	const staticDataKey = `node:${nodeName}`;
	const workflow = new Workflow({
		id: workflowId,
		name: 'Harness webhook workflow',
		nodes: [node],
		connections: {},
		active: !isTest,
		nodeTypes,
		staticData: { [staticDataKey]: options.staticData ?? {} },
		settings: { executionOrder: 'v1' },
	});
	const workflowNode = workflow.getNode(nodeName) as INode;
	const nodeType = nodeTypes.getByNameAndVersion(node.type, node.typeVersion);

	const configuredBase = new URL(options.webhookUrl ?? `${DEFAULT_INSTANCE_BASE_URL}/${isTest ? 'webhook-test' : 'webhook'}`);
	let webhookBase = configuredBase.toString().replace(/\/+$/, '');
	const basePath = configuredBase.pathname.replace(/\/+$/, '');

	const additionalDataFor = (extra: Partial<IWorkflowExecuteAdditionalData> = {}): IWorkflowExecuteAdditionalData => ({
		...createAdditionalData({
			credentialsHelper,
			webhookBaseUrl: isTest ? undefined : webhookBase,
			webhookTestBaseUrl: isTest ? webhookBase : undefined,
		}),
		...extra,
	});

	// As the cli's WebhookService.getNodeWebhooks: path and method come from the description,
	// evaluated against the node's parameters.
	const evaluate = (value: unknown, fallback?: string | number | boolean) =>
		workflow.expression.getSimpleParameterValue(workflowNode, value as string, 'internal', {}, undefined, fallback);
	const nodeWebhookPath = String(evaluate(webhookDescription.path)).replace(/^\/+/, '').replace(/\/+$/, '');
	const isFullPath = evaluate(webhookDescription.isFullPath, false) as boolean;
	const restartWebhook = evaluate(webhookDescription.restartWebhook, false) as boolean;
	const webhookPath = NodeHelpers.getNodeWebhookPath(workflowId, workflowNode, nodeWebhookPath, isFullPath, restartWebhook);
	const httpMethods = String(evaluate(webhookDescription.httpMethod, 'GET'))
		.split(',')
		.map((method) => method.trim().toUpperCase())
		.filter(Boolean);

	const webhookDataFor = (additionalData: IWorkflowExecuteAdditionalData, httpMethod: string): IWebhookData => ({
		httpMethod: httpMethod as IHttpRequestMethods,
		node: nodeName,
		path: webhookPath,
		webhookDescription,
		workflowId,
		workflowExecuteAdditionalData: additionalData,
		webhookId: node.webhookId,
		isTest,
	});

	let registered = false;

	// As the cli's WebhookService.runWebhookMethod.
	const runWebhookMethod = async (
		method: WebhookSetupMethodNames,
		mode: WorkflowExecuteMode,
		activation: WorkflowActivateMode,
	): Promise<boolean | undefined> => {
		const webhookFn = nodeType.webhookMethods?.[webhookName]?.[method];
		if (webhookFn === undefined) return undefined;
		const additionalData = additionalDataFor();
		const context = new HookContext(workflow, workflowNode, additionalData, mode, activation, webhookDataFor(additionalData, httpMethods[0]));
		return await webhookFn.call(context);
	};

	const deactivate = async () => {
		// Real n8n deactivates with mode 'internal' and activation 'update', for production
		// (ActiveWorkflowManager.clearWebhooks) and test webhooks (TestWebhooks.deactivateWebhooks).
		registered = false;
		await runWebhookMethod('delete', 'internal', 'update');
	};

	const activate = async () => {
		// Production: ActiveWorkflowManager.addWebhooks (mode 'trigger', activation 'activate').
		// Test: TestWebhooks.needsWebhook (mode 'manual', activation 'manual').
		const mode: WorkflowExecuteMode = isTest ? 'manual' : 'trigger';
		const activation: WorkflowActivateMode = isTest ? 'manual' : 'activate';
		// n8n registers the webhook path before creating it at the service, so a confirmation
		// request the service sends during create() is already answered.
		registered = true;
		try {
			const exists = await runWebhookMethod('checkExists', mode, activation);
			if (!exists) await runWebhookMethod('create', mode, activation);
		} catch (error) {
			// As n8n: a failed activation removes the workflow's webhooks (runs delete), then fails.
			await deactivate().catch(() => undefined);
			throw error;
		}
	};

	const receive = async (input: WebhookRequestInput): Promise<WebhookReceiveResult> => {
		const method = (input.method ?? 'POST').toUpperCase();
		const requestPath = (input.path ?? `${basePath}/${webhookPath}`).replace(/^\/+/, '').replace(/\/+$/, '');
		const expectedPath = `${basePath}/${webhookPath}`.replace(/^\/+/, '');
		if (!registered || requestPath !== expectedPath) {
			const hint = isTest
				? "Click the 'Execute workflow' button on the canvas, then try again. (In test mode, the webhook only works for one call after you click this button)"
				: "The workflow must be active for a production URL to run successfully. You can activate the workflow using the toggle in the top-right of the editor. Note that unlike test URL calls, production URL calls aren't shown on the canvas (only in the executions list)";
			return { ...errorAnswer(404, 404, `The requested webhook "${method} ${webhookPath}" is not registered.`, hint), headers: {} };
		}
		if (!httpMethods.includes(method)) {
			const methods = httpMethods.length === 1 ? httpMethods[0] : `${httpMethods.slice(0, -1).join(', ')} or ${httpMethods.at(-1)}`;
			return {
				...errorAnswer(404, 404, `This webhook is not registered for ${method} requests. Did you mean to make a ${methods} request?`),
				headers: {},
			};
		}

		const headers: Record<string, string> = {};
		for (const [name, value] of Object.entries(input.headers)) headers[name.toLowerCase()] = value;
		const rawBody = Buffer.isBuffer(input.rawBody) ? input.rawBody : Buffer.from(input.rawBody, 'utf-8');
		const { contentType, encoding } = contentTypeOf(headers);

		// As the cli's parseBody: only these content types are parsed; the raw bytes stay on
		// req.rawBody. (Real n8n reads rawBody only when it parses, or when the node calls
		// req.readRawBody(); the harness always provides it.)
		let body: unknown = {};
		if (contentType?.startsWith('multipart/')) {
			throw new Error('The harness does not parse multipart/form-data webhook requests');
		}
		if (rawBody.length > 0) {
			try {
				if (contentType === 'application/json') body = jsonParse(rawBody.toString(encoding));
				else if (contentType === 'application/x-www-form-urlencoded') {
					body = parseQueryString(rawBody.toString(encoding), undefined, undefined, { maxKeys: 1000 });
				} else if (contentType === 'text/plain') body = rawBody.toString(encoding);
				else if (contentType?.endsWith('/xml') || contentType?.endsWith('+xml')) {
					// Real n8n parses XML with xml2js into an object; the harness leaves the text.
					body = rawBody.toString(encoding);
				}
			} catch (error) {
				return { ...errorAnswer(422, 422, 'Failed to parse request body', (error as Error).message), headers: {} };
			}
		}

		const query = input.query ?? {};
		const url = `/${requestPath}${Object.keys(query).length ? `?${new URLSearchParams(query as Record<string, string>).toString()}` : ''}`;
		const req = {
			method,
			url,
			originalUrl: url,
			path: `/${requestPath}`,
			headers,
			body,
			rawBody,
			query,
			params: {},
			contentType,
			encoding,
			readRawBody: async () => {},
			get: (name: string) => headers[name.toLowerCase()],
			header: (name: string) => headers[name.toLowerCase()],
		};
		const res = new RecordingResponse();
		const additionalData = additionalDataFor({
			httpRequest: req as unknown as IWorkflowExecuteAdditionalData['httpRequest'],
			httpResponse: res as unknown as IWorkflowExecuteAdditionalData['httpResponse'],
		});
		const mode: WorkflowExecuteMode = isTest ? 'manual' : 'webhook';
		const webhookData = webhookDataFor(additionalData, method);
		const context = new WebhookContext(workflow, workflowNode, additionalData, mode, webhookData, [], null);

		let result: IWebhookResponseData;
		let error: Error | undefined;
		try {
			if (nodeType.webhook === undefined) throw new Error('Node does not have any webhooks defined');
			result = isNodeClassInstance(nodeType)
				? await nodeType.webhook(context)
				: ((await nodeType.webhook.call(context)) as IWebhookResponseData);
		} catch (thrown) {
			// As the cli's invokeWebhook: the caller gets a generic 500, and an execution is still
			// started (with the error) from one empty item.
			error = thrown instanceof Error ? thrown : new Error(String(thrown));
			result = { noWebhookResponse: true, workflowData: [[{ json: {} }]] };
			res.status(500).json({ code: 0, message: 'Workflow Webhook Error: Workflow could not be started!' });
		}

		const answer = (data: unknown, code: number) => {
			if (res.writableEnded) return;
			res.status(code);
			if (typeof data === 'string') res.send(data);
			else res.json(data);
		};
		// As the cli's evaluateResponseOptions: from the webhook description, defaults 'onReceived' and 200.
		const responseCode = Number(evaluate(webhookDescription.responseCode, 200));
		if (result.noWebhookResponse !== true || error) {
			if (result.workflowData === undefined) {
				// As handleImmediateWebhookResponse: no execution, answer now.
				answer(result.webhookResponse !== undefined ? result.webhookResponse : { message: 'Webhook call received' }, responseCode);
			} else if (!res.writableEnded) {
				const responseMode = String(evaluate(webhookDescription.responseMode, 'onReceived'));
				if (responseMode !== 'onReceived') {
					throw new Error(
						`The harness answers webhooks only in responseMode 'onReceived' (this one is '${responseMode}', which needs the whole workflow run)`,
					);
				}
				// As extractWebhookOnReceivedResponse.
				const responseData = evaluate(webhookDescription.responseData);
				if (responseData === 'noData') answer(undefined, responseCode);
				else if (responseData) answer(responseData, responseCode);
				else if (result.webhookResponse !== undefined) answer(result.webhookResponse, responseCode);
				else answer({ message: 'Workflow was started' }, responseCode);
			}
		}

		// Real n8n now starts an execution with workflowData as this node's output; the harness
		// returns it instead. A test webhook serves one call: once a call starts an execution,
		// TestWebhooks deactivates the workflow's test webhooks (runs delete).
		if (isTest && result.workflowData !== undefined) await deactivate();

		return {
			status: res.statusCode,
			body: res.body,
			headers: { ...res.headers },
			workflowData: result.workflowData,
			noWebhookResponse: result.noWebhookResponse,
			...(error ? { error } : {}),
		};
	};

	const harness: WebhookHarness = {
		activate,
		deactivate,
		receive,
		node: workflowNode,
		get staticData() {
			return workflow.getStaticData('node', workflowNode);
		},
		get webhookUrl() {
			// n8n-core's own computation (HookContext.getNodeWebhookUrl).
			const additionalData = additionalDataFor();
			const context = new HookContext(workflow, workflowNode, additionalData, isTest ? 'manual' : 'trigger', 'activate', webhookDataFor(additionalData, httpMethods[0]));
			const url = context.getNodeWebhookUrl(webhookName);
			if (url === undefined) throw new Error(`n8n gives node "${nodeName}" no URL for webhook "${webhookName}"`);
			return url;
		},
	};
	internals.set(harness, {
		setWebhookBase: (origin) => {
			webhookBase = `${origin}${basePath}`;
		},
		webhookPath,
		basePath,
	});
	return harness;
}

export interface ServedWebhook {
	/** Equal to harness.webhookUrl once served: the URL the node registers on activate(). */
	url: string;
	close(): Promise<void>;
}

/**
 * Serves the harness's webhook over real HTTP on 127.0.0.1, so another process (the sandbox)
 * can deliver to it: each request's raw bytes are collected and handed to harness.receive(),
 * and its status, headers and body are sent back. Points the harness's webhook base at this
 * server, so call it before harness.activate().
 */
export async function serveWebhook(harness: WebhookHarness, port = 0): Promise<ServedWebhook> {
	const own = internals.get(harness);
	if (!own) throw new Error('serveWebhook() takes a harness made by webhookHarness()');
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
			harness
				.receive({ headers, rawBody: Buffer.concat(chunks), method: request.method, path: url.pathname, query })
				.then(({ status, body, headers: answerHeaders }) => {
					const payload =
						body === undefined
							? Buffer.alloc(0)
							: Buffer.isBuffer(body)
								? body
								: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
					response.writeHead(status, { ...answerHeaders, 'content-length': String(payload.length) });
					response.end(payload);
				})
				.catch((error: unknown) => {
					response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
					response.end(JSON.stringify({ code: 0, message: `Harness error: ${(error as Error).message}` }));
				});
		});
	});
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(port, '127.0.0.1', () => resolve());
	});
	const { port: boundPort } = server.address() as AddressInfo;
	own.setWebhookBase(`http://127.0.0.1:${boundPort}`);
	return {
		url: harness.webhookUrl,
		close: async () => {
			server.closeAllConnections();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}
