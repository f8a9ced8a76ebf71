/**
 * Hardening against a real n8n (npm run test:load → scripts/load.sh):
 *
 *   secrets  every operation behind the trigger (good key, faults injected) and behind n8n's Webhook
 *            node (revoked key, key without scopes, one node that stops the execution), tampered
 *            events, the credential Test button; afterwards the stopped n8n's SQLite database
 *            (every decoded value of every table, and the raw bytes of its files), the rest of its
 *            user folder and its log are searched for the API keys and the signing secrets.
 *   load     N signed events (default 5,000) at concurrency C (default 32) delivered by the sandbox
 *            (the service: signs, posts, waits at most 8 s) into an active trigger workflow, with
 *            tampered events interleaved (1 in K, default 10) posted directly. Measured: sent,
 *            answered 2xx, rejected, executions recorded (REST and database), lost, duplicated,
 *            answer-time p50/p99/max. Each execution's event id is matched to the events accepted.
 *   media    (not in the default phases) the load with Download Media on: M signed events (default
 *            2,500) at concurrency D (default 32), each carrying a small file the sandbox hosts,
 *            tampered events interleaved, the catch-up every 10 s. Every event answered 2xx must
 *            have exactly one execution whose item has media_download.downloaded true and the
 *            stored file byte for byte; every other one must have run once (recovered by the
 *            catch-up, or answered after the service's 8 s); none twice; every tampered one refused.
 *
 *   ts-node --transpile-only test/hardening/real-n8n/run.ts --tarball <pack.tgz> [--line 2]
 *     [--events 5000] [--concurrency 32] [--tampered-every 10] [--phases secrets,load,media]
 *     [--media-events 2500] [--media-concurrency 32] [--out dir]
 *
 * Exit code 0 only when every check holds. Summary: <out>/hardening-real-n8n.json.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	rmSync,
	statSync,
	writeFileSync,
} from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

import {
	installN8n,
	installPackage,
	LINES,
	N8nClient,
	N8nProcess,
	type Line,
	type SavedWorkflow,
} from '../../real-n8n/n8n';
import { CREDENTIAL_TYPE, TRIGGER_NAME } from '../../support/constants';
import { inboundEnvelope, WRONG_SECRET } from '../../support/fixtures';
import { signBody } from '../../support/signature';
import { launchSandbox, SandboxControl, type Sandbox } from '../../real-n8n/sandbox';
import { errorText, log, sleep, waitFor } from '../../real-n8n/util';
import { fireLoad, percentile, type MediaFile, type Outcome } from './load';
import {
	ERRORS_WEBHOOK_PATH,
	loadWorkflow,
	MEDIA_LOAD_CATCH_UP_SECONDS,
	mediaLoadWorkflow,
	secretsErrorsWorkflow,
	secretsTriggerWorkflow,
} from './workflows';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2)
	args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const line = Number(args.get('line') ?? '2') as Line;
const tarball = args.get('tarball');
const outDir = resolve(args.get('out') ?? join(tmpdir(), 'business-messaging-hardening'));
const EVENTS = Number(args.get('events') ?? '5000');
const CONCURRENCY = Number(args.get('concurrency') ?? '32');
const TAMPERED_EVERY = Number(args.get('tampered-every') ?? '10');
const MEDIA_EVENTS = Number(args.get('media-events') ?? '2500');
const MEDIA_CONCURRENCY = Number(args.get('media-concurrency') ?? '32');
const phases = new Set((args.get('phases') ?? 'secrets,load').split(','));
const keep = process.env.HARDENING_KEEP === '1';
if (!tarball) throw new Error('--tarball <npm pack output> is required');

/** What a user pastes into the credential for a console-registered webhook. */
const CREDENTIAL_SECRET = `whsec_${'ba5eba11'.repeat(8)}`;
const DELIVERY_TIMEOUT_MS = 8000;

