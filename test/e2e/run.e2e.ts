/**
 * End-to-end suite: the packed package inside a real n8n, driven by the sandbox.
 *
 *   ts-node --transpile-only test/e2e/run.e2e.ts --line 2 --tarball n8n-nodes-business-messaging-0.1.0.tgz [--out dir]
 *
 * Normally started by scripts/e2e.sh (npm run test:e2e), which builds, packs and runs both lines.
 * Exit code 0 only when every check passed. Writes <out>/summary-line<N>.json.
 */
import type { IDataObject } from 'n8n-workflow';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { aiAgentChecks } from './checks/aiAgent';
import { chatChecks } from './checks/chat';
import { conversationChecks } from './checks/conversation';
import { combineChecks } from './checks/combine';
import { conversationBurstChecks } from './checks/conversationBurst';
import {
	CREDENTIAL_NAME,
	EXAMPLES,
	importExamples,
	readExampleFile,
	ROUTER_EXAMPLES,
	triggerName,
	type Imported,
} from '../real-n8n/examples';
import {
	installN8n,
	installPackage,
	LINES,
	N8nClient,
	N8nProcess,
	RestError,
	type Execution,
	type Installation,
	type Line,
	type SavedWorkflow,
	type WorkflowJson,
} from '../real-n8n/n8n';
import {
	ACTION_TYPE,
	CREDENTIAL_TYPE,
	POLLING_NAME,
	POLLING_TYPE,
	TOOL_TYPE,
	TRIGGER_TYPE,
} from '../support/constants';
import { launchSandbox, SandboxControl, type Sandbox } from '../real-n8n/sandbox';
import { storedSecretPlaces } from '../real-n8n/storedSecrets';
import { runCatchUpChecks } from './checks/catch-up';
import { runWebhookWatchChecks } from './checks/webhookWatch';
import { runEditorChecks } from './checks/editor';
import { routerChecks } from './checks/router';
import { runsElsewhere, shareEnabled } from './lib/ciShare';
import {
	errorWorkflow,
	latestHttpRequestVersion,
	redirectProbeWorkflow,
	unsignedRequests,
} from './lib/security';
import { serviceTimestamp, WRONG_SECRET } from '../support/fixtures';
import { signBody } from '../support/signature';
import { errorText, log, sleep, waitFor } from '../real-n8n/util';

interface CheckResult {
	name: string;
	ok: boolean;
	ms: number;
	detail: string;
}

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2)
	args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const line = Number(args.get('line') ?? '2') as Line;
const tarball = args.get('tarball');
const outDir = resolve(args.get('out') ?? join(tmpdir(), 'business-messaging-e2e'));
const keep = process.env.E2E_KEEP === '1';

if (line !== 1 && line !== 2) throw new Error('--line must be 1 or 2');
if (!tarball) throw new Error('--tarball <path to the npm pack output> is required');

const results: CheckResult[] = [];
/** Checks E2E_SHARE=1 leaves to the other line (test/e2e/lib/ciShare.ts): neither passed nor failed. */
const skipped: Array<{ name: string; runs_on: Line }> = [];
const timings: Record<string, number> = {};

class CheckFailed extends Error {}

function expect(condition: unknown, message: string): asserts condition {
	if (!condition) throw new CheckFailed(message);
}

/** E2E_ONLY=<words>: only the checks whose name contains them (and the one that creates the credential and examples, and the stored-secrets search at the end). */
const only = process.env.E2E_ONLY;

/** When the running check started: an event from before it is an earlier check's (a late delivery or catch-up). */
let checkStartedMs = 0;

/**
 * Runs one check and records its outcome. Every check of the suite goes through here (the files
 * in checks/ get this function as their `check`). False only when it ran and failed.
 */
async function check(name: string, body: () => Promise<string>): Promise<boolean> {
	const always = name.startsWith('credential, Data Tables') || name.startsWith('stored secrets:');
	if (only && !name.includes(only) && !always) return true;
	const elsewhere = runsElsewhere(name, line);
	if (elsewhere !== undefined) {
		skipped.push({ name, runs_on: elsewhere });
		log(`CHECK ${name}: not run on line ${line} (E2E_SHARE: runs on line ${elsewhere})`);
		return true;
	}
	const started = Date.now();
	checkStartedMs = started;
	log(`CHECK ${name} ...`);
	try {
		const detail = await body();
		results.push({ name, ok: true, ms: Date.now() - started, detail });
		log(`  PASS ${name} (${((Date.now() - started) / 1000).toFixed(1)} s): ${detail}`);
		return true;
	} catch (error) {
		const detail = error instanceof RestError ? `${error.message}` : errorText(error);
		results.push({ name, ok: false, ms: Date.now() - started, detail });
		log(`  FAIL ${name} (${((Date.now() - started) / 1000).toFixed(1)} s): ${detail}`);
		return false;
	}
}

/**
 * After every check of the line, n8n stopped: no API key or signing secret in its database (n8n
 * 1.x copies the workflow's static data into every stored execution: the secret is there only
 * sealed), user folder or log.
 */
async function storedSecretsCheck(
	sandbox: Sandbox,
	installation: Installation,
	userFolder: string,
	logFile: string,
): Promise<void> {
	await check(
		"stored secrets: after every check, no API key or signing secret in n8n's database, user folder or log",
		async () => {
			const issued = (await new SandboxControl(sandbox.baseUrl).state()).issued_secrets;
			const registered = new Map(issued.map((secret, i) => [`signing secret #${i + 1}`, secret]));
			const needles: Record<string, string> = {
				...Object.fromEntries(Object.entries(sandbox.keys).map(([k, v]) => [`API key ${k}`, v])),
				...Object.fromEntries(registered),
			};
			expect(issued.length > 0, 'the service issued no signing secret: nothing proven');
			const found = storedSecretPlaces(
				installation,
				userFolder,
				logFile,
				needles,
				new Set(registered.keys()),
			);
			expect(found.places.length === 0, found.places.join('; '));
			return found.searched;
		},
	);
}

