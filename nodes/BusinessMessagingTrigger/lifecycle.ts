/**
 * Webhook registration for the trigger: the policy as a pure function (`decideRegistration`),
 * then n8n's checkExists/create/delete, called with the hook context as `this`.
 *
 * The account has ONE webhook. The trigger only keeps, replaces or deletes a webhook
 * that is its own: the URL n8n gives this node right now. Anything else is left alone
 * unless the user enabled "Take Over Existing Webhook", and a test listener
 * ("Listen for test event", a /webhook-test/ URL) never replaces this workflow's own
 * production URL, even with take-over, so testing never breaks the active workflow.
 * In Manual registration the webhook is the user's, managed in the console: nothing is
 * registered or deleted, and the credential must hold its signing secret.
 */
import type { IDataObject, IHookFunctions, INode, IWebhookFunctions } from 'n8n-workflow';
import { NodeApiError, NodeOperationError, WebhookPathTakenError } from 'n8n-workflow';

import { bodyAsText } from '../shared/errors';
import { CREDENTIAL_TYPE, apiRequest, rawApiRequest, throwForStatus } from '../shared/transport';
import { isPlainObject } from '../shared/json';
import { openSecret, sealSecret } from './seal';

const WEBHOOK_PATH = '/v1/console/webhook';

/** What the trigger keeps in the workflow's static data. Never output. */
export interface TriggerStaticData extends IDataObject {
	webhookUrl?: string;
	/** The signing secret sealed under the API key (seal.ts): useless without the credential. */
	sealedSecret?: string;
	/** Versions before 0.2 kept the secret here in plain text; it is removed and registered again. */
	secret?: string;
}

function forgetRegistration(staticData: TriggerStaticData): void {
	delete staticData.webhookUrl;
	delete staticData.sealedSecret;
	delete staticData.secret;
}

export interface RemoteWebhook {
	configured: boolean;
	url: string | null;
}

export type RegistrationDecision =
	| { action: 'keep' }
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
export function isSameNodeUrl(url: string, webhookId: string | undefined, path = 'webhook'): boolean {
	if (!webhookId) return false;
	let pathname: string;
	try {
		pathname = new URL(url).pathname;
	} catch {
		return false;
	}
	return pathname.replace(/\/+$/, '').endsWith(`/${webhookId}/${path}`);
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
					reason: 'the webhook points at this node but its signing secret is not stored any more; registering again to get a new one',
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

// ---------------------------------------------------------------------------
// n8n side

/**
 * A refusal to register: the account's one webhook belongs to someone else. Asking again cannot
 * change that, but n8n 2.x retries a failed trigger activation 5 times (1, 2, 4, 8 s apart,
 * `retryTriggerActivation`) unless the error is a WebhookPathTakenError, which it treats as
 * final (`isTransientActivationError`): so the editor waited ~17 s for the message. This is a
 * WebhookPathTakenError (a webhook already taken) carrying the node's own message and description.
 */
export class AccountWebhookTakenError extends WebhookPathTakenError {
	constructor(node: INode, message: string, description: string) {
		super(node.name);
		this.message = message;
		this.description = description;
		this.node = node;
	}
}

export function isManualRegistration(this: IHookFunctions | IWebhookFunctions): boolean {
	return this.getNodeParameter('registration', 'automatic') === 'manual';
}

/**
 * Manual registration: workflow and node → the credential's secret as webhook() last read it
 * (reading a credential costs n8n 2.x an expression isolate, so not on every event).
 */
export const manualSecrets = new Map<string, { secret: string; readAtMs: number }>();

export function manualSecretKey(this: IHookFunctions | IWebhookFunctions): string {
	return `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
}

/** The credential's Webhook Signing Secret (Manual registration), or undefined when empty. */
export async function manualSigningSecret(this: IHookFunctions | IWebhookFunctions): Promise<string | undefined> {
	const credentials = await this.getCredentials(CREDENTIAL_TYPE);
	const secret = typeof credentials.webhookSecret === 'string' ? credentials.webhookSecret.trim() : '';
	return secret || undefined;
}

/**
 * GET /v1/console/webhook, read in the one shape the spec gives: `{url, configured}`. Any
 * other answer fails the activation, showing it as it came: guessing could mean replacing
 * a webhook that is not ours.
 */
async function readRemoteWebhook(this: IHookFunctions, operation: string): Promise<RemoteWebhook> {
	const body = await apiRequest.call(this, 'GET', WEBHOOK_PATH, { context: { operation } });
	if (!isPlainObject(body) || typeof body.configured !== 'boolean' || !(typeof body.url === 'string' || body.url === null)) {
		throw new NodeApiError(this.getNode(), { body: bodyAsText(body) }, {
			message: `${operation}: the service's webhook configuration is not in the expected shape {url, configured}`,
			description: `Nothing was registered or deleted. The body as it came: ${bodyAsText(body)}`,
		});
	}
	const url = typeof body.url === 'string' ? body.url.trim() : '';
	return body.configured && url ? { configured: true, url } : { configured: false, url: null };
}