interface Check {
	name: string;
	ok: boolean;
	detail: string;
}
const checks: Check[] = [];
function check(name: string, ok: boolean, detail: string): void {
	checks.push({ name, ok, detail });
	log(`  ${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
}

const summary: Record<string, unknown> = {};

// ---------------------------------------------------------------------------------------------

/** Files under `dir` (skipping the installed package), for the byte search of the user folder. */
function filesUnder(dir: string, skip: string[]): string[] {
	const out: string[] = [];
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		const path = join(dir, entry.name);
		if (skip.some((s) => path.startsWith(s))) continue;
		if (entry.isDirectory()) out.push(...filesUnder(path, skip));
		else if (entry.isFile()) out.push(path);
	}
	return out;
}

// ---------------------------------------------------------------------------------------------

interface Context {
	n8n: N8nProcess;
	client: N8nClient;
	sandbox: Sandbox;
	control: SandboxControl;
	credentials: {
		good: { id: string; name: string };
		revoked: { id: string; name: string };
		noScopes: { id: string; name: string };
	};
	noScopesKey: string;
	/** Every signing secret the sandbox issued during the run. */
	webhookSecrets: Set<string>;
	/** Where the database held the active trigger's secret, per scan while active. */
	liveSecretPlaces: Array<{ label: string; places: string[] }>;
	installation?: { dir: string; nodeBin: string };
	userFolder?: string;
	workflowIds: { secretsTrigger?: string; secretsErrors?: string; load?: string; media?: string };
}

function productionUrl(n8n: N8nProcess, workflow: SavedWorkflow): string {
	const trigger = workflow.nodes.find((node) => node.name === TRIGGER_NAME);
	return `${n8n.url}/webhook/${String(trigger?.webhookId)}/webhook`;
}

async function activateTrigger(ctx: Context, workflow: SavedWorkflow): Promise<string> {
	const outcome = await ctx.client.activateAndSettle(workflow.id);
	if (!outcome.ok) throw new Error(`activating "${workflow.name}" failed: ${outcome.message}`);
	const url = productionUrl(ctx.n8n, workflow);
	await waitFor(
		`the sandbox webhook to point at ${url}`,
		() => ctx.sandbox.state().webhook.url === url,
		30_000,
	);
	const secret = ctx.sandbox.state().webhook.secret;
	if (secret) ctx.webhookSecrets.add(secret);
	return url;
}

/** The workflow's executions n8n counts (only those in `status` when given). */
async function executionCount(
	client: N8nClient,
	workflowId: string,
	status?: string[],
): Promise<number> {
	const filter = encodeURIComponent(JSON.stringify({ workflowId, ...(status && { status }) }));
	const data = await client.request<{ count: number }>(
		'GET',
		`/rest/executions?limit=1&filter=${filter}`,
	);
	return data.count;
}

async function settledCount(
	client: N8nClient,
	workflowId: string,
	expected: number,
	timeoutMs: number,
): Promise<number> {
	const deadline = Date.now() + timeoutMs;
	let last = -1;
	let since = Date.now();
	for (;;) {
		const count = await executionCount(client, workflowId);
		if (count !== last) {
			last = count;
			since = Date.now();
		}
		if (count >= expected && Date.now() - since > 3000) return count;
		if (Date.now() > deadline && Date.now() - since > 5000) return count;
		await sleep(500);
	}
}

// ---- secrets phase ---------------------------------------------------------------------------

async function secretsPhase(ctx: Context): Promise<void> {
	log(
		'== secrets: every operation behind the trigger and behind a Webhook node, faults, failing keys',
	);
	const { client, control, sandbox } = ctx;
	const number = sandbox.numbers[0].phone_number_id;

	const triggerWorkflow = await client.createWorkflow(secretsTriggerWorkflow(ctx.credentials.good));
	ctx.workflowIds.secretsTrigger = triggerWorkflow.id;
	const url = await activateTrigger(ctx, triggerWorkflow);
	await sleep(1000);

	let expectedTrigger = 0;
	const text = await control.inbound({
		from: '+33612345678',
		contact_name: 'Ada',
		number,
		text: 'Hello',
	});
	expectedTrigger += text.delivery.delivered ? 1 : 0;
	const media = await control.call<{ delivery: { delivered: boolean } }>('POST', '/inbound', {
		from: '+33612345678',
		contact_name: 'Ada',
		number,
		media: {
			mime: 'image/png',
			data_base64: Buffer.from('not really a png').toString('base64'),
			filename: 'photo.png',
		},
	});
	expectedTrigger += media.delivery.delivered ? 1 : 0;
	await settledCount(client, triggerWorkflow.id, expectedTrigger, 60_000);
	const reply = sandbox.state().messages[0];
	if (reply) {
		const status = await control.status(reply.id, 'delivered');
		expectedTrigger += status.delivery.delivered ? 1 : 0;
	}
	await control.echo({ to: '+33612345678', number, text: 'from the app (not selected)' });
	// Faults on the reads, a reset on the reply: errors of every kind end up in the execution data.
	for (const fault of [
		{ kind: 'status_500', count: 4, path_prefix: '/v1/ping' },
		{ kind: 'reset', count: 4, path_prefix: '/v1/messages/msg_' },
		{ kind: 'reset', count: 1, path_prefix: '/v1/messages/reply' },
		{ kind: 'malformed_json', count: 1, path_prefix: '/v1/logs' },
		{ kind: 'status_429', count: 1, path_prefix: '/v1/console/keys', retry_after_seconds: 120 },
	]) {
		await control.call('POST', '/faults', fault);
	}
	const faulted = await control.inbound({
		from: '+33612345678',
		contact_name: 'Ada',
		number,
		text: 'Under faults',
	});
	expectedTrigger += faulted.delivery.delivered ? 1 : 0;

	// Tampered events: 401, nothing stored.
	const secret = sandbox.state().webhook.secret ?? '';
	const body = JSON.stringify(
		inboundEnvelope({
			from: '+1',
			contact_name: 'x',
			number,
			wa_message_id: 'wamid.TAMPERED-SECRETS',
			text: 'x',
		}),
	);
	const tamperedStatuses: number[] = [];
	for (const signature of [signBody(body, WRONG_SECRET), signBody(`${body} `, secret), '']) {
		const response = await fetch(url, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'x-service-signature': signature },
			body,
		});
		tamperedStatuses.push(response.status);
		await response.text();
	}

	// A genuine event posted directly: n8n's answer is the trigger's {received: true} (not n8n's
	// default body), sent once the execution is stored.
	const genuineBody = JSON.stringify(
		inboundEnvelope({
			from: '+15557650001',
			contact_name: 'Direct',
			number,
			wa_message_id: 'wamid.DIRECT-GENUINE-1',
			text: 'direct',
		}),
	);
	const direct = await fetch(url, {
		method: 'POST',
		headers: {
			'content-type': 'application/json',
			'x-service-signature': signBody(genuineBody, secret),
		},
		body: genuineBody,
	});
	const directAnswer = {
		status: direct.status,
		contentType: direct.headers.get('content-type'),
		body: await direct.text(),
	};
	expectedTrigger += direct.status === 200 ? 1 : 0;
	check(
		'trigger answer: a genuine event gets 200 {"received":true} as JSON',
		direct.status === 200 &&
			/json/.test(directAnswer.contentType ?? '') &&
			directAnswer.body.replace(/\s/g, '') === '{"received":true}',
		JSON.stringify(directAnswer),
	);

	const errorsWorkflow = await client.createWorkflow(
		secretsErrorsWorkflow(ctx.credentials.revoked, ctx.credentials.noScopes),
	);
	ctx.workflowIds.secretsErrors = errorsWorkflow.id;
	const published = await client.activateAndSettle(errorsWorkflow.id);
	if (!published.ok) throw new Error(`activating the errors workflow failed: ${published.message}`);
	await sleep(1000);
	const hook = await fetch(`${ctx.n8n.url}/webhook/${ERRORS_WEBHOOK_PATH}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: '{"go":true}',
	});
	await hook.text();

	// The credential's Test button with a revoked key, as the editor calls it.
	const credentialTest = await client.testCredential({
		id: ctx.credentials.revoked.id,
		name: ctx.credentials.revoked.name,
		type: CREDENTIAL_TYPE,
		data: {
			apiKey: sandbox.keys.revoked,
			baseUrl: sandbox.baseUrl,
			webhookSecret: CREDENTIAL_SECRET,
		},
	});

	const triggerRuns = await settledCount(client, triggerWorkflow.id, expectedTrigger, 90_000);
	const errorRuns = await settledCount(client, errorsWorkflow.id, 1, 60_000);
	scanWhileActive(ctx, 'secrets workflow, after its executions');

	// The scenario really exercised the error paths (else the search below proves little).
	const outputs = [];
	for (const workflowId of [triggerWorkflow.id, errorsWorkflow.id]) {
		for (const execution of await client.executions(workflowId))
			outputs.push(await client.executionOutput(execution.id));
	}
	const errorItems = outputs
		.flatMap((o) => Object.values(o.nodes).flat())
		.filter((item) => typeof (item as { error?: unknown }).error === 'string');
	const stopped = outputs.filter((o) => o.error !== undefined && o.error !== null).length;
	const exchanged = JSON.stringify(outputs);
	const leakedInRest = [
		sandbox.keys.all,
		sandbox.keys.revoked,
		ctx.noScopesKey,
		CREDENTIAL_SECRET,
		...ctx.webhookSecrets,
	].filter((s) => exchanged.includes(s));

	check(
		'secrets: the scenario ran',
		triggerRuns === expectedTrigger && errorRuns === 1 && errorItems.length >= 10 && stopped >= 1,
		`trigger workflow ${triggerRuns}/${expectedTrigger} executions, errors workflow ${errorRuns}/1; ${errorItems.length} error items, ${stopped} execution(s) stopped by an error`,
	);
	check(
		'secrets: tampered events refused',
		tamperedStatuses.every((s) => s === 401),
		`statuses ${tamperedStatuses.join(', ')}`,
	);
	check(
		'secrets: credential test message has no key',
		credentialTest.status === 'Error' && !credentialTest.message.includes(sandbox.keys.revoked),
		`"${credentialTest.message}"`,
	);
	check(
		'secrets: execution data over REST has no key or secret',
		leakedInRest.length === 0,
		leakedInRest.length
			? `${leakedInRest.length} secret value(s) found`
			: `${outputs.length} executions read`,
	);
	summary.secrets = {
		triggerExecutions: triggerRuns,
		errorExecutions: errorRuns,
		errorItems: errorItems.length,
		stoppedExecutions: stopped,
		tamperedStatuses,
		credentialTest,
	};

	await client.deactivate(errorsWorkflow.id);
	await client.deactivate(triggerWorkflow.id);
	await waitFor(
		'the sandbox webhook to be removed',
		() => !sandbox.state().webhook.configured,
		30_000,
	);
}

