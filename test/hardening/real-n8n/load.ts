/**
 * The load of the hardening run, shared by test/hardening/real-n8n/run.ts (one n8n) and
 * test/queue (n8n in queue mode behind a balancer): N genuine events, each delivered by the
 * sandbox (the service: signs, posts to its registered webhook URL, waits at most 8 s), with a
 * tampered event (6 kinds in turn) posted directly to `url` after every `tamperedEvery`-th
 * genuine one, `concurrency` requests in flight. With `media`, each genuine event carries a file
 * the sandbox hosts (its media_url), for the trigger's Download Media.
 */
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';

import type { SandboxControl } from '../../real-n8n/sandbox';
import { errorText, log } from '../../real-n8n/util';
import { inboundEnvelope } from '../../support/fixtures';
import { signBody } from '../../support/signature';

export type Tamper =
	| 'flipped byte'
	| 'wrong secret'
	| 'no signature'
	| 'truncated signature'
	| 're-serialised body'
	| 'signature sent twice';
export const TAMPERS: Tamper[] = [
	'flipped byte',
	'wrong secret',
	'no signature',
	'truncated signature',
	're-serialised body',
	'signature sent twice',
];

export interface Outcome {
	kind: 'genuine' | 'tampered';
	tamper?: Tamper;
	status: number | null;
	ms: number;
	waId?: string;
	reason?: string | null;
	/** The media file a genuine event carried (LoadOptions.media): its SHA-256 and size. */
	media?: { sha256: string; bytes: number };
}

/** A file an inbound event carries, as the sandbox's `POST /_sandbox/inbound` takes it. */
export interface MediaFile {
	mime: string;
	data: Buffer;
	filename: string;
}

export function fileDigest(data: Buffer): { sha256: string; bytes: number } {
	return { sha256: createHash('sha256').update(data).digest('hex'), bytes: data.length };
}

export function percentile(sorted: number[], p: number): number {
	if (sorted.length === 0) return Number.NaN;
	return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function tamperedRequest(
	i: number,
	tamper: Tamper,
	secret: string,
	number: string,
): { body: string; headers: Record<string, string> } {
	const event = inboundEnvelope({
		from: '+15557650000',
		contact_name: 'Mallory',
		number,
		wa_message_id: `wamid.TAMPERED-${i}`,
		text: `tampered ${i}`,
	});
	const body = JSON.stringify(event);
	const good = signBody(body, secret);
	const headers: Record<string, string> = { 'content-type': 'application/json' };
	switch (tamper) {
		case 'flipped byte': {
			const at = body.indexOf('tampered');
			return {
				body: `${body.slice(0, at)}T${body.slice(at + 1)}`,
				headers: { ...headers, 'x-service-signature': good },
			};
		}
		case 'wrong secret':
			return { body, headers: { ...headers, 'x-service-signature': signBody(body, `${secret}x`) } };
		case 'no signature':
			return { body, headers };
		case 'truncated signature':
			return { body, headers: { ...headers, 'x-service-signature': good.slice(0, -2) } };
		case 're-serialised body':
			return {
				body: JSON.stringify(event, null, 2),
				headers: { ...headers, 'x-service-signature': good },
			};
		case 'signature sent twice':
			return { body, headers: { ...headers, 'x-service-signature': `${good}, ${good}` } };
	}
}

export interface LoadOptions {
	control: SandboxControl;
	/** Where tampered events are posted (the trigger's production URL, or the balancer's). */
	url: string;
	secret: string;
	number: string;
	events: number;
	concurrency: number;
	tamperedEvery: number;
	/** The file the index-th genuine event carries (hosted by the sandbox's media host); none without. */
	media?: (index: number) => MediaFile;
}

export interface LoadRun {
	outcomes: Outcome[];
	sendSeconds: number;
	loadavgBefore: number[];
	loadavgAfter: number[];
}

export async function fireLoad(options: LoadOptions): Promise<LoadRun> {
	const { control, url, secret, number } = options;
	const tasks: Array<{ kind: 'genuine' } | { kind: 'tampered'; i: number; tamper: Tamper }> = [];
	let tamperedCount = 0;
	for (let g = 0; g < options.events; g++) {
		tasks.push({ kind: 'genuine' });
		if ((g + 1) % options.tamperedEvery === 0) {
			tasks.push({
				kind: 'tampered',
				i: tamperedCount,
				tamper: TAMPERS[tamperedCount % TAMPERS.length],
			});
			tamperedCount++;
		}
	}

	const outcomes: Outcome[] = [];
	let next = 0;
	const started = Date.now();
	const loadavgBefore = loadavg();
	const worker = async () => {
		for (;;) {
			const index = next++;
			if (index >= tasks.length) return;
			const task = tasks[index];
			const t0 = performance.now();
			if (task.kind === 'genuine') {
				const file = options.media?.(index);
				try {
					const sent = await control.call<{
						record: { wa_message_id: string };
						delivery: {
							delivered: boolean;
							status: number | null;
							duration_ms: number | null;
							reason: string | null;
						};
					}>('POST', '/inbound', {
						from: `+1555${String(1000000 + (index % 8999999)).padStart(7, '0')}`,
						contact_name: 'Load',
						number,
						text: `event ${index}`,
						...(file && {
							media: {
								mime: file.mime,
								data_base64: file.data.toString('base64'),
								filename: file.filename,
							},
						}),
					});
					outcomes.push({
						kind: 'genuine',
						status: sent.delivery.delivered ? (sent.delivery.status ?? 0) : sent.delivery.status,
						ms: sent.delivery.duration_ms ?? performance.now() - t0,
						waId: sent.record.wa_message_id,
						reason: sent.delivery.reason,
						...(file && { media: fileDigest(file.data) }),
					});
				} catch (error) {
					outcomes.push({
						kind: 'genuine',
						status: null,
						ms: performance.now() - t0,
						reason: errorText(error),
					});
				}
			} else {
				const request = tamperedRequest(task.i, task.tamper, secret, number);
				try {
					const response = await fetch(url, {
						method: 'POST',
						headers: request.headers,
						body: request.body,
						signal: AbortSignal.timeout(30_000),
					});
					await response.text();
					outcomes.push({
						kind: 'tampered',
						tamper: task.tamper,
						status: response.status,
						ms: performance.now() - t0,
						waId: `wamid.TAMPERED-${task.i}`,
					});
				} catch (error) {
					outcomes.push({
						kind: 'tampered',
						tamper: task.tamper,
						status: null,
						ms: performance.now() - t0,
						reason: errorText(error),
					});
				}
			}
			if (outcomes.length % 500 === 0)
				log(
					`  ${outcomes.length}/${tasks.length} sent (${((Date.now() - started) / 1000).toFixed(0)} s)`,
				);
		}
	};
	await Promise.all(Array.from({ length: options.concurrency }, worker));
	return {
		outcomes,
		sendSeconds: (Date.now() - started) / 1000,
		loadavgBefore,
		loadavgAfter: loadavg(),
	};
}
