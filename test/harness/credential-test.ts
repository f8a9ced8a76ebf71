// The "Test" button of a credential: what the cli's CredentialsTester.testCredentials does for
// a credential type with a declarative `test` (ICredentialTestRequest).
import 'reflect-metadata';

import { ExecuteContext, RoutingNode } from 'n8n-core';
import type {
	ICredentialDataDecryptedObject,
	ICredentialTestRequest,
	ICredentialType,
	ICredentialsDecrypted,
	IDataObject,
	IExecuteData,
	INode,
	INodeCredentialTestResult,
	INodeType,
	INodeTypeDescription,
	INodeTypes,
	IVersionedNodeType,
} from 'n8n-workflow';
import { NodeConnectionTypes, NodeHelpers, Workflow, createRunExecutionData } from 'n8n-workflow';

import { createAdditionalData } from './additional-data';
import { HarnessCredentialTypes, HarnessCredentialsHelper } from './credentials';
import { harnessEnvironment } from './environment';

/** The description of n8n-nodes-base's No Operation node, which the cli tests credentials through. */
const NO_OP_DESCRIPTION: INodeTypeDescription = {
	displayName: 'No Operation, do nothing',
	name: 'n8n-nodes-base.noOp',
	group: ['organization'],
	version: 1,
	description: 'No Operation',
	defaults: { name: 'No Operation, do nothing' },
	inputs: [NodeConnectionTypes.Main],
	outputs: [NodeConnectionTypes.Main],
	properties: [],
};

export interface CredentialTestResult {
	status: 'OK' | 'Error';
	message: string;
}

export interface TestCredentialOptions {
	/** Extra credential types (the package's credentials/*.credentials.ts are always known). */
	credentialTypes?: ICredentialType[];
}

function singleTypeRegistry(nodeType: INodeType): INodeTypes {
	const types: Record<string, INodeType | IVersionedNodeType> = {
		[nodeType.description.name]: nodeType,
	};
	return {
		getByName: (name) => types[name],
		getByNameAndVersion: (name, version) => NodeHelpers.getVersionedNodeType(types[name], version),
		getKnownTypes: (): IDataObject => ({}),
	};
}

function errorCause(
	error: unknown,
): { response?: { status: number; statusText?: string }; code?: string } | undefined {
	if (typeof error !== 'object' || error === null) return undefined;
	return (
		error as { cause?: { response?: { status: number; statusText?: string }; code?: string } }
	).cause;
}

/**
 * Tests credential data the way n8n's credential "Test" button does, over real HTTP.
 *
 * The steps, each as the cli's CredentialsTester does them:
 * 1. Fill in defaults for properties the data leaves out (applyDefaultsAndOverwrites).
 * 2. Build a temporary node of type n8n-nodes-base.noOp whose one property routes to the
 *    credential's `test.request`, and run it through n8n-core's RoutingNode with the decrypted
 *    credentials. RoutingNode resolves `={{$credentials.x}}` in the request and sends it with
 *    helpers.httpRequestWithAuthentication, which applies the credential's `authenticate`
 *    (function or generic). If authenticate throws, nothing is sent.
 * 3. A failed request with an HTTP response: the first `responseCode` rule matching the status
 *    gives the message; otherwise any non-2xx is an Error with the status text or
 *    "Received HTTP status code: N". A failure without a response (connection refused, DNS)
 *    gives the error code (e.g. ECONNREFUSED); anything else gives the error's message.
 * 4. A successful response is checked against `responseSuccessBody` rules, then
 *    { status: 'OK', message: 'Connection successful!' }.
 *
 * Not reproduced: credentials tested by a node's `testedBy` function or OAuth2 token checks
 * (this package's credential has a declarative test), and the cli's redaction of
 * `$secrets` values from messages.
 */
export async function testCredential(
	credentialTypeName: string,
	data: Record<string, unknown>,
	options: TestCredentialOptions = {},
): Promise<CredentialTestResult> {
	await harnessEnvironment();
	const credentialTypes = new HarnessCredentialTypes(options.credentialTypes);
	const credentialType = credentialTypes.getByName(credentialTypeName);
	const testRequest: ICredentialTestRequest | undefined = credentialType.test;
	if (!testRequest)
		return { status: 'Error', message: 'No testing function found for this credential.' };

	const credentialsHelper = new HarnessCredentialsHelper(credentialTypes, {
		[credentialTypeName]: data,
	});
	const credentialsDecrypted: ICredentialsDecrypted = {
		id: 'harness-credential',
		name: `${credentialType.displayName} account`,
		type: credentialTypeName,
		data: credentialsHelper.applyDefaults(
			credentialTypeName,
			structuredClone(data) as ICredentialDataDecryptedObject,
		),
	};

	const node: INode = {
		id: 'temp',
		parameters: {},
		name: 'Temp-Node',
		type: NO_OP_DESCRIPTION.name,
		typeVersion: 1,
		position: [0, 0],
		credentials: {
			[credentialTypeName]: { id: credentialsDecrypted.id, name: credentialsDecrypted.name },
		},
	};
	const nodeTypeCopy: INodeType = {
		description: {
			...NO_OP_DESCRIPTION,
			credentials: [{ name: credentialTypeName, required: true }],
			properties: [
				{
					displayName: 'Temp',
					name: 'temp',
					type: 'string',
					routing: { request: testRequest.request },
					default: '',
				},
			],
		},
	};
	const workflow = new Workflow({
		nodes: [node],
		connections: {},
		active: false,
		nodeTypes: singleTypeRegistry(nodeTypeCopy),
	});
	const additionalData = createAdditionalData({ credentialsHelper });
	const executeData: IExecuteData = { node, data: {}, source: null };
	const context = new ExecuteContext(
		workflow,
		node,
		additionalData,
		'internal',
		createRunExecutionData({ resultData: { runData: {} } }),
		0,
		[],
		{ main: [[{ json: {} }]] },
		executeData,
		[],
	);
	const routingNode = new RoutingNode(context, nodeTypeCopy, credentialsDecrypted);

	let response: Awaited<ReturnType<RoutingNode['runNode']>>;
	try {
		response = await routingNode.runNode();
	} catch (error) {
		const cause = errorCause(error);
		if (cause?.response) {
			const { status, statusText } = cause.response;
			for (const rule of testRequest.rules ?? []) {
				if (rule.type === 'responseCode' && rule.properties.value === status) {
					return { status: 'Error', message: rule.properties.message };
				}
			}
			if (status < 199 || status > 299) {
				return { status: 'Error', message: statusText || `Received HTTP status code: ${status}` };
			}
		} else if (cause?.code) {
			return { status: 'Error', message: cause.code };
		}
		return { status: 'Error', message: String((error as Error).message) };
	}

	for (const rule of testRequest.rules ?? []) {
		if (rule.type !== 'responseSuccessBody') continue;
		const json = response?.[0]?.[0]?.json;
		if (getPath(json, rule.properties.key) === rule.properties.value) {
			return { status: 'Error', message: rule.properties.message };
		}
	}
	return { status: 'OK', message: 'Connection successful!' } satisfies INodeCredentialTestResult;
}

/**
 * lodash's get, as the cli's tester reads the rule's key (`get(responseData, key)`): it walks
 * primitives too, so `constructor.name` of a text body is "String".
 */
function getPath(value: unknown, key: string): unknown {
	return key.split('.').reduce<unknown>((current, part) => {
		if (current === null || current === undefined) return undefined;
		return (current as Record<string, unknown>)[part];
	}, value);
}