// ---- load phase ------------------------------------------------------------------------------

async function loadPhase(ctx: Context): Promise<void> {
	log(
		`== load: ${EVENTS} signed events at concurrency ${CONCURRENCY}, 1 tampered in ${TAMPERED_EVERY}`,
	);
	const { client, sandbox, control } = ctx;
	const number = sandbox.numbers[0].phone_number_id;
	const workflow = await client.createWorkflow(loadWorkflow(ctx.credentials.good));
	ctx.workflowIds.load = workflow.id;
	const url = await activateTrigger(ctx, workflow);
	await sleep(1500);
	const secret = sandbox.state().webhook.secret ?? '';
	const before = await executionCount(client, workflow.id);

	const {
		outcomes,
		sendSeconds,
		loadavgBefore: load0,
		loadavgAfter: load1,
	} = await fireLoad({
		control,
		url,
		secret,
		number,
		events: EVENTS,
		concurrency: CONCURRENCY,
		tamperedEvery: TAMPERED_EVERY,
	});

	const genuine = outcomes.filter((o) => o.kind === 'genuine');
	const tampered = outcomes.filter((o) => o.kind === 'tampered');
	const accepted = genuine.filter((o) => o.status !== null && o.status >= 200 && o.status < 300);
	const acceptedInTime = accepted.filter((o) => o.ms <= DELIVERY_TIMEOUT_MS);
	const failedReasons: Record<string, number> = {};
	for (const o of genuine.filter((g) => !accepted.includes(g)))
		failedReasons[o.reason ?? String(o.status)] =
			(failedReasons[o.reason ?? String(o.status)] ?? 0) + 1;
	const times = accepted.map((o) => o.ms).sort((a, b) => a - b);
	const tamperedTimes = tampered.map((o) => o.ms).sort((a, b) => a - b);
	const tamperedStatuses: Record<string, number> = {};
	for (const o of tampered)
		tamperedStatuses[`${o.tamper}: ${o.status}`] =
			(tamperedStatuses[`${o.tamper}: ${o.status}`] ?? 0) + 1;
	const tamperedAccepted = tampered.filter(
		(o) => o.status !== null && o.status >= 200 && o.status < 300,
	).length;

	log(
		`  sent ${outcomes.length} in ${sendSeconds.toFixed(1)} s; waiting for the executions to be recorded`,
	);
	const recorded =
		(await settledCount(client, workflow.id, before + accepted.length, 300_000)) - before;
	scanWhileActive(ctx, `load workflow, after ${recorded} executions`);
	await client.deactivate(workflow.id);
	await waitFor(
		'the sandbox webhook to be removed',
		() => !sandbox.state().webhook.configured,
		30_000,
	);

	summary.load = {
		line,
		n8n: LINES[line].version,
		events: EVENTS,
		concurrency: CONCURRENCY,
		tamperedEvery: TAMPERED_EVERY,
		sent: { genuine: genuine.length, tampered: tampered.length, total: outcomes.length },
		genuine: {
			answered2xx: accepted.length,
			within8s: acceptedInTime.length,
			notAccepted: genuine.length - accepted.length,
			failedReasons,
			answerMs: {
				p50: percentile(times, 50),
				p90: percentile(times, 90),
				p99: percentile(times, 99),
				max: times[times.length - 1],
			},
		},
		tampered: {
			statuses: tamperedStatuses,
			accepted: tamperedAccepted,
			answerMs: {
				p50: percentile(tamperedTimes, 50),
				p99: percentile(tamperedTimes, 99),
				max: tamperedTimes[tamperedTimes.length - 1],
			},
		},
		executionsRecordedRest: recorded,
		sendSeconds,
		eventsPerSecond: outcomes.length / sendSeconds,
		machine: { cores: cpus().length, loadavgBefore: load0, loadavgAfter: load1 },
		acceptedWaIds: accepted.map((o) => o.waId),
		tamperedWaIds: tampered.map((o) => o.waId),
	};
	log(
		`  genuine ${genuine.length}: 2xx ${accepted.length} (within 8 s ${acceptedInTime.length}); answer p50 ${percentile(times, 50)} ms, p99 ${percentile(times, 99)} ms, max ${times[times.length - 1]} ms; tampered ${tampered.length}: accepted ${tamperedAccepted}; executions (REST) ${recorded}`,
	);
}

