/** Pure: only our URL unless Take Over; a test listener never replaces the production URL. */
import { serviceLine } from '../../shared/redact';
import { TRIGGER_PATH } from '../../shared/triggerUrls';
import type { RemoteWebhook } from '../../shared/webhookAnswer';

type RegistrationDecision =
	| { action: 'keep' }
	| { action: 'register'; reason: string; replacing?: string }
	| { action: 'refuse'; message: string; description: string };

function normalizeUrl(url: string): string {
	const text = url.trim();
	return (URL.canParse(text) ? new URL(text).href : text).replace(/\/+$/, '');
}

export function sameUrl(a: string | null | undefined, b: string | null | undefined): boolean {
	return !!a && !!b && normalizeUrl(a) === normalizeUrl(b);
}

/** Maybe this node's other URL (production, an old base); a copy's looks alike: refuses more. */
export function isSameNodeUrl(url: string, webhookId: string | undefined): boolean {
	if (!webhookId || !URL.canParse(url)) return false;
	return new URL(url).pathname.replace(/\/+$/, '').endsWith(`/${webhookId}/webhook`);
}

/** Whether `url` is another Business Messaging Trigger of this n8n (same origin, TRIGGER_PATH). */
export function isOtherTriggerUrl(url: string | null | undefined, ourUrl: string): boolean {
	if (!url || sameUrl(url, ourUrl) || !URL.canParse(url) || !URL.canParse(ourUrl)) return false;
	const theirs = new URL(url);
	return (
		theirs.origin === new URL(ourUrl).origin &&
		theirs.search === '' &&
		TRIGGER_PATH.test(theirs.pathname)
	);
}

export interface DecisionInput {
	remote: RemoteWebhook;
	/** The URL n8n gives this node now (a /webhook-test/ URL while listening for a test event). */
	ourUrl: string;
	hasSecret: boolean;
	takeOver: boolean;
	isTest: boolean;
	webhookId?: string;
}

/** The editor shows only a refusal's message (a toast, ~270 px): the way out in it, the URL last. */
export function decideRegistration(input: DecisionInput): RegistrationDecision {
	const { remote, ourUrl, hasSecret, takeOver, isTest, webhookId } = input;
	// Only an answer that says none is configured (webhookAnswer.ts reads a contradiction as unreadable).
	if (!remote.configured)
		return { action: 'register', reason: 'no webhook is configured for the account' };
	if (sameUrl(remote.url, ourUrl)) {
		if (hasSecret) return { action: 'keep' };
		const reason =
			'the webhook points at this node but its signing secret is not stored any more; registering again to get a new one';
		return { action: 'register', reason };
	}
	const sameNode = isSameNodeUrl(remote.url, webhookId);
	// The service's text, as it goes into messages: one short printable line.
	const current = serviceLine(remote.url);
	if (sameNode && isTest) {
		return {
			action: 'refuse',
			message:
				"This workflow is active (published), so the account's only webhook points at its production URL. " +
				'To test here, deactivate (unpublish) it first; its real events are in its executions. ' +
				`Production URL: ${current}`,
			description:
				`The account has one webhook: listening for a test event would register the test URL ${ourUrl} in its place and the active workflow would stop receiving events. ` +
				'This is refused even with "Take Over Existing Webhook". To see real events, open the active workflow\'s executions; ' +
				'to test in the editor, deactivate (unpublish) the workflow first and activate (publish) it again afterwards.',
		};
	}
	if (takeOver)
		return { action: 'register', reason: '"Take Over Existing Webhook" is on', replacing: current };
	if (!sameNode && isOtherTriggerUrl(remote.url, ourUrl)) {
		return {
			action: 'refuse',
			message:
				"Another Business Messaging Trigger of this n8n already receives this account's events (one trigger per account). " +
				'Put this workflow behind that one: in its workflow, call this one with the Execute Workflow node ' +
				'(this workflow starting with "When Executed by Another Workflow"), or use a Business Messaging Polling Trigger here. ' +
				`Registered: ${current}`,
			description:
				'The account has one webhook, and one trigger receives it. Several workflows share it the n8n way: one trigger workflow ' +
				'routes each event (Separate Output per Event, or a Switch) to the others with Execute Workflow (Wait for Sub-Workflow Completion off). ' +
				'A Business Messaging Polling Trigger reads inbound messages and echoes without the webhook. ' +
				'If the workflow that registered it is no longer used, unpublish it (or turn on Take Over Existing Webhook here). The webhook was left in place.',
		};
	}
	return {
		action: 'refuse',
		message:
			'Another webhook is registered for this account. To use this trigger, delete it in the console, ' +
			'turn on Take Over Existing Webhook (Options) or set Registration to Manual. ' +
			`Registered: ${current}`,
		description:
			'The account has one webhook, so registering this node would replace it and the other receiver would stop getting events. This trigger never replaces a webhook it did not register. ' +
			(sameNode
				? "That address ends in this node's webhook ID: it is this workflow at an old n8n address, or a copy of this workflow (e.g. production, if this is a staging copy). "
				: '') +
			'If that address is no longer used, delete the webhook in the console (or from its own workflow), then activate (publish) again; ' +
			'to replace it anyway, turn on "Take Over Existing Webhook" in this node\'s options. ' +
			(isTest
				? 'If that address is another active n8n workflow, testing here would stop it from receiving events. '
				: '') +
			'Alternatively set Registration to Manual to use a webhook you manage in the console.',
	};
}
