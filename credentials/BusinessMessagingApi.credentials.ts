import type {
	ICredentialDataDecryptedObject,
	ICredentialTestRequest,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
	Icon,
} from 'n8n-workflow';

export const API_KEY_PREFIX = 'sk_live_';

/** Base URL without trailing slashes, or an error message naming the field. */
export function normalizeBaseUrl(raw: unknown): { url: string } | { error: string } {
	const value = typeof raw === 'string' ? raw.trim().replace(/\/+$/, '') : '';
	if (!value) return { error: 'Base URL is empty: enter the service address, e.g. https://api.example.com' };
	// A key pasted into the wrong field must not be echoed into an error (and so into execution data and logs).
	if (value.includes(API_KEY_PREFIX)) {
		return {
			error: `Base URL looks like an API key (it contains "${API_KEY_PREFIX}"): put the key in API Key and the service address in Base URL, e.g. https://api.example.com`,
		};
	}
	let parsed: URL;
	try {
		parsed = new URL(value);
	} catch {
		return { error: `Base URL "${value}" is not a valid URL: enter it with its scheme, e.g. https://api.example.com` };
	}
	if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
		return { error: `Base URL must start with https:// (or http:// for a local sandbox), got "${parsed.protocol}"` };
	}
	// Every path carries /v1 already; refusing it here keeps the Test button and the nodes in agreement.
	if (/\/v1$/i.test(parsed.pathname.replace(/\/+$/, ''))) {
		return { error: `Base URL must not end in /v1: enter "${value.replace(/\/v1$/i, '')}" (each path already starts with /v1)` };
	}
	return { url: value };
}

/** Why the key cannot be used, or undefined when it has the service's shape. Never echoes the key. */
export function apiKeyProblem(raw: unknown): string | undefined {
	const key = typeof raw === 'string' ? raw.trim() : '';
	if (!key) return 'API Key is empty: paste the key shown once when it was created in the console (Keys tab)';
	if (!key.startsWith(API_KEY_PREFIX)) {
		return `API Key must start with "${API_KEY_PREFIX}": copy the whole key from the console's Keys tab (the value is shown only once, at creation; make a new key if it is lost)`;
	}
	return undefined;
}

function requestOrigin(options: IHttpRequestOptions & { uri?: string }): string | undefined {
	const target = options.url ?? options.uri;
	try {
		return new URL(target ?? '', options.baseURL || undefined).origin;
	} catch {
		return undefined;
	}
}

export class BusinessMessagingApi implements ICredentialType {
	name = 'businessMessagingApi';

	displayName = 'Business Messaging API';

	icon: Icon = { light: 'file:../icons/businessMessaging.svg', dark: 'file:../icons/businessMessaging.dark.svg' };

	documentationUrl = 'https://github.com/n8n-nodes-business-messaging/n8n-nodes-business-messaging#credentials';

	properties: INodeProperties[] = [
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			placeholder: 'sk_live_...',
			description:
				'Key from the Keys tab of the console. It starts with sk_live_ and is shown only once, at creation.',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			required: true,
			placeholder: 'e.g. https://api.example.com',
			description: 'Address of the service, without /v1. For the local sandbox: http://127.0.0.1:4010.',
		},
		{
			displayName: 'Webhook Signing Secret',
			name: 'webhookSecret',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description:
				'Only for a webhook registered in the console rather than by the trigger node: the signing secret shown once at registration. The trigger node in Automatic mode keeps its own secret.',
		},
	];

	// A function rather than a generic header so that a malformed key or a request to
	// another host fails here, before anything leaves n8n. It still only sets
	// "Authorization: Bearer <key>", so the credential works in the HTTP Request node too.
	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		requestOptions: IHttpRequestOptions,
	): Promise<IHttpRequestOptions> {
		const problem = apiKeyProblem(credentials.apiKey);
		if (problem) throw new Error(problem);
		const base = normalizeBaseUrl(credentials.baseUrl);
		if ('error' in base) throw new Error(base.error);
		const origin = requestOrigin(requestOptions);
		if (origin !== new URL(base.url).origin) {
			throw new Error(
				`Refusing to send the API key to ${origin ?? 'an unknown address'}: the credential's Base URL is ${new URL(base.url).origin}`,
			);
		}
		return {
			...requestOptions,
			headers: {
				...requestOptions.headers,
				Authorization: `Bearer ${String(credentials.apiKey).trim()}`,
			},
		};
	}

	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.baseUrl}}',
			url: '/v1/ping',
			method: 'GET',
		},
		rules: [
			{
				type: 'responseCode',
				properties: {
					value: 401,
					message:
						'The API key is revoked or unknown (401). Make a new key in the console\'s Keys tab and paste it here.',
				},
			},
			{
				type: 'responseCode',
				properties: {
					value: 403,
					message:
						'The API key lacks the balance:read scope, which the connection test (GET /v1/ping) needs (403). Make a key with balance:read in the console\'s Keys tab.',
				},
			},
		],
	};
}
