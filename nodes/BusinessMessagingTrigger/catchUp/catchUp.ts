/**
 * Catch-up: the inbound and echo messages the service stored but the workflow never received
 * (n8n was down, restarting, too busy, unreachable, or the workflow was inactive) are emitted
 * once, oldest first, marked `recovered: true`.
 *
 * Exactly once without state shared between n8n processes: the webhook answers 503 and runs
 * nothing for a delivery it gets too late (receiving/, Late Delivery Cutoff), so a delivery the
 * service logged as failed is one the workflow did not run, and a logged success is one it
 * ran. What remains, a delivery accepted in time that n8n answered after the service gave up,
 * is covered in regular mode by the process's memory of what webhook() accepted (receiving/acceptedHere.ts);
 * in queue mode it is the residual window docs/reliability.md measures. The catch-up runs on
 * one process only (n8n starts triggers on the leader main), looks only at messages stored at least SETTLE_MS ago, when their one delivery attempt is over
 * (the service waits about 8 s and never retries), and recovers those without a successful
 * delivery. Its watermark lives in the node's static data, which n8n saves on each emit.
 */
import type { IDataObject, IRun, ITriggerFunctions, ITriggerResponse } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { MESSAGE_EVENTS, readHistory, readWebhookLog } from '../../shared/history';
import { triggerIdentity, type TriggerIdentity } from '../../shared/replyAndWait';
import { CREDENTIAL_TYPE } from '../../shared/transport';
import { isAfter, selectNew, type Watermark } from '../../shared/watermark';
import { outputLayout } from '../description';
import { readTriggerOptions, type CatchUpSettings, type HandOverSettings } from '../options';
import type { EventType } from '../receiving/envelope';
import { wasAcceptedHere } from '../receiving/acceptedHere';
import type { TriggerStaticData } from '../registration/signingSecrets';
import { routeEvent } from '../routing/route';
import {
	SETTLE_MS,
	decideRecoveries,
	recoveredItem,
	startingWatermark,
	type CatchUpState,
	type Recovery,
} from './recoveries';

const LOG_PREFIX = 'Business Messaging Trigger (catch-up)';
/** How long a contact's next recovered message waits for the previous execution to end (a workflow may wait for hours). */
const CONVERSATION_WAIT_MS = 30_000;
const OPERATION = 'Trigger → Catch Up Missed Messages';

/** A contact's conversation on one number: its recovered messages run one after another. */
function conversationOf(recovery: Recovery): string {
	const { record } = recovery;
	return `${String(record.number ?? '')}:${String(recovery.event === 'message.echo' ? record.to : record.from)}`;
}

/**
 * One execution per recovered message, as the webhook starts them. A contact's messages run one
 * after another, oldest first (the next is emitted when the previous execution has ended, or
 * after CONVERSATION_WAIT_MS), so a bot or a CRM sees a conversation in order; different
 * contacts run side by side. The watermark moves only over the oldest messages that are all
 * emitted, so a restart never skips one.
 */
