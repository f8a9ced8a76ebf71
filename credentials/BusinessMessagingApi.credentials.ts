import type {
	IAuthenticateRuleResponseCode,
	IAuthenticateRuleResponseSuccessBody,
	ICredentialDataDecryptedObject,
	ICredentialTestRequest,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
	Icon,
} from 'n8n-workflow';

import {
	apiKeyProblem,
	insecureTransportProblem,
	normalizeBaseUrl,
} from '../nodes/shared/credentialRules';

/**
 * No redirect with the key: n8n 1.x and the HTTP Request node below 4.4 put it on the next hop (the
 * redirect library keeps it for a subdomain). In both option styles, n8n's and the legacy ones.
 */
const NO_REDIRECTS_WITH_THE_KEY = {
	disableFollowRedirect: true,
	followRedirect: false,
	followAllRedirects: false,
	maxRedirects: 0,
	sendCredentialsOnCrossOriginRedirect: false,
} as const;

function requestOrigin(options: IHttpRequestOptions & { uri?: string }): string | undefined {
	const target = options.url ?? options.uri ?? '';
	const base = options.baseURL || undefined;
	return URL.canParse(target, base) ? new URL(target, base).origin : undefined;
}

export class BusinessMessagingApi implements ICredentialType {
	name = 'businessMessagingApi';

	displayName = 'Business Messaging API';

	icon: Icon = {
		light: 'file:../icons/businessMessaging.svg',
		dark: 'file:../icons/businessMessaging.dark.svg',
	};

	documentationUrl =
		'https://github.com/n8n-nodes-business-messaging/n8n-nodes-business-messaging#credentials';

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
			description:
				'Address of the service, without /v1. For the local sandbox: http://127.0.0.1:4010.',
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

	// A function, so a bad key, another origin, a proxy or no certificate checks fail before sending;
	// an arrow: n8n spreads credential types to list them (/types/credentials.json), losing methods.
	authenticate = async (
		credentials: ICredentialDataDecryptedObject,
		requestOptions: IHttpRequestOptions,
	): Promise<IHttpRequestOptions> => {
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
		const transport = insecureTransportProblem(requestOptions);
		if (transport) throw new Error(transport);
		return {
			...requestOptions,
			headers: {
				...requestOptions.headers,
				Authorization: `Bearer ${String(credentials.apiKey).trim()}`,
			},
			...NO_REDIRECTS_WITH_THE_KEY,
		};
	};

	test: ICredentialTestRequest = {
		request: { baseURL: '={{$credentials.baseUrl}}', url: '/v1/ping', method: 'GET' },
		// n8n types rules as an array of one kind, but both lines' testers check each rule's type.
		rules: [
			{
				type: 'responseCode',
				properties: {
					value: 401,
					message:
						"The API key is revoked or unknown (401). Make a new key in the console's Keys tab and paste it here.",
				},
			},
			{
				type: 'responseCode',
				properties: {
					value: 403,
					message:
						"The API key lacks the balance:read scope, which the connection test (GET /v1/ping) needs (403). Make a key with balance:read in the console's Keys tab.",
				},
			},
			{
				// A web page answers /v1/ping too; n8n parses the service's JSON: a String body is not it.
				type: 'responseSuccessBody',
				properties: {
					key: 'constructor.name',
					value: 'String',
					message:
						"The Base URL answered, but not as the service: its answer to GET /v1/ping is not JSON. Check the Base URL: the service's address without /v1, e.g. https://api.example.com.",
				},
			},
		] as Array<
			IAuthenticateRuleResponseCode | IAuthenticateRuleResponseSuccessBody
		> as IAuthenticateRuleResponseCode[],
	};
}
