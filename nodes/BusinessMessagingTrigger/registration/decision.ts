/**
 * Whether this node may register, keep or replace the account's ONE webhook: the policy as a
 * pure function. The trigger only keeps, replaces or deletes a webhook that is its own (the URL
 * n8n gives this node right now). Anything else is left alone unless the user enabled "Take
 * Over Existing Webhook", and a test listener ("Listen for test event", a /webhook-test/ URL)
 * never replaces this workflow's own production URL, even with take-over, so testing never
 * breaks the active workflow.
 */
import { TRIGGER_PATH } from '../../shared/replyAndWait';

export interface RemoteWebhook {
	configured: boolean;
	url: string | null;
}

export type RegistrationDecision =
	| { action: 'keep' }
	/** Another Business Messaging Trigger of this n8n holds the webhook: become its member (docs/several-workflows.md §4). */
	| { action: 'join'; holderUrl: string }
	| { action: 'register'; reason: string; replacing?: string }
	| { action: 'refuse'; message: string; description: string };

function normalizeUrl(url: string): string {
	try {
		const parsed = new URL(url.trim());
		return parsed.href.replace(/\/+$/, '');
	} catch {
		return url.trim().replace(/\/+$/, '');
	}
}

export function sameUrl(a: string | null | undefined, b: string | null | undefined): boolean {
	if (!a || !b) return false;
	return normalizeUrl(a) === normalizeUrl(b);
}

/**
 * Whether `url` may be another URL of this same node: its production URL seen from a test
 * listener, or an old address of it (n8n's base URL changed). Such URLs end in
 * /<webhookId>/<path>, but so do a copied workflow's (webhookId survives export and import):
 * this only ever makes the trigger refuse more, never register.
 */
export function isSameNodeUrl(
	url: string,
	webhookId: string | undefined,
	path = 'webhook',
): boolean {
	if (!webhookId) return false;
	let pathname: string;
	try {
		pathname = new URL(url).pathname;
	} catch {
		return false;
	}
	return pathname.replace(/\/+$/, '').endsWith(`/${webhookId}/${path}`);
}

/**
 * Whether `url` is another Business Messaging Trigger of this n8n, which a trigger joins instead
 * of refusing or replacing: not `ourUrl`, the same origin, a trigger's path (TRIGGER_PATH).
 */
export function isJoinableUrl(url: string | null | undefined, ourUrl: string): boolean {
	if (!url || sameUrl(url, ourUrl)) return false;
	try {
		const theirs = new URL(url);
		return (
			theirs.origin === new URL(ourUrl).origin &&
			theirs.search === '' &&
			TRIGGER_PATH.test(theirs.pathname)
		);
	} catch {
		return false;
	}
}

/**
 * The catch-up's reading of the service's delivery log (§7): a success to this node's own URL or
 * to any other trigger's URL of this n8n means this n8n received the event (a holder forwards it
 * to every member), so it is not recovered.
 */
export function receivedByThisN8n(ownUrl: string): (url: string) => boolean {
	return (url) => sameUrl(url, ownUrl) || isJoinableUrl(url, ownUrl);
}

export interface DecisionInput {
	remote: RemoteWebhook;
	/** The URL n8n gives this node now (a /webhook-test/ URL while listening for a test event). */
	ourUrl: string;
	/** Whether the static data holds a secret registered for `ourUrl`. */
	hasSecret: boolean;
	takeOver: boolean;
	/** "Listen for test event" in the editor. */
	isTest: boolean;
	webhookId?: string;
}

/** A join answered 401: the holder is a trigger of this n8n with another API key (§9). */
export function otherKeyRefusal(holderUrl: string): { message: string; description: string } {
	return {
		message:
			"The account's webhook is held by another Business Messaging Trigger of this n8n, which uses a different API key. " +
			'Triggers share it only with the same key: select the same Business Messaging credential in this trigger ' +
			`(or put the same key in its credential). Registered: ${holderUrl}`,
		description:
			'Only the API key proves that two triggers are on the same account, so a trigger joins the one holding the webhook only when both use the same key. ' +
			'The webhook was left in place.',
	};
}

const ONE_WEBHOOK =
	'The account has one webhook, so registering this node would replace it and the other receiver would stop getting events.';

export function decideRegistration(input: DecisionInput): RegistrationDecision {
	const { remote, ourUrl, hasSecret, takeOver, isTest, webhookId } = input;
	if (!remote.configured || !remote.url) {
		return { action: 'register', reason: 'no webhook is configured for the account' };
	}
	if (sameUrl(remote.url, ourUrl)) {
		return hasSecret
			? { action: 'keep' }
			: {
					action: 'register',
					reason:
						'the webhook points at this node but its signing secret is not stored any more; registering again to get a new one',
				};
	}
	const current = remote.url;
	const sameNode = isSameNodeUrl(current, webhookId);
	if (sameNode && isTest) {
		// The editor shows only the message (toast, about 270 px of text): the advice goes in it.
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
	// Before Take Over: a webhook of this n8n's own triggers is shared, never replaced.
	if (!sameNode && isJoinableUrl(current, ourUrl)) return { action: 'join', holderUrl: current };
	if (takeOver) {
		return { action: 'register', reason: '"Take Over Existing Webhook" is on', replacing: current };
	}
	return {
		action: 'refuse',
		// The editor shows only the message: the cause and the way out, the URL last (it can be long).
		message:
			'Another webhook is registered for this account. To use this trigger, delete it in the console, ' +
			'turn on Take Over Existing Webhook (Options) or set Registration to Manual. ' +
			`Registered: ${current}`,
		description:
			`${ONE_WEBHOOK} This trigger never replaces a webhook it did not register. ` +
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
