/**
 * The sandbox holds the webhook secret and changes state on request, so a web page the developer
 * happens to open must not drive it: a Host that is not this machine (DNS rebinding) is refused
 * everywhere, and a state-changing request from another origin (a cross-site form or text/plain
 * POST, which browsers send without asking) is refused. Callers without a browser (n8n, curl,
 * the tests) send no Origin and are not affected.
 */
import type { IncomingMessage } from 'node:http';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function hostName(host: string): string {
	return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
}

/** Whether a Host header (or an origin's host) names this machine: a loopback name or address. */
export function isLoopbackHost(
	host: string | undefined,
	extraHosts: readonly string[] = [],
): boolean {
	if (!host) return false;
	const name = hostName(host.trim().toLowerCase());
	return LOOPBACK_NAMES.has(name) || /^127(\.\d{1,3}){3}$/.test(name) || extraHosts.includes(name);
}

/**
 * Why the request is refused, or undefined. `port`: the port this server listens on (the chat
 * page's own origin is a loopback name with it); `extraHosts`: the address it was told to listen
 * on, when that is not a wildcard.
 */
export function refusedRequest(
	req: IncomingMessage,
	port: number,
	extraHosts: readonly string[] = [],
): string | undefined {
	if (!isLoopbackHost(req.headers.host, extraHosts))
		return `the Host header ${JSON.stringify(req.headers.host ?? '')} is not this machine (the sandbox answers loopback names only)`;
	if (SAFE_METHODS.has(req.method ?? 'GET')) return undefined;
	const origin = req.headers.origin;
	const site = req.headers['sec-fetch-site'];
	if (origin === undefined)
		return site === 'cross-site' || site === 'same-site'
			? 'a state-changing request from another site'
			: undefined;
	if (!URL.canParse(origin)) return `a state-changing request from the origin ${origin}`;
	const from = new URL(origin);
	const samePort = (from.port || (from.protocol === 'https:' ? '443' : '80')) === String(port);
	if (from.protocol === 'http:' && samePort && isLoopbackHost(from.host, extraHosts))
		return undefined;
	return `a state-changing request from the origin ${origin} (only the sandbox's own page may make one)`;
}
