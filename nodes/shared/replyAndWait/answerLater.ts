/**
 * Regular mode: the service is answered first, the answer written owed (answeredHere.ts), and the
 * trigger running in this process resumes its wait right after; refused for good, it runs through the
 * trigger's emit. A restart in between: docs/conversations.md, "Under real traffic".
 */
import type {
	IDataObject,
	INodeExecutionData,
	IRun,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { executionKey, nodeKeyOf } from '../credentialKeys';
import { canonicalJson } from '../json';
import { serviceLine } from '../redact';
import { computeSignature, verifySignature } from '../signature';
import { isEntryInBounds, ownOrigin } from './registration';
import {
	forgetAnswer,
	recordOwed,
	releaseOwed,
	settleOwed,
	storedOwed,
	wasAnswered,
	type OwedAnswer,
} from './answeredHere';
import { resumeEntry, triggerIdentity, type ResumeOutcome, type TriggerIdentity } from './resume';
import { keepWaitingEntriesCurrent, removeWaiting, triggerNodeRunningHere } from './waitingEntries';
import { type WaitingEntry } from './entry';

const LOG_PREFIX = 'Business Messaging Trigger';

/** An answer the service is told about before its wait is resumed: what its resume needs. */
export interface OwedResume {
	/** The trigger's workflow. */
	home: string;
	messageId: string;
	item: INodeExecutionData;
	/** What runs if the wait refuses it. */
	outputs: INodeExecutionData[][];
	identity: TriggerIdentity;
	found: { key: string; entry: WaitingEntry };
}

/**
 * What answerWaiting did: resumed (or goes to its wait) or not; `recorded`: taken with no execution;
 * `resumeAfterEmit`: the catch-up's, resumed once its recording execution ran.
 */
export type AnswerOutcome = ResumeOutcome & { recorded?: true; resumeAfterEmit?: () => void };

/** Whether the context is a webhook request's (else trigger()'s: the catch-up). */
export const isRequest = (
	context: IWebhookFunctions | ITriggerFunctions,
): context is IWebhookFunctions => 'getNodeWebhookUrl' in context;

/**
 * An answer taken: the wait leaves this copy as the answer is written owed in it (whatever n8n saves
 * carries both), then its wait is resumed, three ways:
 * - the catch-up's, once the execution recording it ran (`resumeAfterEmit`, after its emit saved this
 *   copy); a refusal then starts nothing (run-once has the message), said with the message;
 * - a request whose `trigger` (this trigger node's trigger()) runs here: once n8n answered, with no
 *   execution (`recorded`); refused for good, it runs through the trigger's emit;
 * - a request with no trigger here (queue mode's processors; n8n starting, before trigger() runs):
 *   before n8n answers, owed meanwhile, so a copy another execution saves during the resume says the
 *   answer was taken (kill -9 run o: the contact was asked again); refused, forgotten, and the
 *   message starts its own execution.
 */
export async function answerOwed(
	this: IWebhookFunctions | ITriggerFunctions,
	trigger: ITriggerFunctions | undefined,
	owed: OwedResume,
): Promise<AnswerOutcome> {
	const { key, entry } = owed.found;
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	removeWaiting(staticData, key, entry.executionId);
	const record = { key, entry, answer: owed.item.json, node: this.getNode().id };
	const mac = computeSignature(owedMessage(owed.messageId, record), owed.identity.resumeKey);
	recordOwed(owed.home, owed.messageId, { ...record, mac });
	const resumed = { resumed: true as const, executionId: entry.executionId, alsoStart: false };
	if (!isRequest(this))
		return {
			...resumed,
			resumeAfterEmit: () => void resumeNow(this as ITriggerFunctions, owed, false),
		};
	if (trigger) {
		afterAnswered(this, () => void resumeNow(trigger, owed));
		return { ...resumed, recorded: true };
	}
	const outcome = await resumeEntry.call(this, owed.item, owed.identity, owed.found);
	if (outcome.resumed) settleOwed(owed.home, owed.messageId);
	else forgetAnswer(staticData, owed.home, owed.messageId);
	return outcome;
}

/**
 * Runs `go` once n8n has answered this request (it saves the request's copy, the owed answer in it,
 * before it answers): a kill before that leaves the wait unresumed, for the restart or the
 * catch-up's copy to resume, rather than resumed with nothing saved saying so.
 */
function afterAnswered(context: IWebhookFunctions, go: () => void): void {
	const response = context.getResponseObject();
	if (typeof response?.once !== 'function' || response.writableEnded) return go();
	let gone = false;
	const once = () => {
		if (!gone) go();
		gone = true;
	};
	response.once('finish', once);
	response.once('close', once);
}

async function resumeNow(
	trigger: ITriggerFunctions,
	owed: OwedResume,
	/** False for the catch-up's: its recording execution ran, so run-once would drop a new one. */
	runsAnewIfRefused = true,
): Promise<void> {
	const { home, messageId, item, outputs, identity, found } = owed;
	let outcome: ResumeOutcome = { resumed: false };
	const refusal = runsAnewIfRefused ? undefined : 'it is not started again (said next)';
	try {
		outcome = await resumeEntry.call(trigger, item, identity, found, refusal);
	} catch (error) {
		// resumeEntry does not throw; were it to, the answer runs rather than being lost.
		trigger.logger.warn(`${LOG_PREFIX}: resuming an answer failed: ${(error as Error).message}`);
	}
	const settle = () => {
		settleOwed(home, messageId);
		keepWaitingEntriesCurrent(trigger.getWorkflowStaticData('global') as IDataObject, home);
	};
	if (outcome.resumed) return settle();
	const current = triggerNodeRunningHere(nodeKeyOf.call(trigger));
	if (!current) {
		// The trigger stopped (deactivated, or n8n shutting down): the owed answer stays in the saved
		// static data, and the trigger's next start posts it again.
		releaseOwed(home, messageId);
		trigger.logger.warn(
			`${LOG_PREFIX}: an answer's waiting execution ${serviceLine(found.entry.executionId)} did not take it and the trigger has stopped; the trigger's next start tries it again`,
		);
		return;
	}
	if (runsAnewIfRefused) return runAnew(current, home, messageId, outputs);
	settle();
	trigger.logger.warn(
		`${LOG_PREFIX}: message ${serviceLine(messageId)}, brought by the catch-up and recorded as run, was refused by its waiting execution ${serviceLine(found.entry.executionId)}: it is not started again (it stays in the service's history)`,
	);
}

/** An answer its wait did not take runs as any message: the trigger's emit, with the catch-up's key. */
function runAnew(
	current: ITriggerFunctions,
	home: string,
	messageId: string,
	outputs: INodeExecutionData[][],
): void {
	settleOwed(home, messageId);
	const staticData = current.getWorkflowStaticData('global') as IDataObject;
	// Before emit(): n8n saves this copy (the answer recorded as run) as it starts the execution.
	keepWaitingEntriesCurrent(staticData, home);
	try {
		const done = current.helpers.createDeferredPromise<IRun>();
		// n8n 2.x refuses a second execution with this key (the catch-up's copy uses the same one).
		current.emit(outputs, undefined, done, executionKey(nodeKeyOf.call(current), messageId));
		void done.promise.catch(() => undefined);
	} catch (error) {
		// Not run: a copy of it (the catch-up's, when its delivery was logged failed) runs it.
		forgetAnswer(staticData, home, messageId);
		current.logger.error(
			`${LOG_PREFIX}: message ${serviceLine(messageId)} was not taken by its waiting execution and could not be started: ${(error as Error).message}`,
		);
	}
}

/**
 * The trigger's start: owed answers a previous process may not have resumed are posted again. One
 * refused by a wait that has not ended was taken before the restart: nothing more; by an execution
 * the restart ended (n8n answers 5xx), taken too: said, not run again (at most once, as n8n runs no
 * crashed execution again). One whose wait ended meanwhile runs anew (`outputsFor`), said with its
 * message: the workflow asks again.
 */
export async function resumeOwedFromBefore(
	this: ITriggerFunctions,
	outputsFor: (item: INodeExecutionData) => INodeExecutionData[][],
): Promise<void> {
	const home = this.getWorkflow().id ?? '';
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	const node = this.getNode().id;
	// Another trigger node's answers (a second account's trigger in this workflow) are its own to post.
	const left = Object.entries(storedOwed(staticData)).filter(
		([id, owed]) => owed.node === node && !wasAnswered(undefined, home, id),
	);
	if (left.length === 0) return;
	const identity = await triggerIdentity.call(this).catch(() => 'the credential could not be read');
	if (typeof identity === 'string') {
		// Kept owed (the saved copy keeps them): the trigger's next start tries again.
		this.logger.warn(
			`${LOG_PREFIX}: ${left.length} answer(s) taken before n8n restarted wait for their execution, but ${identity}; the trigger's next start tries again`,
		);
		return;
	}
	const bounds = { ownOrigin: ownOrigin.call(this), account: identity.account, nowMs: Date.now() };
	const [again, crashed]: string[][] = [[], []];
	await Promise.all(
		left.map(async ([id, owed]) => {
			recordOwed(home, id, owed);
			// Only what this trigger wrote (its key's MAC) is posted: static data is anyone's to write.
			const signed = (message: Buffer) =>
				verifySignature(message, `sha256=${owed.mac}`, identity.resumeKey).valid;
			if (!signed(owedMessage(id, owed))) {
				settleOwed(home, id);
				return this.logger.warn(
					`${LOG_PREFIX}: an answer (${serviceLine(id)}) taken before n8n restarted was not written by this trigger (its MAC does not match): it is dropped`,
				);
			}
			const live = isEntryInBounds(owed.entry, bounds);
			const item = { json: owed.answer };
			const outcome = live
				? await resumeEntry.call(this, item, identity, owed, 'it was taken before', true)
				: { resumed: false as const };
			if (live || outcome.resumed) {
				// Only this answer makes a live wait run: an execution the kill ended had taken it.
				if (!outcome.resumed && outcome.crashed)
					crashed.push(serviceLine(`${id} (execution ${owed.entry.executionId})`));
				return settleOwed(home, id);
			}
			again.push(serviceLine(`${id} (execution ${owed.entry.executionId})`));
			runAnew(this, home, id, outputsFor(item));
		}),
	);
	if (crashed.length > 0)
		this.logger.warn(
			`${LOG_PREFIX}: ${crashed.length} answer(s) taken before n8n restarted were taken by their waiting execution, which the restart ended (n8n lists it Crashed; retry it there): not run again: ${listed(crashed)}`,
		);
	if (again.length > 0)
		this.logger.warn(
			`${LOG_PREFIX}: ${again.length} answer(s) taken before n8n restarted found their wait ended while n8n was down, so each starts a new execution (the workflow asks again): ${listed(again)}`,
		);
	keepWaitingEntriesCurrent(staticData, home);
}

const listed = (lines: string[]) =>
	`${lines.slice(0, 20).join(', ')}${lines.length > 20 ? ', …' : ''}`;

/** What an owed answer's MAC signs: the whole record with its message id, keys in order (any store). */
function owedMessage(messageId: string, owed: Omit<OwedAnswer, 'mac'>): Buffer {
	const { key, entry, answer, node } = owed;
	const record = canonicalJson({ messageId, node, key, entry, answer });
	return Buffer.from(`business-messaging owed answer v2|${record}`);
}
