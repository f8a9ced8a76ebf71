// Credential types and the credentials helper n8n-core calls for getCredentials() and
// httpRequestWithAuthentication().
//
// ICredentialsHelper is implemented in n8n's cli package (CredentialsHelper, backed by the
// database and the encryption key), which is not installed here. This is the minimum of it:
// credentials come decrypted from the test, and authenticate() does what the cli does.
import { Credentials } from 'n8n-core';
import type {
	ICredentialDataDecryptedObject,
	ICredentialType,
	IHttpRequestHelper,
	IHttpRequestOptions,
	INode,
	INodeCredentialsDetails,
	INodeParameters,
	INodeProperties,
	IRequestOptionsSimplified,
	IWorkflowExecuteAdditionalData,
	Workflow,
} from 'n8n-workflow';
import { ICredentialsHelper, NodeHelpers, isExpression } from 'n8n-workflow';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** Decrypted credential data by credential type name, e.g. { businessMessagingApi: { apiKey, baseUrl } }. */
export interface HarnessCredentials {
	[credentialType: string]: Record<string, unknown>;
}

const CREDENTIALS_DIR = path.resolve(__dirname, '..', '..', 'credentials');

function isCredentialType(value: unknown): value is ICredentialType {
	return (
		typeof value === 'object' &&
		value !== null &&
		typeof (value as ICredentialType).name === 'string' &&
		Array.isArray((value as ICredentialType).properties)
	);
}

let packageCredentialTypes: Map<string, ICredentialType> | undefined;

/**
 * This package's credential types, from credentials/*.credentials.ts (what the package.json
 * "n8n.credentials" list points at once built). Every exported class whose instance looks
 * like a credential type is registered under its `name`.
 */
function loadPackageCredentialTypes(): Map<string, ICredentialType> {
	if (packageCredentialTypes) return packageCredentialTypes;
	const types = new Map<string, ICredentialType>();
	const files = existsSync(CREDENTIALS_DIR)
		? readdirSync(CREDENTIALS_DIR).filter((file) => file.endsWith('.credentials.ts'))
		: [];
	for (const file of files) {
		const exports = require(path.join(CREDENTIALS_DIR, file)) as Record<string, unknown>;
		for (const exported of Object.values(exports)) {
			if (
				typeof exported !== 'function' ||
				!/^class\s/.test(Function.prototype.toString.call(exported))
			)
				continue;
			const instance: unknown = new (exported as new () => unknown)();
			if (isCredentialType(instance)) types.set(instance.name, instance);
		}
	}
	packageCredentialTypes = types;
	return types;
}

/** Credential types by name: the package's own plus any a test adds. */
export class HarnessCredentialTypes {
	private readonly extra = new Map<string, ICredentialType>();

	constructor(extra: ICredentialType[] = []) {
		for (const type of extra) this.extra.set(type.name, type);
	}

	recognizes(name: string): boolean {
		return this.extra.has(name) || loadPackageCredentialTypes().has(name);
	}

	getByName(name: string): ICredentialType {
		const type = this.extra.get(name) ?? loadPackageCredentialTypes().get(name);
		if (!type) {
			throw new Error(
				`Unknown credential type "${name}": it is neither in credentials/*.credentials.ts nor in options.credentialTypes`,
			);
		}
		return type;
	}

	getParentTypes(name: string): string[] {
		const parents = this.getByName(name).extends ?? [];
		return parents.flatMap((parent) => [
			parent,
			...(this.recognizes(parent) ? this.getParentTypes(parent) : []),
		]);
	}
}

export class HarnessCredentialsHelper extends ICredentialsHelper {
	private readonly data: HarnessCredentials;

	constructor(
		private readonly credentialTypes: HarnessCredentialTypes,
		credentials: HarnessCredentials = {},
	) {
		super();
		this.data = structuredClone(credentials);
	}

