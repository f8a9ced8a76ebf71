/**
 * Several workflows on one account (issue 32): the router example (examples/router.json), one
 * Business Messaging Trigger whose Execute Workflow nodes start the sub-workflows
 * (examples/router-*.json) without waiting. Counted per sub-workflow over the REST API: which
 * events each one's executions received (its start node's item), each exactly once; and a second
 * trigger on the same credential refused, naming Execute Workflow.
 */
import { randomUUID } from 'node:crypto';

import {
	activateRouter,
	CREDENTIAL_NAME,
	importRouter,
	mapExample,
	readExample,
	SUB_WORKFLOW_START,
	type Imported,
	type ImportedRouter,
	type SubWorkflowKey,
} from '../../real-n8n/examples';
import type { N8nClient, SavedWorkflow } from '../../real-n8n/n8n';
import type { SandboxControl } from '../../real-n8n/sandbox';
import { sleep, waitFor } from '../../real-n8n/util';

export interface RouterContext {
	check(name: string, body: () => Promise<string>): Promise<boolean>;
	client: N8nClient;
	control: SandboxControl;
	number: string;
	imported: Imported;
	productionUrl(workflow: SavedWorkflow): string;
	registeredUrl(): Promise<string | null>;
	/** Stops n8n, runs `during` while it is down, starts it again on the same port and logs in. */
	restartWith(during: () => Promise<void>): Promise<void>;
}

/** The catch-up's shortest interval: the restart check waits for its recoveries, not for 60 s. */
const CATCH_UP_INTERVAL_S = 10;
/** Its settle time (15 s) and one interval: when a late duplicate would have shown up. */
const LATE_DUPLICATE_MS = (15 + CATCH_UP_INTERVAL_S) * 1000;
const CONTACTS = 10;

function expect(condition: unknown, message: string): asserts condition {
	if (!condition) throw new Error(message);
}

const done = (status: string) => !['running', 'new'].includes(status);

/** What one execution of a sub-workflow received: its start node's item, keyed by the event. */
interface Received {
	execution: string;
	status: string;
	key: string;
	recovered: boolean;
	resumedExecution?: string;
}

/** Every execution of `w` that started (waiting ones included), with what its start node got. */
async function received(client: N8nClient, w: SavedWorkflow): Promise<Received[]> {
	const found: Received[] = [];
	for (const execution of await client.executions(w.id)) {
		if (!done(execution.status)) continue;
		const output = await client.executionOutput(execution.id);
		const item = output.nodes[SUB_WORKFLOW_START]?.[0] as
			| {
					event?: string;
					recovered?: boolean;
					resumed_execution?: string;
					data?: { wa_message_id?: string; id?: string; status?: string };
			  }
			| undefined;
		found.push({
			execution: execution.id,
			status: execution.status,
			key:
				item?.event === 'message.status'
					? `status:${item.data?.id}:${item.data?.status}`
					: `${item?.event}:${item?.data?.wa_message_id}`,
			recovered: item?.recovered === true,
			resumedExecution: item?.resumed_execution,
		});
	}
	return found;
}

/** `got` holds each of `wanted` exactly once and nothing else; says how many. */
function exactlyOnce(name: string, got: Received[], wanted: Set<string>): string {
	const keys = got.map((r) => r.key);
	const missing = [...wanted].filter((k) => !keys.includes(k));
	const twice = keys.filter((k, i) => keys.indexOf(k) !== i);
	const other = keys.filter((k) => !wanted.has(k));
	expect(
		missing.length + twice.length + other.length === 0,
		`${name}: ${got.length} executions for ${wanted.size} events; missing ${JSON.stringify(missing)}, twice ${JSON.stringify(twice)}, not its events ${JSON.stringify(other)}`,
	);
	return `${name} ${got.length}`;
}

/** Waits until each workflow has at least its count of started executions. */
async function untilStarted(
	client: N8nClient,
	counts: Array<[SavedWorkflow, number]>,
	timeoutMs: number,
): Promise<void> {
	await waitFor(
		`executions: ${counts.map(([w, n]) => `${n} of ${w.name}`).join(', ')}`,
		async () => {
			for (const [w, n] of counts)
				if ((await client.executions(w.id)).filter((e) => done(e.status)).length < n)
					return undefined;
			return true;
		},
		timeoutMs,
		2000,
	);
}

