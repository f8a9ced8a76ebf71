/**
 * The chat page: static files from ui/ served at the root, the state it shows (pageView: no key values, no
 * signing secret) and its live feed (GET /_sandbox/events, server-sent events).
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { SandboxContext } from './context';
import { errorBody, sendJson } from './http';
import type { DeliveryRecord, KeyView, SandboxState } from './types';

const UI_DIR = join(__dirname, 'ui');
/** The only files served: no path from the request reaches the file system. */
const UI_FILES: Record<string, { file: string; type: string }> = {
	'/': { file: 'index.html', type: 'text/html; charset=utf-8' },
	'/ui/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
	'/ui/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};
/** Changes within this many ms are sent as one state. */
export const EVENTS_COALESCE_MS = 100;
const HEARTBEAT_MS = 15_000;

/** The page, when the request is for one of its files (GET / only when a browser asks for HTML). */
export function isPageRequest(req: IncomingMessage, pathname: string): boolean {
	if (!(pathname in UI_FILES)) return false;
	if (pathname !== '/') return true;
	return /\btext\/html\b/.test(String(req.headers.accept ?? ''));
}

export async function servePage(
	req: IncomingMessage,
	res: ServerResponse,
	pathname: string,
): Promise<void> {
	req.resume();
	if (req.method !== 'GET' && req.method !== 'HEAD') {
		sendJson(
			res,
			405,
			errorBody(
				'method_not_allowed',
				`${req.method} is not allowed on ${pathname} (allowed: GET, HEAD)`,
			),
			{ Allow: 'GET, HEAD' },
		);
		return;
	}
	const { file, type } = UI_FILES[pathname];
	const content = await readFile(join(UI_DIR, file));
	res.writeHead(200, {
		'Content-Type': type,
		'Content-Length': String(content.length),
		'Cache-Control': 'no-store',
		// Only the page's own files and its own API; no inline script.
		'Content-Security-Policy':
			"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		'X-Content-Type-Options': 'nosniff',
	});
	res.end(req.method === 'HEAD' ? undefined : content);
}

export interface PageKey extends KeyView {
	/** `sk_live_…1a2b`: never the value. */
	masked: string;
}

export type PageDelivery = Omit<DeliveryRecord, 'signature'>;

export interface PageState extends Omit<
	SandboxState,
	'keys' | 'webhook' | 'deliveries' | 'requests' | 'media_requests' | 'logs' | 'issued_secrets'
> {
	keys: PageKey[];
	webhook: { url: string | null; configured: boolean; secret_masked: string | null };
	deliveries: PageDelivery[];
}

/**
 * What the page shows. The control API's state carries the webhook secret (for tests); the page never
 * receives it, nor any key value (the state has none): both are shown as prefix + last 4 characters.
 */
export function pageView(state: SandboxState): PageState {
	const {
		keys,
		webhook,
		deliveries,
		requests: _requests,
		media_requests: _mediaRequests,
		logs: _logs,
		issued_secrets: _issuedSecrets,
		...rest
	} = state;
	return {
		...rest,
		keys: keys.map((key) => ({ ...key, masked: `${key.prefix}…${key.last4}` })),
		webhook: {
			url: webhook.url,
			configured: webhook.configured,
			secret_masked: webhook.secret
				? `${webhook.secret.slice(0, 6)}…${webhook.secret.slice(-4)}`
				: null,
		},
		deliveries: deliveries.map(({ signature: _signature, ...delivery }) => delivery),
	};
}

/** GET /_sandbox/events: `event: state` with pageView at once, then after every change (coalesced). */
export function streamEvents(ctx: SandboxContext, req: IncomingMessage, res: ServerResponse): void {
	req.resume();
	res.writeHead(200, {
		'Content-Type': 'text/event-stream; charset=utf-8',
		'Cache-Control': 'no-store',
		Connection: 'keep-alive',
	});
	let pending: NodeJS.Timeout | undefined;
	const send = (): void => {
		pending = undefined;
		if (!res.writableEnded)
			res.write(`event: state\ndata: ${JSON.stringify(pageView(ctx.store.snapshot()))}\n\n`);
	};
	const stop = ctx.store.onChange(() => {
		pending ??= setTimeout(send, EVENTS_COALESCE_MS);
	});
	const heartbeat = setInterval(() => res.write(': still here\n\n'), HEARTBEAT_MS);
	res.on('close', () => {
		stop();
		clearInterval(heartbeat);
		if (pending) clearTimeout(pending);
	});
	send();
}
