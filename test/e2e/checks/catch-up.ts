/**
 * "No message lost" in real n8n: the trigger's catch-up after a restart, with deliveries lost
 * on the way (reset, late), a burst larger than n8n answers in 8 s, and deactivation. Every
 * workflow here posts each message it runs to a recorder, so exactly-once is counted per
 * message id, not guessed from execution counts.
 */
import { randomUUID } from 'node:crypto';

import { DeliveryProxy, Recorder, type Fate } from '../lib/delivery-proxy';
import type { N8nClient, SavedWorkflow } from '../../real-n8n/n8n';
import { CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../../support/constants';
import type { Sandbox, SandboxControl } from '../../real-n8n/sandbox';
import { log, sleep, waitFor } from '../../real-n8n/util';

export interface CatchUpContext {
	client: N8nClient;
	control: SandboxControl;
	sandbox: Sandbox;
	/** The credential of the example workflows (Automatic registration). */
	credentialId: string;
	n8nUrl(): string;
	/** Stops n8n, runs `during` while it is down, starts it again on the same port and logs in. */
	restartWith(during: () => Promise<void>): Promise<void>;
	check(name: string, body: () => Promise<string>): Promise<boolean>;
}

/** The catch-up's interval in these workflows (the minimum; the default is 60 s). */
const INTERVAL_S = 10;
/** Settle time (15 s) + one interval + margin: when a missed message must have been recovered. */
const RECOVERY_WINDOW_MS = (15 + INTERVAL_S + 20) * 1000;
const CATCH_UP_CONTACT = '+4915200000000';
/** Messages through the lossy proxy: 1,000 by default; CI sends fewer (E2E_LOSSY_MESSAGES) to keep within its time. */
const LOSSY = Number(process.env.E2E_LOSSY_MESSAGES ?? 1000);

function expect(condition: unknown, message: string): asserts condition {
	if (!condition) throw new Error(message);
}

function workflowJson(
	name: string,
	recorderUrl: string,
	trigger: {
		credentialId: string;
		registration: 'automatic' | 'manual';
		webhookId: string;
		options?: Record<string, unknown>;
	},
) {
	return {
		name,
		nodes: [
			{
				name: TRIGGER_NAME,
				type: TRIGGER_TYPE,
				typeVersion: 2,
				position: [0, 0] as [number, number],
				webhookId: trigger.webhookId,
				parameters: {
					registration: trigger.registration,
					events: ['message.inbound', 'message.echo'],
					options: { catchUpInterval: INTERVAL_S, ...trigger.options },
				},
				credentials: {
					[CREDENTIAL_TYPE]: { id: trigger.credentialId, name: 'catch-up credential' },
				},
			},
			{
				name: 'Record',
				type: 'n8n-nodes-base.httpRequest',
				typeVersion: 4.2,
				position: [220, 0] as [number, number],
				parameters: {
					method: 'POST',
					url: recorderUrl,
					sendBody: true,
					specifyBody: 'json',
					jsonBody:
						'={{ JSON.stringify({ id: $json.data.wa_message_id, recovered: $json.recovered === true, event: $json.event, text: $json.data.text, execution: $execution.id }) }}',
				},
			},
		],
		connections: { [TRIGGER_NAME]: { main: [[{ node: 'Record', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}

/** Runs `tasks` with at most `concurrency` at a time, in order of start. */
async function pool<T>(
	count: number,
	concurrency: number,
	task: (index: number) => Promise<T>,
): Promise<T[]> {
	const results: T[] = new Array(count);
	let next = 0;
	await Promise.all(
		Array.from({ length: Math.min(concurrency, count) }, async () => {
			while (next < count) {
				const index = next++;
				results[index] = await task(index);
			}
		}),
	);
	return results;
}

export async function runCatchUpChecks(ctx: CatchUpContext): Promise<void> {
	const { client, control, sandbox } = ctx;
	const number = sandbox.numbers[0].phone_number_id;
	const recorder = new Recorder();
	const proxy = new DeliveryProxy();
	const recorderUrl = await recorder.start();
	const proxyUrl = await proxy.start();
	/** From one of 16 contacts (`contact` picks which; 0 by default). */
	const inbound = async (text: string, contact = 0) =>
		await control.inbound({
			from: `${CATCH_UP_CONTACT.slice(0, -2)}${String(contact % 16).padStart(2, '0')}`,
			contact_name: 'Catch Up',
			number,
			text,
		});
	/** Waits until every sent id was recorded, then one more recovery window for duplicates. Returns the tally. */
	const settle = async (sent: string[], label: string, waitMs = RECOVERY_WINDOW_MS) => {
		// Until every message is recorded, or nothing new for `waitMs` (a big backlog is recovered 500 a run).
		let seen = -1;
		let progressAt = Date.now();
		while (recorder.tally(sent).lost.length > 0 && Date.now() - progressAt < waitMs) {
			if (recorder.records.length !== seen)
				[seen, progressAt] = [recorder.records.length, Date.now()];
			await sleep(500);
		}
		if (recorder.tally(sent).lost.length > 0)
			log(`  ${label}: nothing new recorded for ${waitMs / 1000} s`);
		// One more settle time and interval, for a duplicate that would come late.
		await sleep(RECOVERY_WINDOW_MS - 20_000);
		return recorder.tally(sent);
	};
	const describe = (t: ReturnType<Recorder['tally']>, sent: number) =>
		`sent ${sent}, emitted once ${t.once} (live ${t.live}, recovered ${t.recovered}), lost ${t.lost.length}, duplicated ${t.duplicated.length}`;
	/** The lossy-network workflow: active from before the lossy check until the reactivation check ends. */
	let lossyId: string | undefined;

	try {
		await ctx.check(
			'catch-up node: "Listen for test event" still receives the event (n8n runs execute(), not trigger(), for it)',
			async () => {
				const workflow = await client.createWorkflow(
					workflowJson('Test event with catch-up (e2e)', recorderUrl, {
						credentialId: ctx.credentialId,
						registration: 'automatic',
						webhookId: randomUUID(),
					}) as never,
				);
				recorder.clear();
				await client.listenForTestEvent(workflow.id, TRIGGER_NAME);
				await waitFor(
					'the test URL to be registered',
					async () => ((await control.state()).webhook.url ?? '').includes('/webhook-test/'),
					20_000,
					300,
				);
				const sent = await inbound('catch-up: a test event');
				expect(sent.delivery.delivered, `test delivery: ${JSON.stringify(sent.delivery)}`);
				await waitFor(
					'the test execution to post the event',
					() => recorder.tally([sent.record.wa_message_id]).once === 1,
					30_000,
					300,
				);
				const record = recorder.records[0];
				expect(
					record.text === 'catch-up: a test event' && record.recovered === false,
					`recorded ${JSON.stringify(record)}`,
				);
				await client.stopListening(workflow.id).catch(() => undefined);
				await waitFor(
					'the test URL to be removed',
					async () => (await control.state()).webhook.url === null,
					20_000,
					300,
				).catch(() => undefined);
				return `test delivery ${sent.delivery.status}; the manual execution (${record.execution}) got the event once`;
			},
		);

		/** A workflow with Automatic registration, published. */
		const activeAutomatic = async (name: string) => {
			const workflow = await client.createWorkflow(
				workflowJson(name, recorderUrl, {
					credentialId: ctx.credentialId,
					registration: 'automatic',
					webhookId: randomUUID(),
				}) as never,
			);
			const activated = await client.activateAndSettle(workflow.id);
			expect(activated.ok, `activation failed: ${activated.ok ? '' : activated.message}`);
			return workflow;
		};
		/** `body` while such a workflow is published; unpublished after, failed or not (the account has one webhook). */
		const whileActive = async (
			name: string,
			body: (workflow: { id: string }) => Promise<string>,
		): Promise<string> => {
			const workflow = await activeAutomatic(name);
			try {
				return await body(workflow);
			} finally {
				await client
					.deactivate(workflow.id)
					.catch((error: unknown) => log(`  unpublishing ${name}: ${String(error)}`));
			}
		};

		// 1. Automatic registration; n8n stops, 50 inbound + 10 echoes arrive (connection refused), n8n starts.
		await ctx.check(
			'catch-up: n8n down while 50 inbound + 10 echo messages arrive; after the restart all 60 emitted once, oldest first, within one interval',
			async () =>
				await whileActive('Catch-up after restart (e2e)', async (workflow) => {
					const live = await inbound('catch-up: live before the restart');
					expect(live.delivery.delivered, `live delivery: ${JSON.stringify(live.delivery)}`);
					// Stop n8n only once the live message's execution has run: this check is about what arrives while
					// n8n is down (a stop during a running execution is n8n's own shutdown, not a catch-up case).
					await waitFor(
						'the live message to be recorded',
						() => recorder.tally([live.record.wa_message_id]).once === 1,
						30_000,
						300,
					);
					const sent: Array<{ id: string; text: string }> = [
						{ id: live.record.wa_message_id, text: 'catch-up: live before the restart' },
					];
					let failures = 0;
					await ctx.restartWith(async () => {
						for (let i = 0; i < 60; i++) {
							const text = `catch-up: while down ${String(i).padStart(2, '0')}`;
							const outcome =
								i % 6 === 5
									? await control.echo({ to: CATCH_UP_CONTACT, number, text })
									: await inbound(text);
							if (!outcome.delivery.delivered) failures++;
							sent.push({ id: outcome.record.wa_message_id, text });
						}
					});
					const upAt = Date.now();
					const ids = sent.map((s) => s.id);
					await waitFor(
						'all 61 messages recorded',
						() => recorder.tally(ids).lost.length === 0,
						RECOVERY_WINDOW_MS,
						500,
					).catch(() => undefined);
					const latencyS =
						(Math.max(...recorder.records.filter((r) => ids.includes(r.id)).map((r) => r.at)) -
							upAt) /
						1000;
					await sleep(INTERVAL_S * 1000 + 5000);
					const t = recorder.tally(ids);
					expect(
						failures === 60,
						`expected 60 failed deliveries while n8n was down, got ${failures}`,
					);
					expect(t.lost.length === 0 && t.duplicated.length === 0, describe(t, ids.length));
					expect(t.recovered === 60 && t.live === 1, describe(t, ids.length));
					// Oldest first: one contact's recovered messages run one after another, in the order they were stored.
					const recovered = recorder.records
						.filter((r) => r.recovered && ids.includes(r.id))
						.sort((a, b) => a.execution - b.execution);
					const expected = sent.slice(1).map((s) => s.text);
					expect(
						JSON.stringify(recovered.map((r) => r.text)) === JSON.stringify(expected),
						`order: ${recovered.map((r) => r.text).join(' | ')}`,
					);
					expect(
						latencyS <= INTERVAL_S + 20,
						`the last recovered message came ${latencyS.toFixed(1)} s after n8n was up`,
					);
					return `${describe(t, ids.length)}; 60 deliveries failed (connection refused); last recovered ${latencyS.toFixed(1)} s after n8n was up (interval ${INTERVAL_S} s)`;
				}),
		);

		// 2. Deliveries while n8n starts: it answers every request 200 "n8n is starting up" before it
		// mounts its webhooks (logged delivered), then 404 until the workflow is active.
		await ctx.check(
			'catch-up: deliveries while n8n starts (answered 200 "n8n is starting up", logged delivered, or 404) each run once after the restart',
			async () =>
				await whileActive('Catch-up while n8n starts (e2e)', async (workflow) => {
					const sent: string[] = [];
					const answers: Record<string, number> = {};
					for (let restart = 1; restart <= 3 && !answers['starting up']; restart++) {
						let starting = true;
						// Probes n8n's URL; while it answers "starting up", messages go out back to back.
						const during = (async () => {
							while (starting) {
								const probe = await fetch(`${ctx.n8nUrl()}/webhook/probe`, { method: 'POST' })
									.then(async (response) => await response.text())
									.catch(() => '');
								if (!/starting up/i.test(probe)) {
									await sleep(3);
									continue;
								}
								// At once: the moment lasts some 60 ms.
								const outcomes = await Promise.all(
									Array.from(
										{ length: 12 },
										async (_, i) =>
											await inbound(`catch-up: while n8n starts ${restart}.${sent.length + i}`, i),
									),
								);
								for (const outcome of outcomes) sent.push(outcome.record.wa_message_id);
							}
						})();
						await ctx.restartWith(async () => undefined);
						starting = false;
						await during;
						// What n8n answered each of them, as the service kept it.
						const { deliveries } = await control.state();
						for (const kind of Object.keys(answers)) delete answers[kind];
						for (const delivery of deliveries) {
							if (!sent.some((id) => delivery.body?.includes(id))) continue;
							const kind = /starting up/i.test(delivery.answer ?? '')
								? 'starting up'
								: String(delivery.status ?? 'refused');
							answers[kind] = (answers[kind] ?? 0) + 1;
						}
					}
					// Traffic goes on: a delivery this n8n takes says it serves the URL (not queue mode's processors).
					const after = await inbound('catch-up: after n8n started');
					expect(after.delivery.delivered, `after the restart: ${JSON.stringify(after.delivery)}`);
					sent.push(after.record.wa_message_id);
					// The moment lasts from a few to some 60 ms: a run of 3 restarts may miss it (said below). The
					// unit tests answer "starting up" from a stand-in server every time (catch-up*.test.ts).
					await waitFor(
						`all ${sent.length} messages recorded`,
						() => recorder.tally(sent).lost.length === 0,
						RECOVERY_WINDOW_MS,
						500,
					).catch(() => undefined);
					await sleep(INTERVAL_S * 1000 + 5000);
					const t = recorder.tally(sent);
					expect(t.lost.length === 0 && t.duplicated.length === 0, describe(t, sent.length));
					const hit = answers['starting up'] ? '' : ' (none reached n8n while it was starting up)';
					return `${describe(t, sent.length)}; answers while n8n started: ${JSON.stringify(answers)}${hit}`;
				}),
		);

		// Manual registration through the lossy proxy for the rest.
		const registered = await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sandbox.keys.all}`, 'content-type': 'application/json' },
			body: JSON.stringify({ url: proxyUrl }),
		});
		expect(registered.status === 201, `registering the proxy: ${registered.status}`);
		const { secret } = (await registered.json()) as { secret: string };
		const manualCredential = await client.createCredential(
			'Business Messaging (manual, e2e)',
			CREDENTIAL_TYPE,
			{
				apiKey: sandbox.keys.all,
				baseUrl: sandbox.baseUrl,
				webhookSecret: secret,
			},
		);
		const makeManual = async (
			name: string,
			options: Record<string, unknown> = {},
		): Promise<SavedWorkflow & { webhookId: string }> => {
			const webhookId = randomUUID();
			const saved = await client.createWorkflow(
				workflowJson(name, recorderUrl, {
					credentialId: manualCredential.id,
					registration: 'manual',
					webhookId,
					options,
				}) as never,
			);
			return { ...saved, webhookId };
		};
		/** Until n8n no longer takes the workflow's production webhook (2.x deactivates in the background): 404 to an unsigned POST. */
		const waitInactive = async (webhookId: string) =>
			await waitFor(
				"n8n to stop taking the deactivated workflow's webhook",
				async () =>
					(
						await fetch(`${ctx.n8nUrl()}/webhook/${webhookId}/webhook`, {
							method: 'POST',
							body: '{}',
						})
					).status === 404,
				30_000,
				300,
			);
		const lossy = await makeManual('Catch-up through a lossy network (e2e)');
		lossyId = lossy.id;
		proxy.target = `${ctx.n8nUrl()}/webhook/${lossy.webhookId}/webhook`;
		const activated = await client.activateAndSettle(lossy.id);
		expect(activated.ok, `activation failed: ${activated.ok ? '' : activated.message}`);

		await ctx.check(
			`catch-up: ${LOSSY.toLocaleString('en')} inbound at concurrency 16, 10% reset on the way and 10% held past the service timeout: each executed exactly once`,
			async () => {
				recorder.clear();
				proxy.reset((i): Fate => (i % 10 === 3 ? 'reset' : i % 10 === 7 ? 'late' : 'pass'));
				const started = Date.now();
				const outcomes = await pool(LOSSY, 16, async (i) => await inbound(`lossy ${i}`, i));
				const sendS = (Date.now() - started) / 1000;
				const ids = outcomes.map((o) => o.record.wa_message_id);
				const failed = outcomes.filter((o) => !o.delivery.delivered);
				const reasons: Record<string, number> = {};
				for (const o of failed)
					reasons[o.delivery.reason ?? '?'] = (reasons[o.delivery.reason ?? '?'] ?? 0) + 1;
				const t = await settle(ids, `${LOSSY} lossy`);
				log(
					`  lossy: proxy ${JSON.stringify(proxy.fates)}; failed deliveries ${JSON.stringify(reasons)}; ${describe(t, ids.length)}`,
				);
				expect(
					t.lost.length === 0 && t.duplicated.length === 0 && t.once === LOSSY,
					`${describe(t, ids.length)}; failed deliveries ${JSON.stringify(reasons)}`,
				);
				return `${describe(t, ids.length)}; proxy ${JSON.stringify(proxy.fates)}; failed deliveries ${JSON.stringify(reasons)}; sent in ${sendS.toFixed(0)} s`;
			},
		);

		await ctx.check(
			'catch-up: a burst of 500 inbound posted at once (more than n8n answers in 8 s): each executed exactly once',
			async () => {
				recorder.clear();
				proxy.reset();
				const started = Date.now();
				const outcomes = await Promise.all(
					Array.from({ length: 500 }, async (_, i) => await inbound(`burst ${i}`, i)),
				);
				const sendS = (Date.now() - started) / 1000;
				const ids = outcomes.map((o) => o.record.wa_message_id);
				const reasons: Record<string, number> = {};
				for (const o of outcomes.filter((o) => !o.delivery.delivered))
					reasons[o.delivery.reason ?? '?'] = (reasons[o.delivery.reason ?? '?'] ?? 0) + 1;
				const t = await settle(ids, 'burst 500');
				log(`  burst: failed deliveries ${JSON.stringify(reasons)}; ${describe(t, ids.length)}`);
				expect(
					t.lost.length === 0 && t.duplicated.length === 0,
					`${describe(t, ids.length)}; failed deliveries ${JSON.stringify(reasons)}`,
				);
				return `${describe(t, ids.length)}; failed deliveries ${JSON.stringify(reasons)}; all answered within ${sendS.toFixed(0)} s`;
			},
		);

		await ctx.check(
			'catch-up on reactivation: "Messages Since Last Active" (default) recovers what came while inactive; "Nothing From Before" does not',
			async () => {
				recorder.clear();
				proxy.reset();
				await client.deactivate(lossy.id);
				await waitInactive(lossy.webhookId);
				const whileInactive = await pool(5, 1, async (i) => await inbound(`while inactive ${i}`));
				const activatedAgain = await client.activateAndSettle(lossy.id);
				expect(
					activatedAgain.ok,
					`reactivation failed: ${activatedAgain.ok ? '' : activatedAgain.message}`,
				);
				const ids = whileInactive.map((o) => o.record.wa_message_id);
				const t = await settle(ids, 'since last active', RECOVERY_WINDOW_MS);
				expect(
					t.once === 5 && t.recovered === 5 && t.duplicated.length === 0,
					`default: ${describe(t, 5)}; deliveries ${whileInactive.map((o) => o.delivery.reason).join(', ')}`,
				);
				await client.deactivate(lossy.id);

				const fresh = await makeManual('Catch-up from activation only (e2e)', {
					onActivation: 'fromActivation',
				});
				proxy.target = `${ctx.n8nUrl()}/webhook/${fresh.webhookId}/webhook`;
				expect(
					(await client.activateAndSettle(fresh.id)).ok,
					'activating the "Nothing From Before" workflow',
				);
				await client.deactivate(fresh.id);
				await waitInactive(fresh.webhookId);
				const skipped = await pool(3, 1, async (i) => await inbound(`not recovered ${i}`));
				expect(
					(await client.activateAndSettle(fresh.id)).ok,
					'reactivating the "Nothing From Before" workflow',
				);
				const after = await inbound('after reactivation');
				const skippedIds = skipped.map((o) => o.record.wa_message_id);
				await sleep(RECOVERY_WINDOW_MS);
				const t2 = recorder.tally([...skippedIds, after.record.wa_message_id]);
				expect(
					t2.lost.length === 3 && t2.lost.every((id) => skippedIds.includes(id)) && t2.once === 1,
					`"Nothing From Before": ${describe(t2, 4)}`,
				);
				await client.deactivate(fresh.id);
				return `default: 5 of 5 sent while inactive recovered once; "Nothing From Before": 0 of 3 recovered, the message after reactivation ran once`;
			},
		);
	} finally {
		// The reactivation check leaves it inactive; when that check did not run (E2E_ONLY, E2E_SHARE)
		// or failed half-way, its catch-up would go on running what the next checks send.
		const lossyLeft = lossyId
			? await client.getWorkflow(lossyId).catch(() => undefined)
			: undefined;
		if (lossyLeft?.active || lossyLeft?.activeVersionId) {
			log(`  catch-up: deactivating the lossy-network workflow ${lossyLeft.id}, still active`);
			await client.deactivate(lossyLeft.id).catch((error: unknown) => log(`  ${String(error)}`));
		}
		await proxy.close();
		await recorder.close();
		// Free the account's webhook (it points at the proxy) for the checks that follow.
		await fetch(`${sandbox.baseUrl}/v1/console/webhook`, {
			method: 'DELETE',
			headers: { authorization: `Bearer ${sandbox.keys.all}` },
		}).catch(() => undefined);
	}
}