async function main(): Promise<number> {
	mkdirSync(outDir, { recursive: true });
	const { version } = LINES[line];
	log(`== n8n ${version} (line ${line}), Node ${LINES[line].node}`);

	let started = Date.now();
	const installation = installN8n(line, join(outDir, `install-line${line}.log`));
	timings.install_ms = Date.now() - started;
	log(`n8n ${version} ready in ${installation.dir} (${(timings.install_ms / 1000).toFixed(1)} s)`);

	const userFolder = mkdtempSync(join(tmpdir(), `bm-e2e-n8n${line}-`));
	started = Date.now();
	installPackage(userFolder, tarball as string);
	timings.package_install_ms = Date.now() - started;
	log(
		`package installed into ${userFolder}/.n8n/nodes (${(timings.package_install_ms / 1000).toFixed(1)} s)`,
	);

	let sandbox: Sandbox | undefined;
	let n8n: N8nProcess | undefined;
	const logFile = join(outDir, `n8n-line${line}.log`);
	rmSync(logFile, { force: true });
	try {
		sandbox = await launchSandbox();
		log(`sandbox at ${sandbox.baseUrl}`);
		started = Date.now();
		n8n = await N8nProcess.start({ installation, userFolder, logFile });
		timings.n8n_start_ms = Date.now() - started;
		log(
			`n8n at ${n8n.url} (started in ${(timings.n8n_start_ms / 1000).toFixed(1)} s, log ${logFile})`,
		);
		// Stops n8n, runs `during` while it is down, starts it again on the same port (same URL, same webhooks).
		// graceMs: SIGKILL after so long (default 35 s; 0: at once, a crash).
		const restartWith = async (during: () => Promise<void>, graceMs?: number) => {
			const port = n8n!.port;
			await n8n!.stop(graceMs);
			await during();
			n8n = await N8nProcess.start({ installation, userFolder, logFile, port });
		};
		await runChecks(n8n, sandbox, installation.dir, restartWith);
		const restart = async () => (
			await n8n!.stop(),
			(n8n = await N8nProcess.start({ installation, userFolder, logFile, port: n8n!.port }))
		);
		n8n = await conversationChecks({ check, n8n, sandbox, line, restart });
		n8n = await conversationBurstChecks({ check, n8n, sandbox, line, restart });
		// Combine a Contact's Messages (issue 33): bursts, a restart in the middle of one.
		n8n = await combineChecks({
			check,
			n8n,
			sandbox,
			line,
			restart,
			restartWith: async (during, graceMs) => (await restartWith(during, graceMs), n8n!),
		});
		// The AI agent example: memory per contact, the tool under ignored filters.
		n8n = await aiAgentChecks({ check, n8n, sandbox, line });
	} catch (error) {
		results.push({ name: 'setup', ok: false, ms: 0, detail: errorText(error) });
		log(`SETUP FAILED: ${errorText(error)}`);
	} finally {
		if (n8n) {
			const failed = results.some((r) => !r.ok);
			if (failed) log(`n8n log tail (${logFile}):\n${n8n.logTail(40)}`);
			started = Date.now();
			await n8n.stop();
			timings.n8n_stop_ms = Date.now() - started;
			if (sandbox) await storedSecretsCheck(sandbox, installation, userFolder, logFile);
		}
		await sandbox?.close();
		if (!keep) rmSync(userFolder, { recursive: true, force: true });
	}

	const passed = results.filter((r) => r.ok).length;
	const summary = {
		line,
		version,
		node: LINES[line].node,
		timings,
		passed,
		failed: results.length - passed,
		results,
		share: shareEnabled(),
		skipped,
	};
	writeFileSync(join(outDir, `summary-line${line}.json`), `${JSON.stringify(summary, null, 2)}\n`);
	log(
		`== n8n ${version}: ${passed}/${results.length} checks passed${skipped.length ? `; ${skipped.length} not run on this line (E2E_SHARE)` : ''}`,
	);
	for (const r of results)
		log(
			`   ${r.ok ? 'PASS' : 'FAIL'}  ${r.name.padEnd(58)} ${(r.ms / 1000).toFixed(1).padStart(6)} s`,
		);
	for (const s of skipped)
		log(`   SKIP  ${s.name.padEnd(58)} line ${s.runs_on} runs it (E2E_SHARE)`);
	return passed === results.length && results.length > 0 ? 0 : 1;
}

