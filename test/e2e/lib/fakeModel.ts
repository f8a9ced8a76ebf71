/**
 * A deterministic OpenAI-compatible /v1/chat/completions on 127.0.0.1, for n8n's OpenAI Chat
 * Model (its credential's Base URL) in the AI agent checks. Stateless: a request without a tool
 * result asks for one call of the Business Messaging tool (limit 5); a request with one answers
 * answerFor(the user's prompt, how many records the tool returned). Every request is recorded
 * whole, so a check can say what the model was shown: the chat memory's earlier turns (assistant
 * messages), the tool's answer, and anything of another contact anywhere in it.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';

/** One request the model server answered. */
export interface ModelCall {
	/** The newest user message: the prompt of this turn (the memory's turns come before it). */
	prompt: string;
	/** The system message(s), joined. */
	system: string;
	/** The text of every assistant message the request holds (the memory's earlier replies). */
	assistantTexts: string[];
	tools: string[];
	/** The arguments the Business Messaging tool asks the model for (its $fromAI keys). */
	toolArguments: string[];
	/** The tool's answer in this request (its second turn), parsed. */
	toolResult?: unknown;
	/** The request body as n8n sent it. */
	raw: string;
	answer: string;
}

/** A token of the prompt: the answer to each contact's each turn is unique and recognisable. */
export const replyToken = (prompt: string) =>
	`ref-${createHash('sha256').update(prompt).digest('hex').slice(0, 12)}`;

/** The final answer the model server gives for a prompt (the checks look for it in the reply). */
export const answerFor = (prompt: string, read: number) =>
	`Thank you for your message. You wrote: "${prompt}". Earlier messages read: ${read}. ${replyToken(prompt)}`;

const text = (content: unknown): string =>
	typeof content === 'string'
		? content
		: Array.isArray(content)
			? content.map((part: { text?: string }) => part.text ?? '').join('')
			: '';

export async function deterministicModel(): Promise<{
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
			const messages = body.messages ?? [];
			const prompt = text(messages.filter((m) => m.role === 'user').at(-1)?.content);
			const tools = (body.tools ?? []).map((t) => t.function.name);
			// This turn's tool answer: after the prompt (a memory that kept tool steps has older ones).
			const lastUser = messages.map((m) => m.role).lastIndexOf('user');
			const toolMessage = messages.slice(lastUser + 1).find((m) => m.role === 'tool');
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
			calls.push({
				prompt,
				system: messages
					.filter((m) => m.role === 'system')
					.map((m) => text(m.content))
					.join('\n'),
				assistantTexts: messages
					.filter((m) => m.role === 'assistant')
					.map((m) => text(m.content))
					.filter((t) => t !== ''),
				tools,
				toolArguments,
				toolResult,
				raw,
				answer: message.content ?? '',
			});
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
