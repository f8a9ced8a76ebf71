/**
 * Benchmark 4: memory for a large media file, with n8n's filesystem binary data mode.
 * The sandbox hosts a generated file (POST /_sandbox/inbound media.size_bytes) and each run
 * downloads it once into n8n's binary data:
 *   download = Manual Trigger → Business Messaging: Media → Download (by media id),
 *   trigger  = Business Messaging Trigger with Download Media, fed by an inbound event,
 *   http     = Manual Trigger → HTTP Request GET <the signed URL> (Response Format: File).
 * Memory: VmRSS of the n8n process sampled every 50 ms during the run, against the median over
 * the second before it. Runs rotate (each repetition starts with the next kind).
 */
import { randomUUID } from 'node:crypto';

import { log, sleep, waitFor } from '../test/real-n8n/util';
import type { BenchEnvironment } from './lib/env';
import { awaitExecution, chain, MANUAL_TRIGGER, node, readExecution, runManually } from './lib/n8n';
import { baselineRss, RssSampler } from './lib/rss';
import { median } from './lib/stats';
import {
	ACTION_TYPE,
	CREDENTIAL_TYPE,
	TRIGGER_NAME,
	TRIGGER_TYPE,
} from '../test/support/constants';

export type MediaKind = 'download' | 'trigger' | 'http';
export const MEDIA_KINDS: MediaKind[] = ['download', 'trigger', 'http'];

export interface MediaRun {
	kind: MediaKind;
	rep: number;
	baseline_bytes: number;
	peak_bytes: number;
	growth_bytes: number;
	/** growth / file size */
	growth_ratio: number;
	seconds: number;
	stored_bytes: number;
	samples: number;
}

export interface MediaResult {
	size_bytes: number;
	reps: number;
	runs: MediaRun[];
	/** Median growth / file size per kind. */
	growth_ratio: Record<MediaKind, number>;
	growth_ratio_max: Record<MediaKind, number>;
	growth_bytes: Record<MediaKind, number>;
}

const NODE_NAME: Record<MediaKind, string> = {
	download: 'Download',
	trigger: TRIGGER_NAME,
	http: 'HTTP Request',
};

