/**
 * The side-by-side anchor of answers-on-time (issue 43, goal 1): n8n's own Wait node (Resume: On
 * Webhook Call) under the same burst, in the same n8n. A Webhook → Respond to Webhook (the
 * execution's $execution.resumeUrl) → Wait → No Op workflow; `count` executions are started and
 * wait; then each is resumed at once by posting an answer-sized body to its resume URL. Per resume:
 * the time to n8n's 2xx; the burst: expression isolates n8n acquired per resume (its /metrics).
 * This is what an answer costs with nothing of this package in the way: the floor.
 */
import { randomUUID } from 'node:crypto';

import { log } from '../test/real-n8n/util';
import type { BenchEnvironment } from './lib/env';
import { quantile } from './lib/stats';
import { isolatesAcquired } from './webhooks';

export interface WaitAnchorRun {
	count: number;
	/** Per resume: ms to a 2xx, Infinity when none came (or not within `timeoutMs`). */
	resume_ms: number[];
	/** Per resume: ms to n8n's answer, however long (Infinity: no answer or not 2xx). */
	resume_raw_ms: number[];
	on_time: number;
	p50_ms: number;
	p95_ms: number;
	/** Of resume_raw_ms: comparable with an answer's delivery start → its execution resumed. */
	raw_p50_ms: number;
	isolates_per_resume: number | null;
}

/** ms to a 2xx (Infinity: none within 120 s, or not 2xx). */
async function timed(url: string, body: string): Promise<number> {
	const started = Date.now();
	try {
		const response = await fetch(url, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body,
			signal: AbortSignal.timeout(120_000),
		});
		await response.text();
		return response.ok ? Date.now() - started : Number.POSITIVE_INFINITY;
	} catch {
		return Number.POSITIVE_INFINITY;
	}
}

export async function runWaitAnchor(
	env: BenchEnvironment,
	count: number,
	timeoutMs: number,
	/** How many executions of the workflow match an SQL condition (n8n's database). */
	executions: (workflowId: string, where: string) => number,
): Promise<WaitAnchorRun> {
	const path = `wait-anchor-${randomUUID()}`;
	const workflow = await env.client.createWorkflow({
		name: 'bench: Wait node anchor',
		nodes: [
			{
				id: randomUUID(),
				name: 'Webhook',
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2,
				position: [0, 0],
				webhookId: randomUUID(),
				parameters: { httpMethod: 'POST', path, responseMode: 'responseNode', options: {} },
			},
			{
				id: randomUUID(),
				name: 'Resume URL',
				type: 'n8n-nodes-base.respondToWebhook',
				typeVersion: 1.1,
				position: [220, 0],
				parameters: {
					respondWith: 'json',
					responseBody: '={{ JSON.stringify({ resumeUrl: $execution.resumeUrl }) }}',
					options: {},
				},
			},
			{
				id: randomUUID(),
				name: 'Wait',
				type: 'n8n-nodes-base.wait',
				typeVersion: 1.1,
				position: [440, 0],
				webhookId: randomUUID(),
				parameters: { resume: 'webhook', httpMethod: 'POST', options: {} },
			},
			{
				id: randomUUID(),
				name: 'Done',
				type: 'n8n-nodes-base.noOp',
				typeVersion: 1,
				position: [660, 0],
				parameters: {},
			},
		],
		connections: {
			Webhook: { main: [[{ node: 'Resume URL', type: 'main', index: 0 }]] },
			'Resume URL': { main: [[{ node: 'Wait', type: 'main', index: 0 }]] },
			Wait: { main: [[{ node: 'Done', type: 'main', index: 0 }]] },
		},
	} as never);
	const outcome = await env.client.activateAndSettle(workflow.id);
	if (!outcome.ok) throw new Error(`activating the Wait anchor failed: ${outcome.message}`);
	try {
		const urls: string[] = [];
		for (let i = 0; i < count; i += 10) {
			const batch = await Promise.all(
				Array.from({ length: Math.min(10, count - i) }, async () => {
					const response = await fetch(`${env.n8n.url}/webhook/${path}`, {
						method: 'POST',
						headers: { 'content-type': 'application/json' },
						body: '{}',
						signal: AbortSignal.timeout(60_000),
					});
					return ((await response.json()) as { resumeUrl?: string }).resumeUrl ?? '';
				}),
			);
			urls.push(...batch);
		}
		if (urls.some((url) => !url.startsWith('http')))
			throw new Error(
				`the Wait anchor gave no resume URL: ${urls.find((u) => !u.startsWith('http'))}`,
			);
		const waiting = () => executions(workflow.id, `status = 'waiting'`);
		const unfinished = () => executions(workflow.id, `status IN ('new', 'running', 'waiting')`);
		for (let waited = 0; waiting() < count && waited < 60_000; waited += 500)
			await new Promise((resolve) => setTimeout(resolve, 500));
		await new Promise((resolve) => setTimeout(resolve, 2000));
		const body = (i: number) =>
			JSON.stringify({
				answer: {
					event: 'message.inbound',
					data: { from: `+3360000${i}`, number: '1', text: `W-${i}`, type: 'text' },
				},
			});
		const isolatesStart = await isolatesAcquired(env.n8n.url).catch(() => null);
		const rawMs = await Promise.all(urls.map(async (url, i) => await timed(url, body(i))));
		const resumeMs = rawMs.map((ms) => (ms <= timeoutMs ? ms : Number.POSITIVE_INFINITY));
		for (let waited = 0; unfinished() > 0 && waited < 120_000; waited += 500)
			await new Promise((resolve) => setTimeout(resolve, 500));
		const isolatesEnd = await isolatesAcquired(env.n8n.url).catch(() => null);
		const run: WaitAnchorRun = {
			count,
			resume_ms: resumeMs,
			resume_raw_ms: rawMs,
			raw_p50_ms: quantile(rawMs, 0.5),
			on_time: resumeMs.filter(Number.isFinite).length,
			p50_ms: quantile(resumeMs, 0.5),
			p95_ms: quantile(resumeMs, 0.95),
			isolates_per_resume:
				isolatesStart === null || isolatesEnd === null
					? null
					: (isolatesEnd - isolatesStart) / count,
		};
		log(
			`  Wait node anchor: ${run.on_time}/${count} resumes 2xx within ${timeoutMs / 1000} s, resume → 2xx p50 ${run.raw_p50_ms} ms however long; ${run.isolates_per_resume?.toFixed(2) ?? 'n/a'} isolates per resume`,
		);
		return run;
	} finally {
		await env.client.deactivate(workflow.id).catch(() => undefined);
	}
}
