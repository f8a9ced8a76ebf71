/**
 * The AI agent example in real n8n: examples/ai-agent-reply.json imported and published as a user
 * would, n8n's real AI Agent, OpenAI Chat Model and Simple Memory, the chat model's Base URL
 * pointing at a deterministic OpenAI-compatible server on 127.0.0.1 (test/e2e/lib/fakeModel.ts):
 * its first answer calls the Business Messaging tool, its second quotes the prompt with a token
 * of it. So the agent, its memory, its call of the tool (Message → Get Many, Simplify on) and the
 * Reply all run for real, and every request n8n sent the model is read back.
 *
 * The sandbox ignores the list filters (inbound_filters: 'ignored'): the tool's Contact and Number
 * hold only because the node applies them itself. Contacts write a card number, an address and a
 * reset code in their last turn (so an unfiltered list would give them to the others' tool reads);
 * no other contact's model request may hold them, nor any other trace of them.
 *
 * One contact alone, three turns; then five contacts at once, three turns each (the first a burst
 * of three messages a second apart: one reply per burst).
 *
 * Registered in run.e2e.ts after the other checks (it deactivates any other trigger workflow
 * first: one trigger per account).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { CREDENTIAL_NAME, mapExample, readExampleFile } from '../../real-n8n/examples';
import { N8nClient, type Line, type N8nProcess } from '../../real-n8n/n8n';
import { SandboxControl, type Answers, type Sandbox } from '../../real-n8n/sandbox';
import { CREDENTIAL_TYPE, TOOL_TYPE } from '../../support/constants';
import { sleep, waitFor } from '../../real-n8n/util';
import {
	answerTo,
	SIMPLE_MESSAGE_FIELDS,
	talker,
	tallyCalls,
	type Talker,
	type Tally,
} from '../lib/agentConversation';
import { deterministicModel } from '../lib/fakeModel';

export const AI_AGENT_EXAMPLE = 'ai-agent-reply.json';
const AGENT_TYPE = '@n8n/n8n-nodes-langchain.agent';
const MODEL_TYPE = '@n8n/n8n-nodes-langchain.lmChatOpenAi';
const MEMORY_TYPE = '@n8n/n8n-nodes-langchain.memoryBufferWindow';
const TOOL_NODE = 'Read earlier messages';

export interface AiAgentContext {
	check: (name: string, body: () => Promise<string>) => Promise<boolean>;
	n8n: N8nProcess;
	sandbox: Sandbox;
	line: Line;
}

function fail(message: string): never {
	throw new Error(message);
}

const memoryText = (t: Tally) =>
	`${t.memoryHeld} of ${t.memoryRequests} requests of turns 2-3 held all the contact's earlier replies; ${t.leaks} of ${t.requests} requests held anything of another contact; ${t.toolForeign} of ${t.toolResults} tool answers held a record not the contact's or not simplified; ${t.systemMessages} system message over all`;

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

export async function aiAgentChecks(ctx: AiAgentContext): Promise<N8nProcess> {
	const { check, sandbox, line } = ctx;
	let n8n = ctx.n8n;
	const control = new SandboxControl(sandbox.baseUrl);
	const number = sandbox.numbers[0].phone_number_id;
	let client = new N8nClient(n8n.url, line, n8n.installation.dir);
	const model = await deterministicModel();
	let workflowId: string | undefined;
	let filtersBefore: Answers['inbound_filters'] | undefined;
	// The contacts: S alone; C1-C5 at once (C1-C3's turn 3 holds a secret).
	const alone = talker('+33611330001', 'S', 3);
	const secrets = ['card 4539 1488 0343 6467', 'address 12 Rue des Lilas 75011', 'code RST-731904'];
	const five = [1, 2, 3, 4, 5].map((i) =>
		talker(`+3361133001${i}`, `C${i}`, 3, { burst: 3, secret: secrets[i - 1] }),
	);
	const everyone = [alone, ...five];

	const repliesTo = async (who: Talker) =>
		(await control.state()).messages.filter((m) => m.to === who.contact).slice(who.repliesBefore);
	/** One turn: its messages a second apart, then the reply to it. */
	const say = async (who: Talker, turn: number) => {
		const texts = who.turns[turn];
		for (const [i, text] of texts.entries()) {
			const sent = await control.inbound({
				from: who.contact,
				contact_name: who.name,
				number,
				text,
			});
			if (!sent.delivery.delivered)
				fail(`${who.marker} the inbound event was not delivered: ${JSON.stringify(sent.delivery)}`);
			if (i < texts.length - 1) await sleep(1000);
		}
		who.prompts[turn] = texts.join('\n');
		await waitFor(
			`reply ${turn + 1} to ${who.marker}`,
			async () => (await repliesTo(who)).length > turn,
			90_000,
			500,
		);
	};
	/** Every reply is the model's answer to that turn, one per turn, in order. */
	const replyProblems = async (who: Talker): Promise<string[]> => {
		const texts = (await repliesTo(who)).map((m) => m.text);
		const expected = who.prompts.map((prompt) => answerTo(model.calls, prompt));
		if (JSON.stringify(texts) === JSON.stringify(expected)) return [];
		return [`${who.marker} replies ${JSON.stringify(texts)}, expected ${JSON.stringify(expected)}`];
	};

	try {
		await check(
			"AI agent example: examples/ai-agent-reply.json with a local model server, the service ignoring the list filters: memory per contact and number (one contact, 3 turns; 5 contacts at once, 3 turns, the first a burst: one reply per burst), the tool returns only the contact's simplified records, no request holds another contact's data or the profile name",
			async () => {
				await client.login();
				const names = new Set((await client.nodeTypes()).map((t) => t.name));
				const missing = [AGENT_TYPE, MODEL_TYPE, MEMORY_TYPE, TOOL_TYPE].filter(
					(n) => !names.has(n),
				);
				if (missing.length > 0) fail(`this n8n has no ${missing.join(', ')}`);
				// One trigger per account: the workflows earlier checks left active are unpublished.
				for (const workflow of await client.listWorkflows())
					if (workflow.active) await client.deactivate(workflow.id).catch(() => undefined);

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
				filtersBefore = (await control.answers()).inbound_filters;
				await control.setAnswers({ inbound_filters: 'ignored' });
				for (const who of everyone) who.repliesBefore = (await repliesTo(who)).length;

				const started = Date.now();
				for (let turn = 0; turn < 3; turn++) await say(alone, turn);
				const aloneS = (Date.now() - started) / 1000;
				for (let turn = 0; turn < 3; turn++)
					await Promise.all(five.map(async (who) => await say(who, turn)));
				const talkS = (Date.now() - started) / 1000;

				// The service really ignores the filters: its answer to the tool's query holds others'.
				const query = new URLSearchParams({ contact: alone.contact, number, limit: '100' });
				const listed = (await (
					await fetch(`${sandbox.baseUrl}/v1/messages/inbound?${query}`, {
						headers: { authorization: `Bearer ${sandbox.keys.all}` },
					})
				).json()) as { data: Array<{ from: string }> };
				const othersListed = listed.data.filter((m) => m.from !== alone.contact).length;
				if (othersListed === 0) fail('the sandbox applied the contact filter: nothing proven');

				const problems: string[] = [];
				const known = new Set(everyone.flatMap((who) => who.prompts));
				const strays = model.calls.filter((call) => !known.has(call.prompt));
				if (strays.length > 0)
					problems.push(`model requests for no turn: ${strays.map((c) => c.prompt).join(' | ')}`);
				const tally = tallyCalls(model.calls, everyone);
				const aloneTally = tallyCalls(model.calls, [alone]);
				problems.push(...tally.problems);
				for (const who of everyone) problems.push(...(await replyProblems(who)));

				// n8n's side: no failed execution, one per turn that ran Reply, the tool's runs
				// in them holding simplified records of that contact.
				const executions = await client.executions(saved.id);
				const failed = executions.filter((e) => e.status !== 'success');
				if (failed.length > 0)
					problems.push(
						`executions not successful: ${failed.map((e) => `${e.id} ${e.status}`).join(', ')}`,
					);
				let replied = 0;
				const toolRuns: unknown[][] = [];
				const parse = (
					createRequire(join(n8n.installation.dir, 'node_modules', 'n8n', 'package.json'))(
						'flatted',
					) as { parse: (text: string) => unknown }
				).parse;
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
				const turns = everyone.reduce((sum, who) => sum + who.prompts.length, 0);
				if (replied !== turns) problems.push(`${replied} executions ran Reply, expected ${turns}`);
				const records = toolRuns.flat() as Array<Record<string, unknown>>;
				if (
					toolRuns.length < turns ||
					records.some((r) => Object.keys(r).some((key) => !SIMPLE_MESSAGE_FIELDS.has(key)))
				)
					problems.push(`the tool's runs in n8n: ${JSON.stringify(toolRuns).slice(0, 600)}`);
				if (problems.length > 0) fail(problems.join('; '));
				return `alone: ${memoryText(aloneTally)} (3 turns in ${aloneS.toFixed(1)} s); all: ${memoryText(tally)}; ${turns} turns, one reply each, the model's answer word for word (${model.calls.length} model requests, ${executions.length} executions, ${toolRuns.length} tool runs); the service's answer to the tool's query for ${alone.contact} held ${othersListed} records of other contacts; talk took ${talkS.toFixed(1)} s`;
			},
		);
	} finally {
		if (workflowId) await client.deactivate(workflowId).catch(() => undefined);
		if (filtersBefore) await control.setAnswers({ inbound_filters: filtersBefore });
		await model.close();
	}
	return n8n;
}