async function emitInConversationOrder(
	this: ITriggerFunctions,
	recover: Recovery[],
	layout: EventType[] | null,
	handOver: HandOverSettings,
	/** The trigger's API key as Reply and Wait knows it (whose waits may be resumed). */
	identity: TriggerIdentity | undefined,
	state: CatchUpState,
	isClosed: () => boolean,
	persist: () => void,
): Promise<void> {
	const scope = `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
	const emitted = recover.map(() => false);
	let prefix = 0;
	const chains = new Map<string, Promise<void>>();
	recover.forEach((recovery, index) => {
		const key = conversationOf(recovery);
		const previous = chains.get(key) ?? Promise.resolve();
		chains.set(
			key,
			previous.then(async () => {
				if (isClosed()) return;
				emitted[index] = true;
				while (prefix < recover.length && emitted[prefix]) {
					const { event, record } = recover[prefix];
					state.watermarks[event] = selectNew(
						[record],
						state.watermarks[event] as Watermark,
						1,
					).watermark;
					prefix++;
				}
				// Before emit(): n8n saves the static data as it starts the execution.
				persist();
				// As webhook() would have: hand over to a person, or the answer a waiting execution expects.
				const route = await routeEvent.call(
					this,
					recoveredItem(recovery),
					recovery.event,
					layout,
					handOver,
					identity,
				);
				if (route.kind !== 'start') return;
				const done = this.helpers.createDeferredPromise<IRun>();
				// n8n 2.x stores the key with the execution and refuses a second one: a message recovered before a
				// restart whose watermark n8n had not saved yet is not run twice (n8n 1.x ignores the key).
				this.emit(
					route.workflowData,
					undefined,
					done,
					`business-messaging:${scope}:${String(recovery.record.wa_message_id ?? recovery.record.id)}`,
				);
				await Promise.race([done.promise.catch(() => undefined), sleep(CONVERSATION_WAIT_MS)]);
			}),
		);
	});
	await Promise.all(chains.values());
}

/** One catch-up run: read, decide, emit one execution per message (as the webhook does), move the watermarks. */
export async function catchUpOnce(
	this: ITriggerFunctions,
	state: CatchUpState,
	options: CatchUpSettings,
	handOver: HandOverSettings,
	/** The trigger's API key as Reply and Wait knows it (whose waits may be resumed). */
	identity: TriggerIdentity | undefined,
	isClosed: () => boolean,
	persist: () => void,
): Promise<number> {
	const selected = this.getNodeParameter('events', ['message.inbound']) as string[];
	const events = MESSAGE_EVENTS.filter((event) => selected.includes(event));
	if (events.length === 0) return 0;
	const nowMs = Date.now();

	const stored = [];
	for (const event of events) {
		const { records, complete } = await readHistory.call(
			this,
			event,
			state.watermarks[event],
			OPERATION,
		);
		if (!complete)
			this.logger.warn(
				`${LOG_PREFIX}: more than 100000 stored ${event} messages since the last run; the oldest are read next time`,
			);
		stored.push({ event, records });
	}
	const oldest = Math.min(
		...events.map((event) => Date.parse((state.watermarks[event] as Watermark).createdAt)),
	);
	const pending = stored.some(({ event, records }) =>
		records.some((record) => isAfter(record, state.watermarks[event] as Watermark)),
	);
	if (!pending) return 0;

	const { webhookUrl } = this.getWorkflowStaticData('node') as TriggerStaticData;
	const log = await readWebhookLog.call(
		this,
		oldest - 1000,
		typeof webhookUrl === 'string' ? webhookUrl : undefined,
		OPERATION,
	);
	if (!log.identified) {
		// Without the message's id in the log (CONTRACT L2), delivered and missed cannot be told apart: recovering would run messages twice.
		this.logger.warn(
			`${LOG_PREFIX}: the service's webhook log does not say which message each delivery carried; nothing is recovered`,
		);
		return 0;
	}
	// A message this process's webhook() accepted runs, even when n8n answered after the service gave up.
	const scope = `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
	for (const { records } of stored) {
		for (const record of records) {
			const id = String(record.wa_message_id);
			if (wasAcceptedHere(scope, id, nowMs) && log.attempts.get(id)?.success !== true) {
				log.attempts.set(id, { success: true, reason: null });
			}
		}
	}
	const keep = (record: IDataObject) =>
		options.numbers.length === 0 || options.numbers.includes(String(record.number ?? '').trim());
	const decision = decideRecoveries(
		stored,
		state.watermarks,
		log.attempts,
		nowMs - SETTLE_MS,
		options.maxRecovered,
		keep,
	);
	if (decision.left > 0) {
		this.logger.info(
			`${LOG_PREFIX}: recovered ${decision.recover.length}; ${decision.left} more missed message(s) wait for the next run (Max Recovered per Run is ${options.maxRecovered})`,
		);
	}
	const layout = outputLayout(selected, this.getNodeParameter('separateOutputs', false));
	await emitInConversationOrder.call(
		this,
		decision.recover,
		layout,
		handOver,
		identity,
		state,
		isClosed,
		persist,
	);
	if (isClosed()) return decision.recover.length;
	// Saved with the next emit (n8n saves static data only then); a restart before that reads these messages again and skips them again.
	state.watermarks = decision.watermarks;
	persist();
	if (decision.recover.length > 0) {
		this.logger.info(
			`${LOG_PREFIX}: recovered ${decision.recover.length} message(s) the workflow had not received`,
		);
	}
	return decision.recover.length;
}

/** n8n's trigger(): starts the catch-up loop (right away, then every interval) while the workflow is active. */
export async function startCatchUp(this: ITriggerFunctions): Promise<ITriggerResponse> {
	if (this.getMode() === 'manual' || this.getNodeParameter('catchUp', true) !== true) return {};
	const { catchUp: options, handOver } = readTriggerOptions(
		this.getNodeParameter('options', {}) as IDataObject,
	);
	// Read once per activation (never per event): whose waiting executions a recovered answer may resume.
	// Unreadable: no recovered answer resumes anything (fail safe, it starts a normal execution).
	const identity = await this.getCredentials(CREDENTIAL_TYPE).then(
		(credentials) => triggerIdentity(String(credentials.apiKey ?? '')),
		() => undefined,
	);
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData & {
		catchUp?: CatchUpState;
	};
	const saved = staticData.catchUp?.watermarks ?? {};
	const nowMs = Date.now();
	const watermarks: CatchUpState['watermarks'] = {};
	for (const event of MESSAGE_EVENTS) {
		watermarks[event] = startingWatermark(
			saved[event],
			this.getActivationMode(),
			options.onActivation,
			nowMs,
		);
	}
	const state: CatchUpState = { watermarks };
	// Assigned through n8n's observable static data, so that n8n sees the change and saves it.
	const persist = () => {
		staticData.catchUp = { watermarks: { ...state.watermarks } };
	};
	persist();

	let closed = false;
	let lastError = '';
	const loop = async () => {
		while (!closed) {
			try {
				await catchUpOnce.call(this, state, options, handOver, identity, () => closed, persist);
				lastError = '';
			} catch (error) {
				// Logged once per distinct failure; the next run tries again, nothing is lost meanwhile.
				const message = (error as Error).message;
				if (message !== lastError)
					this.logger.error(
						`${LOG_PREFIX}: ${message} (retrying every ${options.intervalMs / 1000} s)`,
					);
				lastError = message;
			}
			for (let waited = 0; waited < options.intervalMs && !closed; waited += 1000)
				await sleep(Math.min(1000, options.intervalMs - waited));
		}
	};
	void loop();
	return {
		closeFunction: async () => {
			closed = true;
		},
	};
}