	/**
	 * As the cli's CredentialsHelper.authenticate: a function `authenticate` is called with the
	 * decrypted data and the request; a generic one has its `={{$credentials.x}}` expressions
	 * resolved (keys and values) and set on headers / qs / body / auth of the request.
	 */
	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		typeName: string,
		incomingRequestOptions: IHttpRequestOptions | IRequestOptionsSimplified,
		workflow?: Workflow,
		node?: INode,
	): Promise<IHttpRequestOptions> {
		const requestOptions = incomingRequestOptions;
		const { authenticate } = this.credentialTypes.getByName(typeName);
		if (typeof authenticate === 'function') {
			return await authenticate(credentials, requestOptions as IHttpRequestOptions);
		}
		if (typeof authenticate === 'object' && authenticate.type === 'generic') {
			if (!workflow || !node) {
				throw new Error('Workflow and node are required for declarative credential authentication');
			}
			requestOptions.headers ??= {};
			const target = requestOptions as unknown as Record<
				string,
				Record<string, unknown> | undefined
			>;
			for (const [outerKey, outerValue] of Object.entries(authenticate.properties)) {
				for (const [key, value] of Object.entries(outerValue as Record<string, unknown>)) {
					const keyResolved = this.resolveValue(key, credentials, workflow, node);
					const valueResolved = this.resolveValue(value, credentials, workflow, node);
					target[outerKey] ??= {};
					(target[outerKey] as Record<string, unknown>)[keyResolved] = valueResolved;
				}
			}
		}
		return requestOptions as IHttpRequestOptions;
	}

	/** As the cli: expressions are evaluated by the workflow's expression engine with $credentials. */
	private resolveValue(
		value: unknown,
		credentials: ICredentialDataDecryptedObject,
		workflow: Workflow,
		node: INode,
	): string {
		if (!isExpression(value)) return value as string;
		const resolved = workflow.expression.getSimpleParameterValue(
			node,
			value as string,
			'internal',
			{ $credentials: credentials },
			undefined,
			'',
		);
		return resolved ? String(resolved) : '';
	}

	/**
	 * As the cli: a credential type with a hidden `expirable` property and a `preAuthentication`
	 * function gets it called when that property is empty or the token expired. The cli then
	 * saves the result to the database; the harness keeps it for the rest of the run.
	 */
	async preAuthentication(
		helpers: IHttpRequestHelper,
		credentials: ICredentialDataDecryptedObject,
		typeName: string,
		node: INode,
		credentialsExpired: boolean,
	): Promise<ICredentialDataDecryptedObject | undefined> {
		const credentialType = this.credentialTypes.getByName(typeName);
		const expirable = credentialType.properties.find(
			(property) => property.type === 'hidden' && property.typeOptions?.expirable === true,
		);
		if (expirable === undefined || typeof credentialType.preAuthentication !== 'function')
			return undefined;
		const isCredentialTest = node?.parameters?.temp === '' && node?.type === 'n8n-nodes-base.noOp';
		if (credentials[expirable.name] !== '' && !credentialsExpired && !isCredentialTest)
			return undefined;
		const output = await credentialType.preAuthentication.call(helpers, credentials);
		if (output[expirable.name] === undefined) return undefined;
		this.data[typeName] = { ...this.data[typeName], ...output };
		return Object.assign(credentials, output);
	}

	async runPreAuthentication(
		helpers: IHttpRequestHelper,
		credentials: ICredentialDataDecryptedObject,
		typeName: string,
	): Promise<ICredentialDataDecryptedObject | undefined> {
		const { preAuthentication } = this.credentialTypes.getByName(typeName);
		if (typeof preAuthentication !== 'function') return undefined;
		const output = await preAuthentication.call(helpers, credentials);
		return (output as ICredentialDataDecryptedObject | undefined) ?? undefined;
	}

	getParentTypes(name: string): string[] {
		return this.credentialTypes.getParentTypes(name);
	}

	/** As the cli: false only for a type with restrictToSupportedNodes that does not list the node. */
	isCredentialUsableByNode(credentialType: string, nodeType: string): boolean {
		if (!this.credentialTypes.recognizes(credentialType)) return true;
		const typeDef = this.credentialTypes.getByName(credentialType);
		if (!typeDef.restrictToSupportedNodes) return true;
		const shortName = nodeType.split('.').pop() ?? nodeType;
		return (typeDef.supportedNodes ?? []).some((name) => name === nodeType || name === shortName);
	}

	/**
	 * Real n8n loads the encrypted row from the database. Nothing in a node run reads it back
	 * except token refresh paths (OAuth), which this package does not use: an empty Credentials.
	 */
	async getCredentials(
		nodeCredentials: INodeCredentialsDetails,
		type: string,
	): Promise<Credentials> {
		return new Credentials({ id: nodeCredentials.id, name: nodeCredentials.name }, type);
	}

	/**
	 * Real n8n decrypts the stored data, applies credential overwrites, fills in the defaults of
	 * properties that were never set and resolves expressions in values. The harness takes the
	 * test's data and fills in defaults, the same way (NodeHelpers.getNodeParameters). A fresh
	 * copy each call, as decrypting is.
	 */
	async getDecrypted(
		_additionalData: IWorkflowExecuteAdditionalData,
		nodeCredentials: INodeCredentialsDetails,
		type: string,
		_mode?: unknown,
		_executeData?: unknown,
		raw?: boolean,
	): Promise<ICredentialDataDecryptedObject> {
		const stored = this.data[type];
		if (stored === undefined) {
			// Real n8n: CredentialNotFoundError for an id that is not in the database.
			throw new Error(
				`Credential "${nodeCredentials.name}" of type "${type}" was not given to the harness: pass it as options.credentials.${type}`,
			);
		}
		const data = structuredClone(stored) as ICredentialDataDecryptedObject;
		if (raw === true) return data;
		return this.applyDefaults(type, data);
	}

	applyDefaults(
		type: string,
		data: ICredentialDataDecryptedObject,
	): ICredentialDataDecryptedObject {
		const withDefaults = NodeHelpers.getNodeParameters(
			this.getCredentialsProperties(type),
			data as INodeParameters,
			true,
			false,
			null,
			null,
		);
		return { ...data, ...(withDefaults as unknown as ICredentialDataDecryptedObject) };
	}

	/** Real n8n writes the re-encrypted data to the database; the harness keeps it for the run. */
	async updateCredentials(
		_nodeCredentials: INodeCredentialsDetails,
		type: string,
		data: ICredentialDataDecryptedObject,
	): Promise<void> {
		this.data[type] = structuredClone(data);
	}

	async updateCredentialsOauthTokenData(
		_nodeCredentials: INodeCredentialsDetails,
		type: string,
		data: ICredentialDataDecryptedObject,
	): Promise<void> {
		this.data[type] = { ...this.data[type], ...structuredClone(data) };
	}

	/** As the cli: the type's properties, with those of the types it extends merged in. */
	getCredentialsProperties(type: string): INodeProperties[] {
		const credentialType = this.credentialTypes.getByName(type);
		if (credentialType.extends === undefined) return credentialType.properties;
		const combined: INodeProperties[] = [];
		for (const parent of credentialType.extends) {
			NodeHelpers.mergeNodeProperties(combined, this.getCredentialsProperties(parent));
		}
		NodeHelpers.mergeNodeProperties(combined, credentialType.properties);
		return combined;
	}
}