// ---- media phase -----------------------------------------------------------------------------

const MEDIA_TYPES = [
	{ mime: 'image/jpeg', extension: 'jpg' },
	{ mime: 'application/pdf', extension: 'pdf' },
	{ mime: 'audio/ogg', extension: 'ogg' },
];

/** The index-th event's file: 1 to 4 KiB of bytes of its own (SHA-256 chained from its index). */
function loadMediaFile(index: number): MediaFile {
	const type = MEDIA_TYPES[index % MEDIA_TYPES.length];
	const data = Buffer.alloc(1024 * (1 + (index % 4)));
	let block = createHash('sha256').update(`hardening-media-${index}`).digest();
	for (let at = 0; at < data.length; at += block.length) {
		block.copy(data, at);
		block = createHash('sha256').update(block).digest();
	}
	return { mime: type.mime, data, filename: `load-${index}.${type.extension}` };
}

/**
 * Waits until the workflow has at least `expected` executions, none still new or running, no
 * earlier than `notBefore` (the catch-up's window for events not answered 2xx), and nothing has
 * changed for 5 s; past `notBefore`, gives up once nothing has changed for 90 s (executions that
 * never finish), and in any case after `timeoutMs`.
 */
async function settleExecutions(
	client: N8nClient,
	workflowId: string,
	expected: number,
	notBefore: number,
	timeoutMs: number,
): Promise<{ total: number; unfinished: number; gaveUp: boolean }> {
	const deadline = Date.now() + timeoutMs;
	let last = '';
	let since = Date.now();
	let lastLog = 0;
	let total = 0;
	let unfinished = 0;
	for (;;) {
		try {
			total = await executionCount(client, workflowId);
			unfinished = await executionCount(client, workflowId, ['new', 'running']);
		} catch (error) {
			// n8n answers 503 while its database ping fails: not settled, ask again.
			log(`  executions not readable: ${errorText(error).slice(0, 120)}`);
			since = Date.now();
			if (Date.now() > deadline) return { total, unfinished, gaveUp: true };
			await sleep(2000);
			continue;
		}
		const now = `${total}/${unfinished}`;
		if (now !== last) {
			last = now;
			since = Date.now();
		}
		if (Date.now() - lastLog > 15_000) {
			lastLog = Date.now();
			log(`  executions ${total} (${unfinished} new or running)`);
		}
		const quiet = Date.now() - since;
		const windowOver = Date.now() >= notBefore;
		if (total >= expected && unfinished === 0 && windowOver && quiet > 5000)
			return { total, unfinished, gaveUp: false };
		if ((windowOver && quiet > 90_000) || Date.now() > deadline)
			return { total, unfinished, gaveUp: true };
		await sleep(1000);
	}
}

/** What n8n's log says about the phase: the trigger's late refusals, n8n's database giving way. */
function n8nLogSignals(text: string): Record<string, number> {
	const count = (pattern: RegExp) => (text.match(pattern) ?? []).length;
	return {
		lateDeliveryRefused503: count(/rejected a request \(503\)[^\n]*Late Delivery Cutoff/g),
		rejectionsNotLogged: [...text.matchAll(/(\d+) more rejected request\(s\) in the last minute/g)]
			.map((m) => Number(m[1]))
			.reduce((a, b) => a + b, 0),
		databaseNotReady: count(/Database is not ready/g),
		sqliteWriteLockTimeoutMentions: count(/Timeout waiting for lock SqliteWriteConnectionMutex/g),
		databasePingFailed: count(/Database ping failed/g),
		staticDataNotSaved: count(/problem saving the workflow with id [^\n]* to save changed Data/g),
		requestBodyAborted: count(
			/Error in handling webhook request [^\n]*Request body stream was aborted/g,
		),
		mediaDownloadFailed: count(/media download failed/g),
		catchUpRecovering: [...text.matchAll(/catch-up\): recovering (\d+) message/g)]
			.map((m) => Number(m[1]))
			.reduce((a, b) => a + b, 0),
	};
}

