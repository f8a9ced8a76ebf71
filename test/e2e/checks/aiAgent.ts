/**
 * The AI agent example (issue 33) in real n8n: examples/ai-agent-reply.json imported and
 * published as a user would, n8n's real AI Agent and OpenAI Chat Model nodes, the chat model's
 * Base URL pointing at a deterministic OpenAI-compatible server on 127.0.0.1 (below): its first
 * answer calls the Business Messaging tool, its second quotes the customer's prompt. So the
 * agent, its call of the tool (Message → Get Many, Simplify on) and the Reply all run for real.
 *
 * One reply per burst: each contact writes three messages a second apart (the example's trigger
 * combines a burst ending in 5 s of quiet) and must get one reply, quoting all three.
 *
 * Registered in run.e2e.ts after the other checks (it deactivates any other trigger workflow
 * first: one trigger per account).
 */
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { join } from 'node:path';

import { CREDENTIAL_NAME, mapExample, readExampleFile } from '../../real-n8n/examples';
import { N8nClient, type Line, type N8nProcess } from '../../real-n8n/n8n';
import { SandboxControl, type Sandbox } from '../../real-n8n/sandbox';
import { CREDENTIAL_TYPE, TOOL_TYPE } from '../../support/constants';
import { sleep, waitFor } from '../../real-n8n/util';

export const AI_AGENT_EXAMPLE = 'ai-agent-reply.json';
const AGENT_TYPE = '@n8n/n8n-nodes-langchain.agent';
const MODEL_TYPE = '@n8n/n8n-nodes-langchain.lmChatOpenAi';
const TOOL_NODE = 'Read earlier messages';
/** What Simplify keeps of a message (nodes/BusinessMessaging/actions/message/getMany.operation.ts). */
const SIMPLE_MESSAGE_FIELDS = new Set([
	'from',
	'to',
	'number',
	'text',
	'type',
	'media_id',
	'wa_message_id',
	'created_at',
]);

export interface AiAgentContext {
	check: (name: string, body: () => Promise<string>) => Promise<boolean>;
	n8n: N8nProcess;
	sandbox: Sandbox;
	line: Line;
}

function fail(message: string): never {
	throw new Error(message);
}

/** One request the model server answered. */
interface ModelCall {
	prompt: string;
	tools: string[];
	/** The arguments the Business Messaging tool asks the model for (its $fromAI keys). */
	toolArguments: string[];
	/** The tool's answer in this request (its second turn), parsed. */
	toolResult?: unknown;
	answer: string;
}

/** The final answer the model server gives for a prompt (the check looks for it in the reply). */
const answerFor = (prompt: string, read: number) =>
	`Thank you for your message. You wrote: "${prompt}". Earlier messages read: ${read}.`;

/**
 * An OpenAI-compatible /v1/chat/completions on 127.0.0.1, deterministic and stateless: a request
 * without a tool result asks for one call of the Business Messaging tool (limit 5); a request
 * with one answers answerFor(the user's prompt, how many records the tool returned).
 */
