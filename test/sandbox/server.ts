import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnswerSettings, requireAnswers } from './answers';
import { handleApiRequest } from './api-routes';
import { SandboxClock } from './clock';
import type { SandboxContext } from './context';
import { handleControlRequest } from './control-routes';
import { errorBody, sendJson } from './http';
import { createMediaHostHandler, MediaSigner } from './media';
import { isPageRequest, servePage } from './page';
import { refusedRequest } from './requestOrigin';
import { DEFAULT_WEBHOOK_TIMEOUT_MS } from './policy';
import { createSeed, seededKeyIds, seededKeyValues } from './seed';
import { SandboxStore } from './store';
import type { Sandbox, SandboxOptions } from './types';
import { WebhookDispatcher } from './webhook';

/** Starts the API server and the media host (a second origin) and returns their handle. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
	const host = options.host ?? '127.0.0.1';
	// Checked before anything listens, so a bad setting leaves nothing to close.
	const answers = new AnswerSettings(options.answers);
	const apiServer = createServer();
	const mediaServer = createServer();
	// Idle connections are closed by the client only (undici after 4 s): a server closing one at its own
	// 5 s races a request the client sends on it, which then fails ECONNRESET (seen in Jest under load).
	for (const server of [apiServer, mediaServer]) server.keepAliveTimeout = 0;
	try {
		await listen(apiServer, options.port ?? 0, host);
		await listen(mediaServer, options.mediaPort ?? 0, host);
	} catch (err) {
		await Promise.all([closeServer(apiServer), closeServer(mediaServer)]);
		throw err;
	}
	const baseUrl = originOf(apiServer, host);
	const mediaBaseUrl = originOf(mediaServer, host);

	const clock = new SandboxClock();
	const seed = createSeed();
	const store = new SandboxStore(clock, seed, answers);
	const webhooks = new WebhookDispatcher(
		store,
		options.webhookTimeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS,
	);
	const signer = new MediaSigner(mediaBaseUrl);
	const ctx: SandboxContext = { store, clock, webhooks, signer, baseUrl, mediaBaseUrl };

	// The address it listens on is this machine too (a wildcard is not a name anyone sends).
	const extraHosts = ['0.0.0.0', '::', ''].includes(host) ? [] : [host.toLowerCase()];
	const apiPort = (apiServer.address() as AddressInfo).port;
	const mediaPort = (mediaServer.address() as AddressInfo).port;
	apiServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
		if (refuse(req, res, apiPort, extraHosts)) return;
		void routeApiServer(ctx, req, res);
	});
	const mediaHandler = createMediaHostHandler(store, signer);
	mediaServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
		if (refuse(req, res, mediaPort, extraHosts)) return;
		mediaHandler(req, res);
	});

	let closed = false;
	return {
		baseUrl,
		mediaBaseUrl,
		keys: seededKeyValues(seed),
		keyIds: seededKeyIds(seed),
		numbers: seed.numbers.map((n) => ({ ...n })),
		async close() {
			if (closed) return;
			closed = true;
			await webhooks.close();
			await Promise.all([closeServer(apiServer), closeServer(mediaServer)]);
		},
		reset() {
			clock.reset();
			store.reset();
		},
		advanceClock(seconds: number) {
			clock.advance(seconds);
		},
		now: () => clock.now(),
		state: () => store.snapshot(),
		answers: () => ({ ...answers.current }),
		setAnswers: (partial) => answers.set(requireAnswers(partial)),
	};
}

/** A request from a foreign Host or Origin (requestOrigin.ts): answered 403, true. */
function refuse(
	req: IncomingMessage,
	res: ServerResponse,
	port: number,
	extraHosts: readonly string[],
): boolean {
	const reason = refusedRequest(req, port, extraHosts);
	if (reason === undefined) return false;
	req.resume();
	sendJson(res, 403, errorBody('forbidden_origin', `Refused: ${reason}`));
	return true;
}

async function routeApiServer(
	ctx: SandboxContext,
	req: IncomingMessage,
	res: ServerResponse,
): Promise<void> {
	const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
	try {
		if (url.pathname === '/v1' || url.pathname.startsWith('/v1/')) {
			await handleApiRequest(ctx, req, res, url);
		} else if (url.pathname === '/_sandbox' || url.pathname.startsWith('/_sandbox/')) {
			await handleControlRequest(ctx, req, res, url);
		} else if (isPageRequest(req, url.pathname)) {
			await servePage(req, res, url.pathname);
		} else if (url.pathname === '/') {
			sendJson(res, 200, {
				service: 'messaging sandbox',
				api: `${ctx.baseUrl}/v1`,
				control: `${ctx.baseUrl}/_sandbox`,
				page: `${ctx.baseUrl}/`,
			});
		} else {
			req.resume();
			sendJson(
				res,
				404,
				errorBody('not_found', `No endpoint ${url.pathname}: the API lives under /v1`),
			);
		}
	} catch (err) {
		sendJson(res, 500, errorBody('internal_error', `Sandbox error: ${(err as Error).message}`));
	}
}

function listen(server: Server, port: number, host: string): Promise<void> {
	return new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(port, host, () => {
			server.off('error', reject);
			resolve();
		});
	});
}

function closeServer(server: Server): Promise<void> {
	if (!server.listening) return Promise.resolve();
	return new Promise((resolve) => {
		server.close(() => resolve());
		// Keep-alive and hanging connections would otherwise hold close() open.
		server.closeAllConnections();
	});
}

/** A wildcard bind is reached through loopback; IPv6 literals need brackets. */
function originOf(server: Server, host: string): string {
	const { port } = server.address() as AddressInfo;
	const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
	return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
