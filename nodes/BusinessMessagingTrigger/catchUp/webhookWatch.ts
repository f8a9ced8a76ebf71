/** The webhook watch (docs/reliability.md): an unreadable answer is never taken for "deleted". */
import type { ITriggerFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { serviceLine } from '../../shared/redact';
import { isSameNodeUrl, sameUrl } from '../registration/decision';
import { readRemoteWebhook, type RemoteWebhook } from '../../shared/webhookAnswer';
import { postRegistration } from '../registration/register';
import { AccountWebhookTakenError } from '../registration/webhookMethods';
import {
	isLeaving,
	renewRegistration,
	type TriggerStaticData,
} from '../registration/signingSecrets';

const LOG_PREFIX = 'Business Messaging Trigger (webhook watch)';
/** How long recovered messages older than a re-registration are marked as late because of it. */
const RENEWED_NOTE_MS = 30 * 60_000;

export type WebhookState =
	| { kind: 'ours' }
	/** Another URL holds the account's webhook: nothing reaches this trigger but the catch-up. */
	| { kind: 'taken'; url: string; sinceMs: number }
	/** Registered again at `atMs` after it was found deleted. */
	| { kind: 'renewed'; atMs: number }
	| { kind: 'unknown' };

/** Pure: whose the webhook is; `ourUrl` unknown: a URL ending in our webhook ID counts as ours. */
export function judgeWebhook(
	remote: RemoteWebhook,
	ourUrl: string | undefined,
	webhookId: string | undefined,
): 'ours' | 'none' | 'other' {
	if (!remote.configured) return 'none';
	if (ourUrl ? sameUrl(remote.url, ourUrl) : isSameNodeUrl(remote.url, webhookId)) return 'ours';
	return 'other';
}

export function takenMessage(url: string, intervalSeconds: number, stopping: boolean): string {
	const effect = stopping
		? 'On Webhook Taken is Stop, so this workflow stops until it is published again'
		: `messages reach this workflow only through the catch-up, up to ${intervalSeconds} s late (none while Recover Missed Messages is off), and the other receiver gets them too`;
	return (
		`The account's webhook now points at ${url}, not at this trigger: ${effect}. ` +
		'To receive them here: delete that webhook in the console, or turn on Take Over Existing Webhook (Options) and publish again, or set Registration to Manual'
	);
}

export function lateReason(state: WebhookState, createdAtMs: number): string | undefined {
	if (state.kind === 'taken')
		return `the account's webhook points at ${state.url}, not at this trigger (noticed ${new Date(state.sinceMs).toISOString()})`;
	if (state.kind === 'renewed' && createdAtMs <= state.atMs)
		return `no webhook was registered for the account until this trigger registered it again (${new Date(state.atMs).toISOString()})`;
	return undefined;
}

interface WatchContext {
	intervalSeconds: number;
	stopWhenTaken: boolean;
	isClosed: () => boolean;
	/** Stop's look before trigger() returns: a final error (an emitError fails every retry). */
	starting?: boolean;
}

export async function watchWebhook(
	this: ITriggerFunctions,
	previous: WebhookState,
	context: WatchContext,
): Promise<WebhookState> {
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	const ourUrl = typeof staticData.webhookUrl === 'string' ? staticData.webhookUrl : undefined;
	let remote: RemoteWebhook;
	try {
		remote = await readRemoteWebhook.call(this, 'Trigger → Watch Webhook');
	} catch (error) {
		this.logger.error(
			`${LOG_PREFIX}: whether the account's webhook still points at this trigger is unknown, so nothing was registered or replaced (checking again every ${context.intervalSeconds} s): ${(error as Error).message}`,
		);
		return { kind: 'unknown' };
	}
	const judged = judgeWebhook(remote, ourUrl, this.getNode().webhookId);
	if (judged === 'ours') {
		if (previous.kind === 'taken')
			this.logger.info(`${LOG_PREFIX}: the account's webhook points at this trigger again`);
		const recent = previous.kind === 'renewed' && Date.now() - previous.atMs < RENEWED_NOTE_MS;
		return recent ? previous : { kind: 'ours' };
	}
	if (judged === 'other' && remote.configured) {
		// The service's URL as it goes into the log, the error and late_reason: one short printable line.
		const url = serviceLine(remote.url);
		const sinceMs =
			previous.kind === 'taken' && previous.url === url ? previous.sinceMs : Date.now();
		const message = takenMessage(url, context.intervalSeconds, context.stopWhenTaken);
		this.logger.error(`${LOG_PREFIX}: ${message}`);
		if (context.stopWhenTaken && context.starting)
			throw new AccountWebhookTakenError(
				this.getNode(),
				message,
				'Checked when the trigger started; publish the workflow again once the webhook is free.',
			);
		// n8n's channel for a failing trigger: the activation error the editor shows, the Error Workflow.
		if (context.stopWhenTaken) this.emitError(new NodeOperationError(this.getNode(), message));
		return { kind: 'taken', url, sinceMs };
	}
	// None registered. Our own delete() (deactivation) is not a deletion to repair.
	if (!ourUrl || isLeaving(ourUrl) || context.isClosed()) return previous;
	try {
		const secret = await postRegistration.call(this, ourUrl, 'Trigger → Register Webhook Again');
		await renewRegistration.call(this, staticData, ourUrl, secret);
		// n8n saves trigger()'s copy only as it emits: an execution with no item saves the new secret
		// now, for the webhook processors and for a restart of this process (else every delivery is refused).
		this.emit([[]]);
	} catch (error) {
		this.logger.error(
			`${LOG_PREFIX}: the account has no webhook registered (deleted?) and registering ${ourUrl} again failed; messages reach this workflow only through the catch-up (none while Recover Missed Messages is off). Publish the workflow again to retry: ${(error as Error).message}`,
		);
		return { kind: 'unknown' };
	}
	this.logger.warn(
		`${LOG_PREFIX}: the account's webhook had been deleted (none registered); registered ${ourUrl} again. Messages stored meanwhile come through the catch-up (not while Recover Missed Messages is off)`,
	);
	return { kind: 'renewed', atMs: Date.now() };
}
