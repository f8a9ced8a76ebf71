/** The credential's rules, each returning a sentence (authenticate has no node to throw). */
import { isLoopbackHost } from './ipAddress';

export const CREDENTIAL_TYPE = 'businessMessagingApi';

export const API_KEY_PREFIX = 'sk_live_';

/** Base URL without trailing slashes, or an error message naming the field. */
export function normalizeBaseUrl(raw: unknown): { url: string } | { error: string } {
	const value = typeof raw === 'string' ? raw.trim().replace(/\/+$/, '') : '';
	if (!value)
		return { error: 'Base URL is empty: enter the service address, e.g. https://api.example.com' };
	// A key pasted into the wrong field must not be echoed into an error (and so into execution data and logs).
	if (value.includes(API_KEY_PREFIX)) {
		return {
			error: `Base URL looks like an API key (it contains "${API_KEY_PREFIX}"): put the key in API Key and the service address in Base URL, e.g. https://api.example.com`,
		};
	}
	if (!URL.canParse(value)) {
		return {
			error: `Base URL "${value}" is not a valid URL: enter it with its scheme, e.g. https://api.example.com`,
		};
	}
	const parsed = new URL(value);
	if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
		return {
			error: `Base URL must start with https:// (or http:// for a local sandbox), got "${parsed.protocol}"`,
		};
	}
	// Plain http would carry the key in clear: only a loopback address (a local sandbox) may.
	if (parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname)) {
		return {
			error: `Base URL must use https://: plain http would send the API key unencrypted to ${parsed.host} (http is accepted only for a local sandbox on 127.0.0.1, ::1 or localhost). Enter "https://${parsed.host}${parsed.pathname.replace(/\/+$/, '')}"`,
		};
	}
	// Every path carries /v1 already; refusing it here keeps the Test button and the nodes in agreement.
	if (/\/v1$/i.test(parsed.pathname.replace(/\/+$/, ''))) {
		return {
			error: `Base URL must not end in /v1: enter "${value.replace(/\/v1$/i, '')}" (each path already starts with /v1)`,
		};
	}
	return { url: value };
}

/**
 * Why a request must not carry the key (a proxy, certificate checks off), in both option styles
 * that reach authenticate: n8n's and the HTTP Request node's legacy ones. Never echoes the proxy.
 */
export function insecureTransportProblem(options: object): string | undefined {
	const o = options as {
		proxy?: unknown;
		skipSslCertificateValidation?: unknown;
		rejectUnauthorized?: unknown;
		strictSSL?: unknown;
		agentOptions?: { rejectUnauthorized?: unknown; checkServerIdentity?: unknown } | null;
	};
	const refusing = 'Refusing to send the API key';
	if (o.proxy !== undefined && o.proxy !== null && o.proxy !== false && o.proxy !== '')
		return `${refusing} through a proxy: the proxy would receive the key. Remove the Proxy option (on an HTTP Request node: Options → Proxy); the key goes only straight to the credential's Base URL. Nothing was sent.`;
	if (
		o.skipSslCertificateValidation === true ||
		o.rejectUnauthorized === false ||
		o.strictSSL === false ||
		o.agentOptions?.rejectUnauthorized === false ||
		typeof o.agentOptions?.checkServerIdentity === 'function'
	) {
		return `${refusing} with certificate checks turned off: anyone between n8n and the service could pose as it and read the key. Turn off the HTTP Request option Ignore SSL Issues (Insecure). Nothing was sent.`;
	}
	return undefined;
}

/** Why the key cannot be used. Never echoes the key. */
export function apiKeyProblem(raw: unknown): string | undefined {
	const key = typeof raw === 'string' ? raw.trim() : '';
	if (!key)
		return 'API Key is empty: paste the key shown once when it was created in the console (Keys tab)';
	if (!key.startsWith(API_KEY_PREFIX))
		return `API Key must start with "${API_KEY_PREFIX}": copy the whole key from the console's Keys tab (the value is shown only once, at creation; make a new key if it is lost)`;
	return undefined;
}