async function mediaPhase(ctx: Context): Promise<void> {
	log(
		`== media: ${MEDIA_EVENTS} signed events with a hosted file each at concurrency ${MEDIA_CONCURRENCY}, Download Media on, 1 tampered in ${TAMPERED_EVERY}`,
	);
	const phaseStarted = Date.now();
	const logOffset = ctx.n8n.logText().length;
	const { client, sandbox, control } = ctx;
	const number = sandbox.numbers[0].phone_number_id;
	const workflow = await client.createWorkflow(mediaLoadWorkflow(ctx.credentials.good));
	ctx.workflowIds.media = workflow.id;
	const url = await activateTrigger(ctx, workflow);
	await sleep(1500);
	const secret = sandbox.state().webhook.secret ?? '';

	const run = await fireLoad({
		control,
		url,
		secret,
		number,
		events: MEDIA_EVENTS,
		concurrency: MEDIA_CONCURRENCY,
		tamperedEvery: TAMPERED_EVERY,
		media: loadMediaFile,
	});
	const sent = Date.now();
	const genuine = run.outcomes.filter((o) => o.kind === 'genuine');
	const tampered = run.outcomes.filter((o) => o.kind === 'tampered');
	const is2xx = (o: Outcome) => o.status !== null && o.status >= 200 && o.status < 300;
	const accepted = genuine.filter(is2xx);
	const notAccepted = genuine.length - accepted.length;
	log(
		`  sent ${run.outcomes.length} in ${run.sendSeconds.toFixed(1)} s: ${accepted.length}/${genuine.length} answered 2xx; waiting for the executions${notAccepted ? ' and the catch-up' : ''}`,
	);
	// An event not answered 2xx is recovered once it is 15 s old, at the catch-up's next run (at
	// most 500 a run): wait for those runs too.
	const catchUpWindowMs = notAccepted
		? (15 + MEDIA_LOAD_CATCH_UP_SECONDS * (2 + Math.ceil(notAccepted / 500)) + 10) * 1000
		: 0;
	const settled = await settleExecutions(
		client,
		workflow.id,
		genuine.length,
		sent + catchUpWindowMs,
		900_000,
	);
	const settledSeconds = (Date.now() - sent) / 1000;
	await client.deactivate(workflow.id);
	await waitFor(
		'the sandbox webhook to be removed',
		() => !sandbox.state().webhook.configured,
		30_000,
	);

	const times = accepted.map((o) => o.ms).sort((a, b) => a - b);
	const failedReasons: Record<string, number> = {};
	for (const o of genuine.filter((g) => !is2xx(g))) {
		const reason = o.reason ?? String(o.status);
		failedReasons[reason] = (failedReasons[reason] ?? 0) + 1;
	}
	const tamperedStatuses: Record<string, number> = {};
	for (const o of tampered)
		tamperedStatuses[`${o.tamper}: ${o.status}`] =
			(tamperedStatuses[`${o.tamper}: ${o.status}`] ?? 0) + 1;
	summary.media = {
		line,
		n8n: LINES[line].version,
		events: MEDIA_EVENTS,
		concurrency: MEDIA_CONCURRENCY,
		tamperedEvery: TAMPERED_EVERY,
		catchUpIntervalSeconds: MEDIA_LOAD_CATCH_UP_SECONDS,
		fileBytes: { min: 1024, max: 4096 },
		sent: { genuine: genuine.length, tampered: tampered.length, total: run.outcomes.length },
		genuine: {
			answered2xx: accepted.length,
			within8s: accepted.filter((o) => o.ms <= DELIVERY_TIMEOUT_MS).length,
			notAnswered2xx: notAccepted,
			failedReasons,
			answerMs: {
				p50: percentile(times, 50),
				p90: percentile(times, 90),
				p99: percentile(times, 99),
				max: times[times.length - 1],
			},
		},
		tampered: {
			statuses: tamperedStatuses,
			accepted: tampered.filter(is2xx).length,
		},
		executionsRecordedRest: settled.total,
		unfinishedAtEnd: settled.unfinished,
		gaveUpWaiting: settled.gaveUp,
		n8nLog: n8nLogSignals(ctx.n8n.logText().slice(logOffset)),
		sendSeconds: run.sendSeconds,
		eventsPerSecond: run.outcomes.length / run.sendSeconds,
		settledSecondsAfterSend: settledSeconds,
		phaseSeconds: (Date.now() - phaseStarted) / 1000,
		machine: {
			cores: cpus().length,
			loadavgBefore: run.loadavgBefore,
			loadavgAfter: run.loadavgAfter,
		},
	};
	mediaOutcomes = run.outcomes;
	log(
		`  genuine ${genuine.length}: 2xx ${accepted.length}; answer p50 ${percentile(times, 50)} ms, p99 ${percentile(times, 99)} ms, max ${times[times.length - 1]} ms; tampered ${tampered.length}: accepted ${tampered.filter(is2xx).length}; executions (REST) ${settled.total}, ${settledSeconds.toFixed(0)} s after the last send; phase ${((Date.now() - phaseStarted) / 1000).toFixed(0)} s`,
	);
}

/** What the media phase sent, for the check of the stopped database. */
let mediaOutcomes: Outcome[] = [];

interface MediaExecution {
	id: string;
	status: string;
	mode: string;
	ids: string[];
	items: null | Array<{
		waId: string | null;
		recovered: boolean;
		mediaDownload: null | { downloaded?: boolean; reason?: string };
		file: null | { where: string; bytes?: number; sha256?: string; id?: string };
	}>;
	nextNodeItems: number;
	error: string | null;
}