export async function runMediaBench(
	env: BenchEnvironment,
	options: { sizeBytes: number; reps: number },
): Promise<MediaResult> {
	const { client, control, credential } = env;
	const pid = env.n8n.child.pid;
	if (pid === undefined) throw new Error('no pid for n8n');
	const number = env.sandbox.numbers[0].phone_number_id;
	const credentials = { [CREDENTIAL_TYPE]: { id: credential.id, name: credential.name } };
	const inbound = () =>
		control.call<{
			record: { media_id: string };
			delivery: { delivered: boolean; reason: string | null };
		}>('POST', '/inbound', {
			from: '+15559876543',
			contact_name: 'Bench',
			number,
			text: '',
			media: { mime: 'video/mp4', size_bytes: options.sizeBytes, filename: 'bench.mp4' },
		});

	const download = await client.createWorkflow({
		name: 'bench: Media → Download',
		nodes: [
			{ ...MANUAL_TRIGGER },
			node(
				NODE_NAME.download,
				ACTION_TYPE,
				1,
				{
					resource: 'media',
					operation: 'download',
					media: 'set below',
					binaryPropertyName: 'data',
				},
				220,
				{
					credentials,
				},
			),
		],
		connections: chain(MANUAL_TRIGGER.name, NODE_NAME.download),
	});
	const trigger = await client.createWorkflow({
		name: 'bench: Trigger with Download Media',
		nodes: [
			node(
				NODE_NAME.trigger,
				TRIGGER_TYPE,
				1,
				{
					registration: 'automatic',
					events: ['message.inbound'],
					options: { downloadMedia: true },
				},
				0,
				{
					webhookId: randomUUID(),
					credentials,
				},
			),
		],
		connections: {},
	});
	const activated = await client.activateAndSettle(trigger.id);
	if (!activated.ok) throw new Error(`activating the media trigger failed: ${activated.message}`);
	await sleep(2000);

	// The file the download and http runs fetch (the trigger runs each get their own event).
	const { record } = await inbound();
	const mediaId = record.media_id;
	await client.request('PATCH', `/rest/workflows/${download.id}`, {
		versionId: (await client.getWorkflow(download.id)).versionId,
		nodes: download.nodes.map((n) =>
			n.name === NODE_NAME.download ? { ...n, parameters: { ...n.parameters, media: mediaId } } : n,
		),
		connections: chain(MANUAL_TRIGGER.name, NODE_NAME.download),
	});

	/** The signed URL the service redirects to, fresh (it expires after 5 minutes). */
	const signedUrl = async (): Promise<string> => {
		const response = await fetch(`${env.sandbox.baseUrl}/v1/media/${mediaId}`, {
			headers: { authorization: `Bearer ${env.sandbox.keys.all}` },
			redirect: 'manual',
		});
		const location = response.headers.get('location');
		if (response.status !== 302 || !location)
			throw new Error(`GET /v1/media/${mediaId} -> ${response.status}`);
		return location;
	};

	/** Starts the run; resolves to the finished execution's id. */
	const start: Record<MediaKind, () => Promise<string>> = {
		download: async () => {
			const id = await runManually(client, download.id, MANUAL_TRIGGER.name);
			await awaitExecution(client, id);
			return id;
		},
		http: async () => {
			const workflow = await client.createWorkflow({
				name: `bench: HTTP Request file ${new Date().toISOString()}`,
				nodes: [
					{ ...MANUAL_TRIGGER },
					node(
						NODE_NAME.http,
						'n8n-nodes-base.httpRequest',
						4.2,
						{
							method: 'GET',
							url: await signedUrl(),
							options: {
								response: { response: { responseFormat: 'file', outputPropertyName: 'data' } },
							},
						},
						220,
					),
				],
				connections: chain(MANUAL_TRIGGER.name, NODE_NAME.http),
			});
			const id = await runManually(client, workflow.id, MANUAL_TRIGGER.name);
			await awaitExecution(client, id);
			return id;
		},
		trigger: async () => {
			const seen = new Set((await client.executions(trigger.id)).map((e) => e.id));
			const sent = await inbound();
			if (!sent.delivery.delivered)
				throw new Error(`the event was not delivered: ${sent.delivery.reason}`);
			const execution = await waitFor(
				'the trigger execution',
				async () => (await client.executions(trigger.id)).find((e) => !seen.has(e.id)),
				300_000,
				100,
			);
			await awaitExecution(client, execution.id);
			return execution.id;
		},
	};

	const runs: MediaRun[] = [];
	const runOne = async (kind: MediaKind, rep: number) => {
		await sleep(1500);
		const baseline = await baselineRss(pid);
		const sampler = new RssSampler(pid);
		sampler.start();
		const started = Date.now();
		const executionId = await start[kind]();
		const seconds = (Date.now() - started) / 1000;
		await sleep(300);
		const { peak, samples } = sampler.stop();
		const execution = await readExecution(client, env.parseExecutionData, executionId);
		const binary = execution.nodeBinary[NODE_NAME[kind]]?.data;
		const stored = binary?.bytes ?? Number.NaN;
		if (execution.status !== 'success' || stored !== options.sizeBytes) {
			throw new Error(
				`${kind}: execution ${executionId} ended ${execution.status}, file of ${stored} bytes instead of ${options.sizeBytes}: ${JSON.stringify(execution.error ?? binary ?? '').slice(0, 400)}`,
			);
		}
		const run: MediaRun = {
			kind,
			rep,
			baseline_bytes: baseline,
			peak_bytes: peak,
			growth_bytes: Math.max(0, peak - baseline),
			growth_ratio: Math.max(0, peak - baseline) / options.sizeBytes,
			seconds,
			stored_bytes: stored,
			samples,
		};
		log(
			`  media ${kind.padEnd(8)} rep ${rep}: RSS ${(baseline / 2 ** 20).toFixed(0)} -> peak ${(peak / 2 ** 20).toFixed(0)} MiB (+${(run.growth_bytes / 2 ** 20).toFixed(0)} MiB = ${(run.growth_ratio * 100).toFixed(1)}% of the file), ${seconds.toFixed(1)} s`,
		);
		runs.push(run);
	};

	for (let rep = 1; rep <= options.reps; rep++) {
		const order = MEDIA_KINDS.map((_, i) => MEDIA_KINDS[(i + rep - 1) % MEDIA_KINDS.length]);
		for (const kind of order) await runOne(kind, rep);
	}
	await client.deactivate(trigger.id);

	const per = <T>(f: (kind: MediaKind) => T) =>
		Object.fromEntries(MEDIA_KINDS.map((k) => [k, f(k)])) as Record<MediaKind, T>;
	const of = (kind: MediaKind) => runs.filter((r) => r.kind === kind);
	return {
		size_bytes: options.sizeBytes,
		reps: options.reps,
		runs,
		growth_ratio: per((k) => median(of(k).map((r) => r.growth_ratio))),
		growth_ratio_max: per((k) => Math.max(...of(k).map((r) => r.growth_ratio))),
		growth_bytes: per((k) => median(of(k).map((r) => r.growth_bytes))),
	};
}
