/**
 * A resume is taken only for the wait the execution is in now, in any process: a workflow whose
 * Reply and Wait asks again after each answer (a loop); the resume request made for its first
 * wait is replayed after the node waits again, and after an n8n restart (a fresh process holds
 * nothing of the first), and must get 403; the genuine answer to the wait it is in resumes it.
 * The requests are made as the trigger makes them (the token from the API key), so the check
 * needs no trigger: what it proves is the waiting node's side.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { RESUME_KEY_LABEL, deriveKey } from '../../../nodes/shared/credentialKeys';
import { resumeToken } from '../../../nodes/shared/replyAndWait/resume';
import { waitingKey } from '../../../nodes/shared/replyAndWait/waitingEntries';
import type { N8nClient } from '../../real-n8n/n8n';
import type { SandboxControl } from '../../real-n8n/sandbox';
import { waitFor } from '../../real-n8n/util';
import { ACTION_TYPE, CREDENTIAL_TYPE } from '../../support/constants';
import { inboundEnvelope } from '../../support/fixtures';

const ASK_AGAIN = 'Ask again';

export interface LoopingWait {
	workflowId: string;
	executionId: string;
	/** The first wait's resume request, as the trigger posted it (replayed later). */
	first: { url: string; body: string };
	/** The wait the execution is in now. */
	current: { url: string; waitId: string };
}

function fail(message: string): never {
	throw new Error(message);
}

async function post(url: string, body: string): Promise<{ status: number; text: string }> {
	const response = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body,
		signal: AbortSignal.timeout(30_000),
	});
	return { status: response.status, text: await response.text() };
}

/** The wait ids n8n saved with the waiting execution (the node's execute data). */
async function savedWaitIds(
	client: N8nClient,
	installDir: string,
	executionId: string,
): Promise<string[]> {
	const parse = (
		createRequire(join(installDir, 'node_modules', 'n8n', 'package.json'))('flatted') as {
			parse: (text: string) => unknown;
		}
	).parse;
	const execution = await client.request<{ data: string }>(
		'GET',
		`/rest/executions/${executionId}`,
	);
	const data = parse(execution.data) as {
		executionData?: { nodeExecutionStack?: Array<{ metadata?: Record<string, unknown> }> };
	};
	const ids = data.executionData?.nodeExecutionStack?.[0]?.metadata?.businessMessagingWaitIds;
	// Each wait id with its wait key (contact on number); a plain list before keys were kept.
	if (Array.isArray(ids)) return ids as string[];
	return ids !== null && typeof ids === 'object' ? Object.keys(ids) : [];
}

export class ResumeOwnWait {
	constructor(
		private readonly apiKey: string,
		private readonly contact: string,
		private readonly number: string,
		private readonly control: SandboxControl,
	) {}

	private async questions(): Promise<string[]> {
		// The loop's questions are its resume URLs (other workflows may write to the contact too).
		return (await this.control.state()).messages
			.filter((m) => m.to === this.contact && /\/webhook-waiting\//.test(m.text))
			.map((m) => m.text);
	}

	private request(url: string, executionId: string, waitId: string, text: string): string {
		const answer = inboundEnvelope({ from: this.contact, number: this.number, text });
		const key = waitingKey(this.contact, this.number);
		const token = resumeToken(
			deriveKey(this.apiKey, RESUME_KEY_LABEL),
			executionId,
			ASK_AGAIN,
			key,
			waitId,
			answer,
		);
		return JSON.stringify({ answer, wait: waitId, key, token });
	}

	private async nextQuestion(count: number): Promise<string> {
		const asked = await waitFor(
			`question ${count} of the looping Reply and Wait`,
			async () => {
				const all = await this.questions();
				return all.length >= count ? all : undefined;
			},
			30_000,
			500,
		);
		return asked[count - 1];
	}

	/** Before the restart: the loop asks, the first answer resumes it, it asks again (second wait). */
	async start(
		client: N8nClient,
		installDir: string,
		n8nUrl: string,
		credentialId: string,
		credentialName: string,
	): Promise<LoopingWait> {
		const path = `loop-${Date.now()}`;
		const workflow = await client.createWorkflow({
			name: 'Ask again and again (e2e)',
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
					name: ASK_AGAIN,
					type: ACTION_TYPE,
					typeVersion: 1,
					position: [240, 0],
					parameters: {
						resource: 'message',
						operation: 'replyAndWait',
						to: this.contact,
						from: this.number,
						// The question carries the resume URL: the check posts to it as the trigger would.
						text: '={{ $execution.resumeUrl }}',
						limitWaitTime: false,
						waitOptions: {},
					},
					credentials: { [CREDENTIAL_TYPE]: { id: credentialId, name: credentialName } },
				},
			],
			connections: {
				Webhook: { main: [[{ node: ASK_AGAIN, type: 'main', index: 0 }]] },
				[ASK_AGAIN]: { main: [[{ node: ASK_AGAIN, type: 'main', index: 0 }]] },
			},
			settings: { executionOrder: 'v1' },
		});
		const activated = await client.activateAndSettle(workflow.id);
		if (!activated.ok) fail(`activating the loop: ${activated.message}`);
		const before = (await this.questions()).length;
		const started = await post(`${n8nUrl}/webhook/${path}`, '{}');
		if (started.status !== 200) fail(`starting the loop: ${started.status} ${started.text}`);
		const firstUrl = await this.nextQuestion(before + 1);
		const executionId = new URL(firstUrl).pathname.split('/').pop() as string;
		const waitFirst = await waitFor(
			'the first wait id saved with the execution',
			async () => (await savedWaitIds(client, installDir, executionId))[0],
			30_000,
			500,
		);
		const first = { url: firstUrl, body: this.request(firstUrl, executionId, waitFirst, 'one') };
		const resumed = await post(first.url, first.body);
		if (resumed.status !== 200) fail(`the first answer: ${resumed.status} ${resumed.text}`);
		const secondUrl = await this.nextQuestion(before + 2);
		const waitSecond = await waitFor(
			'the second wait id saved with the execution',
			async () => {
				const ids = await savedWaitIds(client, installDir, executionId);
				return ids[0] && ids[0] !== waitFirst ? ids[0] : undefined;
			},
			30_000,
			500,
		);
		return {
			workflowId: workflow.id,
			executionId,
			first,
			current: { url: secondUrl, waitId: waitSecond },
		};
	}

	/** The first wait's request replayed (403 expected); `then` the genuine answer (resumes). */
	async replay(loop: LoopingWait): Promise<number> {
		return (await post(loop.first.url, loop.first.body)).status;
	}

	async answerCurrent(loop: LoopingWait): Promise<{ status: number; askedAgain: boolean }> {
		const before = (await this.questions()).length;
		const body = this.request(loop.current.url, loop.executionId, loop.current.waitId, 'two');
		const { status } = await post(loop.current.url, body);
		const askedAgain = await this.nextQuestion(before + 1).then(
			() => true,
			() => false,
		);
		return { status, askedAgain };
	}
}
