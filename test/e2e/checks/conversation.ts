/**
 * Conversations in real n8n (issue 15), on the example workflow examples/conversation.json:
 * Reply and Wait for Answer resumed by the contact's answer, its time limit, a waiting execution
 * across an n8n restart, hand over to a person (echo), and Reply → Wait for Delivery.
 *
 * Registered in run.e2e.ts after the other checks; restarts n8n once (same port and user
 * folder) and returns the process now running, which the suite stops.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { CREDENTIAL_NAME, mapExample, readExample } from '../../real-n8n/examples';
import {
	N8nClient,
	N8nProcess,
	type Execution,
	type Line,
	type SavedWorkflow,
	type WorkflowJson,
} from '../../real-n8n/n8n';
import { ACTION_TYPE, CREDENTIAL_TYPE, TOOL_TYPE, TRIGGER_TYPE } from '../../support/constants';
import { SandboxControl, type Sandbox } from '../../real-n8n/sandbox';
import { log, sleep, waitFor } from '../../real-n8n/util';
import { ResumeOwnWait } from '../lib/resumeOwnWait';

export interface ConversationContext {
	check: (name: string, body: () => Promise<string>) => Promise<boolean>;
	n8n: N8nProcess;
	sandbox: Sandbox;
	line: Line;
	/** Stops n8n and starts it again on the same port with the same user folder. */
	restart: () => Promise<N8nProcess>;
}

const ASK = 'Ask for the order number';
const CONFIRM = 'Confirm';
const TIMED_OUT = 'No answer in time';
const HANDED_OVER = 'A person is answering';

type RunData = Record<
	string,
	Array<{ data?: { main?: Array<Array<{ json: Record<string, unknown> }> | null> } }>
>;

function fail(message: string): never {
	throw new Error(message);
}

/**
 * Saves the example with a credential of its own (the sandbox's unrestricted key), named with
 * `label`, and frees the account's one webhook from whatever an earlier check left registered.
 */
export async function saveAsOnlyWebhook(
	client: N8nClient,
	sandbox: Sandbox,
	example: WorkflowJson,
	label: string,
): Promise<{ credentialId: string; workflow: SavedWorkflow }> {
	const credentialId = (
		await client.createCredential(`${CREDENTIAL_NAME} (${label})`, CREDENTIAL_TYPE, {
			apiKey: sandbox.keys.all,
			baseUrl: sandbox.baseUrl,
			webhookSecret: '',
		})
	).id;
	const workflow: SavedWorkflow = await client.createWorkflow({
		...mapExample(example, { [CREDENTIAL_NAME]: credentialId }, {}),
		name: `${example.name} (${label})`,
	});
	await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
		method: 'DELETE',
		headers: { authorization: `Bearer ${sandbox.keys.all}` },
	});
	return { credentialId, workflow };
}

/** Restarts n8n (same port and user folder), logs in again, waits until it answers: the process and a client. */
export async function restartLoggedIn(
	ctx: ConversationContext,
): Promise<{ n8n: N8nProcess; client: N8nClient }> {
	const n8n = await ctx.restart();
	const client = new N8nClient(n8n.url, ctx.line, n8n.installation.dir);
	await client.login();
	await waitFor(
		'n8n to answer again',
		async () => (await fetch(`${n8n.url}/healthz`).catch(() => undefined))?.ok,
		30_000,
		500,
	);
	return { n8n, client };
}

