/**
 * Screenshots of the example workflows as the n8n editor shows them: docs/screenshots/<example>.png.
 *
 *   bash scripts/dev-screenshots.sh [--line 2|1]
 *
 * Starts the same environment as `npm run dev` (in a temporary n8n user folder), then drives
 * Debian's headless Chromium (apt-get install -y chromium) over the DevTools protocol with
 * Node's WebSocket: no browser download, no extra npm dependency.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { EXAMPLES, type ExampleKey } from '../test/real-n8n/examples';
import { startEnvironment, type Environment } from '../test/real-n8n/environment';
import { OWNER, REPO_ROOT, type Line } from '../test/real-n8n/n8n';
import { errorText, log, sleep, waitFor } from '../test/real-n8n/util';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const WIDTH = 1280;
const HEIGHT = 720;

/** Minimal DevTools protocol client over one page session. */
class Cdp {
	private nextId = 1;
	private readonly pending = new Map<
		number,
		{ resolve: (v: unknown) => void; reject: (e: Error) => void }
	>();
	private sessionId: string | undefined;

	private constructor(private readonly socket: WebSocket) {
		socket.addEventListener('message', (event: MessageEvent) => {
			const message = JSON.parse(String(event.data)) as {
				id?: number;
				result?: unknown;
				error?: { message: string };
			};
			if (message.id === undefined) return;
			const waiter = this.pending.get(message.id);
			if (!waiter) return;
			this.pending.delete(message.id);
			if (message.error) waiter.reject(new Error(message.error.message));
			else waiter.resolve(message.result);
		});
	}

	static async connect(url: string): Promise<Cdp> {
		const socket = new WebSocket(url);
		await new Promise<void>((resolve, reject) => {
			socket.addEventListener('open', () => resolve(), { once: true });
			socket.addEventListener('error', () => reject(new Error(`cannot connect to ${url}`)), {
				once: true,
			});
		});
		return new Cdp(socket);
	}

	async send<T = Record<string, unknown>>(
		method: string,
		params: Record<string, unknown> = {},
		browserLevel = false,
	): Promise<T> {
		const id = this.nextId++;
		const message: Record<string, unknown> = { id, method, params };
		if (!browserLevel && this.sessionId) message.sessionId = this.sessionId;
		const result = new Promise<unknown>((resolve, reject) =>
			this.pending.set(id, { resolve, reject }),
		);
		this.socket.send(JSON.stringify(message));
		return (await result) as T;
	}

	async openPage(): Promise<void> {
		const { targetId } = await this.send<{ targetId: string }>(
			'Target.createTarget',
			{ url: 'about:blank' },
			true,
		);
		const { sessionId } = await this.send<{ sessionId: string }>(
			'Target.attachToTarget',
			{ targetId, flatten: true },
			true,
		);
		this.sessionId = sessionId;
		await this.send('Page.enable');
		await this.send('Runtime.enable');
		await this.send('Emulation.setDeviceMetricsOverride', {
			width: WIDTH,
			height: HEIGHT,
			deviceScaleFactor: 1,
			mobile: false,
		});
	}