async function runChecks(
	n8n: N8nProcess,
	sandbox: Sandbox,
	installDir: string,
	restartWith: (during: () => Promise<void>) => Promise<void>,
): Promise<void> {
	const client = new N8nClient(n8n.url, line, installDir);
	const control = new SandboxControl(sandbox.baseUrl);
	const number = sandbox.numbers[0].phone_number_id;
	await client.setupOwner();

	await check(
		'node types: triggers, action and its AI tool variant are listed; the credential with authenticate (offered in HTTP Request)',
		async () => {
			const names = await client.nodeTypeNames();
			const missing = [TRIGGER_TYPE, POLLING_TYPE, ACTION_TYPE, TOOL_TYPE].filter(
				(type) => !names.includes(type),
			);
			expect(
				missing.length === 0,
				`missing from /types/nodes.json: ${missing.join(', ')} (package types seen: ${names.filter((n) => n.startsWith('n8n-nodes-business-messaging')).join(', ') || 'none'})`,
			);
			const credentialTypes = await client.request<Array<{ name: string; authenticate?: unknown }>>(
				'GET',
				'/types/credentials.json',
			);
			const credentialType = credentialTypes.find((c) => c.name === CREDENTIAL_TYPE);
			expect(credentialType, `credential type ${CREDENTIAL_TYPE} not listed`);
			// The editor offers a credential in the HTTP Request node (Predefined Credential Type) only when
			// its listing carries `authenticate`; n8n copies credential types with an object spread, which
			// keeps an instance property but drops a class method.
			expect(
				credentialType.authenticate !== undefined,
				`${CREDENTIAL_TYPE} is listed without authenticate: the HTTP Request node would not offer it`,
			);
			return `${TRIGGER_TYPE}, ${POLLING_TYPE}, ${ACTION_TYPE}, ${TOOL_TYPE}, credential ${CREDENTIAL_TYPE} (with authenticate)`;
		},
	);

	await check(
		'credential Test button: good key OK; revoked key and key without balance:read fail',
		async () => {
			const data = (apiKey: string) => ({ apiKey, baseUrl: sandbox.baseUrl, webhookSecret: '' });
			const fresh = await control.createKey(['balance:read', 'messages:send']);
			const good = await client.createCredential('e2e good key', CREDENTIAL_TYPE, data(fresh.key));
			const okResult = await client.testCredential({
				id: good.id,
				name: good.name,
				type: CREDENTIAL_TYPE,
				data: data(fresh.key),
			});
			expect(okResult.status === 'OK', `good key: expected OK, got ${JSON.stringify(okResult)}`);

			await control.revokeKey(fresh.id);
			const revokedNow = await client.testCredential({
				id: good.id,
				name: good.name,
				type: CREDENTIAL_TYPE,
				data: data(fresh.key),
			});
			expect(
				revokedNow.status === 'Error',
				`key revoked after saving: expected Error, got ${JSON.stringify(revokedNow)}`,
			);
			// 2.x shows the credential's own rule message; 1.123 shows n8n's generic text for a 401
			// ("Authorization failed - please check your credentials"): its tester reads rules only
			// from error.cause.response, which the 1.123 request error does not carry.
			expect(
				/401|revoked|Authorization failed/i.test(revokedNow.message),
				`key revoked after saving: message does not explain it: ${revokedNow.message}`,
			);

			const seededRevoked = await client.createCredential(
				'e2e revoked key',
				CREDENTIAL_TYPE,
				data(sandbox.keys.revoked),
			);
			const revoked = await client.testCredential({
				id: seededRevoked.id,
				name: seededRevoked.name,
				type: CREDENTIAL_TYPE,
				data: data(sandbox.keys.revoked),
			});
			expect(
				revoked.status === 'Error',
				`seeded revoked key: expected Error, got ${JSON.stringify(revoked)}`,
			);

			const noBalance = await client.createCredential(
				'e2e key without balance:read',
				CREDENTIAL_TYPE,
				data(sandbox.keys.noBalance),
			);
			const scope = await client.testCredential({
				id: noBalance.id,
				name: noBalance.name,
				type: CREDENTIAL_TYPE,
				data: data(sandbox.keys.noBalance),
			});
			expect(
				scope.status === 'Error',
				`key without balance:read: expected Error, got ${JSON.stringify(scope)}`,
			);
			return `good: OK; revoked after saving: "${revokedNow.message}"; seeded revoked: "${revoked.message}"; missing scope: "${scope.message}"`;
		},
	);

	let imported: Imported | undefined;
	await check(
		'credential, Data Tables and the example workflows created over REST (no example, router ones included, carries a webhookId)',
		async () => {
			imported = await importExamples(client, {
				apiKey: sandbox.keys.all,
				baseUrl: sandbox.baseUrl,
			});
			// The examples carry no webhookId (a fixed one would make every import's production URL the
			// same, guessable one); each import gets its own, as in the editor.
			const fixed = [...Object.values(EXAMPLES), ...Object.values(ROUTER_EXAMPLES)].filter((file) =>
				readExampleFile(file).nodes.some((node) => 'webhookId' in node),
			);
			expect(fixed.length === 0, `examples with a fixed webhookId: ${fixed.join(', ')}`);
			const ids = Object.values(imported.workflows).map(
				(w) => w.nodes.find((node) => node.type === TRIGGER_TYPE)?.webhookId,
			);
			expect(
				ids.every((id) => typeof id === 'string' && /^[0-9a-f-]{36}$/.test(id)) &&
					new Set(ids).size === ids.length,
				`trigger webhookIds: ${JSON.stringify(ids)}`,
			);
			return `credential "${CREDENTIAL_NAME}" ${imported.credentialId}; tables ${Object.keys(imported.tables).join(', ')}; workflows ${Object.values(
				imported.workflows,
			)
				.map((w) => w.id)
				.join(', ')}`;
		},
	);
	if (!imported) return;
	const { autoReply, syncToCrm, deliveryStatus } = imported.workflows;

	const productionUrl = (workflow: SavedWorkflow): string => {
		const trigger = workflow.nodes.find((node) => node.type === TRIGGER_TYPE);
		return `${n8n.url}/webhook/${String(trigger?.webhookId)}/webhook`;
	};
	const registeredUrl = async (): Promise<string | null> => {
		const state = await control.state();
		return state.webhook.configured ? state.webhook.url : null;
	};
	const knownExecutions = new Set<string>();
	const snapshotExecutions = async () => {
		for (const execution of await client.executions()) knownExecutions.add(execution.id);
	};
	/** The next finished execution of the workflow that was not seen before. */
	const nextExecution = async (workflowId: string, timeoutMs = 45_000): Promise<Execution> => {
		const execution = await waitFor(
			`an execution of workflow ${workflowId}`,
			async () => {
				const list = await client.executions(workflowId);
				return list.find(
					(e) => !knownExecutions.has(e.id) && !['running', 'new', 'waiting'].includes(e.status),
				);
			},
			timeoutMs,
			500,
		);
		knownExecutions.add(execution.id);
		return execution;
	};
	/**
	 * The finished execution of the workflow whose trigger emitted the event `matches` accepts. A workflow that
	 * was active before also runs what its catch-up recovers on reactivation (messages whose delivery failed
	 * meanwhile): the next execution is not always this event's.
	 */
	const executionOfEvent = async (
		workflow: SavedWorkflow,
		what: string,
		matches: (event: { event?: string; data?: IDataObject }) => boolean,
		timeoutMs = 45_000,
	): Promise<Execution> => {
		const others = new Set<string>();
		const execution = await waitFor(
			`the execution of workflow ${workflow.id} for ${what}`,
			async () => {
				for (const e of await client.executions(workflow.id)) {
					if (knownExecutions.has(e.id) || others.has(e.id)) continue;
					if (['running', 'new', 'waiting'].includes(e.status)) continue;
					const output = await client.executionOutput(e.id);
					const event = output.nodes[triggerName(workflow)]?.[0] as
						{ event?: string; data?: IDataObject } | undefined;
					if (event && matches(event)) return e;
					others.add(e.id);
				}
				return undefined;
			},
			timeoutMs,
			500,
		);
		knownExecutions.add(execution.id);
		return execution;
	};
	const executionOfMessage = async (workflow: SavedWorkflow, waMessageId: string) =>
		await executionOfEvent(workflow, waMessageId, (e) => e.data?.wa_message_id === waMessageId);
	/**
	 * No execution for this check's events. An execution of an event that happened before the check
	 * started is an earlier check's (a workflow published again recovers what it missed while it was
	 * unpublished). Those are listed as set aside, not counted.
	 */
	const noNewExecution = async (quietMs = 4000): Promise<string> => {
		await sleep(quietMs);
		const setAside: string[] = [];
		const fresh: Execution[] = [];
		for (const e of (await client.executions()).filter((x) => !knownExecutions.has(x.id))) {
			const workflow = Object.values(imported?.workflows ?? {}).find((w) => w.id === e.workflowId);
			const output = workflow
				? await client.executionOutput(e.id).catch(() => undefined)
				: undefined;
			const event = workflow
				? (output?.nodes[triggerName(workflow)]?.[0] as { timestamp?: string } | undefined)
				: undefined;
			const happenedMs = event?.timestamp ? Date.parse(event.timestamp) : NaN;
			if (happenedMs < checkStartedMs - 1000) {
				setAside.push(`${e.id} (an event of ${new Date(happenedMs).toISOString()})`);
				knownExecutions.add(e.id);
			} else fresh.push(e);
		}
		expect(
			fresh.length === 0,
			`unexpected executions: ${JSON.stringify(fresh.map((e) => ({ id: e.id, workflowId: e.workflowId, mode: e.mode, status: e.status })))}`,
		);
		return setAside.length > 0
			? `; set aside (earlier checks' events): ${setAside.join(', ')}`
			: '';
	};
	const activate = async (workflow: SavedWorkflow): Promise<void> => {
		const outcome = await client.activateAndSettle(workflow.id);
		expect(
			outcome.ok,
			`activating "${workflow.name}" failed: ${outcome.ok ? '' : outcome.message}`,
		);
		await waitFor(
			`the sandbox webhook to point at ${productionUrl(workflow)}`,
			async () => (await registeredUrl()) === productionUrl(workflow),
			20_000,
		);
	};
	/** Sends an inbound message and waits for the auto-reply workflow to answer it. */
	const roundTrip = async (from: string, contactName: string, text: string) => {
		const before = (await control.state()).messages.length;
		const sent = await control.inbound({ from, contact_name: contactName, number, text });
		expect(
			sent.delivery.delivered,
			`the sandbox could not deliver the inbound event: ${JSON.stringify(sent.delivery)}`,
		);
		const execution = await nextExecution(autoReply.id);
		expect(
			execution.status === 'success',
			`execution ${execution.id} ended ${execution.status}: ${JSON.stringify((await client.executionOutput(execution.id)).error ?? {})}`,
		);
		expect(
			execution.mode === 'webhook',
			`execution ${execution.id} has mode ${execution.mode}, expected webhook (production)`,
		);
		const reply = await waitFor('the reply in the sandbox', async () =>
			(await control.state()).messages.slice(before).find((m) => m.to === from),
		);
		expect(
			reply.from === number,
			`reply left from ${reply.from}, expected the receiving number ${number}`,
		);
		expect(
			reply.text.includes(contactName),
			`reply text does not greet the contact: ${reply.text}`,
		);
		return { execution, reply, delivery: sent.delivery, waMessageId: sent.record.wa_message_id };
	};

	// Several workflows on one account: the router example and its sub-workflows (test/e2e/checks/router.ts).
	await routerChecks({
		check,
		client,
		control,
		number,
		imported,
		productionUrl,
		registeredUrl,
		restartWith: async (during) => {
			await restartWith(during);
			await client.login();
		},
	});

	await snapshotExecutions();

	await check(
		'HTTP Request 4.1, 4.2 and the latest with this credential: GET /v1/media/{id} answers 302 to the media host, which never gets the key',
		async () => {
			const latest = latestHttpRequestVersion(await client.nodeTypes());
			const versions = [...new Set([4.1, 4.2, latest])];
			const hostMedia = async () =>
				(
					await control.call<{ record: { media_id: string } }>('POST', '/inbound', {
						from: '+33700000001',
						contact_name: 'Media',
						number,
						media: {
							mime: 'image/png',
							data_base64: Buffer.from('e2e media bytes').toString('base64'),
							filename: 'e2e.png',
						},
					})
				).record.media_id;
			const mediaIds: string[] = [];
			for (let i = 0; i < versions.length; i++) mediaIds.push(await hostMedia());
			const pointerMediaId = await hostMedia();
			const probe = redirectProbeWorkflow({
				versions,
				latest,
				baseUrl: sandbox.baseUrl,
				credential: { id: imported!.credentialId, name: CREDENTIAL_NAME },
				mediaIds,
				pointerMediaId,
			});
			const saved = await client.createWorkflow(probe.workflow);
			const outcome = await client.activateAndSettle(saved.id);
			expect(
				outcome.ok,
				`activating the probe workflow failed: ${outcome.ok ? '' : outcome.message}`,
			);
			const before = await control.state();
			const answer = await waitFor(
				'the probe webhook to answer',
				async () => {
					const response = await fetch(`${n8n.url}/webhook/${probe.webhookPath}`, {
						signal: AbortSignal.timeout(60_000),
					});
					return response.status === 404 ? undefined : response;
				},
				20_000,
				500,
			);
			await answer.text();
			const execution = await nextExecution(saved.id);
			const output = await client.executionOutput(execution.id);
			const after = await control.state();
			await client.deactivate(saved.id);

			const key = sandbox.keys.all;
			const mediaRequests = after.media_requests.slice(before.media_requests.length);
			const carriers = mediaRequests.filter(
				(r) => r.headers.authorization !== undefined || JSON.stringify(r.headers).includes(key),
			);
			const seen = (node: string) => {
				const item = output.nodes[node]?.[0] as
					{ error?: unknown; statusCode?: number } | undefined;
				if (!item) return 'no output';
				if (item.error !== undefined)
					return `error: ${String((item.error as { message?: string })?.message ?? JSON.stringify(item.error)).slice(0, 160)}`;
				return item.statusCode !== undefined
					? `HTTP ${item.statusCode}`
					: `output ${JSON.stringify(item).slice(0, 120)}`;
			};
			const perVersion = Object.entries(probe.byNode).map(([node, { version, mediaId }]) => {
				const atApi = after.requests
					.slice(before.requests.length)
					.filter((r) => r.path === `/v1/media/${mediaId}`);
				const atMedia = mediaRequests.filter((r) => r.path.startsWith(`/media/${mediaId}?`));
				return { node, version, atApi, atMedia, seen: seen(node) };
			});
			const report = perVersion
				.map(
					(v) =>
						`${v.version}: API ${v.atApi.map((r) => r.status).join('/') || 'none'}, media host ${v.atMedia.map((r) => `${r.status}${r.headers.authorization ? ' WITH Authorization' : ''}`).join('/') || 'none'}; node: ${v.seen}`,
				)
				.join('; ');
			log(`  ${report}`);
			expect(
				carriers.length === 0,
				`the media host got the API key: ${JSON.stringify(carriers.map((r) => ({ path: r.path.replace(/\?.*/, ''), authorization: `${String(r.headers.authorization).slice(0, 14)}…` })))} (${report})`,
			);
			for (const v of perVersion) {
				expect(
					v.atApi.length > 0 && v.atApi.every((r) => r.status === 302),
					`HTTP Request ${v.version}: the service did not answer 302 (${report})`,
				);
				expect(
					v.atMedia.length === 0,
					`HTTP Request ${v.version} followed the redirect with the credential's request (${report})`,
				);
			}
			const pointer = output.nodes[probe.pointerNode]?.[0] as
				{ statusCode?: number; headers?: { location?: string } } | undefined;
			expect(
				pointer?.statusCode === 302 && pointer.headers?.location?.startsWith(sandbox.mediaBaseUrl),
				`Never Error + Full Response: ${JSON.stringify(pointer)}`,
			);
			const download = mediaRequests.filter((r) => r.path.startsWith(`/media/${pointerMediaId}?`));
			expect(
				download.length === 1 && download[0].status === 200,
				`downloading the Location without credentials: ${JSON.stringify(download.map((r) => r.status))}`,
			);
			return `HTTP Request ${report}; media requests ${mediaRequests.length}, none with Authorization; Never Error + Full Response gives 302 + Location, fetched without credentials: ${download[0].status}`;
		},
	);

	let errorWorkflowId = '';
	await check('auto-reply gets an Error Workflow (Error Trigger)', async () => {
		errorWorkflowId = (await client.createWorkflow(errorWorkflow())).id;
		await client.updateSettings(autoReply.id, { errorWorkflow: errorWorkflowId });
		const settings = (await client.getWorkflow(autoReply.id)).settings as
			{ errorWorkflow?: string } | undefined;
		expect(
			settings?.errorWorkflow === errorWorkflowId,
			`settings after update: ${JSON.stringify(settings)}`,
		);
		// 2.x runs an error workflow only when it is published ("is not active and cannot be
		// executed"); 1.x runs it either way.
		const published = await client.activateAndSettle(errorWorkflowId);
		expect(
			published.ok || line === 1,
			`publishing the error workflow failed: ${published.ok ? '' : published.message}`,
		);
		return `error workflow ${errorWorkflowId}${published.ok ? ', active' : ` (not activated: ${published.message})`}`;
	});

	await check(
		'auto-reply: activation registers the production URL; inbound -> trigger -> Reply from the same number to the same contact',
		async () => {
			await activate(autoReply);
			await sleep(1500);
			const { execution, reply, delivery } = await roundTrip(
				'+33612345678',
				'Ada',
				'Hello, is my order on its way?',
			);
			const output = await client.executionOutput(execution.id);
			const event = output.nodes[triggerName(autoReply)]?.[0] as
				{ event?: string; data?: { from?: string } } | undefined;
			expect(
				event?.event === 'message.inbound',
				`trigger output is not the inbound event: ${JSON.stringify(event)}`,
			);
			return `webhook ${productionUrl(autoReply)}; delivered ${delivery.status} in ${delivery.duration_ms} ms; execution ${execution.id}; reply ${reply.id} ${reply.from} -> ${reply.to}: "${reply.text}"`;
		},
	);

	await check('echo: acknowledged, starts no execution, is not answered', async () => {
		const before = (await control.state()).messages.length;
		const sent = await control.echo({
			to: '+33612345678',
			number,
			text: 'Sent from the business app',
		});
		expect(
			sent.delivery.delivered && sent.delivery.status === 200,
			`echo delivery: ${JSON.stringify(sent.delivery)}`,
		);
		const setAside = await noNewExecution();
		const after = (await control.state()).messages.length;
		expect(after === before, `${after - before} message(s) sent after the echo`);
		return `delivery ${sent.delivery.status}, no execution, no reply${setAside}`;
	});

	await check('tampered events: 401, no execution', async () => {
		const state = await control.state();
		const genuine = [...state.deliveries]
			.reverse()
			.find((d) => d.event === 'message.inbound' && d.body && d.signature);
		expect(genuine?.body && genuine.signature, 'no genuine delivery to tamper with');
		const url = productionUrl(autoReply);
		const post = async (body: string, signature: string) =>
			await fetch(url, {
				method: 'POST',
				headers: { 'content-type': 'application/json', 'x-service-signature': signature },
				body,
			});
		const altered = genuine.body.replace('Hello', 'Hellp');
		expect(altered !== genuine.body, 'could not alter the body');
		const r1 = await post(altered, genuine.signature);
		const forged = JSON.stringify({ ...JSON.parse(genuine.body), timestamp: serviceTimestamp() });
		const r2 = await post(forged, signBody(forged, WRONG_SECRET));
		const r3 = await post(forged, '');
		expect(
			r1.status === 401,
			`body altered, original signature: HTTP ${r1.status} ${await r1.text()}`,
		);
		expect(r2.status === 401, `signed with another secret: HTTP ${r2.status} ${await r2.text()}`);
		expect(r3.status === 401, `no signature: HTTP ${r3.status} ${await r3.text()}`);
		const setAside = await noNewExecution();
		return `altered body / wrong secret / missing signature: 401, 401, 401; no execution${setAside}`;
	});

	await check(
		'unsigned requests of every content type (multipart, urlencoded, text, xml, empty, gzip): 4xx, no execution, no error execution; a genuine event runs once',
		async () => {
			const state = await control.state();
			const genuine = [...state.deliveries]
				.reverse()
				.find((d) => d.event === 'message.inbound' && d.body);
			expect(genuine?.body, 'no genuine delivery to copy');
			const envelope = JSON.stringify({
				...JSON.parse(genuine.body),
				timestamp: serviceTimestamp(),
			});
			const count = async (workflowId: string) => (await client.executions(workflowId)).length;
			const triggerBefore = await count(autoReply.id);
			const errorsBefore = await count(errorWorkflowId);
			const answers: string[] = [];
			const wrong: string[] = [];
			for (const request of unsignedRequests(envelope)) {
				const response = await fetch(productionUrl(autoReply), {
					method: 'POST',
					headers: request.headers,
					body: request.body,
					signal: AbortSignal.timeout(30_000),
				});
				const text = await response.text();
				answers.push(`${request.label}: ${response.status}`);
				if (response.status < 400 || response.status >= 500)
					wrong.push(`${request.label}: HTTP ${response.status} ${text.slice(0, 200)}`);
			}
			expect(wrong.length === 0, `not refused with a 4xx: ${wrong.join(' | ')}`);

			// Positive control: the error workflow is wired. The genuine event's Reply fails (a 500
			// from the service), so exactly one error execution is expected, from it.
			await control.call('POST', '/faults', {
				count: 1,
				kind: 'status_500',
				path_prefix: '/v1/messages/reply',
			});
			const sent = await control.inbound({
				from: '+33612345678',
				contact_name: 'Ada',
				number,
				text: 'genuine, after the unsigned ones',
			});
			expect(
				sent.delivery.delivered && sent.delivery.status === 200,
				`genuine delivery: ${JSON.stringify(sent.delivery)}`,
			);
			const execution = await nextExecution(autoReply.id);
			expect(
				execution.status === 'error',
				`the genuine event's execution ended ${execution.status}, expected error (the Reply got a 500)`,
			);
			const errorExecution = await nextExecution(errorWorkflowId);
			await sleep(3000);
			const triggerAfter = await count(autoReply.id);
			const errorsAfter = await count(errorWorkflowId);
			expect(
				triggerAfter - triggerBefore === 1,
				`trigger workflow executions grew by ${triggerAfter - triggerBefore}, expected 1 (the genuine event)`,
			);
			expect(
				errorsAfter - errorsBefore === 1,
				`error workflow executions grew by ${errorsAfter - errorsBefore}, expected 1 (the genuine event's failure)`,
			);
			await snapshotExecutions();
			return `${answers.join(', ')}; trigger executions +${triggerAfter - triggerBefore} (genuine ${execution.id}), error workflow +${errorsAfter - errorsBefore} (${errorExecution.id}, from the genuine one)`;
		},
	);

	await check(
		"a copy of the active workflow (same webhookId) activated without Take Over: refused, and the original keeps its webhook (n8n 1.x calls the copy's delete)",
		async () => {
			const source = await client.getWorkflow(autoReply.id);
			const copy = await client.createWorkflow({
				name: `${source.name} (copy)`,
				nodes: source.nodes,
				connections: source.connections as WorkflowJson['connections'],
				settings: source.settings as WorkflowJson['settings'],
			});
			const outcome = await client.activateAndSettle(copy.id);
			const flag = (await client.getWorkflow(copy.id)).active;
			if (flag) await client.deactivate(copy.id);
			await sleep(1000);
			const after = await registeredUrl();
			expect(
				after === productionUrl(autoReply),
				`after the copy's refused activation the sandbox webhook is ${after ?? 'not configured'}, not the original's URL`,
			);
			const { execution } = await roundTrip('+447700900124', 'Ada', 'After the copy');
			return `copy ${outcome.ok ? 'activated' : `refused: "${outcome.message}"`}; webhook still the original's; original answered (execution ${execution.id})`;
		},
	);

	const listenCheck = async (workflow: SavedWorkflow, label: string): Promise<string> => {
		let answer: string;
		try {
			answer = `accepted: ${JSON.stringify(await client.listenForTestEvent(workflow.id, triggerName(workflow)))}`;
		} catch (error) {
			answer = `refused: ${error instanceof RestError ? `${error.status} ${error.serverMessage}` : errorText(error)}`;
		}
		log(`  ${label}: ${answer}`);
		const during = await registeredUrl();
		expect(
			during === productionUrl(autoReply),
			`while listening the sandbox webhook is ${during}, not the production URL`,
		);
		try {
			await client.stopListening(workflow.id);
		} catch (error) {
			log(`  stop listening: ${errorText(error)}`);
		}
		await sleep(1000);
		const after = await registeredUrl();
		expect(
			after === productionUrl(autoReply),
			`after listening the sandbox webhook is ${after}, not the production URL`,
		);
		const { execution, reply } = await roundTrip('+447700900123', 'Grace', `After ${label}`);
		return `${label}: ${answer}; production still answers (execution ${execution.id}, reply ${reply.id})`;
	};

	await check(
		'"Listen for test event" on another workflow while production is active: production keeps receiving',
		async () => await listenCheck(deliveryStatus, 'listen on the delivery-status workflow'),
	);
	await check(
		'"Listen for test event" on the active workflow itself: production keeps receiving',
		async () => await listenCheck(autoReply, 'listen on the active auto-reply workflow'),
	);

	await check('deactivation removes the webhook registration', async () => {
		await client.deactivate(autoReply.id);
		await waitFor(
			'the sandbox webhook to be removed',
			async () => (await registeredUrl()) === null,
			20_000,
		);
		return 'webhook configured: false';
	});

	await check(
		'sync-inbound-to-crm: inbound messages upsert one Contacts row per contact',
		async () => {
			await activate(syncToCrm);
			await sleep(1500);
			for (const text of ['First message', 'Second message']) {
				const sent = await control.inbound({
					from: '+4915112345678',
					contact_name: 'Linus',
					number,
					text,
				});
				expect(sent.delivery.delivered, `inbound delivery: ${JSON.stringify(sent.delivery)}`);
				const execution = await executionOfMessage(syncToCrm, sent.record.wa_message_id);
				expect(
					execution.status === 'success',
					`execution ${execution.id} ended ${execution.status}: ${JSON.stringify((await client.executionOutput(execution.id)).error ?? {})}`,
				);
			}
			const rows = await client.dataTableRows(imported!.projectId, imported!.tables.Contacts);
			const mine = rows.filter((r) => r.phone === '+4915112345678');
			expect(
				mine.length === 1,
				`expected one Contacts row for +4915112345678, got ${JSON.stringify(rows)}`,
			);
			const row = mine[0];
			expect(
				row.name === 'Linus' &&
					row.last_message === 'Second message' &&
					row.receiving_number === number,
				`row: ${JSON.stringify(row)}`,
			);
			expect(
				typeof row.last_message_at === 'string' && row.last_message_at !== '',
				`row has no last_message_at: ${JSON.stringify(row)}`,
			);
			await client.deactivate(syncToCrm.id);
			await waitFor(
				'the sandbox webhook to be removed',
				async () => (await registeredUrl()) === null,
				20_000,
			);
			// What its catch-up recovered on reactivation (failed deliveries of earlier checks) is not the next
			// check's: let those executions end, then count them as seen.
			await sleep(3000);
			await snapshotExecutions();
			return `row ${JSON.stringify({ phone: row.phone, name: row.name, last_message: row.last_message, last_message_at: row.last_message_at })}`;
		},
	);

	await check(
		'delivery-status: message.status events reach the workflow and update the row',
		async () => {
			// The newest reply: the router checks already set "delivered" on earlier ones (a status
			// already run is not run again).
			const reply = (await control.state()).messages.at(-1);
			expect(reply, 'no sent message to update (the auto-reply check did not send one)');
			await activate(deliveryStatus);
			await sleep(1500);
			const seen: string[] = [];
			for (const status of ['delivered', 'read']) {
				const sent = await control.status(reply.id, status);
				expect(sent.delivery.delivered, `status delivery: ${JSON.stringify(sent.delivery)}`);
				const execution = await executionOfEvent(
					deliveryStatus,
					`${reply.id} ${status}`,
					(e) => e.data?.id === reply.id && e.data?.status === status,
				);
				expect(
					execution.status === 'success',
					`execution ${execution.id} ended ${execution.status}: ${JSON.stringify((await client.executionOutput(execution.id)).error ?? {})}`,
				);
				const output = await client.executionOutput(execution.id);
				const event = output.nodes[triggerName(deliveryStatus)]?.[0] as
					{ event?: string; data?: { id?: string; status?: string } } | undefined;
				expect(
					event?.event === 'message.status' &&
						event.data?.id === reply.id &&
						event.data.status === status,
					`trigger output: ${JSON.stringify(event)}`,
				);
				const rows = await client.dataTableRows(
					imported!.projectId,
					imported!.tables['Delivery status'],
				);
				const row = rows.find((r) => r.message_id === reply.id);
				expect(
					row?.status === status,
					`Delivery status row after "${status}": ${JSON.stringify(rows)}`,
				);
				seen.push(`${status} (execution ${execution.id})`);
			}
			const inboundNow = await control.inbound({
				from: '+33612345678',
				contact_name: 'Ada',
				number,
				text: 'not for this workflow',
			});
			expect(
				inboundNow.delivery.delivered,
				`inbound to a status-only trigger: ${JSON.stringify(inboundNow.delivery)}`,
			);
			await noNewExecution(3000);
			await client.deactivate(deliveryStatus.id);
			return `message ${reply.id}: ${seen.join(', ')}; an inbound event started nothing`;
		},
	);

	await check(
		"Polling Trigger (no public address): no webhook registered, another system's webhook untouched; new messages each emitted once, oldest first, within one poll interval",
		async () => {
			// Another system's webhook on the account; deliveries to it fail (connection refused), as for an n8n the service cannot reach.
			const foreign = 'http://127.0.0.1:9/another-system';
			const registered = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
				method: 'POST',
				headers: {
					authorization: `Bearer ${sandbox.keys.all}`,
					'content-type': 'application/json',
				},
				body: JSON.stringify({ url: foreign }),
			});
			expect(registered.status === 201, `registering the foreign webhook: ${registered.status}`);
			const webhookBefore = (await control.state()).webhook;
			await control.inbound({
				from: '+33612345678',
				contact_name: 'Ada',
				number,
				text: 'polling: before activation',
			});
			const workflow = await client.createWorkflow({
				name: 'Polling trigger (e2e)',
				nodes: [
					{
						name: POLLING_NAME,
						type: POLLING_TYPE,
						typeVersion: 1,
						position: [0, 0],
						parameters: {
							pollTimes: { item: [{ mode: 'everyMinute' }] },
							events: ['message.inbound', 'message.echo'],
						},
						credentials: {
							[CREDENTIAL_TYPE]: { id: imported!.credentialId, name: CREDENTIAL_NAME },
						},
					},
					{
						name: 'No Operation',
						type: 'n8n-nodes-base.noOp',
						typeVersion: 1,
						position: [200, 0],
						parameters: {},
					},
				],
				connections: {
					[POLLING_NAME]: { main: [[{ node: 'No Operation', type: 'main', index: 0 }]] },
				},
				settings: { executionOrder: 'v1' },
			});
			const outcome = await client.activateAndSettle(workflow.id);
			expect(
				outcome.ok,
				`activating the polling workflow failed: ${outcome.ok ? '' : outcome.message}`,
			);
			const texts = ['polling: one', 'polling: two', 'polling: three'];
			const sentAt = Date.now();
			for (const text of texts)
				await control.inbound({ from: '+33612345678', contact_name: 'Ada', number, text });
			await control.echo({ to: '+33612345678', number, text: 'polling: echo' });
			const execution = await nextExecution(workflow.id, 135_000);
			const latencyS = ((Date.now() - sentAt) / 1000).toFixed(0);
			expect(execution.status === 'success', `execution ${execution.id} ended ${execution.status}`);
			const items = (await client.executionOutput(execution.id)).nodes[POLLING_NAME] as Array<{
				event: string;
				polled: boolean;
				data: { text: string };
			}>;
			const got = items.map((item) => `${item.event}:${item.data.text}`);
			expect(
				JSON.stringify(got) ===
					JSON.stringify([
						...texts.map((text) => `message.inbound:${text}`),
						'message.echo:polling: echo',
					]),
				`emitted ${JSON.stringify(got)}`,
			);
			const webhookAfter = (await control.state()).webhook;
			expect(
				webhookAfter.url === webhookBefore.url && webhookAfter.secret === webhookBefore.secret,
				`the account's webhook changed: ${JSON.stringify(webhookAfter.url)}`,
			);
			await client.deactivate(workflow.id);
			return `${items.length} items in execution ${execution.id}, ${latencyS} s after sending; the message from before activation not emitted; webhook still ${foreign}`;
		},
	);

	// The sandbox's chat page in Chromium with this n8n behind it (test/e2e/checks/chat.ts).
	await chatChecks({
		check,
		client,
		control,
		sandbox,
		imported,
		activate,
		nextExecution,
		outDir,
		line,
	});

	// No message lost: the trigger's catch-up (test/e2e/checks/catch-up.ts). The account's webhook is freed first.
	await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
		method: 'DELETE',
		headers: { authorization: `Bearer ${sandbox.keys.all}` },
	});
	await runCatchUpChecks({
		client,
		control,
		sandbox,
		credentialId: imported!.credentialId,
		n8nUrl: () => n8n.url,
		restartWith: async (during) => {
			await restartWith(during);
			await client.login();
		},
		check,
	});
	// The webhook taken, deleted, Stop, a log without message ids (issue 37; test/e2e/checks/webhookWatch.ts).
	await runWebhookWatchChecks({
		line,
		client,
		control,
		sandbox,
		credentialId: imported.credentialId,
		n8nUrl: () => n8n.url,
		n8nLog: () => n8n.logText(),
		restartWith: async (during) => {
			await restartWith(during);
			await client.login();
		},
		check,
	});
	// The editor in a browser (issue #16): what a user clicks and sees.
	const credential = { id: imported.credentialId, name: CREDENTIAL_NAME };
	timings.browser_ms = await runEditorChecks({
		line,
		n8nUrl: n8n.url,
		client,
		sandbox,
		control,
		credential,
		check,
		expect,
	});
}

main()
	.then((code) => process.exit(code))
	.catch((error) => {
		console.error(error);
		process.exit(1);
	});
