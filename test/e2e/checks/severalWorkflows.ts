// Several workflows on one account (docs/several-workflows.md, T1 slimmed): the three examples
// activated at the same moment in real n8n, one registration, each selected event once per
// workflow, none unselected; a forged join refused. T10 (slimmed): the conversation example as a
// member beside auto-reply, its Reply and Wait resumed through the holder.
import { createHmac, randomUUID } from 'node:crypto';

import type { N8nClient, SavedWorkflow, WorkflowJson } from '../../real-n8n/n8n';
import type { SandboxControl } from '../../real-n8n/sandbox';
import { SCOPES } from '../../sandbox/types';
import { CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../../support/constants';
import { sleep, waitFor } from '../../real-n8n/util';

type Check = (name: string, body: () => Promise<string>) => Promise<boolean>;

export interface SeveralWorkflowsContext {
	check: Check;
	/** The account's key, as the examples' credential holds it. */
	apiKey: string;
	client: N8nClient;
	control: SandboxControl;
	number: string;
	workflows: {
		autoReply: SavedWorkflow;
		syncToCrm: SavedWorkflow;
		deliveryStatus: SavedWorkflow;
		conversation: SavedWorkflow;
	};
	productionUrl(workflow: SavedWorkflow): string;
	registeredUrl(): Promise<string | null>;
	triggerName(workflow: SavedWorkflow): string;
}

const COUNT = 30;

/**
 * A copy of an example with webhook URLs of its own. The several-workflows checks run on copies: a
 * forward a holder retries 60 or 200 s later must not reach an example a later check publishes
 * again, and an example published again recovers what the other workflows got while it was
 * unpublished (§7), which the later checks would count as theirs.
 */
export async function copyOfExample(
	client: N8nClient,
	example: SavedWorkflow,
	label = 'several workflows',
): Promise<SavedWorkflow> {
	const original = await client.getWorkflow(example.id);
	return await client.createWorkflow({
		...(original as unknown as WorkflowJson),
		name: `${original.name.replace(/ \(several workflows\)$/, '')} (${label})`,
		nodes: original.nodes.map((node) =>
			node.type === TRIGGER_TYPE
				? {
						...node,
						webhookId: randomUUID(),
						// The catch-up's shortest interval: the checks wait for its recoveries, not for 60 s.
						parameters: {
							...node.parameters,
							options: {
								...((node.parameters?.options as Record<string, unknown> | undefined) ?? {}),
								catchUpInterval: CATCH_UP_INTERVAL_S,
							},
						},
					}
				: typeof node.webhookId === 'string'
					? { ...node, webhookId: randomUUID() }
					: node,
		),
	});
}

const CATCH_UP_INTERVAL_S = 10;

function expect(condition: unknown, message: string): asserts condition {
	if (!condition) throw new Error(message);
}

/**
 * `count` inbound messages, one after another, from numbered contacts of `series` (four digits,
 * one per check, so no check counts another's); `beforeEach` runs before message i is sent.
 */
async function inboundStream(
	ctx: SeveralWorkflowsContext,
	series: string,
	count: number,
	text: string,
	options: { beforeEach?: (i: number) => Promise<void> | void; spacingMs?: number } = {},
): Promise<Array<{ from: string; waMessageId: string; delivered: boolean; delivery: unknown }>> {
	const sent: Array<{ from: string; waMessageId: string; delivered: boolean; delivery: unknown }> =
		[];
	for (let i = 0; i < count; i++) {
		await options.beforeEach?.(i);
		const from = `+336${series}${String(i).padStart(4, '0')}`;
		const outcome = await ctx.control.inbound({
			from,
			contact_name: `Contact ${i}`,
			number: ctx.number,
			text: `${text} ${i}`,
		});
		sent.push({
			from,
			waMessageId: outcome.record.wa_message_id,
			delivered: outcome.delivery.delivered,
			delivery: outcome.delivery,
		});
		if (options.spacingMs) await sleep(options.spacingMs);
	}
	return sent;
}

/**
 * Activates `workflows` (all at once, or in order: then the first holds) once no webhook is
 * registered, and waits for the registration; the members get 1.5 s to join (the heartbeat takes
 * no part). Answers the holder and how many requests the sandbox had before the activations.
 */
async function activateAll(
	ctx: SeveralWorkflowsContext,
	workflows: SavedWorkflow[],
	order: 'at once' | 'in order',
): Promise<{ holder: SavedWorkflow; holderUrl: string; requestsBefore: number }> {
	const { client, control, registeredUrl, productionUrl } = ctx;
	await waitFor('no webhook registered', async () => (await registeredUrl()) === null, 20_000);
	const requestsBefore = (await control.state()).requests.length;
	const outcomes =
		order === 'at once'
			? await Promise.all(workflows.map(async (w) => await client.activateAndSettle(w.id)))
			: [];
	if (order === 'in order')
		for (const w of workflows) outcomes.push(await client.activateAndSettle(w.id));
	const failed = outcomes.flatMap((o, i) => (o.ok ? [] : [`${workflows[i].name}: ${o.message}`]));
	expect(failed.length === 0, `activation errors: ${failed.join(' | ')}`);
	const holderUrl = await waitFor(
		'the webhook registered',
		async () => (await registeredUrl()) ?? undefined,
		20_000,
	);
	const holder = workflows.find((w) => productionUrl(w) === holderUrl);
	expect(holder, `the webhook ${holderUrl} is none of the workflows`);
	if (order === 'in order')
		expect(holder === workflows[0], `the webhook is ${holder.name}'s, not the first's`);
	await sleep(1500);
	return { holder, holderUrl, requestsBefore };
}

/** The changes of the account's webhook (POST, DELETE) the sandbox saw after its first `since` requests. */
async function webhookChanges(ctx: SeveralWorkflowsContext, since: number): Promise<string[]> {
	return (await ctx.control.state()).requests
		.slice(since)
		.filter((r) => r.path === '/v1/console/webhook' && r.method !== 'GET')
		.map((r) => r.method);
}

/**
 * The events of `wanted` that `w`'s finished executions ran, one entry per execution: an inbound
 * message by its wa_message_id, a status as status:<id>:<status>.
 */
async function eventsRun(
	ctx: SeveralWorkflowsContext,
	w: SavedWorkflow,
	wanted: Set<string>,
): Promise<Array<{ key: string; recovered: boolean }>> {
	const found: Array<{ key: string; recovered: boolean }> = [];
	for (const execution of await ctx.client.executions(w.id)) {
		if (['running', 'new', 'waiting'].includes(execution.status)) continue;
		const output = await ctx.client.executionOutput(execution.id);
		const item = output.nodes[ctx.triggerName(w)]?.[0] as
			| {
					event?: string;
					recovered?: boolean;
					data?: { wa_message_id?: string; id?: string; status?: string };
			  }
			| undefined;
		const key =
			item?.event === 'message.status'
				? `status:${item.data?.id}:${item.data?.status}`
				: item?.data?.wa_message_id;
		if (key && wanted.has(key)) found.push({ key, recovered: item?.recovered === true });
	}
	return found;
}

/** `w` ran each of `wanted` exactly once (live or recovered); says how many were recovered. */
async function ranEachOnce(
	ctx: SeveralWorkflowsContext,
	w: SavedWorkflow,
	wanted: Set<string>,
): Promise<string> {
	const found = await eventsRun(ctx, w, wanted);
	const distinct = new Set(found.map((r) => r.key)).size;
	expect(
		distinct === wanted.size && found.length === wanted.size,
		`${w.name}: ${found.length} executions, ${distinct} distinct of ${wanted.size}`,
	);
	return `${w.name} ${wanted.size} (${found.filter((r) => r.recovered).length} recovered)`;
}

/** Waits until each of `workflows` ran every event of `wanted` at least once. */
async function untilEachRan(
	ctx: SeveralWorkflowsContext,
	workflows: SavedWorkflow[],
	wanted: Set<string>,
	timeoutMs: number,
): Promise<void> {
	await waitFor(
		`${wanted.size} events in each of ${workflows.map((w) => w.name).join(', ')}`,
		async () => {
			for (const w of workflows) {
				const keys = new Set((await eventsRun(ctx, w, wanted)).map((r) => r.key));
				if (keys.size < wanted.size) return undefined;
			}
			return true;
		},
		timeoutMs,
		3000,
	);
}

export async function severalWorkflowsCheck(ctx: SeveralWorkflowsContext): Promise<void> {
	const { check, client, control, workflows, productionUrl, registeredUrl } = ctx;
	const { autoReply, syncToCrm, deliveryStatus } = workflows;
	const all = [autoReply, syncToCrm, deliveryStatus];

	await check(
		`several workflows (issue 26): the three examples activated at once share one registration; ${COUNT} inbound + ${COUNT} statuses each reach every workflow selecting them once; a forged join is refused`,
		async () => {
			const { holder, holderUrl, requestsBefore: since } = await activateAll(ctx, all, 'at once');

			const before = (await control.state()).messages.length;
			const sent = await inboundStream(ctx, '1000', COUNT, 'several workflows');
			const undelivered = sent.filter((m) => !m.delivered);
			expect(undelivered.length === 0, `not delivered: ${JSON.stringify(undelivered)}`);
			const replies = await waitFor(
				`${COUNT} auto-replies`,
				async () => {
					const messages = (await control.state()).messages.slice(before);
					return messages.length >= COUNT ? messages : undefined;
				},
				120_000,
				500,
			);
			for (const reply of replies.slice(0, COUNT)) {
				const sent = await control.status(reply.id, 'delivered');
				expect(sent.delivery.delivered, `status: ${JSON.stringify(sent.delivery)}`);
			}

			const finished = async (w: SavedWorkflow) =>
				(await client.executions(w.id)).filter(
					(e) => !['running', 'new', 'waiting'].includes(e.status),
				);
			await waitFor(
				`${COUNT} executions of each workflow`,
				async () => {
					const counts = await Promise.all(all.map(async (w) => (await finished(w)).length));
					return counts.every((n) => n >= COUNT) ? counts : undefined;
				},
				180_000,
				1000,
			);
			// Late duplicates (a retried forward, a recovery) would show up now.
			await sleep(8000);
			const ids: Record<string, string[]> = {};
			for (const w of all) {
				ids[w.name] = [];
				for (const execution of await finished(w)) {
					const output = await client.executionOutput(execution.id);
					const event = output.nodes[ctx.triggerName(w)]?.[0] as
						| { event?: string; data?: { wa_message_id?: string; id?: string; status?: string } }
						| undefined;
					ids[w.name].push(
						event?.event === 'message.status'
							? `status:${event.data?.id}:${event.data?.status}`
							: `${event?.event}:${event?.data?.wa_message_id}`,
					);
				}
			}
			const summary = (w: SavedWorkflow, prefix: string) => {
				const list = ids[w.name];
				const selected = list.filter((id) => id.startsWith(prefix));
				expect(
					list.length === COUNT && new Set(selected).size === COUNT,
					`${w.name}: ${list.length} executions, ${new Set(selected).size} distinct ${prefix} events, ${list.length - selected.length} unselected`,
				);
				return `${w.name} ${selected.length}`;
			};
			const counts = [
				summary(autoReply, 'message.inbound:'),
				summary(syncToCrm, 'message.inbound:'),
				summary(deliveryStatus, 'status:'),
			];
			const changes = await webhookChanges(ctx, since);
			expect(changes.join() === 'POST', `webhook changes: ${changes.join()}, expected one POST`);

			// A join signed with another key: 401, nothing runs (and nothing forwarded to the forged URL).
			const member = all.find((w) => w !== holder)!;
			const body = JSON.stringify({
				member_url: productionUrl(member).replace(
					/\/[^/]+\/webhook$/,
					'/00000000-0000-4000-8000-000000000000/webhook',
				),
				workflow_id: 'forged',
				events: ['message.inbound'],
				account: 'forged',
				instance_id: 'forged',
				issued_at_ms: Date.now(),
			});
			const key = createHmac('sha256', 'sk_live_forged')
				.update('business-messaging membership v1')
				.digest('hex');
			const executionCount = async () =>
				(await Promise.all(all.map(async (w) => (await client.executions(w.id)).length))).reduce(
					(a, b) => a + b,
				);
			const executionsBefore = await executionCount();
			const forged = await fetch(holderUrl, {
				method: 'POST',
				headers: {
					'content-type': 'application/json',
					'x-business-messaging-join': `sha256=${createHmac('sha256', key).update(body).digest('hex')}`,
				},
				body,
			});
			await forged.text();
			expect(forged.status === 401, `forged join answered ${forged.status}`);
			await sleep(2000);
			const executionsAfter = await executionCount();
			expect(
				executionsAfter === executionsBefore,
				`the forged join started ${executionsAfter - executionsBefore} executions`,
			);
			// n8n's REST answer carries the workflow's static data (the members table) where it shows it.
			const saved = JSON.stringify((await client.getWorkflow(holder.id)) as unknown);
			expect(
				!saved.includes('00000000-0000-4000-8000-000000000000'),
				'the forged member is stored',
			);

			// Members first: the holder, left alone, deletes the webhook (deactivated first, it would hand it off).
			for (const w of all.filter((x) => x !== holder)) await client.deactivate(w.id);
			await client.deactivate(holder.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `0 activation errors; 1 registration (holder ${holder.name}); executions: ${counts.join(', ')}, 0 unselected, 0 duplicates; forged join 401, 0 executions`;
		},
	);

	await conversationBesideAutoReply(ctx);
}

/**
 * T10 (slimmed): auto-reply holds the webhook, the conversation example joins it. A contact
 * writes (both workflows start: the question, the auto-reply), then answers: the conversation's
 * waiting execution is resumed once (the holder resumes it and tells the member), the
 * conversation's workflow is not started again, auto-reply is started once more.
 */
async function conversationBesideAutoReply(ctx: SeveralWorkflowsContext): Promise<void> {
	const { check, client, control, number, registeredUrl, productionUrl } = ctx;
	const { autoReply, conversation } = ctx.workflows;
	await check(
		'several workflows (issue 26, T10): the conversation example beside auto-reply: the answer resumes its wait once, its workflow is not also started, auto-reply starts once per message',
		async () => {
			await waitFor('no webhook registered', async () => (await registeredUrl()) === null, 20_000);
			// In this order, so the conversation's trigger is the member (the holder resumes for it).
			for (const w of [autoReply, conversation]) {
				const outcome = await client.activateAndSettle(w.id);
				expect(outcome.ok, `${w.name}: ${outcome.ok ? '' : outcome.message}`);
			}
			const holderUrl = await registeredUrl();
			expect(holderUrl === productionUrl(autoReply), `the webhook is ${holderUrl}`);
			await sleep(1500);
			const ids = async (w: SavedWorkflow) =>
				new Set((await client.executions(w.id)).map((e) => e.id));
			const beforeConversation = await ids(conversation);
			const beforeAutoReply = await ids(autoReply);
			const fresh = async (w: SavedWorkflow, before: Set<string>) =>
				(await client.executions(w.id)).filter((e) => !before.has(e.id));
			const contact = '+33611126010';
			const write = async (text: string) => {
				const sent = await control.inbound({ from: contact, contact_name: 'Ada', number, text });
				expect(sent.delivery.delivered, `inbound: ${JSON.stringify(sent.delivery)}`);
			};

			await write('hello');
			const waiting = await waitFor(
				'the conversation waiting',
				async () =>
					(await fresh(conversation, beforeConversation)).find((e) => e.status === 'waiting'),
				30_000,
				500,
			);
			await waitFor(
				'the question and the auto-reply',
				async () =>
					(await control.state()).messages.filter((m) => m.to === contact).length >= 2 || undefined,
				30_000,
				500,
			);
			await write('A-42');
			await waitFor(
				'the waiting execution resumed and finished',
				async () => {
					const found = (await client.executions(conversation.id)).find((e) => e.id === waiting.id);
					return found && !['running', 'new', 'waiting'].includes(found.status) ? found : undefined;
				},
				60_000,
				1000,
			);
			await waitFor(
				'auto-reply started for the answer',
				async () => ((await fresh(autoReply, beforeAutoReply)).length >= 2 ? true : undefined),
				60_000,
				1000,
			);
			// Late duplicates (a second start of the conversation, a retried forward) would show up now.
			await sleep(8000);
			const conversations = await fresh(conversation, beforeConversation);
			const autoReplies = await fresh(autoReply, beforeAutoReply);
			const resumed = conversations.find((e) => e.id === waiting.id)!;
			expect(resumed.status === 'success', `the resumed execution ended ${resumed.status}`);
			expect(
				conversations.length === 1,
				`the conversation workflow has ${conversations.length} executions, expected 1 (its wait resumed, not started again)`,
			);
			expect(
				autoReplies.length === 2,
				`auto-reply has ${autoReplies.length} executions, expected 2 (one per message)`,
			);
			const texts = (await control.state()).messages
				.filter((m) => m.to === contact)
				.map((m) => m.text);
			const confirmations = texts.filter((t) => /A-42/.test(t)).length;
			expect(
				confirmations === 1,
				`${confirmations} confirmations of A-42 sent: ${texts.join(' | ')}`,
			);

			for (const w of [conversation, autoReply]) await client.deactivate(w.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `holder auto-reply, member conversation: wait ${waiting.id} resumed once (${resumed.status}), conversation executions 1, auto-reply executions 2, confirmations 1`;
		},
	);
}

const STREAM = 60;

/**
 * T2 (docs/several-workflows.md §13), scaled to about two minutes: the holder deactivated during
 * a stream of inbound messages hands the webhook off; every remaining workflow selecting inbound
 * gets each message exactly once, live or recovered by its catch-up.
 */
export async function severalWorkflowsHandOffCheck(ctx: SeveralWorkflowsContext): Promise<void> {
	const { check, client, control, workflows, productionUrl, registeredUrl } = ctx;
	let all: SavedWorkflow[] = [];
	let deliveryStatus: SavedWorkflow | undefined;
	const selectsInbound = (w: SavedWorkflow) => w !== deliveryStatus;

	await check(
		`several workflows (issue 26, T2): the holder deactivated during ${STREAM} inbound hands the webhook off; each remaining workflow gets each message once`,
		async () => {
			all = [workflows.autoReply, workflows.syncToCrm, workflows.deliveryStatus];
			deliveryStatus = workflows.deliveryStatus;
			const { holder, holderUrl } = await activateAll(ctx, all, 'in order');
			const remaining = all.filter((w) => w !== holder);
			const since = await control.state();
			const requestsBefore = since.requests.length;
			const deliveriesBefore = since.deliveries.length;

			let deactivation: Promise<unknown> | undefined;
			let deactivatedAtMs = 0;
			let deactivatedInMs = 0;
			const sent = await inboundStream(ctx, '2000', STREAM, 'hand-off', {
				spacingMs: 50,
				beforeEach: (i) => {
					if (i !== 10) return;
					deactivatedAtMs = Date.now();
					deactivation = client.deactivate(holder.id).then(() => {
						deactivatedInMs = Date.now() - deactivatedAtMs;
					});
				},
			});
			await deactivation;
			const newUrl = await registeredUrl();
			const newHolder = remaining.find((w) => productionUrl(w) === newUrl);
			expect(newHolder, `the webhook is now ${newUrl}, no remaining workflow's URL`);

			const wanted = new Set(sent.map((m) => m.waMessageId));
			const receivers = remaining.filter(selectsInbound);
			// The catch-up runs every 10 s here and waits 15 s for a delivery to settle.
			await untilEachRan(ctx, receivers, wanted, 150_000);
			await sleep(8000);
			const counts: string[] = [];
			for (const w of receivers) counts.push(await ranEachOnce(ctx, w, wanted));

			const state = await control.state();
			const registrations = await webhookChanges(ctx, requestsBefore);
			expect(
				registrations.join() === 'POST',
				`webhook changes during the hand-off: ${registrations.join() || 'none'} (expected one POST, no DELETE)`,
			);
			// The window: from the last delivery the old holder took to the first the new one took.
			const deliveries = state.deliveries.slice(deliveriesBefore);
			const at = (d: { created_at: string }) => Date.parse(d.created_at);
			const lastOld = deliveries.filter((d) => d.url === holderUrl && d.delivered).pop();
			const firstNew = deliveries.find((d) => d.url === newUrl && d.delivered);
			const failed = deliveries.filter((d) => !d.delivered).length;
			const windowMs = lastOld && firstNew ? at(firstNew) - at(lastOld) : NaN;

			// Published again (§6, §7): it joins the new holder and recovers, once, what it missed meanwhile.
			const again = await client.activateAndSettle(holder.id);
			expect(again.ok, `${holder.name} again: ${again.ok ? '' : again.message}`);
			expect((await registeredUrl()) === newUrl, 'the webhook moved when the old holder came back');
			let back = '';
			if (selectsInbound(holder)) {
				await untilEachRan(ctx, [holder], wanted, 120_000);
				await sleep(8000);
				back = `; published again: joined, ${await ranEachOnce(ctx, holder, wanted)}, 0 duplicates`;
			}

			for (const w of all.filter((x) => x !== newHolder)) await client.deactivate(w.id);
			await client.deactivate(newHolder.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `holder ${holder.name} deactivated in ${deactivatedInMs} ms, webhook now ${newHolder.name}'s (1 POST, 0 DELETE); ${failed} deliveries failed in a ${windowMs} ms window; ${counts.join(', ')}, 0 duplicates${back}`;
		},
	);
}

const WHILE_DOWN = 20;
const LIVE_AFTER = 10;

/**
 * T4 (docs/several-workflows.md §13): n8n stopped while three workflows share the webhook. What
 * arrives meanwhile reaches each workflow selecting it once, recovered by its own catch-up; after
 * the start nobody registers again, and live inbound messages and statuses reach every member (the
 * membership outlived the restart: n8n's shutdown never calls delete()).
 */
export async function severalWorkflowsRestartCheck(
	ctx: SeveralWorkflowsContext,
	restartWith: (during: () => Promise<void>) => Promise<void>,
): Promise<void> {
	const { check, client, control, workflows, registeredUrl } = ctx;
	await check(
		`several workflows (issue 26, T4): n8n stopped with three workflows active, ${WHILE_DOWN} inbound meanwhile: each inbound workflow runs each once after the start; live events reach every member after it; no new registration`,
		async () => {
			// Fresh copies: the other checks' copies would recover, by §7, what they missed meanwhile.
			const autoReply = await copyOfExample(client, workflows.autoReply, 'restart');
			const syncToCrm = await copyOfExample(client, workflows.syncToCrm, 'restart');
			const deliveryStatus = await copyOfExample(client, workflows.deliveryStatus, 'restart');
			const all = [autoReply, syncToCrm, deliveryStatus];
			const { holder, holderUrl, requestsBefore } = await activateAll(ctx, all, 'at once');

			let whileDown: Awaited<ReturnType<typeof inboundStream>> = [];
			const downAt = Date.now();
			await restartWith(async () => {
				whileDown = await inboundStream(ctx, '3000', WHILE_DOWN, 'while n8n is down');
			});
			const downS = ((Date.now() - downAt) / 1000).toFixed(0);
			await client.login();
			const delivered = whileDown.filter((m) => m.delivered).length;
			expect(delivered === 0, `${delivered} of ${WHILE_DOWN} delivered while n8n was down`);
			for (const w of all) {
				const saved = await client.getWorkflow(w.id);
				expect(saved.active, `${w.name} is not active after the start`);
			}
			const inboundWorkflows = [autoReply, syncToCrm];
			const missed = new Set(whileDown.map((m) => m.waMessageId));
			const startedAt = Date.now();
			// The catch-up runs at activation and every 10 s here; it waits 15 s for a delivery to settle.
			await untilEachRan(ctx, inboundWorkflows, missed, 150_000);
			const recoveredS = ((Date.now() - startedAt) / 1000).toFixed(0);

			// Live after the start: inbound to both inbound workflows, a status per auto-reply to the status one.
			const live = await inboundStream(ctx, '3100', LIVE_AFTER, 'after the start');
			const undelivered = live.filter((m) => !m.delivered);
			expect(
				undelivered.length === 0,
				`not delivered after the start: ${JSON.stringify(undelivered)}`,
			);
			const contacts = new Set(live.map((m) => m.from));
			const replies = await waitFor(
				`${LIVE_AFTER} auto-replies after the start`,
				async () => {
					const found = (await control.state()).messages.filter((m) => contacts.has(m.to));
					return found.length >= LIVE_AFTER ? found : undefined;
				},
				60_000,
				500,
			);
			const statuses = new Set<string>();
			for (const reply of replies) {
				const sent = await control.status(reply.id, 'delivered');
				expect(sent.delivery.delivered, `status: ${JSON.stringify(sent.delivery)}`);
				statuses.add(`status:${reply.id}:delivered`);
			}
			const liveIds = new Set(live.map((m) => m.waMessageId));
			await untilEachRan(ctx, inboundWorkflows, liveIds, 60_000);
			await untilEachRan(ctx, [deliveryStatus], statuses, 60_000);
			// Late copies (a retried forward, a second recovery) would show up now.
			await sleep(8000);
			const counts: string[] = [];
			for (const w of inboundWorkflows) {
				counts.push(await ranEachOnce(ctx, w, missed));
				await ranEachOnce(ctx, w, liveIds);
			}
			counts.push(await ranEachOnce(ctx, deliveryStatus, statuses));
			expect((await registeredUrl()) === holderUrl, 'the webhook moved during the restart');
			const registrations = await webhookChanges(ctx, requestsBefore);
			expect(
				registrations.join() === 'POST',
				`webhook changes: ${registrations.join() || 'none'} (expected the first activation's POST only)`,
			);

			for (const w of all.filter((x) => x !== holder)) await client.deactivate(w.id);
			await client.deactivate(holder.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `holder ${holder.name}; n8n down ${downS} s, ${WHILE_DOWN} inbound failed meanwhile; all recovered ${recoveredS} s after the start: ${counts.join(', ')}; then ${LIVE_AFTER} live inbound and ${statuses.size} statuses once per selecting workflow; 0 duplicates; 1 registration, none after the start`;
		},
	);
}

const CHURN = 40;

/** `w`'s nodes with its trigger's options changed by `options`. */
async function withTriggerOptions(
	ctx: SeveralWorkflowsContext,
	w: SavedWorkflow,
	options: Record<string, unknown>,
): Promise<SavedWorkflow['nodes']> {
	const saved = await ctx.client.getWorkflow(w.id);
	const trigger = ctx.triggerName(w);
	return saved.nodes.map((node) =>
		node.name === trigger
			? {
					...node,
					parameters: {
						...node.parameters,
						options: {
							...((node.parameters?.options as Record<string, unknown> | undefined) ?? {}),
							...options,
						},
					},
				}
			: node,
	);
}

/**
 * T3 (docs/several-workflows.md §13): members change while messages stream in. delivery-status
 * holds; auto-reply is unpublished after the 10th message and published again, with a changed
 * option, after the 30th; sync-to-CRM is republished with a changed option while active after the
 * 20th (n8n removes its trigger and adds it again). The holder never moves and nobody registers;
 * each inbound workflow runs each message once, live, forwarded or recovered (§7).
 */
export async function severalWorkflowsMembersChangeCheck(
	ctx: SeveralWorkflowsContext,
): Promise<void> {
	const { check, client, workflows, registeredUrl } = ctx;
	await check(
		`several workflows (issue 26, T3): during ${CHURN} inbound one member is unpublished and published again changed, another republished changed while active: the webhook stays, each inbound workflow runs each message once`,
		async () => {
			const deliveryStatus = await copyOfExample(
				client,
				workflows.deliveryStatus,
				'members change',
			);
			const autoReply = await copyOfExample(client, workflows.autoReply, 'members change');
			const syncToCrm = await copyOfExample(client, workflows.syncToCrm, 'members change');
			// In this order: delivery-status holds, the two inbound workflows are members.
			const { holderUrl, requestsBefore } = await activateAll(
				ctx,
				[deliveryStatus, autoReply, syncToCrm],
				'in order',
			);

			const changes: Array<Promise<string>> = [];
			const timed = (label: string, change: () => Promise<unknown>) => {
				const startedAt = Date.now();
				changes.push(
					change().then((outcome) => {
						const failed = outcome as { ok?: boolean; message?: string } | undefined;
						if (failed?.ok === false) throw new Error(`${label}: ${failed.message}`);
						return `${label} in ${Date.now() - startedAt} ms`;
					}),
				);
			};
			const sent = await inboundStream(ctx, '4000', CHURN, 'members change', {
				spacingMs: 50,
				beforeEach: async (i) => {
					if (i === 10)
						timed('auto-reply unpublished', async () => await client.deactivate(autoReply.id));
					if (i === 20)
						timed(
							'sync-to-CRM republished changed',
							async () =>
								await client.republish(
									syncToCrm.id,
									await withTriggerOptions(ctx, syncToCrm, { maxRecovered: 77 }),
								),
						);
					if (i === 30) {
						// Published again only once its unpublishing is over, as a user can.
						await changes[0];
						timed(
							'auto-reply published again changed',
							async () =>
								await client.republish(
									autoReply.id,
									await withTriggerOptions(ctx, autoReply, { maxRecovered: 78 }),
								),
						);
					}
				},
			});
			const timings = await Promise.all(changes);
			const undelivered = sent.filter((m) => !m.delivered);
			const wanted = new Set(sent.map((m) => m.waMessageId));
			// Recovered by the catch-up (every 10 s here, 15 s to settle) where a change made one miss it.
			await untilEachRan(ctx, [autoReply, syncToCrm], wanted, 150_000);
			await sleep(8000);
			const counts = [
				await ranEachOnce(ctx, autoReply, wanted),
				await ranEachOnce(ctx, syncToCrm, wanted),
			];
			expect((await registeredUrl()) === holderUrl, 'the webhook moved');
			const registrations = await webhookChanges(ctx, requestsBefore);
			expect(
				registrations.join() === 'POST',
				`webhook changes: ${registrations.join() || 'none'} (expected the first activation's POST only)`,
			);

			for (const w of [autoReply, syncToCrm, deliveryStatus]) await client.deactivate(w.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `${timings.join(', ')}; ${undelivered.length} of ${CHURN} deliveries failed; ${counts.join(', ')}, 0 duplicates; webhook unchanged, 1 registration`;
		},
	);
}

const PNG = Buffer.from(
	'89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489',
	'hex',
);

/** A workflow of one Business Messaging Trigger (its `options`) and a No Operation node. */
function triggerOnlyWorkflow(name: string, credentialId: string, options: Record<string, unknown>) {
	return {
		name,
		nodes: [
			{
				name: TRIGGER_NAME,
				type: TRIGGER_TYPE,
				typeVersion: 2,
				position: [0, 0] as [number, number],
				webhookId: randomUUID(),
				parameters: { events: ['message.inbound'], options },
				credentials: { [CREDENTIAL_TYPE]: { id: credentialId, name: 'several workflows' } },
			},
			{
				name: 'Received',
				type: 'n8n-nodes-base.noOp',
				typeVersion: 1,
				position: [220, 0] as [number, number],
				parameters: {},
			},
		],
		connections: { [TRIGGER_NAME]: { main: [[{ node: 'Received', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}

/**
 * T10, the rest of it (§8): Download Media and hand over run in each member with its own options.
 * One holder without either; member A downloads into `data` and sends a contact a person answers to
 * its Hand Over output; member B downloads into `photo` and drops that contact's messages.
 */
export async function severalWorkflowsMediaAndHandOverCheck(
	ctx: SeveralWorkflowsContext & { credentialId: string },
): Promise<void> {
	const { check, client, control, number, registeredUrl } = ctx;
	await check(
		'several workflows (issue 26, T10): Download Media in two members, each into its own field, none in the holder; hand over only where it is on (Hand Over output in one member, dropped in the other, main output in the holder)',
		async () => {
			const make = async (label: string, options: Record<string, unknown>) =>
				await client.createWorkflow(
					triggerOnlyWorkflow(`Several workflows, ${label} (e2e)`, ctx.credentialId, options),
				);
			const holder = await make('holder', {});
			const memberA = await make('member A', {
				downloadMedia: true,
				handOver: 'output',
				handOverMinutes: 30,
			});
			const memberB = await make('member B', {
				downloadMedia: true,
				binaryPropertyName: 'photo',
				handOver: 'drop',
			});
			const all = [holder, memberA, memberB];
			await activateAll(ctx, all, 'in order');
			// The trigger's output by output: [main, Hand Over], each item's text and binary fields.
			const runs = async (w: SavedWorkflow) => {
				const found: Array<{
					outputs: Array<Array<{ from?: string; text?: string; binary: string[] }>>;
				}> = [];
				for (const execution of await client.executions(w.id)) {
					if (['running', 'new', 'waiting'].includes(execution.status)) continue;
					const { outputs } = await client.executionRunData(execution.id);
					found.push({
						outputs: (outputs[TRIGGER_NAME] ?? []).map((items) =>
							items.map((item) => ({
								from: (item.json as { data?: { from?: string } }).data?.from,
								text: (item.json as { data?: { text?: string } }).data?.text,
								binary: Object.entries(item.binary ?? {}).map(
									([field, file]) => `${field}:${file.mimeType}:${file.fileSize}`,
								),
							})),
						),
					});
				}
				return found;
			};

			const mediaContact = '+33640000001';
			const media = await control.call<{ delivery: { delivered: boolean } }>('POST', '/inbound', {
				from: mediaContact,
				contact_name: 'Media',
				number,
				media: { mime: 'image/png', data_base64: PNG.toString('base64'), filename: 'photo.png' },
			});
			expect(media.delivery.delivered, `media inbound: ${JSON.stringify(media.delivery)}`);
			const person = '+33640000002';
			await control.echo({ to: person, number, text: 'A person of the business answers' });
			const handed = await control.inbound({
				from: person,
				contact_name: 'Handed over',
				number,
				text: 'to a person',
			});
			expect(handed.delivery.delivered, `inbound: ${JSON.stringify(handed.delivery)}`);
			await waitFor(
				'2 executions of the holder and of member A, 1 of member B',
				async () => {
					const counts = await Promise.all(all.map(async (w) => (await runs(w)).length));
					return counts[0] >= 2 && counts[1] >= 2 && counts[2] >= 1 ? counts : undefined;
				},
				60_000,
				1000,
			);
			await sleep(8000);
			const [ofHolder, ofA, ofB] = await Promise.all(all.map(runs));
			const describe = (list: typeof ofHolder) => JSON.stringify(list.map((r) => r.outputs));
			const mediaRun = (list: typeof ofHolder) =>
				list.find((r) => r.outputs.flat().some((item) => item.from === mediaContact));
			const handedRun = (list: typeof ofHolder) =>
				list.find((r) => r.outputs.flat().some((item) => item.text === 'to a person'));
			expect(
				ofHolder.length === 2 && ofA.length === 2 && ofB.length === 1,
				`executions: holder ${describe(ofHolder)}, A ${describe(ofA)}, B ${describe(ofB)}`,
			);
			expect(
				mediaRun(ofHolder)?.outputs[0]?.[0]?.binary.length === 0,
				`the holder downloaded: ${describe(ofHolder)}`,
			);
			expect(
				mediaRun(ofA)?.outputs[0]?.[0]?.binary.join().startsWith('data:image/png:'),
				`member A's file: ${describe(ofA)}`,
			);
			expect(
				mediaRun(ofB)?.outputs[0]?.[0]?.binary.join().startsWith('photo:image/png:'),
				`member B's file: ${describe(ofB)}`,
			);
			expect(
				handedRun(ofHolder)?.outputs[0]?.[0]?.text === 'to a person',
				`the holder's run of the handed-over contact: ${describe(ofHolder)}`,
			);
			const aHanded = handedRun(ofA)?.outputs;
			expect(
				aHanded?.[0]?.length === 0 && aHanded?.[1]?.[0]?.text === 'to a person',
				`member A's run of the handed-over contact (expected the Hand Over output): ${describe(ofA)}`,
			);
			expect(!handedRun(ofB), `member B ran the handed-over contact: ${describe(ofB)}`);
			const downloads = (await control.state()).media_requests?.length;

			for (const w of [memberA, memberB, holder]) await client.deactivate(w.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `holder: 2 executions, no file, hand over not applied; member A: file in data (${mediaRun(ofA)?.outputs[0]?.[0]?.binary.join()}), the contact a person answers on its Hand Over output; member B: file in photo, that contact dropped (1 execution); media requests to the media host: ${downloads}`;
		},
	);
}

/** Another n8n beside this one (its own folder, encryption key, instance id and URL), owner set up. */
export type StartAnotherN8n = () => Promise<{
	url: string;
	client: N8nClient;
	close(): Promise<void>;
}>;

/**
 * T8 (§9): only this n8n and this account's key join. A staging n8n beside production, on the same
 * key, is refused as before issue 26 (the webhook is another system's to it); a trigger of this n8n
 * with a second key of the same account is refused naming the way out (one credential). Neither
 * joins, the webhook never moves, and the holder keeps receiving.
 */
export async function severalWorkflowsIdentityCheck(
	ctx: SeveralWorkflowsContext & { credentialId: string; startAnother: StartAnotherN8n },
): Promise<void> {
	const { check, client, control, number, registeredUrl } = ctx;
	await check(
		'several workflows (issue 26, T8): a staging n8n on the same key is refused as before (another webhook is registered); a second key of the same account is refused naming one credential; neither joins, the webhook stays',
		async () => {
			const holder = await client.createWorkflow(
				triggerOnlyWorkflow('Several workflows, production holder (e2e)', ctx.credentialId, {}),
			);
			const { holderUrl } = await activateAll(ctx, [holder], 'in order');
			const requestsBefore = (await control.state()).requests.length;

			// Same account, a second key, in this n8n.
			const secondKey = await control.createKey([...SCOPES]);
			const secondCredential = await client.createCredential(
				'Business Messaging (second key)',
				CREDENTIAL_TYPE,
				{ apiKey: secondKey.key, baseUrl: control.baseUrl, webhookSecret: '' },
			);
			const withSecondKey = await client.createWorkflow(
				triggerOnlyWorkflow('Several workflows, second key (e2e)', secondCredential.id, {}),
			);
			const second = await client.activateAndSettle(withSecondKey.id);
			expect(!second.ok, 'the trigger with a second key of the account was activated');
			expect(
				/different API key/.test(second.message) &&
					/same Business Messaging credential/.test(second.message),
				`the second key's refusal does not name the way out: ${second.message}`,
			);

			// A staging n8n beside it, on the same key.
			const staging = await ctx.startAnother();
			let stagingMessage = '';
			let stagingExecutions = 0;
			let stagingWorkflowId = '';
			try {
				const credential = await staging.client.createCredential(
					'Business Messaging (staging)',
					CREDENTIAL_TYPE,
					{ apiKey: ctx.apiKey, baseUrl: control.baseUrl, webhookSecret: '' },
				);
				const stagingWorkflow = await staging.client.createWorkflow(
					triggerOnlyWorkflow('Staging copy (e2e)', credential.id, {}),
				);
				stagingWorkflowId = stagingWorkflow.id;
				const refused = await staging.client.activateAndSettle(stagingWorkflow.id);
				expect(!refused.ok, 'the staging trigger was activated');
				stagingMessage = refused.message;
				expect(
					/Another webhook is registered for this account/.test(refused.message),
					`the staging refusal is not today's: ${refused.message}`,
				);
				const sent = await control.inbound({
					from: '+33650000001',
					contact_name: 'After the refusals',
					number,
					text: 'still reaches production',
				});
				expect(sent.delivery.delivered, `inbound: ${JSON.stringify(sent.delivery)}`);
				await waitFor(
					'the holder ran the message',
					async () =>
						(await eventsRun(ctx, holder, new Set([sent.record.wa_message_id]))).length === 1 ||
						undefined,
					30_000,
					1000,
				);
				await sleep(5000);
				stagingExecutions = (await staging.client.executions(stagingWorkflow.id)).length;
			} finally {
				await staging.close();
			}
			expect(stagingExecutions === 0, `the staging workflow ran ${stagingExecutions} times`);
			expect(
				(await client.executions(withSecondKey.id)).length === 0,
				'the second-key workflow ran',
			);
			const changes = await webhookChanges(ctx, requestsBefore);
			expect(changes.length === 0, `webhook changes: ${changes.join()}`);
			expect((await registeredUrl()) === holderUrl, 'the webhook moved');
			// n8n's REST answer carries the holder's static data (its members) where it shows it.
			const saved = JSON.stringify((await client.getWorkflow(holder.id)) as unknown);
			expect(!saved.includes(new URL(staging.url).host), "staging is in the holder's members");
			expect(
				!saved.includes(withSecondKey.nodes[0].webhookId as string),
				"the second-key trigger is in the holder's members",
			);

			// A refused publication may leave the workflow marked active: unpublished, as a user would.
			await client.deactivate(withSecondKey.id).catch(() => undefined);
			await client.deactivate(holder.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `second key: "${second.message.slice(0, 140)}…"; staging (${stagingWorkflowId}): "${stagingMessage.slice(0, 90)}…"; 0 joins, 0 webhook changes, 0 executions in either, the holder ran the next message once`;
		},
	);
}