/** The media phase's executions, as stored, matched to the events sent. */
function checkMediaExecutions(executions: MediaExecution[]): void {
	const media = summary.media as Record<string, any>;
	const sentGenuine = mediaOutcomes.filter((o) => o.kind === 'genuine');
	const is2xx = (o: Outcome) => o.status !== null && o.status >= 200 && o.status < 300;
	// Each event id: the executions that ran it (the trigger emitted it) and their items.
	const runs = new Map<
		string,
		Array<{ execution: MediaExecution; item: NonNullable<MediaExecution['items']>[number] }>
	>();
	// Finished without emitting (a copy the run-once check dropped), or never finished at all.
	let ranNothing = 0;
	const unfinished = executions.filter((e) => ['new', 'running'].includes(e.status));
	for (const execution of executions) {
		const items = execution.items ?? [];
		if (items.length === 0 && !unfinished.includes(execution)) ranNothing++;
		for (const item of items) {
			const key = item.waId ?? '(no id)';
			if (!runs.has(key)) runs.set(key, []);
			runs.get(key)?.push({ execution, item });
		}
	}
	const fileMatches = (o: Outcome, item: NonNullable<MediaExecution['items']>[number]) =>
		item.mediaDownload?.downloaded === true &&
		item.file?.sha256 === o.media?.sha256 &&
		item.file?.bytes === o.media?.bytes;

	const answered = sentGenuine.filter(is2xx);
	const answeredOnce = answered.filter((o) => (runs.get(o.waId ?? '')?.length ?? 0) === 1);
	const answeredWithFile = answeredOnce.filter((o) =>
		fileMatches(o, runs.get(o.waId ?? '')![0].item),
	);
	const answeredLost = answered.filter((o) => !runs.has(o.waId ?? ''));
	const notAnswered = sentGenuine.filter((o) => !is2xx(o));
	const notAnsweredIds = notAnswered.filter((o) => o.waId);
	const recoveredOnce = notAnsweredIds.filter((o) => {
		const r = runs.get(o.waId ?? '');
		return r?.length === 1 && r[0].item.recovered;
	});
	const ranLiveLate = notAnsweredIds.filter((o) => {
		const r = runs.get(o.waId ?? '');
		return r?.length === 1 && !r[0].item.recovered;
	});
	const notAnsweredWithFile = notAnsweredIds.filter((o) => {
		const r = runs.get(o.waId ?? '');
		return r?.length === 1 && fileMatches(o, r[0].item);
	});
	const notAnsweredLost = notAnsweredIds.filter((o) => !runs.has(o.waId ?? ''));
	const twice = [...runs.entries()].filter(([, r]) => r.length > 1);
	const sentById = new Map(sentGenuine.map((o) => [o.waId, o]));
	const unexpected = [...runs.keys()].filter((id) => !sentById.has(id));
	const tamperedIds = new Set(
		mediaOutcomes.filter((o) => o.kind === 'tampered').map((o) => o.waId),
	);
	const tamperedExecuted = executions.filter((e) => e.ids.some((id) => tamperedIds.has(id))).length;
	const statuses: Record<string, number> = {};
	const modes: Record<string, number> = {};
	const byModeAndStatus: Record<string, number> = {};
	for (const e of executions) {
		statuses[e.status] = (statuses[e.status] ?? 0) + 1;
		modes[e.mode] = (modes[e.mode] ?? 0) + 1;
		byModeAndStatus[`${e.mode} ${e.status}`] = (byModeAndStatus[`${e.mode} ${e.status}`] ?? 0) + 1;
	}
	const withoutFile = answeredOnce
		.filter((o) => !fileMatches(o, runs.get(o.waId ?? '')![0].item))
		.slice(0, 5)
		.map((o) => ({ waId: o.waId, sent: o.media, stored: runs.get(o.waId ?? '')![0].item }));
	const nextNodeSkipped = [...runs.values()].filter((r) =>
		r.some((x) => x.execution.nextNodeItems === 0),
	).length;
	const filesAttached = [...runs.entries()].filter(([id, r]) => {
		const o = sentById.get(id);
		return o !== undefined && r.some((x) => fileMatches(o, x.item));
	}).length;
	Object.assign(media, {
		executions: executions.length,
		executionStatuses: statuses,
		executionModes: modes,
		executionsByModeAndStatus: byModeAndStatus,
		executionsRunningNothing: ranNothing,
		executionsUnfinished: unfinished.length,
		unfinishedExamples: unfinished.slice(0, 5).map((e) => ({
			id: e.id,
			mode: e.mode,
			status: e.status,
			ids: e.ids.slice(0, 3),
			triggerItems: e.items?.length ?? null,
		})),
		eventsRun: runs.size,
		filesAttached,
		answered2xx: {
			total: answered.length,
			ranOnce: answeredOnce.length,
			ranOnceWithItsFile: answeredWithFile.length,
			lost: answeredLost.length,
		},
		notAnswered2xx: {
			total: notAnswered.length,
			withoutMessageId: notAnswered.length - notAnsweredIds.length,
			recoveredOnceByCatchUp: recoveredOnce.length,
			ranOnceLiveAnsweredTooLate: ranLiveLate.length,
			ranOnceWithItsFile: notAnsweredWithFile.length,
			lost: notAnsweredLost.length,
		},
		lost: answeredLost.length + notAnsweredLost.length,
		twice: twice.length,
		twiceExamples: twice.slice(0, 5).map(([id, r]) => ({
			waId: id,
			executions: r.map((x) => `${x.execution.id} (${x.execution.mode})`),
		})),
		unexpected: unexpected.length,
		tamperedExecuted,
		executionsWhereTheNextNodeDidNotRun: nextNodeSkipped,
		withoutFileExamples: withoutFile,
		storedFilesWhere: Object.fromEntries(
			Object.entries(
				executions
					.flatMap((e) => e.items ?? [])
					.reduce<Record<string, number>>((counts, item) => {
						const where = item.file?.where ?? 'no binary';
						counts[where] = (counts[where] ?? 0) + 1;
						return counts;
					}, {}),
			),
		),
	});
	const m = media;
	check(
		'media: every event answered 2xx has exactly one execution, its file attached byte for byte',
		answered.length > 0 && answeredWithFile.length === answered.length,
		`${answered.length} answered 2xx (p50 ${m.genuine.answerMs.p50} ms, p99 ${m.genuine.answerMs.p99} ms): ${answeredOnce.length} ran once, ${answeredWithFile.length} with media_download.downloaded true and the stored file equal to the one sent, ${answeredLost.length} lost${withoutFile.length ? `; e.g. ${JSON.stringify(withoutFile[0])}` : ''}`,
	);
	check(
		'media: every event not answered 2xx ran once (recovered by the catch-up, or answered after the 8 s)',
		notAnsweredLost.length === 0 && notAnswered.length === notAnsweredIds.length,
		`${notAnswered.length} not answered 2xx (${JSON.stringify(m.genuine.failedReasons)}; n8n's log: ${JSON.stringify(m.n8nLog)}): ${recoveredOnce.length} recovered once by the catch-up, ${ranLiveLate.length} ran once from the delivery n8n answered too late, ${notAnsweredWithFile.length} of them with their file; ${notAnsweredLost.length} not run, ${notAnswered.length - notAnsweredIds.length} never stored by the sandbox`,
	);
	check(
		'media: no event run twice, no execution of an event not sent',
		twice.length === 0 && unexpected.length === 0,
		`${runs.size} events run in ${executions.length} executions (${ranNothing} finished running nothing after the trigger: copies dropped by the run-once check; ${unfinished.length} never finished); twice ${twice.length}, unexpected ${unexpected.length}; statuses ${JSON.stringify(statuses)}, modes ${JSON.stringify(modes)}`,
	);
	check(
		'media: every tampered event refused, none executed',
		m.tampered.accepted === 0 && tamperedExecuted === 0,
		`${m.sent.tampered} tampered: ${JSON.stringify(m.tampered.statuses)}; executed ${tamperedExecuted}`,
	);
}

// ---- after n8n stopped -----------------------------------------------------------------------

interface ScanResult {
	tables: Record<string, number>;
	decodedHits: Array<{ table: string; column: string; label: string; rows: number }>;
	rawHits: Record<string, Record<string, number>>;
	executions: Record<string, Record<string, number>>;
	load: null | {
		executions: number;
		statuses: Record<string, number>;
		withoutData: number;
		idsPerExecution: Record<string, number>;
		waIds: string[];
	};
	media: null | MediaExecution[];
}