async function deterministicModel(): Promise<{
	url: string;
	calls: ModelCall[];
	close: () => Promise<void>;
}> {
	const calls: ModelCall[] = [];
	const server = createServer((req, res) => {
		let raw = '';
		req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
		req.on('end', () => {
			const body = (raw ? JSON.parse(raw) : {}) as {
				tools?: Array<{
					function: { name: string; parameters?: { properties?: Record<string, unknown> } };
				}>;
				messages?: Array<{ role: string; content: unknown }>;
			};
			const text = (content: unknown): string =>
				typeof content === 'string'
					? content
					: Array.isArray(content)
						? content.map((part: { text?: string }) => part.text ?? '').join('')
						: '';
			const messages = body.messages ?? [];
			const prompt = text(messages.filter((m) => m.role === 'user').at(-1)?.content);
			const tools = (body.tools ?? []).map((t) => t.function.name);
			const toolMessage = messages.find((m) => m.role === 'tool');
			let toolResult: unknown;
			if (toolMessage) {
				try {
					toolResult = JSON.parse(text(toolMessage.content));
				} catch {
					toolResult = text(toolMessage.content);
				}
			}
			const tool = tools.find((name) => /earlier/i.test(name)) ?? tools[0];
			const offered = (body.tools ?? []).find((t) => t.function.name === tool);
			const toolArguments = Object.keys(offered?.function.parameters?.properties ?? {});
			const read = Array.isArray(toolResult) ? toolResult.length : 0;
			const message =
				toolMessage || !tool
					? { role: 'assistant', content: answerFor(prompt, read) }
					: {
							role: 'assistant',
							content: null,
							tool_calls: [
								{
									id: `call_${calls.length + 1}`,
									type: 'function',
									function: { name: tool, arguments: JSON.stringify({ limit: 5 }) },
								},
							],
						};
			calls.push({ prompt, tools, toolArguments, toolResult, answer: message.content ?? '' });
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

/**
 * Records of the tool node's runs in a stored execution: n8n 1.x stores the tool's answer as
 * one ai_tool item {response: [...]}, n8n 2.x (the agent asks the engine to run the tool) the
 * node's output items themselves on ai_tool.
 */
function toolRecords(runData: Record<string, unknown>): unknown[][] {
	const runs = (runData[TOOL_NODE] ?? []) as Array<{
		data?: Record<string, Array<Array<{ json: Record<string, unknown> }> | null>>;
	}>;
	return runs.map((run) => {
		const items = run.data?.ai_tool?.[0] ?? run.data?.main?.[0] ?? [];
		const response = items[0]?.json?.response;
		return Array.isArray(response) ? response : items.map((item) => item.json);
	});
}

export async function aiAgentChecks(ctx: AiAgentContext): Promise<void> {
	const { check, n8n, sandbox, line } = ctx;
	await check(
		'AI agent example (issue 33): examples/ai-agent-reply.json with a local model server: the real AI Agent calls the Business Messaging tool (simplified records), one Reply per contact quoting what the model answered',
		async () => {
			const client = new N8nClient(n8n.url, line, n8n.installation.dir);
			await client.login();
			const control = new SandboxControl(sandbox.baseUrl);
			const number = sandbox.numbers[0].phone_number_id;

			const types = await client.nodeTypes();
			const names = new Set(types.map((t) => t.name));
			const missing = [AGENT_TYPE, MODEL_TYPE, TOOL_TYPE].filter((name) => !names.has(name));
			if (missing.length > 0) fail(`this n8n has no ${missing.join(', ')}`);
			const perContact = 3;

			// One trigger per account: the workflows earlier checks left active are unpublished.
			for (const workflow of await client.listWorkflows())
				if (workflow.active) await client.deactivate(workflow.id).catch(() => undefined);

			const model = await deterministicModel();
			let workflowId: string | undefined;
			try {
				const openAiName = 'OpenAI (local deterministic model)';
				const openAi = await client.createCredential(openAiName, 'openAiApi', {
					apiKey: 'sk-local-test',
					url: `${model.url}/v1`,
					header: false,
				});
				const bm = await client.createCredential(`${CREDENTIAL_NAME} (agent)`, CREDENTIAL_TYPE, {
					apiKey: sandbox.keys.all,
					baseUrl: sandbox.baseUrl,
					webhookSecret: '',
				});
				// The example leaves the model's credential to the user: pick ours, as the user would.
				const example = readExampleFile(AI_AGENT_EXAMPLE);
				const modelNode = example.nodes.find((node) => node.type === MODEL_TYPE);
				if (!modelNode) fail('the example has no OpenAI Chat Model');
				modelNode.credentials = { openAiApi: { id: openAi.id, name: openAiName } };
				const saved = await client.createWorkflow(
					mapExample(example, { [CREDENTIAL_NAME]: bm.id, [openAiName]: openAi.id }, {}),
				);
				workflowId = saved.id;
				await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
					method: 'DELETE',
					headers: { authorization: `Bearer ${sandbox.keys.all}` },
				});
				const activated = await client.activateAndSettle(saved.id);
				if (!activated.ok) fail(`publishing the example: ${activated.message}`);

				const contacts = ['+33611330001', '+33611330002', '+33611330003'];
				const prompts = new Map<string, string>();
				const before = new Map<string, number>();
				for (const contact of contacts)
					before.set(
						contact,
						(await control.state()).messages.filter((m) => m.to === contact).length,
					);
				await Promise.all(
					contacts.map(async (contact, c) => {
						const texts: string[] = [];
						for (let i = 0; i < perContact; i++) {
							const text = `Question ${i + 1} of customer ${c + 1}: where is order ${c + 1}0${i}?`;
							texts.push(text);
							const sent = await control.inbound({
								from: contact,
								contact_name: `Customer ${c + 1}`,
								number,
								text,
							});
							if (!sent.delivery.delivered)
								fail(`the inbound event was not delivered: ${JSON.stringify(sent.delivery)}`);
							if (i < perContact - 1) await sleep(1000);
						}
						prompts.set(contact, texts.join('\n'));
					}),
				);
				const repliesTo = async (contact: string) =>
					(await control.state()).messages
						.filter((m) => m.to === contact)
						.slice(before.get(contact) ?? 0);
				await waitFor(
					'a reply to every contact',
					async () => {
						for (const contact of contacts)
							if ((await repliesTo(contact)).length === 0) return undefined;
						return true;
					},
					90_000,
					500,
				);
				// Any second reply would come within the quiet period and a model round trip.
				await sleep(8000);

				const problems: string[] = [];
				for (const contact of contacts) {
					const replies = await repliesTo(contact);
					const prompt = prompts.get(contact) ?? '';
					const calls = model.calls.filter((call) => call.prompt === prompt);
					const final = calls.find((call) => call.toolResult !== undefined);
					if (replies.length !== 1)
						problems.push(`${contact}: ${replies.length} replies (${JSON.stringify(replies)})`);
					else if (replies[0].from !== number)
						problems.push(`${contact}: the reply left from ${replies[0].from}, not ${number}`);
					if (!final) {
						problems.push(
							`${contact}: the model never got the tool's answer for "${prompt}" (${calls.length} calls)`,
						);
						continue;
					}
					if (replies[0]?.text !== final.answer)
						problems.push(
							`${contact}: the reply says ${JSON.stringify(replies[0]?.text)}, the model answered ${JSON.stringify(final.answer)}`,
						);
					const records = final.toolResult;
					if (!Array.isArray(records) || records.length < perContact) {
						problems.push(`${contact}: the tool returned ${JSON.stringify(records)}`);
						continue;
					}
					for (const record of records as Array<Record<string, unknown>>) {
						const extra = Object.keys(record).filter((key) => !SIMPLE_MESSAGE_FIELDS.has(key));
						if (extra.length > 0 || record.from !== contact)
							problems.push(
								`${contact}: a record not simplified or not theirs: ${JSON.stringify(record)}`,
							);
					}
					// The model chooses how many messages, never whose: the contact is the trigger's.
					if (
						!calls[0].tools.includes('Read_earlier_messages') ||
						calls[0].toolArguments.join() !== 'limit'
					)
						problems.push(
							`${contact}: the model was offered ${calls[0].tools.join(', ')} with arguments ${calls[0].toolArguments.join(', ')}`,
						);
				}

				// n8n's side: no failed execution, one per contact that ran Reply, and the tool's runs
				// in them holding simplified records.
				const requireFromN8n = createRequire(
					join(n8n.installation.dir, 'node_modules', 'n8n', 'package.json'),
				);
				const parse = (requireFromN8n('flatted') as { parse: (text: string) => unknown }).parse;
				const executions = await client.executions(saved.id);
				const failed = executions.filter((e) => e.status !== 'success');
				if (failed.length > 0)
					problems.push(
						`executions not successful: ${failed.map((e) => `${e.id} ${e.status}`).join(', ')}`,
					);
				let replied = 0;
				const toolRuns: unknown[][] = [];
				for (const execution of executions) {
					const stored = await client.request<{ data: string }>(
						'GET',
						`/rest/executions/${execution.id}`,
					);
					const runData =
						(parse(stored.data) as { resultData: { runData?: Record<string, unknown> } }).resultData
							.runData ?? {};
					if (runData.Reply) replied++;
					toolRuns.push(...toolRecords(runData));
				}
				if (replied !== contacts.length)
					problems.push(`${replied} executions ran Reply, expected ${contacts.length}`);
				const recordsInN8n = toolRuns.flat() as Array<Record<string, unknown>>;
				if (
					toolRuns.length < contacts.length ||
					recordsInN8n.length === 0 ||
					recordsInN8n.some((r) => Object.keys(r).some((key) => !SIMPLE_MESSAGE_FIELDS.has(key)))
				)
					problems.push(`the tool's runs in n8n: ${JSON.stringify(toolRuns).slice(0, 600)}`);
				if (problems.length > 0) fail(problems.join('; '));
				const sample = model.calls.find((call) => Array.isArray(call.toolResult));
				return `${contacts.length} contacts, ${perContact} messages each, combined by the trigger: one reply each, the model's answer word for word; ${model.calls.length} model calls; the tool "${TOOL_NODE}" ran ${toolRuns.length} time(s) in ${executions.length} executions, the model got simplified records, e.g. ${JSON.stringify((sample?.toolResult as unknown[])[0])}`;
			} finally {
				if (workflowId) await client.deactivate(workflowId).catch(() => undefined);
				await model.close();
			}
		},
	);
}
