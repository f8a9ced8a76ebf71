// Several workflows on one account (docs/several-workflows.md, T1 slimmed): the three examples
// activated at the same moment in real n8n, one registration, each selected event once per
// workflow, none unselected; a forged join refused. T10 (slimmed): the conversation example as a
// member beside auto-reply, its Reply and Wait resumed through the holder.
import { createHmac, randomUUID } from 'node:crypto';

import type { N8nClient, SavedWorkflow, WorkflowJson } from '../../real-n8n/n8n';
import type { SandboxControl } from '../../real-n8n/sandbox';
import { sleep, waitFor } from '../../real-n8n/util';

type Check = (name: string, body: () => Promise<string>) => Promise<boolean>;

export interface SeveralWorkflowsContext {
	check: Check;
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
): Promise<SavedWorkflow> {
	const original = await client.getWorkflow(example.id);
	return await client.createWorkflow({
		...(original as unknown as WorkflowJson),
		name: `${original.name} (several workflows)`,
		nodes: original.nodes.map((node) =>
			typeof node.webhookId === 'string' ? { ...node, webhookId: randomUUID() } : node,
		),
	});
}

function expect(condition: unknown, message: string): asserts condition {
	if (!condition) throw new Error(message);
}

export async function severalWorkflowsCheck(ctx: SeveralWorkflowsContext): Promise<void> {
	const { check, client, control, number, workflows, productionUrl, registeredUrl } = ctx;
	const { autoReply, syncToCrm, deliveryStatus } = workflows;
	const all = [autoReply, syncToCrm, deliveryStatus];

	await check(
		`several workflows (issue 26): the three examples activated at once share one registration; ${COUNT} inbound + ${COUNT} statuses each reach every workflow selecting them once; a forged join is refused`,
		async () => {
			await waitFor('no webhook registered', async () => (await registeredUrl()) === null, 20_000);
			const since = (await control.state()).requests.length;
			const outcomes = await Promise.all(
				all.map(async (w) => await client.activateAndSettle(w.id)),
			);
			const failed = outcomes.flatMap((o, i) => (o.ok ? [] : [`${all[i].name}: ${o.message}`]));
			expect(failed.length === 0, `activation errors: ${failed.join(' | ')}`);
			const holderUrl = await waitFor(
				'the webhook registered',
				async () => (await registeredUrl()) ?? undefined,
				20_000,
			);
			const holder = all.find((w) => productionUrl(w) === holderUrl);
			expect(holder, `the webhook ${holderUrl} is none of the three workflows`);
			// The members joined at activation; give the heartbeat no part in it.
			await sleep(1500);

			const before = (await control.state()).messages.length;
			for (let i = 0; i < COUNT; i++) {
				const sent = await control.inbound({
					from: `+3361000${String(i).padStart(4, '0')}`,
					contact_name: `Contact ${i}`,
					number,
					text: `several workflows ${i}`,
				});
				expect(sent.delivery.delivered, `inbound ${i}: ${JSON.stringify(sent.delivery)}`);
			}
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
			const registrations = (await control.state()).requests
				.slice(since)
				.filter((r) => r.method === 'POST' && r.path === '/v1/console/webhook').length;
			expect(registrations === 1, `POST /v1/console/webhook ${registrations} times, expected 1`);

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
	const { check, client, control, number, workflows, productionUrl, registeredUrl } = ctx;
	let all: SavedWorkflow[] = [];
	let deliveryStatus: SavedWorkflow | undefined;
	const selectsInbound = (w: SavedWorkflow) => w !== deliveryStatus;

	await check(
		`several workflows (issue 26, T2): the holder deactivated during ${STREAM} inbound hands the webhook off; each remaining workflow gets each message once`,
		async () => {
			all = [workflows.autoReply, workflows.syncToCrm, workflows.deliveryStatus];
			deliveryStatus = workflows.deliveryStatus;
			await waitFor('no webhook registered', async () => (await registeredUrl()) === null, 20_000);
			for (const w of all) {
				const outcome = await client.activateAndSettle(w.id);
				expect(outcome.ok, `${w.name}: ${outcome.ok ? '' : outcome.message}`);
			}
			const holderUrl = await waitFor(
				'the webhook registered',
				async () => (await registeredUrl()) ?? undefined,
				20_000,
			);
			const holder = all.find((w) => productionUrl(w) === holderUrl);
			expect(holder, `the webhook ${holderUrl} is none of the three workflows`);
			const remaining = all.filter((w) => w !== holder);
			await sleep(1500);
			const since = await control.state();
			const requestsBefore = since.requests.length;
			const deliveriesBefore = since.deliveries.length;

			const ids: string[] = [];
			let deactivation: Promise<unknown> | undefined;
			let deactivatedAtMs = 0;
			let deactivatedInMs = 0;
			for (let i = 0; i < STREAM; i++) {
				if (i === 10) {
					deactivatedAtMs = Date.now();
					deactivation = client.deactivate(holder.id).then(() => {
						deactivatedInMs = Date.now() - deactivatedAtMs;
					});
				}
				const sent = await control.inbound({
					from: `+3362000${String(i).padStart(4, '0')}`,
					contact_name: `Contact ${i}`,
					number,
					text: `hand-off ${i}`,
				});
				ids.push(sent.record.wa_message_id);
				await sleep(50);
			}
			await deactivation;
			const newUrl = await registeredUrl();
			const newHolder = remaining.find((w) => productionUrl(w) === newUrl);
			expect(newHolder, `the webhook is now ${newUrl}, no remaining workflow's URL`);

			const wanted = new Set(ids);
			const runs = async (w: SavedWorkflow) => {
				const found: Array<{ id: string; recovered: boolean }> = [];
				for (const execution of await client.executions(w.id)) {
					if (['running', 'new', 'waiting'].includes(execution.status)) continue;
					const output = await client.executionOutput(execution.id);
					const item = output.nodes[ctx.triggerName(w)]?.[0] as
						{ recovered?: boolean; data?: { wa_message_id?: string } } | undefined;
					const id = item?.data?.wa_message_id;
					if (id && wanted.has(id)) found.push({ id, recovered: item?.recovered === true });
				}
				return found;
			};
			const receivers = remaining.filter(selectsInbound);
			// The catch-up runs every 60 s and waits 15 s for a delivery to settle.
			await waitFor(
				`${STREAM} messages in each remaining workflow`,
				async () => {
					const counts = await Promise.all(
						receivers.map(async (w) => new Set((await runs(w)).map((r) => r.id)).size),
					);
					return counts.every((n) => n >= STREAM) ? counts : undefined;
				},
				150_000,
				3000,
			);
			await sleep(8000);
			const counts: string[] = [];
			for (const w of receivers) {
				const found = await runs(w);
				const distinct = new Set(found.map((r) => r.id)).size;
				const recovered = found.filter((r) => r.recovered).length;
				expect(
					distinct === STREAM && found.length === STREAM,
					`${w.name}: ${found.length} executions, ${distinct} distinct of ${STREAM}`,
				);
				counts.push(`${w.name} ${STREAM} (${recovered} recovered)`);
			}

			const state = await control.state();
			const registrations = state.requests
				.slice(requestsBefore)
				.filter((r) => r.path === '/v1/console/webhook' && r.method !== 'GET')
				.map((r) => r.method);
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
				const found = await waitFor(
					`${STREAM} messages in ${holder.name} after it came back`,
					async () => {
						const list = await runs(holder);
						return new Set(list.map((r) => r.id)).size >= STREAM ? list : undefined;
					},
					120_000,
					3000,
				);
				await sleep(8000);
				const list = await runs(holder);
				expect(
					list.length === STREAM && new Set(list.map((r) => r.id)).size === STREAM,
					`${holder.name} after it came back: ${list.length} executions, ${new Set(found.map((r) => r.id)).size} distinct of ${STREAM}`,
				);
				back = `; ${holder.name} published again: joined, ${STREAM} (${list.filter((r) => r.recovered).length} recovered), 0 duplicates`;
			}

			for (const w of all.filter((x) => x !== newHolder)) await client.deactivate(w.id);
			await client.deactivate(newHolder.id);
			await waitFor('the webhook removed', async () => (await registeredUrl()) === null, 20_000);
			return `holder ${holder.name} deactivated in ${deactivatedInMs} ms, webhook now ${newHolder.name}'s (1 POST, 0 DELETE); ${failed} deliveries failed in a ${windowMs} ms window; ${counts.join(', ')}, 0 duplicates${back}`;
		},
	);
}