export async function conversationChecks(ctx: ConversationContext): Promise<N8nProcess> {
	const { check, sandbox, line } = ctx;
	let n8n = ctx.n8n;
	const installDir = n8n.installation.dir;
	let client = new N8nClient(n8n.url, line, installDir);
	await client.login();
	const control = new SandboxControl(sandbox.baseUrl);
	const number = sandbox.numbers[0].phone_number_id;

	const requireFromN8n = createRequire(join(installDir, 'node_modules', 'n8n', 'package.json'));
	const parse = (requireFromN8n('flatted') as { parse: (text: string) => unknown }).parse;
	/** Items per output of each node's first run. */
	const outputs = async (
		id: string,
	): Promise<{ status: string; nodes: Record<string, Array<Array<Record<string, unknown>>>> }> => {
		const execution = await client.request<{ data: string; status: string }>(
			'GET',
			`/rest/executions/${id}`,
		);
		const runData =
			(parse(execution.data) as { resultData: { runData: RunData } }).resultData.runData ?? {};
		const nodes: Record<string, Array<Array<Record<string, unknown>>>> = {};
		for (const [name, runs] of Object.entries(runData))
			nodes[name] = (runs[0]?.data?.main ?? []).map((items) =>
				(items ?? []).map((item) => item.json),
			);
		return { status: execution.status, nodes };
	};

	// The example, with a time limit of 15 s (5 min when the first message says "slow", for the
	// restart) and Wait for Delivery on the confirmation.
	const example = readExample('conversation');
	const ask = example.nodes.find((node) => node.name === ASK)!;
	ask.parameters = {
		...ask.parameters,
		waitAmount: '={{ $json.data.text.includes("slow") ? 5 : 0.25 }}',
		waitUnit: 'minutes',
	};
	const confirm = example.nodes.find((node) => node.name === CONFIRM)!;
	confirm.parameters = {
		...confirm.parameters,
		replyOptions: { waitForDelivery: true, deliveryTimeLimit: 30, deliveryCheckInterval: 1 },
	};
	const { credentialId, workflow } = await saveAsOnlyWebhook(
		client,
		sandbox,
		example,
		'conversation',
	);
	const activated = await client.activateAndSettle(workflow.id);
	if (!activated.ok) {
		await check('conversation: the example workflow activates', async () =>
			fail(activated.message),
		);
		return n8n;
	}

	const executions = async (): Promise<Execution[]> => await client.executions(workflow.id);
	const waitingFor = async (known: Set<string>): Promise<Execution> =>
		await waitFor(
			'a new waiting execution',
			async () => (await executions()).find((e) => !known.has(e.id) && e.status === 'waiting'),
			30_000,
			500,
		);
	const repliesTo = async (contact: string) =>
		(await control.state()).messages.filter((m) => m.to === contact);
	const write = async (from: string, text: string) => {
		const sent = await control.inbound({ from, contact_name: 'Ada', number, text });
		if (!sent.delivery.delivered)
			fail(`the sandbox could not deliver the inbound event: ${JSON.stringify(sent.delivery)}`);
	};
	const finished = async (id: string, timeoutMs: number) =>
		await waitFor(
			`execution ${id} to finish`,
			async () => {
				const found = (await executions()).find((e) => e.id === id);
				return found && !['running', 'new', 'waiting'].includes(found.status) ? found : undefined;
			},
			timeoutMs,
			1000,
		);
	const ids = async () => new Set((await executions()).map((e) => e.id));
	/** Only the trigger ran, and it passed nothing on: an answer's record. */
	const stoppedAtTrigger = (nodes: Record<string, unknown[][]>) =>
		Object.keys(nodes).length === 1 && Object.values(nodes)[0].every((items) => items.length === 0);
	/**
	 * The executions since `before` other than the waiting one: none (issue 43: in regular mode an
	 * answer that only resumes a wait starts no execution of the trigger's workflow; its record is
	 * kept in the static data n8n saves after the request), else a failure naming them.
	 */
	const nothingButTheWait = async (before: Set<string>, waitingId: string): Promise<void> => {
		const fresh = (await executions()).filter((e) => !before.has(e.id) && e.id !== waitingId);
		if (fresh.length > 0) {
			const runs = await Promise.all(fresh.map(async (e) => ({ e, run: await outputs(e.id) })));
			fail(
				`executions started besides the waiting one: ${JSON.stringify(runs.map(({ e, run }) => ({ id: e.id, status: e.status, nodes: Object.keys(run.nodes) })))}`,
			);
		}
	};

	await check(
		'conversation: reply and wait; a forged answer to the resume URL is refused; the answer resumes the same execution, which replies again (Wait for Delivery sees "delivered"); the answer starts no other execution',
		async () => {
			const contact = '+33611110001';
			const before = await ids();
			await write(contact, 'hello');
			const waiting = await waitingFor(before);
			const asked = await waitFor('the question in the sandbox', async () =>
				(await repliesTo(contact)).length === 1 ? await repliesTo(contact) : undefined,
			);
			if (!/order number/.test(asked[0].text)) fail(`question: ${asked[0].text}`);
			// An attacker who guesses the execution id (sequential) posts an "answer" to its resume URL.
			const forged = await fetch(`${n8n.url}/webhook-waiting/${waiting.id}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({
					answer: { event: 'message.inbound', data: { from: contact, number, text: 'FORGED' } },
				}),
				signal: AbortSignal.timeout(15_000),
			});
			const forgedText = await forged.text();
			await sleep(1000);
			const afterForgery = (await executions()).find((e) => e.id === waiting.id);
			if (forged.ok || afterForgery?.status !== 'waiting')
				fail(
					`forged answer: ${forged.status} ${forgedText.slice(0, 200)}; execution ${afterForgery?.status}`,
				);
			await write(contact, 'A-42');
			const confirmation = await waitFor(
				'the confirmation in the sandbox',
				async () => (await repliesTo(contact))[1],
				30_000,
				500,
			);
			await sleep(1500);
			await control.status(confirmation.id, 'delivered');
			const done = await finished(waiting.id, 45_000);
			if (done.status !== 'success') fail(`execution ${done.id} ended ${done.status}`);
			const run = await outputs(done.id);
			const answer = run.nodes[ASK]?.[0]?.[0];
			if ((answer?.data as { text?: string })?.text !== 'A-42')
				fail(`Answer output: ${JSON.stringify(run.nodes[ASK])}`);
			if (!/A-42/.test(confirmation.text)) fail(`confirmation: ${confirmation.text}`);
			const delivery = run.nodes[CONFIRM]?.[0]?.[0]?.delivery as
				{ final?: boolean; status?: string; waited_ms?: number } | undefined;
			if (delivery?.final !== true || delivery.status !== 'delivered')
				fail(`Wait for Delivery: ${JSON.stringify(delivery)}`);
			await nothingButTheWait(before, waiting.id);
			const replies = await repliesTo(contact);
			if (replies.length !== 2) fail(`${replies.length} replies to the contact`);
			return `execution ${done.id} waited (a forged answer to its resume URL: ${forged.status}, still waiting), resumed with "A-42", replied twice; delivery ${delivery.status} after ${delivery.waited_ms} ms; no other execution started for the answer`;
		},
	);

	await check(
		'conversation: a contact who never answers: the execution continues on Timed Out after the limit (15 s)',
		async () => {
			const contact = '+33611110002';
			const before = await ids();
			const started = Date.now();
			await write(contact, 'hello');
			const waiting = await waitingFor(before);
			// n8n's wait tracker looks for due executions once a minute.
			const done = await finished(waiting.id, 150_000);
			const seconds = ((Date.now() - started) / 1000).toFixed(0);
			if (done.status !== 'success') fail(`execution ${done.id} ended ${done.status}`);
			const run = await outputs(done.id);
			if (line === 2) {
				if (run.nodes[ASK]?.[1]?.[0]?.timed_out !== true || run.nodes[ASK]?.[0]?.length)
					fail(`Timed Out output: ${JSON.stringify(run.nodes[ASK])}`);
			} else {
				// 1.x forwards only the first output on resume: the timed-out item leaves on Answer, marked.
				if (run.nodes[ASK]?.[0]?.[0]?.timed_out !== true)
					fail(`1.x: Answer output on timeout: ${JSON.stringify(run.nodes[ASK])}`);
			}
			// Either way the example brings it to "No answer in time" (1.x through its IF), never to Confirm.
			if (run.nodes[TIMED_OUT]?.[0]?.[0]?.timed_out !== true || run.nodes[CONFIRM])
				fail(`nodes run: ${JSON.stringify(run.nodes)}`);
			return `execution ${done.id} continued ${line === 2 ? 'on Timed Out' : 'on Answer (1.x) marked timed_out'} ${seconds} s after the message`;
		},
	);

	await check(
		'conversation: a waiting execution survives an n8n restart and resumes with the answer; a resume request of an earlier wait of a looping execution is refused (403) after it waits again, before and after the restart, and its genuine answer resumes it',
		async () => {
			// The loop (test/e2e/lib/resumeOwnWait.ts): asked, answered, asked again; the first request kept.
			const looper = '+33611110009';
			await write(looper, 'opens the reply window');
			const loop = new ResumeOwnWait(sandbox.keys.all, looper, number, control);
			const looping = await loop.start(
				client,
				installDir,
				n8n.url,
				credentialId,
				`${CREDENTIAL_NAME} (conversation)`,
			);
			const replayedHere = await loop.replay(looping);
			const contact = '+33611110003';
			const before = await ids();
			await write(contact, 'slow please');
			const waiting = await waitingFor(before);
			const restartStarted = Date.now();
			({ n8n, client } = await restartLoggedIn(ctx));
			const restartS = ((Date.now() - restartStarted) / 1000).toFixed(0);
			const replayedAfterRestart = await loop.replay(looping);
			const genuine = await loop.answerCurrent(looping);
			// The loop waits on (no limit); its workflow is unpublished so that later checks see none of it.
			await client.deactivate(looping.workflowId).catch(() => undefined);
			if (
				replayedHere !== 403 ||
				replayedAfterRestart !== 403 ||
				genuine.status !== 200 ||
				!genuine.askedAgain
			)
				fail(
					`the first wait's request replayed: ${replayedHere} (same process), ${replayedAfterRestart} (after the restart); the genuine answer to the current wait: ${genuine.status}, asked again: ${genuine.askedAgain}`,
				);
			const stillWaiting = (await executions()).find((e) => e.id === waiting.id);
			if (stillWaiting?.status !== 'waiting')
				fail(`after the restart execution ${waiting.id} is ${stillWaiting?.status}`);
			await write(contact, 'B-7');
			const done = await finished(waiting.id, 45_000);
			const run = await outputs(done.id);
			if ((run.nodes[ASK]?.[0]?.[0]?.data as { text?: string })?.text !== 'B-7')
				fail(`Answer output: ${JSON.stringify(run.nodes[ASK])}`);
			await nothingButTheWait(before, waiting.id);
			return `execution ${done.id} waited across a restart (${restartS} s) and resumed with "B-7": ${done.status}; looping execution ${looping.executionId}: its first wait's request replayed got ${replayedHere} before and ${replayedAfterRestart} after the restart, the genuine answer ${genuine.status} (asked again)`;
		},
	);

	await check(
		"conversation: hand over: after an echo the contact's next message goes to the Hand Over output; another contact's does not",
		async () => {
			const person = '+33611110004';
			const other = '+33611110005';
			await control.echo({ to: person, number, text: 'Hello, this is Sam from the shop' });
			const before = await ids();
			await write(person, 'I need help');
			const handed = await waitFor(
				'an execution for the handed-over contact',
				async () => (await executions()).find((e) => !before.has(e.id) && e.status === 'success'),
				30_000,
				500,
			);
			const run = await outputs(handed.id);
			if (!run.nodes[HANDED_OVER] || run.nodes[ASK])
				fail(`nodes run: ${Object.keys(run.nodes).join(', ')}`);
			if ((await repliesTo(person)).length !== 0)
				fail('the bot replied to a contact a person is answering');
			const before2 = await ids();
			await write(other, 'hello');
			await waitingFor(before2);
			if ((await repliesTo(other)).length !== 1) fail('the other contact got no question');
			return `execution ${handed.id} ran "${HANDED_OVER}" only, no reply; the other contact got the question`;
		},
	);

	await client
		.deactivate(workflow.id)
		.catch((error: unknown) => log(`deactivating the conversation workflow: ${String(error)}`));
	// n8n 2.x deregisters in the background: until the webhook is gone, another trigger on the
	// account is refused (one trigger per account).
	await waitFor(
		'the conversation workflow to deregister the webhook',
		async () => ((await control.state()).webhook.configured ? undefined : true),
		30_000,
		500,
	).catch((error: unknown) => log(String(error)));

	await check(
		"conversation: Reply and Wait in another workflow than the trigger: the answer resumes it after an n8n restart (entry registered through the trigger, kept in its static data); the trigger's workflow runs nothing past the trigger",
		async () => {
			const contact = '+33611110010';
			const credentials = {
				[CREDENTIAL_TYPE]: { id: credentialId, name: `${CREDENTIAL_NAME} (conversation)` },
			};
			const path = `ask-elsewhere-${Date.now()}`;
			const triggerOnly = await client.createWorkflow({
				name: 'Trigger only (e2e)',
				nodes: [
					{
						name: 'Trigger',
						type: TRIGGER_TYPE,
						typeVersion: 2,
						position: [0, 0],
						webhookId: crypto.randomUUID(),
						parameters: { registration: 'automatic', events: ['message.inbound'], options: {} },
						credentials,
					},
					{
						name: 'Received',
						type: 'n8n-nodes-base.noOp',
						typeVersion: 1,
						position: [240, 0],
						parameters: {},
					},
				],
				connections: { Trigger: { main: [[{ node: 'Received', type: 'main', index: 0 }]] } },
				settings: { executionOrder: 'v1' },
			});
			const asking = await client.createWorkflow({
				name: 'Ask from another workflow (e2e)',
				nodes: [
					{
						name: 'Webhook',
						type: 'n8n-nodes-base.webhook',
						typeVersion: 2,
						position: [0, 0],
						webhookId: crypto.randomUUID(),
						parameters: { httpMethod: 'POST', path, responseMode: 'onReceived', options: {} },
					},
					{
						name: 'Ask',
						type: ACTION_TYPE,
						typeVersion: 1,
						position: [240, 0],
						parameters: {
							resource: 'message',
							operation: 'replyAndWait',
							to: '={{ $json.body.to }}',
							from: '={{ $json.body.from }}',
							text: 'Which size?',
							limitWaitTime: true,
							waitAmount: 10,
							waitUnit: 'minutes',
							waitOptions: {},
						},
						credentials,
					},
					{
						name: 'Got it',
						type: 'n8n-nodes-base.noOp',
						typeVersion: 1,
						position: [480, 0],
						parameters: {},
					},
				],
				connections: {
					Webhook: { main: [[{ node: 'Ask', type: 'main', index: 0 }]] },
					Ask: { main: [[{ node: 'Got it', type: 'main', index: 0 }]] },
				},
				settings: { executionOrder: 'v1' },
			});
			for (const id of [triggerOnly.id, asking.id]) {
				const outcome = await client.activateAndSettle(id);
				if (!outcome.ok) fail(`activating ${id}: ${outcome.message}`);
			}
			// The contact opens the reply window (an ordinary message: the trigger's workflow runs once).
			await write(contact, 'hi');
			await waitFor(
				'the trigger workflow to run the first message',
				async () => (await client.executions(triggerOnly.id)).length === 1,
				30_000,
				500,
			);
			const started = await fetch(`${n8n.url}/webhook/${path}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ to: contact, from: number }),
			});
			if (!started.ok)
				fail(`starting the asking workflow: ${started.status} ${await started.text()}`);
			const waiting = await waitFor(
				'the asking execution to wait',
				async () => (await client.executions(asking.id)).find((e) => e.status === 'waiting'),
				30_000,
				500,
			);
			({ n8n, client } = await restartLoggedIn(ctx));
			await write(contact, 'size M');
			const done = await waitFor(
				'the asking execution to finish',
				async () => {
					const found = (await client.executions(asking.id)).find((e) => e.id === waiting.id);
					return found && !['running', 'new', 'waiting'].includes(found.status) ? found : undefined;
				},
				45_000,
				1000,
			);
			const run = await outputs(done.id);
			const answer = run.nodes['Got it']?.[0]?.[0]?.data as { text?: string } | undefined;
			// Only the first message ran the trigger's workflow: the answer starts none (issue 43).
			const later = (await client.executions(triggerOnly.id))
				.sort((a, b) => Number(a.id) - Number(b.id))
				.slice(1);
			const passedOn = [];
			for (const e of later)
				if (!stoppedAtTrigger((await outputs(e.id)).nodes)) passedOn.push(e.id);
			await client.deactivate(asking.id).catch(() => undefined);
			await client.deactivate(triggerOnly.id).catch(() => undefined);
			if (done.status !== 'success' || answer?.text !== 'size M')
				fail(`execution ${done.id} ${done.status}; Got it: ${JSON.stringify(run.nodes['Got it'])}`);
			if (passedOn.length > 0 || later.length > 0)
				fail(
					`the trigger's workflow ran ${later.length} more time(s), ${passedOn.length} past the trigger`,
				);
			return `execution ${done.id} of the asking workflow waited across a restart and resumed with "${answer.text}"; the trigger's workflow ran only the first message`;
		},
	);

	await check(
		'AI Agent tool: a (fake, loopback) OpenAI chat model calls Business Messaging Reply; To and Text come from the model ($fromAI defaults)',
		async () => {
			const contact = '+33611110009';
			const key = await control.createKey(['messages:send', 'messages:read'], [number]);
			await control
				.inbound({ from: contact, contact_name: 'Ada', number, text: 'opens the window' })
				.catch(() => undefined);
			const model = await fakeOpenAi({ to: contact, text: 'Hello from the agent' });
			try {
				const bm = await client.createCredential(
					'Business Messaging (one number, agent)',
					CREDENTIAL_TYPE,
					{ apiKey: key.key, baseUrl: sandbox.baseUrl, webhookSecret: '' },
				);
				const openAi = await client.createCredential('Fake OpenAI (loopback)', 'openAiApi', {
					apiKey: 'sk-fake',
					url: `${model.url}/v1`,
					header: false,
				});
				const path = `agent-${Date.now()}`;
				const agentWorkflow = await client.createWorkflow({
					name: 'AI Agent with the Business Messaging tool (e2e)',
					nodes: [
						{
							name: 'Webhook',
							type: 'n8n-nodes-base.webhook',
							typeVersion: 2,
							position: [0, 0],
							webhookId: crypto.randomUUID(),
							parameters: { httpMethod: 'POST', path, responseMode: 'lastNode', options: {} },
						},
						{
							name: 'AI Agent',
							type: '@n8n/n8n-nodes-langchain.agent',
							typeVersion: 3,
							position: [240, 0],
							parameters: { promptType: 'define', text: '={{ $json.body.message }}', options: {} },
						},
						{
							name: 'Model',
							type: '@n8n/n8n-nodes-langchain.lmChatOpenAi',
							typeVersion: 1.2,
							position: [200, 220],
							parameters: { model: { __rl: true, mode: 'id', value: 'gpt-4o-mini' }, options: {} },
							credentials: { openAiApi: { id: openAi.id, name: openAi.name } },
						},
						{
							name: 'Reply to contact',
							type: TOOL_TYPE,
							typeVersion: 1,
							position: [400, 220],
							parameters: { resource: 'message', operation: 'reply' },
							credentials: { [CREDENTIAL_TYPE]: { id: bm.id, name: bm.name } },
						},
					],
					connections: {
						Webhook: { main: [[{ node: 'AI Agent', type: 'main', index: 0 }]] },
						Model: {
							ai_languageModel: [[{ node: 'AI Agent', type: 'ai_languageModel', index: 0 }]],
						},
						'Reply to contact': { ai_tool: [[{ node: 'AI Agent', type: 'ai_tool', index: 0 }]] },
					},
					settings: { executionOrder: 'v1' },
				});
				const activatedAgent = await client.activateAndSettle(agentWorkflow.id);
				if (!activatedAgent.ok) fail(`activating the agent workflow: ${activatedAgent.message}`);
				const before = (await repliesTo(contact)).length;
				const response = await fetch(`${n8n.url}/webhook/${path}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({ message: `Say hello to ${contact}` }),
					signal: AbortSignal.timeout(60_000),
				});
				const answerText = await response.text();
				await client.deactivate(agentWorkflow.id).catch(() => undefined);
				const replies = (await repliesTo(contact)).slice(before);
				if (
					replies.length !== 1 ||
					replies[0].text !== 'Hello from the agent' ||
					replies[0].from !== number
				) {
					fail(
						`replies: ${JSON.stringify(replies)}; webhook answered ${response.status} ${answerText.slice(0, 300)}; model calls ${model.calls.length}`,
					);
				}
				const toolNames = model.calls[0]?.tools ?? [];
				return `the model saw tool(s) ${toolNames.join(', ')}; its call sent "${replies[0].text}" to ${replies[0].to} from ${replies[0].from}; ${model.calls.length} model calls`;
			} finally {
				await model.close();
			}
		},
	);
	return n8n;
}

/**
 * An OpenAI-compatible chat completions endpoint on loopback that always asks for one call of the
 * first tool it is offered with the given arguments, then answers "Sent." once the tool's result is in.
 */
async function fakeOpenAi(
	args: Record<string, unknown>,
): Promise<{ url: string; calls: Array<{ tools: string[] }>; close: () => Promise<void> }> {
	const { createServer } = await import('node:http');
	const calls: Array<{ tools: string[] }> = [];
	const server = createServer((req, res) => {
		let raw = '';
		req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
		req.on('end', () => {
			const body = (raw ? JSON.parse(raw) : {}) as {
				tools?: Array<{ function: { name: string } }>;
				messages?: Array<{ role: string }>;
			};
			const tools = (body.tools ?? []).map((t) => t.function.name);
			calls.push({ tools });
			const answered = (body.messages ?? []).some((m) => m.role === 'tool');
			const message =
				answered || tools.length === 0
					? { role: 'assistant', content: 'Sent.' }
					: {
							role: 'assistant',
							content: null,
							tool_calls: [
								{
									id: 'call_1',
									type: 'function',
									function: { name: tools[0], arguments: JSON.stringify(args) },
								},
							],
						};
			res.writeHead(200, { 'content-type': 'application/json' }).end(
				JSON.stringify({
					id: `chatcmpl-${calls.length}`,
					object: 'chat.completion',
					created: Math.floor(Date.now() / 1000),
					model: 'gpt-4o-mini',
					choices: [
						{ index: 0, message, finish_reason: message.content === null ? 'tool_calls' : 'stop' },
					],
					usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
				}),
			);
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as { port: number };
	return {
		url: `http://127.0.0.1:${port}`,
		calls,
		close: async () => await new Promise<void>((r) => server.close(() => r())),
	};
}
