import type {
	ICredentialDataDecryptedObject,
	ICredentialTestRequest,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
	Icon,
} from 'n8n-workflow';

import { apiKeyProblem, normalizeBaseUrl } from '../nodes/shared/validate';

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
