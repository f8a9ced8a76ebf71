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
	isOwedHere,
	recordOwed,
	releaseOwed,
	settleOwed,
	storedOwed,
	wasRecorded,
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
 * The request's part (synchronous, before n8n saves its copy and answers the service): the wait
 * is forgotten here, the answer written owed; its resume runs in `trigger` (this trigger node's trigger()).
 */
export function answerFirst(
	this: IWebhookFunctions | ITriggerFunctions,
	trigger: ITriggerFunctions,
	owed: OwedResume,
): ResumeOutcome {
	const { key, entry } = owed.found;
	removeWaiting(this.getWorkflowStaticData('global') as IDataObject, key, entry.executionId);
	const record = { key, entry, answer: owed.item.json, node: this.getNode().id };
	const mac = computeSignature(owedMessage(owed.messageId, record), owed.identity.resumeKey);
	recordOwed(owed.home, owed.messageId, { ...record, mac });
	afterAnswered(this, () => void resumeNow(trigger, owed));
	return { resumed: true, executionId: entry.executionId, alsoStart: false };
}

/**
 * Runs `go` once n8n has answered this request (it saves the request's copy, the owed answer in it,
 * before it answers): a kill before that leaves the wait unresumed, for the restart or the
 * catch-up's copy to resume, rather than resumed with nothing saved saying so.
 */
function afterAnswered(context: IWebhookFunctions | ITriggerFunctions, go: () => void): void {
	const response = 'getResponseObject' in context ? context.getResponseObject() : undefined;
	if (!response || typeof response.once !== 'function' || response.writableEnded) return go();
	let gone = false;
	const once = () => {
		if (!gone) go();
		gone = true;
	};
	response.once('finish', once);
	response.once('close', once);
}

async function resumeNow(trigger: ITriggerFunctions, owed: OwedResume): Promise<void> {
	const { home, messageId, item, outputs, identity, found } = owed;
	let outcome: ResumeOutcome = { resumed: false };
	try {
		outcome = await resumeEntry.call(trigger, item, identity, found);
	} catch (error) {
		// resumeEntry does not throw; were it to, the answer runs rather than being lost.
		trigger.logger.warn(`${LOG_PREFIX}: resuming an answer failed: ${(error as Error).message}`);
	}
	if (outcome.resumed) {
		settleOwed(home, messageId);
		keepWaitingEntriesCurrent(trigger.getWorkflowStaticData('global') as IDataObject, home);
		return;
	}
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
	runAnew(current, home, messageId, outputs);
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
 * refused by a wait that has not ended was taken before the restart: nothing more. One whose wait
 * ended meanwhile, or whose execution the crash ended (n8n answers 5xx), runs anew (`outputsFor`),
 * said with its message: the workflow asks again, the recovery.
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
		([id, owed]) =>
			(owed.node === undefined || owed.node === node) &&
			!isOwedHere(home, id) &&
			!wasRecorded(staticData, home, id),
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
	const again: string[] = [];
	await Promise.all(
		left.map(async ([id, owed]) => {
			recordOwed(home, id, owed);
			// Only what this trigger wrote (its key's MAC) is posted: static data is anyone's to write.
			const signed = (message: Buffer) =>
				verifySignature(message, `sha256=${owed.mac}`, identity.resumeKey).valid;
			if (!signed(owedMessage(id, owed)) && !signed(owedMessageV1(owed))) {
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
			if (outcome.resumed || (live && outcome.crashed !== true)) return settleOwed(home, id);
			const why = live ? 'the restart ended it' : 'its wait ended while n8n was down';
			again.push(serviceLine(`${id} (execution ${owed.entry.executionId}: ${why})`));
			runAnew(this, home, id, outputsFor(item));
		}),
	);
	if (again.length > 0)
		this.logger.warn(
			`${LOG_PREFIX}: ${again.length} answer(s) taken before n8n restarted found no execution waiting for them, so each starts a new execution (the workflow asks again): ${again.slice(0, 20).join(', ')}${again.length > 20 ? ', …' : ''}`,
		);
	keepWaitingEntriesCurrent(staticData, home);
}

/** What an owed answer's MAC signs: the whole record with its message id, keys in order (any store). */
function owedMessage(messageId: string, owed: Omit<OwedAnswer, 'mac'>): Buffer {
	const { key, entry, answer, node } = owed;
	const record = canonicalJson({ messageId, node, key, entry, answer });
	return Buffer.from(`business-messaging owed answer v2|${record}`);
}

/** What 0.2.0 signed (an answer owed across the upgrade is still posted). */
function owedMessageV1({ key, entry, answer }: OwedAnswer): Buffer {
	return Buffer.from(`business-messaging owed answer v1|${JSON.stringify([key, entry, answer])}`);
}
