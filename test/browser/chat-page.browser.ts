/**
 * The sandbox's chat page in headless Chromium, against the sandbox alone (`npm run test:browser`).
 * A small receiver stands in for an auto-reply workflow: it checks each event's signature and answers an
 * inbound message with POST /v1/messages/reply, as the auto-reply example does. The real-n8n version of these
 * checks is test/e2e/checks/chat.ts. The last test takes the README's screenshot (docs/screenshots/sandbox-chat.png
 * with UPDATE_SCREENSHOTS=1, else in the system's temporary folder).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Browser, Page } from 'playwright-core';

import { startSandbox, type Sandbox } from '../sandbox';
import { signBody } from '../support/signature';
import { launchChromium } from './lib/chromium';

jest.setTimeout(60_000);

const NEW_CONTACT = '+33612345678';
/** README's screenshot is rewritten only on request (UPDATE_SCREENSHOTS=1), so a test run leaves the tree clean. */
const SCREENSHOTS =
	process.env.UPDATE_SCREENSHOTS === '1'
		? join(__dirname, '..', '..', 'docs', 'screenshots')
		: join(tmpdir(), 'business-messaging-screenshots');

interface Workflow {
	url: string;
	secret: string;
	events: Array<{ event: string; data: Record<string, unknown> }>;
	badSignatures: number;
	close(): Promise<void>;
}

/** An auto-reply "workflow": verifies the signature, replies to inbound messages through the API, answers 200. */
async function startWorkflow(sandbox: Sandbox): Promise<Workflow> {
	const workflow: Workflow = {
		url: '',
		secret: '',
		events: [],
		badSignatures: 0,
		close: async () => undefined,
	};
	const server: Server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (chunk: Buffer) => chunks.push(chunk));
		req.on('end', () => {
			void (async () => {
				const raw = Buffer.concat(chunks);
				if (req.headers['x-service-signature'] !== signBody(raw, workflow.secret)) {
					workflow.badSignatures++;
					res.writeHead(401).end('bad signature');
					return;
				}
				const envelope = JSON.parse(raw.toString('utf8')) as Workflow['events'][number];
				workflow.events.push(envelope);
				if (envelope.event === 'message.inbound') {
					const { from, number, contact_name, text } = envelope.data as Record<string, string>;
					await fetch(`${sandbox.baseUrl}/v1/messages/reply`, {
						method: 'POST',
						headers: {
							authorization: `Bearer ${sandbox.keys.all}`,
							'content-type': 'application/json',
						},
						body: JSON.stringify({
							to: from,
							from: number,
							text: `Thanks ${contact_name}, we got: ${text || '(a file)'}`,
						}),
					});
				}
				res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
			})();
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	workflow.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`;
	workflow.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
	return workflow;
}

async function register(sandbox: Sandbox, url: string): Promise<string> {
	const response = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
		method: 'POST',
		headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
		body: JSON.stringify({ url }),
	});
	expect(response.status).toBe(201);
	return ((await response.json()) as { secret: string }).secret;
}

let sandbox: Sandbox;
let workflow: Workflow;
let browser: Browser;
let page: Page;
const started = Date.now();

beforeAll(async () => {
	sandbox = await startSandbox({ host: '127.0.0.1' });
	workflow = await startWorkflow(sandbox);
	workflow.secret = await register(sandbox, workflow.url);
	browser = await launchChromium();
	page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
	await page.goto(`${sandbox.baseUrl}/`);
	await page.locator('#connection[data-state="live"]').waitFor();
});

afterAll(async () => {
	await browser?.close();
	await workflow?.close();
	await sandbox?.close();
	console.log(
		`chat page browser tests: ${((Date.now() - started) / 1000).toFixed(1)} s with Chromium's start`,
	);
});

const bubbles = (kind: string) => page.locator(`#messages li[data-kind="${kind}"]`);
const deliveryRows = () => page.locator('#deliveries tr.delivery');

test("a contact writes on the page; the workflow's reply appears without reloading", async () => {
	await page.selectOption('#new-number', sandbox.numbers[0].phone_number_id);
	await page.fill('#new-contact', NEW_CONTACT);
	await page.fill('#new-name', 'Ada');
	await page.click('#new-conversation button[type="submit"]');
	await page.fill('#text', 'Hello, is my order on its way?');
	await page.click('#send');

	await bubbles('in').filter({ hasText: 'Hello, is my order on its way?' }).waitFor();
	await bubbles('out')
		.filter({ hasText: 'Thanks Ada, we got: Hello, is my order on its way?' })
		.waitFor();
	await expect(page.locator('#send-result').textContent()).resolves.toMatch(
		/^message\.inbound: delivered to the webhook, HTTP 200 in \d+ ms$/,
	);
	expect(workflow.events.map((e) => e.event)).toEqual(['message.inbound']);
	expect(workflow.events[0].data).toMatchObject({
		from: NEW_CONTACT,
		contact_name: 'Ada',
		number: sandbox.numbers[0].phone_number_id,
	});
	// The conversation is listed under its business number, with the reply as its last message.
	const listed = page.locator(
		`#conversations .number-group[data-number="${sandbox.numbers[0].phone_number_id}"] .conversation[data-contact="${NEW_CONTACT}"]`,
	);
	await expect(listed.textContent()).resolves.toContain('Reply: Thanks Ada');
	await expect(page.locator('#deliveries tr.delivery').first().textContent()).resolves.toMatch(
		/message\.inbound.*HTTP 200 in \d+ ms.*received/,
	);
});