/**
 * A fresh router set (its own names, webhookId and sub-workflows, so no check counts another's),
 * the catch-up every 10 s, activated once the account's webhook is free.
 */
async function startRouter(
	ctx: RouterContext,
	label: string,
	previous: ImportedRouter | undefined,
): Promise<ImportedRouter> {
	// An earlier check that failed half-way may have left its router active.
	if (previous && (await ctx.client.getWorkflow(previous.router.id)).active)
		await stopRouter(ctx, previous);
	const set = await importRouter(ctx.client, ctx.imported, {
		label,
		triggerOptions: { catchUpInterval: CATCH_UP_INTERVAL_S },
	});
	await waitFor('no webhook registered', async () => (await ctx.registeredUrl()) === null, 20_000);
	await activateRouter(ctx.client, set);
	await waitFor(
		"the router's webhook registered",
		async () => (await ctx.registeredUrl()) === ctx.productionUrl(set.router),
		20_000,
	);
	await sleep(1500);
	return set;
}

async function stopRouter(ctx: RouterContext, set: ImportedRouter): Promise<void> {
	await ctx.client.deactivate(set.router.id);
	await waitFor('the webhook removed', async () => (await ctx.registeredUrl()) === null, 20_000);
}

/** One inbound message from each contact; the keys (`message.inbound:<wa_message_id>`) and deliveries. */
async function writeFrom(
	ctx: RouterContext,
	contacts: string[],
	text: (i: number) => string,
): Promise<Array<{ key: string; delivered: boolean }>> {
	const sent: Array<{ key: string; delivered: boolean }> = [];
	for (const [i, from] of contacts.entries()) {
		const outcome = await ctx.control.inbound({
			from,
			contact_name: `Contact ${i}`,
			number: ctx.number,
			text: text(i),
		});
		sent.push({
			key: `message.inbound:${outcome.record.wa_message_id}`,
			delivered: outcome.delivery.delivered,
		});
	}
	return sent;
}

const contactsOf = (series: string, count: number) =>
	Array.from({ length: count }, (_, i) => `+336${series}${String(i).padStart(4, '0')}`);