/** Whether the stored secret opens with the credential's API key; says so in the log when it does not. */
async function canOpenStoredSecret(this: IHookFunctions, staticData: TriggerStaticData): Promise<boolean> {
	if (staticData.secret !== undefined) {
		this.logger.info('Business Messaging Trigger: the signing secret was stored in plain text by an older version; registering again to store it sealed');
		return false;
	}
	if (staticData.sealedSecret === undefined) return false;
	const { apiKey } = await this.getCredentials(CREDENTIAL_TYPE);
	if (openSecret(staticData.sealedSecret, apiKey) !== undefined) return true;
	this.logger.warn(
		"Business Messaging Trigger: the stored signing secret cannot be opened with the credential's API key (was the key changed?); registering again to get a new secret",
	);
	return false;
}

/** The URL n8n gives this node now, and where the decision about it stands. */
async function currentDecision(
	this: IHookFunctions,
	operation: string,
): Promise<{ ourUrl: string; staticData: TriggerStaticData; decision: Exclude<RegistrationDecision, { action: 'refuse' }> }> {
	const ourUrl = this.getNodeWebhookUrl('default');
	if (!ourUrl) {
		throw new NodeOperationError(this.getNode(), 'n8n did not provide a webhook URL for this trigger', {
			description: 'Save the workflow and try again.',
		});
	}
	const remote = await readRemoteWebhook.call(this, operation);
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	const decision = decideRegistration({
		remote,
		ourUrl,
		hasSecret: sameUrl(staticData.webhookUrl, ourUrl) && (await canOpenStoredSecret.call(this, staticData)),
		takeOver: (this.getNodeParameter('options', {}) as IDataObject).takeOver === true,
		isTest: this.getActivationMode() === 'manual' || this.getMode() === 'manual',
		webhookId: this.getNode().webhookId,
	});
	if (decision.action === 'refuse') throw new AccountWebhookTakenError(this.getNode(), decision.message, decision.description);
	return { ourUrl, staticData, decision };
}

/** checkExists: true only when the webhook is ours and we hold its secret (Manual: the credential's). */
export async function webhookExists(this: IHookFunctions): Promise<boolean> {
	if (isManualRegistration.call(this)) {
		// An activation may follow a change of the credential's secret: webhook() reads it afresh.
		manualSecrets.delete(manualSecretKey.call(this));
		if (await manualSigningSecret.call(this)) return true;
		throw new NodeOperationError(this.getNode(), 'Registration is Manual but the credential has no Webhook Signing Secret', {
			description:
				"Paste the signing secret shown when the webhook was registered in the console into the credential's Webhook Signing Secret. Without it every event would be rejected.",
		});
	}
	const { decision } = await currentDecision.call(this, 'Trigger → Check Webhook');
	return decision.action === 'keep';
}