test('a file sent as the contact reaches the workflow as media, and the page shows it', async () => {
	const png = Buffer.from(
		'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
		'base64',
	);
	await page.setInputFiles('#file', { name: 'receipt.png', mimeType: 'image/png', buffer: png });
	await page.fill('#text', 'my receipt');
	await page.click('#send');
	await bubbles('in')
		.filter({ hasText: 'receipt.png' })
		.filter({ hasText: 'my receipt' })
		.waitFor();
	const inbound = workflow.events.find(
		(e) => e.event === 'message.inbound' && e.data.type === 'image',
	);
	expect(inbound?.data).toMatchObject({
		text: 'my receipt',
		media_url: expect.stringMatching(/\/v1\/media\/\d+$/),
	});
	// The file the sandbox hosts is the one chosen on the page.
	const media = sandbox.state().media.find((m) => m.filename === 'receipt.png');
	expect(media).toMatchObject({ mime: 'image/png', size: png.length, hosted: true });
});

test("setting a reply's status on the page posts the status event and shows it", async () => {
	const reply = bubbles('out').first();
	await reply.locator('button[data-set-status="read"]').click();
	await reply.locator('.status[data-status="read"]').waitFor();
	await page
		.locator('#send-result', {
			hasText: 'message.status "read": delivered to the webhook, HTTP 200',
		})
		.waitFor();
	const status = workflow.events.find((e) => e.event === 'message.status');
	expect(status?.data).toMatchObject({
		status: 'read',
		id: sandbox.state().messages[0].id,
		recipient_masked: '+3361****678',
	});

	await reply.locator('button[data-set-status="failed"]').click();
	await reply.locator('.status[data-status="failed"]').waitFor();
	await expect(reply.textContent()).resolves.toContain('The message could not be delivered');
});

test('an echo written as a person in the business app is delivered as message.echo and is not answered', async () => {
	const replies = await bubbles('out').count();
	await page.check('input[name="as"][value="echo"]');
	await page.fill('#text', 'A colleague answers from the app');
	await page.click('#send');
	await bubbles('echo').filter({ hasText: 'A colleague answers from the app' }).waitFor();
	await page
		.locator('#send-result', { hasText: 'message.echo: delivered to the webhook, HTTP 200' })
		.waitFor();
	expect(workflow.events.filter((e) => e.event === 'message.echo')).toHaveLength(1);
	expect(await bubbles('out').count()).toBe(replies);
	await page.check('input[name="as"][value="contact"]');
});

test('a failed delivery shows its reason in the log; Resend delivers it once the receiver is back', async () => {
	// The webhook points at a port where nothing listens, as when n8n is down.
	const deadUrl = `http://127.0.0.1:${await freePort()}/webhook`;
	await register(sandbox, deadUrl);
	await page.locator('#webhook-url', { hasText: deadUrl }).waitFor();
	await page.fill('#text', 'Anyone there?');
	await page.click('#send');
	await page
		.locator('#send-result', { hasText: 'message.inbound: NOT delivered: connection refused' })
		.waitFor();
	// The page learns of the delivery from its live feed, which may come a moment after the control call's answer.
	const failedRow = page.locator('#deliveries tr.delivery[data-delivered="false"]');
	await failedRow.waitFor();
	await expect(deliveryRows().first().getAttribute('data-id')).resolves.toBe(
		await failedRow.getAttribute('data-id'),
	);
	await expect(failedRow.locator('td.result').textContent()).resolves.toMatch(
		/^connection refused \(\d+ ms\)$/,
	);
	const before = workflow.events.length;

	workflow.secret = await register(sandbox, workflow.url);
	await page.locator('#webhook-url', { hasText: workflow.url }).waitFor();
	await failedRow.locator('button.resend').click();
	await page
		.locator('#send-result', {
			hasText: 'message.inbound resent: delivered to the webhook, HTTP 200',
		})
		.waitFor();
	await bubbles('out').filter({ hasText: 'we got: Anyone there?' }).waitFor();
	// Newest first: the resent delivery above the failed one, which stays in the log with its reason.
	await page.locator('#deliveries tr.delivery.resent[data-delivered="true"]').waitFor();
	await expect(deliveryRows().first().getAttribute('class')).resolves.toContain('resent');
	await expect(deliveryRows().nth(1).locator('td.result').textContent()).resolves.toMatch(
		/^connection refused/,
	);
	expect(workflow.events.slice(before).map((e) => `${e.event}:${String(e.data.text)}`)).toEqual([
		'message.inbound:Anyone there?',
	]);
	expect(workflow.badSignatures).toBe(0);
});

test('the webhook and the keys are shown masked; no key value or signing secret reaches the page', async () => {
	await page.locator('#webhook', { hasText: `whsec_…${workflow.secret.slice(-4)}` }).waitFor();
	await expect(page.locator('#keys li[data-key-id="key_all"]').textContent()).resolves.toContain(
		`sk_live_…${sandbox.keys.all.slice(-4)}`,
	);
	await expect(
		page.locator('#keys li[data-key-id="key_revoked"]').getAttribute('class'),
	).resolves.toBe('revoked');
	const html = await page.content();
	for (const secret of [workflow.secret, ...Object.values(sandbox.keys)])
		expect(html).not.toContain(secret);

	await page.locator('#messages').evaluate((list) => (list.scrollTop = 0));
	mkdirSync(SCREENSHOTS, { recursive: true });
	await page.screenshot({ path: join(SCREENSHOTS, 'sandbox-chat.png') });
});

async function freePort(): Promise<number> {
	const server = createServer();
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	await new Promise<void>((resolve) => server.close(() => resolve()));
	return port;
}