export async function routerChecks(ctx: RouterContext): Promise<void> {
	const { check, client, control } = ctx;
	let set: ImportedRouter | undefined;

	await check(
		`router (issue 32): one trigger, Execute Workflow to four sub-workflows: ${CONTACTS} contacts write and answer (${2 * CONTACTS} inbound), ${2 * CONTACTS} statuses, an echo and a handed-over message: each sub-workflow runs each of its events once; each answer resumes its conversation (asked once) and reaches CRM only, marked resumed_execution`,
		async () => {
			set = await startRouter(ctx, 'router', set);
			const sub = set.subWorkflows;
			const contacts = contactsOf('2100', CONTACTS);
			const first = await writeFrom(ctx, contacts, (i) => `Hello, a question from contact ${i}`);
			expect(
				first.every((m) => m.delivered),
				`${first.filter((m) => !m.delivered).length} not delivered`,
			);
			const toContacts = async () =>
				(await control.state()).messages.filter((m) => contacts.includes(m.to));
			// The auto-reply and the conversation's question, to each contact.
			const sentToContacts = await waitFor(
				`${2 * CONTACTS} replies to the contacts`,
				async () => {
					const found = await toContacts();
					return found.length >= 2 * CONTACTS ? found : undefined;
				},
				120_000,
				1000,
			);
			const statuses = new Set<string>();
			for (const message of sentToContacts) {
				const sent = await control.status(message.id, 'delivered');
				expect(sent.delivery.delivered, `status: ${JSON.stringify(sent.delivery)}`);
				statuses.add(`status:${message.id}:delivered`);
			}
			// A person answers another contact from the business app; that contact's next message is handed over.
			const [personal] = contactsOf('2199', 1);
			const echo = await control.echo({ to: personal, number: ctx.number, text: 'A person here' });
			expect(echo.delivery.delivered, `echo: ${JSON.stringify(echo.delivery)}`);
			const echoKey = `message.echo:${echo.record.wa_message_id}`;
			const [handedOver] = await writeFrom(ctx, [personal], () => 'Thanks, person');
			const waiting = await waitFor(
				`${CONTACTS} conversations waiting`,
				async () => {
					const list = (await client.executions(sub.conversation.id)).filter(
						(e) => e.status === 'waiting',
					);
					return list.length >= CONTACTS ? list : undefined;
				},
				60_000,
				1000,
			);
			const answers = await writeFrom(ctx, contacts, (i) => `A-${100 + i}`);
			expect(
				answers.every((m) => m.delivered),
				`${answers.filter((m) => !m.delivered).length} answers not delivered`,
			);

			const inbound = 2 * CONTACTS + 1;
			await untilStarted(
				client,
				[
					[set.router, inbound + statuses.size + 1],
					[sub.crmSync, inbound + 1],
					[sub.deliveryStatus, statuses.size],
					[sub.autoReply, CONTACTS],
				],
				180_000,
			);
			await waitFor(
				'every conversation resumed and finished',
				async () =>
					(await client.executions(sub.conversation.id)).every(
						(e) => done(e.status) && e.status !== 'waiting',
					) || undefined,
				90_000,
				2000,
			);
			await sleep(8000); // Late duplicates (a second start, a retried resume) would show up now.

			const firstKeys = new Set(first.map((m) => m.key));
			const got = {} as Record<SubWorkflowKey, Received[]>;
			for (const key of Object.keys(sub) as SubWorkflowKey[])
				got[key] = await received(client, sub[key]);
			const counts = [
				exactlyOnce('auto-reply', got.autoReply, firstKeys),
				exactlyOnce('conversation', got.conversation, firstKeys),
				exactlyOnce(
					'CRM sync',
					got.crmSync,
					new Set([...firstKeys, ...answers.map((m) => m.key), echoKey, handedOver.key]),
				),
				exactlyOnce('delivery status', got.deliveryStatus, statuses),
			];
			const failed = Object.values(got)
				.flat()
				.filter((r) => r.status !== 'success');
			expect(
				failed.length === 0,
				`sub-workflow executions not successful: ${JSON.stringify(failed)}`,
			);
			const routerRuns = (await client.executions(set.router.id)).length;
			expect(
				routerRuns === inbound + statuses.size + 1,
				`the router ran ${routerRuns} times for ${inbound + statuses.size + 1} events`,
			);

			// Each answer reached CRM marked with the execution it resumed; the contact was asked once, confirmed once.
			const waitingIds = new Set(waiting.map((e) => e.id));
			const conversationOf = new Map(got.conversation.map((r) => [r.key, r.execution]));
			for (const [i, answer] of answers.entries()) {
				const crm = got.crmSync.find((r) => r.key === answer.key);
				expect(
					crm?.resumedExecution !== undefined && waitingIds.has(crm.resumedExecution),
					`contact ${i}'s answer reached CRM with resumed_execution ${JSON.stringify(crm?.resumedExecution)} (conversations ${[...waitingIds].join()})`,
				);
				expect(
					crm.resumedExecution === conversationOf.get(first[i].key),
					`contact ${i}'s answer is marked ${crm.resumedExecution}, its conversation is ${conversationOf.get(first[i].key)}`,
				);
			}
			const marked = got.crmSync.filter((r) => r.resumedExecution !== undefined).length;
			expect(
				marked === CONTACTS,
				`${marked} CRM items carry resumed_execution, expected ${CONTACTS}`,
			);
			const texts = (await toContacts()).map((m) => ({ to: m.to, text: m.text }));
			for (const [i, contact] of contacts.entries()) {
				const mine = texts.filter((m) => m.to === contact).map((m) => m.text);
				const asked = mine.filter((t) => /order number/.test(t)).length;
				const confirmed = mine.filter((t) => t.includes(`A-${100 + i}`)).length;
				expect(
					asked === 1 && confirmed === 1 && mine.length === 3,
					`contact ${i} got ${JSON.stringify(mine)} (asked ${asked}, confirmed ${confirmed})`,
				);
			}
			const rows = await client.dataTableRows(ctx.imported.projectId, ctx.imported.tables.Contacts);
			const stale = contacts.filter(
				(c, i) => rows.find((r) => r.phone === c)?.last_message !== `A-${100 + i}`,
			);
			expect(stale.length === 0, `Contacts rows without the answer: ${stale.join(', ')}`);
			await stopRouter(ctx, set);
			return `executions: router ${routerRuns}, ${counts.join(', ')}; 0 duplicates, 0 missing; ${CONTACTS} conversations each resumed once by its answer (asked once, confirmed once); ${marked} answers in CRM marked resumed_execution, none in auto-reply or conversation; echo and the handed-over message in CRM only`;
		},
	);

	await check(
		`router (issue 32): n8n stopped, ${CONTACTS} inbound meanwhile: after the start the router's catch-up runs each once, and auto-reply, conversation and CRM sync each receive it once`,
		async () => {
			set = await startRouter(ctx, 'router restart', set);
			const sub = set.subWorkflows;
			const contacts = contactsOf('2200', CONTACTS);
			let sent: Array<{ key: string; delivered: boolean }> = [];
			const downAt = Date.now();
			await ctx.restartWith(async () => {
				sent = await writeFrom(ctx, contacts, (i) => `While n8n is down ${i}`);
			});
			const downS = ((Date.now() - downAt) / 1000).toFixed(0);
			expect(
				sent.every((m) => !m.delivered),
				`${sent.filter((m) => m.delivered).length} delivered while n8n was down`,
			);
			const startedAt = Date.now();
			const wanted = new Set(sent.map((m) => m.key));
			const recipients = [sub.autoReply, sub.conversation, sub.crmSync];
			const shortName = (w: SavedWorkflow) => w.name.replace(/^.*: | \(.*\)$/g, '');
			await untilStarted(
				client,
				recipients.map((w): [SavedWorkflow, number] => [w, CONTACTS]),
				150_000,
			);
			const recoveredS = ((Date.now() - startedAt) / 1000).toFixed(0);
			await sleep(LATE_DUPLICATE_MS);
			const counts: string[] = [];
			for (const w of recipients) {
				const got = await received(client, w);
				counts.push(exactlyOnce(shortName(w), got, wanted));
				expect(
					got.every((r) => r.recovered),
					`${w.name}: ${got.filter((r) => !r.recovered).length} items not marked recovered`,
				);
			}
			const routerRuns = (await client.executions(set.router.id)).length;
			expect(
				routerRuns === CONTACTS,
				`the router ran ${routerRuns} times for ${CONTACTS} messages`,
			);
			expect(
				(await client.executions(sub.deliveryStatus.id)).length === 0,
				'delivery status ran for inbound messages',
			);
			return `n8n down ${downS} s, ${CONTACTS} inbound failed meanwhile; recovered within ${recoveredS} s of the start: router ${routerRuns}, ${counts.join(', ')}; 0 duplicates after ${LATE_DUPLICATE_MS / 1000} s more`;
		},
	);

	await check(
		'router (issue 32): a second Business Messaging Trigger on the same credential is refused at activation, naming Execute Workflow; the router keeps the webhook',
		async () => {
			if (!set || !(await client.getWorkflow(set.router.id)).active)
				set = await startRouter(ctx, 'router refusal', set);
			const second = await client.createWorkflow({
				...mapExample(
					readExample('autoReply'),
					{ [CREDENTIAL_NAME]: ctx.imported.credentialId },
					{},
				),
				name: `Second trigger beside the router (${randomUUID().slice(0, 8)})`,
			});
			const outcome = await client.activateAndSettle(second.id);
			// A refused publication may leave the workflow marked active: unpublished, as a user would.
			if ((await client.getWorkflow(second.id)).active) await client.deactivate(second.id);
			expect(!outcome.ok, 'the second trigger was activated');
			expect(
				/Execute Workflow/.test(outcome.message),
				`the refusal does not name Execute Workflow: ${outcome.message}`,
			);
			await sleep(1000);
			const url = await ctx.registeredUrl();
			expect(url === ctx.productionUrl(set.router), `the webhook is now ${url}`);
			await stopRouter(ctx, set);
			return `refused: "${outcome.message.slice(0, 240)}"; the webhook still the router's`;
		},
	);
	if (set && (await client.getWorkflow(set.router.id)).active) await stopRouter(ctx, set);
}