/** Runs db-scan.cjs with the n8n install's own Node (its sqlite3 binding is built for it). */
function scanDatabase(
	installDir: string,
	nodeBin: string,
	db: string,
	needles: Record<string, string>,
	loadWorkflowId?: string,
	mediaWorkflowId?: string,
): ScanResult {
	const requestFile = join(outDir, 'db-scan-request.json');
	writeFileSync(
		requestFile,
		JSON.stringify({
			db,
			needles,
			loadWorkflowId: loadWorkflowId ?? null,
			media: mediaWorkflowId
				? { workflowId: mediaWorkflowId, triggerName: TRIGGER_NAME, binaryField: 'data' }
				: null,
		}),
	);
	const scan = spawnSync(nodeBin, [join(__dirname, 'db-scan.cjs'), installDir, requestFile], {
		encoding: 'utf8',
		maxBuffer: 256 * 1024 * 1024,
	});
	rmSync(requestFile, { force: true });
	if (scan.status !== 0) throw new Error(`db-scan failed: ${scan.stderr}`);
	return JSON.parse(scan.stdout) as ScanResult;
}

/**
 * While a trigger workflow is active its signing secret is in no stored row at all: the
 * workflow's static data holds it sealed under the API key (useless without the credential),
 * and n8n 1.x's copies of the static data in every execution carry only the sealed form.
 */
function scanWhileActive(ctx: Context, label: string): void {
	const secret = ctx.sandbox.state().webhook.secret;
	if (!secret || !ctx.installation || !ctx.userFolder) return;
	const result = scanDatabase(
		ctx.installation.dir,
		ctx.installation.nodeBin,
		join(ctx.userFolder, '.n8n', 'database.sqlite'),
		{
			[label]: secret,
			[`${label}, its random part`]: secret.replace(/^whsec_/, ''),
		},
	);
	const places = result.decodedHits.map(
		(h) => `${h.table}.${h.column} (${h.rows} row${h.rows === 1 ? '' : 's'})`,
	);
	ctx.liveSecretPlaces.push({ label, places });
	check(
		`stored secrets: while active, the signing secret is in no stored row, not even the static data (${label})`,
		result.decodedHits.length === 0,
		places.join(', ') || 'nowhere',
	);
}