/** create: registers our URL and stores the secret shown once in the response. */
export async function registerWebhook(this: IHookFunctions): Promise<boolean> {
	if (isManualRegistration.call(this)) return true;
	// Read again rather than trust an earlier checkExists: the decision must hold now.
	const operation = 'Trigger → Register Webhook';
	const { ourUrl, staticData, decision } = await currentDecision.call(this, operation);
	if (decision.action === 'keep') return true;

	forgetRegistration(staticData);
	if (decision.replacing) {
		this.logger.warn(
			`Business Messaging Trigger: replacing the account's webhook ${decision.replacing} with ${ourUrl} (${decision.reason})`,
		);
	} else {
		this.logger.info(`Business Messaging Trigger: registering ${ourUrl} (${decision.reason})`);
	}

	const response = await rawApiRequest.call(this, 'POST', WEBHOOK_PATH, {
		body: { url: ourUrl },
		context: { operation },
		unredacted: true,
	});
	// Only a refusal of the request itself (400/422) can be about the URL; a 401, 403 or 429
	// means something else, which throwForStatus explains.
	if (/^http:\/\//i.test(ourUrl) && (response.statusCode === 400 || response.statusCode === 422)) {
		throw new NodeOperationError(
			this.getNode(),
			`The service refused to register ${ourUrl} (${response.statusCode}): it accepts HTTPS addresses only`,
			{
				description: `n8n's webhook URL is plain http. Make n8n reachable over HTTPS and set its public address (WEBHOOK_URL), then activate (publish) again. The service answered ${response.statusCode}: ${bodyAsText(response.body)}`,
			},
		);
	}
	throwForStatus(this.getNode(), response, { operation });

	// The one shape of the registration answer (CONTRACT W3): the secret under `secret`.
	const answer = response.unredactedBody;
	const secret = isPlainObject(answer) && typeof answer.secret === 'string' ? answer.secret.trim() : '';
	if (!secret) {
		// Events for this URL could never be verified: take the registration back.
		const undo = await rawApiRequest.call(this, 'DELETE', WEBHOOK_PATH, { context: { operation: 'Trigger → Delete Webhook' } });
		throw new NodeOperationError(this.getNode(), 'The service registered the webhook but its answer carried no signing secret', {
			description:
				`Without the secret no event can be verified, so none would be accepted. ` +
				(undo.statusCode < 300
					? 'The registration was deleted again. '
					: `Deleting the registration failed (${undo.statusCode}): delete it in the console. `) +
				`Register the webhook in the console instead and use Registration: Manual with the secret in the credential. The answer as it came: ${bodyAsText(response.body)}`,
		});
	}
	const { apiKey } = await this.getCredentials(CREDENTIAL_TYPE);
	staticData.webhookUrl = ourUrl;
	staticData.sealedSecret = sealSecret(secret, String(apiKey));
	return true;
}

/** delete: removes the webhook only while it still points at this node's URL. */
export async function deleteWebhook(this: IHookFunctions): Promise<boolean> {
	if (isManualRegistration.call(this)) return true;
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	try {
		const ourUrl = this.getNodeWebhookUrl('default');
		const remote = await readRemoteWebhook.call(this, 'Trigger → Delete Webhook');
		if (!ourUrl || !remote.configured || !sameUrl(remote.url, ourUrl)) {
			this.logger.info(
				remote.configured
					? `Business Messaging Trigger: the account's webhook now points at ${remote.url}, not at ${ourUrl}; left in place`
					: 'Business Messaging Trigger: no webhook is configured any more; nothing to delete',
			);
			return true;
		}
		await apiRequest.call(this, 'DELETE', WEBHOOK_PATH, { context: { operation: 'Trigger → Delete Webhook' } });
		return true;
	} finally {
		// Whatever happened, the stored secret no longer belongs to a registration we
		// rely on: a later activation registers again and gets a new one.
		forgetRegistration(staticData);
	}
}