	async evaluate<T>(expression: string): Promise<T> {
		const { result, exceptionDetails } = await this.send<{
			result: { value: T };
			exceptionDetails?: { text: string; exception?: { description?: string } };
		}>('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
		if (exceptionDetails)
			throw new Error(exceptionDetails.exception?.description ?? exceptionDetails.text);
		return result.value;
	}

	async navigate(url: string): Promise<void> {
		await this.send('Page.navigate', { url });
		await waitFor(
			`${url} to load`,
			async () => (await this.evaluate<string>('document.readyState')) === 'complete',
			60_000,
			250,
		);
	}

	async screenshot(file: string): Promise<void> {
		const { data } = await this.send<{ data: string }>('Page.captureScreenshot', { format: 'png' });
		writeFileSync(file, Buffer.from(data, 'base64'));
	}

	close(): void {
		this.socket.close();
	}
}

async function launchChromium(profile: string): Promise<{ cdp: Cdp; stop: () => void }> {
	if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install -y chromium`);
	const child = spawn(
		CHROMIUM,
		[
			'--headless',
			'--no-sandbox',
			'--disable-gpu',
			'--disable-quic',
			'--no-first-run',
			'--disable-background-networking',
			'--disable-component-update',
			'--disable-sync',
			'--disable-dev-shm-usage',
			'--hide-scrollbars',
			`--user-data-dir=${profile}`,
			`--window-size=${WIDTH},${HEIGHT}`,
			'--remote-debugging-port=0',
			'about:blank',
		],
		{ stdio: 'ignore', detached: true },
	);
	const portFile = join(profile, 'DevToolsActivePort');
	const [port, path] = await waitFor('Chromium to open its DevTools port', () =>
		existsSync(portFile) ? readFileSync(portFile, 'utf8').trim().split('\n') : undefined,
	);
	const cdp = await Cdp.connect(`ws://127.0.0.1:${port}${path}`);
	return {
		cdp,
		stop: () => {
			cdp.close();
			try {
				process.kill(-(child.pid as number), 'SIGKILL');
			} catch {
				/* gone */
			}
		},
	};
}

async function main(): Promise<void> {
	const argv = process.argv.slice(2);
	const tarball = argv[argv.indexOf('--tarball') + 1];
	const line = (argv.includes('--line') ? Number(argv[argv.indexOf('--line') + 1]) : 2) as Line;
	const outDir = join(REPO_ROOT, 'docs', 'screenshots');
	mkdirSync(outDir, { recursive: true });
	const userFolder = mkdtempSync(join(tmpdir(), 'bm-screenshots-n8n-'));
	const profile = mkdtempSync(join(tmpdir(), 'bm-screenshots-chromium-'));
	let env: Environment | undefined;
	let browser: { cdp: Cdp; stop: () => void } | undefined;
	try {
		env = await startEnvironment({
			line,
			tarball,
			userFolder,
			fresh: true,
			n8nPort: 0,
			sandboxPort: 0,
			activate: ['autoReply'],
		});
		browser = await launchChromium(profile);
		const { cdp } = browser;
		await cdp.openPage();
		await cdp.navigate(`${env.n8n.url}/signin`);
		const login = await cdp.evaluate<number>(`(async () => {
			let id = localStorage.getItem('n8n-browserId');
			if (!id) { id = crypto.randomUUID(); localStorage.setItem('n8n-browserId', id); }
			const r = await fetch('/rest/login', { method: 'POST', credentials: 'include',
				headers: { 'content-type': 'application/json', 'browser-id': id },
				body: JSON.stringify({ emailOrLdapLoginId: ${JSON.stringify(OWNER.email)}, password: ${JSON.stringify(OWNER.password)} }) });
			return r.status;
		})()`);
		if (login !== 200) throw new Error(`login from the page answered ${login}`);
		for (const key of Object.keys(EXAMPLES) as ExampleKey[]) {
			const workflow = env.imported.workflows[key];
			const nodes = workflow.nodes.length;
			await cdp.navigate(`${env.n8n.url}/workflow/${workflow.id}`);
			await waitFor(
				`the canvas of "${workflow.name}"`,
				async () =>
					(await cdp.evaluate<number>(
						`document.querySelectorAll('[data-test-id="canvas-node"], [data-test-id="canvas-sticky-note-node"], .vue-flow__node').length`,
					)) >= nodes,
				60_000,
				500,
			);
			// Let the canvas fit the view and the fonts settle; close toasts and pop-ups.
			await sleep(2500);
			// 2.x opens a "Production Checklist" pop-over on published workflows, a moment after
			// the canvas: wait for it briefly and hide it, with any toast.
			for (let i = 0; i < 6; i++) {
				const hidden = await cdp.evaluate<boolean>(`(() => {
					document.querySelectorAll('.el-notification').forEach((n) => { n.style.display = 'none'; });
					const heading = [...document.querySelectorAll('*')].find((e) => e.childElementCount === 0 && e.textContent.trim() === 'Production Checklist');
					for (let box = heading; box && box !== document.body; box = box.parentElement) {
						const r = box.getBoundingClientRect();
						if (r.width > 300 && r.height > 250) { box.style.display = 'none'; return true; }
					}
					return false;
				})()`);
				if (hidden) break;
				await sleep(500);
			}
			await sleep(500);
			const file = join(outDir, `${EXAMPLES[key].replace(/\.json$/, '')}.png`);
			await cdp.screenshot(file);
			log(`wrote ${file}`);
		}
	} finally {
		browser?.stop();
		await env?.stop();
		rmSync(userFolder, { recursive: true, force: true });
		rmSync(profile, { recursive: true, force: true });
	}
}

main()
	.then(() => process.exit(0))
	.catch((error) => {
		console.error(`screenshots failed: ${errorText(error)}`);
		process.exit(1);
	});