function scanStopped(
	ctx: Context,
	installDir: string,
	nodeBin: string,
	userFolder: string,
	logFile: string,
): void {
	log('== searching the stopped n8n: database (decoded and raw), user folder, log');
	const needles: Record<string, string> = {
		'API key (credential in use)': ctx.sandbox.keys.all,
		'API key (revoked credential)': ctx.sandbox.keys.revoked,
		'API key (no-scope credential)': ctx.noScopesKey,
		"credential's Webhook Signing Secret": CREDENTIAL_SECRET,
	};
	[...ctx.webhookSecrets].forEach(
		(secret, i) => (needles[`registered signing secret #${i + 1}`] = secret),
	);
	const db = join(userFolder, '.n8n', 'database.sqlite');
	const result = scanDatabase(
		installDir,
		nodeBin,
		db,
		needles,
		ctx.workflowIds.load,
		ctx.workflowIds.media,
	);

	// Other files n8n wrote (binary data, config, ...): raw bytes, the installed package excluded.
	const fileHits: Record<string, string[]> = {};
	for (const file of filesUnder(join(userFolder, '.n8n'), [
		join(userFolder, '.n8n', 'nodes'),
		db,
	])) {
		if (statSync(file).size > 64 * 1024 * 1024) continue;
		const bytes = readFileSync(file);
		for (const [label, value] of Object.entries(needles))
			if (bytes.includes(value)) (fileHits[relative(userFolder, file)] ??= []).push(label);
	}
	const logText = readFileSync(logFile, 'utf8');
	const logHits = Object.entries(needles)
		.filter(([, value]) => logText.includes(value))
		.map(([label]) => label);

	const rawTotal = (label: string) =>
		Object.values(result.rawHits[label] ?? {}).reduce((a, b) => a + b, 0);
	summary.storedSecrets = {
		tables: result.tables,
		decodedHits: result.decodedHits,
		rawHits: result.rawHits,
		otherFiles: fileHits,
		logHits,
		executionsByWorkflow: result.executions,
	};
	check(
		"stored secrets: no key or secret in any decoded value of n8n's database (execution data, workflows, credentials, ...)",
		result.decodedHits.length === 0,
		result.decodedHits.length
			? JSON.stringify(result.decodedHits)
			: `${Object.keys(result.tables).length} tables, ${Object.values(result.tables).reduce((a, b) => a + b, 0)} rows, ${Object.keys(needles).length} values searched`,
	);
	const keyLabels = Object.keys(needles).filter(
		(l) => l.startsWith('API key') || l.startsWith("credential's"),
	);
	check(
		'stored secrets: API keys and the credential secret absent from the raw database files',
		keyLabels.every((l) => rawTotal(l) === 0),
		keyLabels.map((l) => `${l}: ${rawTotal(l)}`).join('; '),
	);
	// Deactivation deletes the registration and clears the static data, so no live row holds a
	// registered secret any more (checked above); SQLite may still keep the freed page bytes.
	const secretLabels = Object.keys(needles).filter((l) => l.startsWith('registered'));
	summary.registeredSecretLeftovers = {
		note: "raw bytes of freed SQLite pages that held the trigger's static data while the workflow was active; no live row holds them",
		counts: Object.fromEntries(secretLabels.map((l) => [l, rawTotal(l)])),
		whileActive: ctx.liveSecretPlaces,
	};
	log(
		`  registered signing secrets in raw database bytes (freed static-data pages, no live row): ${secretLabels.map((l) => `${l}: ${rawTotal(l)}`).join('; ') || 'none registered'}`,
	);
	check(
		'stored secrets: nothing in the rest of the user folder',
		Object.keys(fileHits).length === 0,
		JSON.stringify(fileHits),
	);
	check(
		"stored secrets: nothing in n8n's log",
		logHits.length === 0,
		logHits.join(', ') || `${logText.length} bytes searched`,
	);

	if (ctx.workflowIds.load && result.load) {
		const load = summary.load as {
			acceptedWaIds: string[];
			tamperedWaIds: string[];
			genuine: { answered2xx: number };
		};
		const stored = result.load.waIds;
		const storedSet = new Set(stored);
		const accepted = new Set(load.acceptedWaIds);
		const lost = [...accepted].filter((id) => !storedSet.has(id));
		const duplicates = stored.length - storedSet.size;
		const unexpected = [...storedSet].filter((id) => !accepted.has(id));
		const tamperedExecuted = load.tamperedWaIds.filter((id) => storedSet.has(id));
		Object.assign(summary.load as object, {
			executionsRecordedDb: result.load.executions,
			executionStatuses: result.load.statuses,
			idsPerExecution: result.load.idsPerExecution,
			lost: lost.length,
			duplicated: duplicates,
			unexpected: unexpected.length,
			tamperedExecuted: tamperedExecuted.length,
		});
		delete (summary.load as Record<string, unknown>).acceptedWaIds;
		delete (summary.load as Record<string, unknown>).tamperedWaIds;
		const l = summary.load as Record<string, any>;
		check(
			'load: every genuine event answered 2xx within 8 s',
			l.genuine.within8s === l.sent.genuine,
			`${l.genuine.within8s}/${l.sent.genuine} (p50 ${l.genuine.answerMs.p50} ms, p99 ${l.genuine.answerMs.p99} ms, max ${l.genuine.answerMs.max} ms)${l.genuine.notAccepted ? `; not accepted: ${JSON.stringify(l.genuine.failedReasons)}` : ''}`,
		);
		check(
			'load: executions recorded = events accepted, 0 lost, 0 duplicated',
			result.load.executions === load.genuine.answered2xx &&
				lost.length === 0 &&
				duplicates === 0 &&
				unexpected.length === 0,
			`accepted ${load.genuine.answered2xx}, executions ${result.load.executions} (REST ${l.executionsRecordedRest}), lost ${lost.length}, duplicated ${duplicates}, unexpected ${unexpected.length}, statuses ${JSON.stringify(result.load.statuses)}`,
		);
		check(
			'load: every tampered event refused, none executed',
			l.tampered.accepted === 0 && tamperedExecuted.length === 0,
			`${l.sent.tampered} tampered: ${JSON.stringify(l.tampered.statuses)}; executed ${tamperedExecuted.length}`,
		);
	}
	if (ctx.workflowIds.media && summary.media) {
		if (result.media) checkMediaExecutions(result.media);
		else check('media: executions read from the database', false, 'no execution data table');
	}
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
	mkdirSync(outDir, { recursive: true });
	log(
		`== hardening against real n8n ${LINES[line].version} (line ${line}); phases: ${[...phases].join(', ')}`,
	);
	const installation = installN8n(line, join(outDir, `install-line${line}.log`));
	const userFolder = mkdtempSync(join(tmpdir(), `bm-hardening-n8n${line}-`));
	installPackage(userFolder, tarball as string);
	const logFile = join(outDir, `n8n-line${line}.log`);
	rmSync(logFile, { force: true });

	const sandbox = await launchSandbox();
	let n8n: N8nProcess | undefined;
	let ctx: Context | undefined;
	try {
		n8n = await N8nProcess.start({
			installation,
			userFolder,
			logFile,
			env: {
				EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'all',
				EXECUTIONS_DATA_SAVE_ON_ERROR: 'all',
				EXECUTIONS_DATA_PRUNE: 'false',
			},
		});
		log(`n8n at ${n8n.url}, sandbox at ${sandbox.baseUrl}; user folder ${userFolder}`);
		const client = new N8nClient(n8n.url, line, installation.dir);
		await client.setupOwner();
		const control = new SandboxControl(sandbox.baseUrl);
		const noScopes = await control.createKey(['templates:read']);
		const data = (apiKey: string) => ({
			apiKey,
			baseUrl: sandbox.baseUrl,
			webhookSecret: CREDENTIAL_SECRET,
		});
		ctx = {
			n8n,
			client,
			sandbox,
			control,
			noScopesKey: noScopes.key,
			credentials: {
				good: await client.createCredential(
					'Hardening (good key)',
					CREDENTIAL_TYPE,
					data(sandbox.keys.all),
				),
				revoked: await client.createCredential(
					'Hardening (revoked key)',
					CREDENTIAL_TYPE,
					data(sandbox.keys.revoked),
				),
				noScopes: await client.createCredential(
					'Hardening (key without scopes)',
					CREDENTIAL_TYPE,
					data(noScopes.key),
				),
			},
			webhookSecrets: new Set(),
			liveSecretPlaces: [],
			installation,
			userFolder,
			workflowIds: {},
		};
		if (phases.has('secrets')) await secretsPhase(ctx);
		if (phases.has('load')) await loadPhase(ctx);
		if (phases.has('media')) await mediaPhase(ctx);
	} catch (error) {
		check('run', false, errorText(error));
		if (n8n) log(`n8n log tail:\n${n8n.logTail(40)}`);
	} finally {
		await n8n?.stop();
		await sandbox.close();
	}
	try {
		if (ctx) scanStopped(ctx, installation.dir, installation.nodeBin, userFolder, logFile);
	} catch (error) {
		check('scan', false, errorText(error));
	}
	if (!keep) rmSync(userFolder, { recursive: true, force: true });
	else log(`user folder kept: ${userFolder}`);

	const passed = checks.filter((c) => c.ok).length;
	summary.checks = checks;
	writeFileSync(join(outDir, 'hardening-real-n8n.json'), `${JSON.stringify(summary, null, 2)}\n`);
	log(
		`== ${passed}/${checks.length} checks passed; summary ${join(outDir, 'hardening-real-n8n.json')}`,
	);
	for (const c of checks) log(`   ${c.ok ? 'PASS' : 'FAIL'}  ${c.name}`);
	return passed === checks.length && checks.length > 0 ? 0 : 1;
}

main()
	.then((code) => process.exit(code))
	.catch((error) => {
		console.error(error);
		process.exit(1);
	});
