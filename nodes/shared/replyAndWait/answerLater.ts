/** An answer taken: written owed (answeredHere.ts), then its wait resumed (docs/conversations.md, "Under real traffic"). */
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

/** What an owed answer's resume needs. */
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

/** `recorded`: taken with no execution; `resumeAfterEmit`: the catch-up's, resumed once its recording execution ran. */
export type AnswerOutcome = ResumeOutcome & { recorded?: true; resumeAfterEmit?: () => void };

/** Whether the context is a webhook request's (else trigger()'s: the catch-up). */
export const isRequest = (
	context: IWebhookFunctions | ITriggerFunctions,
): context is IWebhookFunctions => 'getNodeWebhookUrl' in context;

/**
 * The wait leaves this copy as the answer is written owed in it (n8n saves both or neither), then it
 * is resumed: the catch-up's once its recording execution ran (a refusal starts nothing: run-once has
 * it); a request whose trigger() runs here, once n8n answered (refused, it runs through emit); any
 * other request (queue mode, n8n starting) before n8n answers, owed meanwhile (refused, it runs itself).
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

/** Runs `go` once n8n answered (after saving this copy): a kill before leaves the wait unresumed, not resumed unsaid. */
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
		// resumeEntry never throws; if it did, the answer would still run.
		trigger.logger.warn(`${LOG_PREFIX}: resuming an answer failed: ${(error as Error).message}`);
	}
	const settle = () => {
		settleOwed(home, messageId);
		keepWaitingEntriesCurrent(trigger.getWorkflowStaticData('global') as IDataObject, home);
	};
	if (outcome.resumed) return settle();
	const current = triggerNodeRunningHere(nodeKeyOf.call(trigger));
	if (!current) {
		// Stopped (deactivated, n8n shutting down): the saved copy keeps it owed for the next start.
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
 * The trigger's start posts again what a previous process owed. Refused by a live wait: taken before the
 * restart; by an execution the restart ended (5xx): said, not run again (n8n runs no crashed execution
 * again). A wait that ended meanwhile: it runs anew (`outputsFor`), said: the workflow asks again.
 */
export async function resumeOwedFromBefore(
	this: ITriggerFunctions,
	outputsFor: (item: INodeExecutionData) => INodeExecutionData[][],
): Promise<void> {
	const home = this.getWorkflow().id ?? '';
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	const node = this.getNode().id;
	// Another trigger node's (a second account's) are its own to post.
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
			if (!verifySignature(owedMessage(id, owed), `sha256=${owed.mac}`, identity.resumeKey).valid) {
				settleOwed(home, id);
				return this.logger.warn(
					`${LOG_PREFIX}: an answer (${serviceLine(id)}) taken before n8n restarted was not written by this trigger (its MAC does not match): it is dropped`,
				);
			}
			const item = { json: owed.answer };
			const named = serviceLine(`${id} (execution ${owed.entry.executionId})`);
			if (!isEntryInBounds(owed.entry, bounds)) {
				again.push(named);
				return runAnew(this, home, id, outputsFor(item));
			}
			const outcome = await resumeEntry.call(this, item, identity, owed, 'it ran already', true);
			if (!outcome.resumed && outcome.crashed) crashed.push(named);
			settleOwed(home, id);
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

/** What an owed answer's MAC signs: the whole record and its message id, keys sorted (any store). */
function owedMessage(messageId: string, owed: Omit<OwedAnswer, 'mac'>): Buffer {
	const { key, entry, answer, node } = owed;
	const record = canonicalJson({ messageId, node, key, entry, answer });
	return Buffer.from(`business-messaging owed answer v2|${record}`);
}
