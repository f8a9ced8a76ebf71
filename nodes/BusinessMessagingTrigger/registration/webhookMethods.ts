/**
 * n8n's webhook methods for the trigger: checkExists, create and delete, called with the hook
 * context as `this`. What may be done with the account's one webhook is decided by
 * decideRegistration (decision.ts); the secret is kept by signingSecrets.ts. In Manual
 * registration the webhook is the user's, managed in the console: nothing is registered or
 * deleted, and the credential must hold its signing secret.
 */
import type {
	IDataObject,
	IHookFunctions,
	INode,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError, WebhookPathTakenError, sleep } from 'n8n-workflow';

import { bodyAsText } from '../../shared/errors';
import { isPlainObject } from '../../shared/json';
import { accountId } from '../../shared/replyAndWait';
import { CREDENTIAL_TYPE, apiRequest, rawApiRequest, throwForStatus } from '../../shared/transport';
import { readTriggerOptions } from '../options';
import { withAccountLock } from './accountLock';
import {
	decideRegistration,
	isJoinableUrl,
	otherKeyRefusal,
	sameUrl,
	type RegistrationDecision,
	type RemoteWebhook,
} from './decision';
import { handOff } from './handOff';
import { postJoin } from './join';
import { closeGap, openGap } from './membershipGaps';
import { clearLeaving, isLeaving, markLeaving, rememberNodeUrl } from './registry';
import {
	canOpenStoredSecret,
	forgetManualSecret,
	forgetRegistration,
	isManualRegistration,
	manualSigningSecret,
	storeRegistration,
	type TriggerStaticData,
} from './signingSecrets';

const WEBHOOK_PATH = '/v1/console/webhook';

/**
 * Which workflow activated (registered or kept) each of this node's URLs in this process. A copy
 * of a workflow has the same webhookId, so the same URL: only the workflow that owns the URL may
 * delete the webhook (n8n 1.x calls a refused copy's delete()).
 */
const owners = new Map<string, string>();

function rememberOwner(url: string, workflowId: string | undefined): void {
	if (!workflowId) return;
	if (owners.size >= 10_000) owners.delete(owners.keys().next().value as string);
	owners.set(url, workflowId);
}

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

/**
 * GET /v1/console/webhook, read in the one shape the spec gives: `{url, configured}`. Any
 * other answer fails the activation, showing it as it came: guessing could mean replacing
 * a webhook that is not ours.
 */
export async function readRemoteWebhook(
	this: IHookFunctions | ITriggerFunctions | IWebhookFunctions,
	operation: string,
): Promise<RemoteWebhook> {
	const body = await apiRequest.call(this, 'GET', WEBHOOK_PATH, { context: { operation } });
	if (
		!isPlainObject(body) ||
		typeof body.configured !== 'boolean' ||
		!(typeof body.url === 'string' || body.url === null)
	) {
		throw new NodeApiError(
			this.getNode(),
			{ body: bodyAsText(body) },
			{
				message: `${operation}: the service's webhook configuration is not in the expected shape {url, configured}`,
				description: `Nothing was registered or deleted. The body as it came: ${bodyAsText(body)}`,
			},
		);
	}
	const url = typeof body.url === 'string' ? body.url.trim() : '';
	return body.configured && url ? { configured: true, url } : { configured: false, url: null };
}

/** The URL n8n gives this node now, and where the decision about it stands. */
async function currentDecision(
	this: IHookFunctions,
	operation: string,
): Promise<{
	ourUrl: string;
	staticData: TriggerStaticData;
	decision: Exclude<RegistrationDecision, { action: 'refuse' }>;
}> {
	const ourUrl = this.getNodeWebhookUrl('default');
	if (!ourUrl) {
		throw new NodeOperationError(
			this.getNode(),
			'n8n did not provide a webhook URL for this trigger',
			{
				description: 'Save the workflow and try again.',
			},
		);
	}
	// The production URL only: a test listener's would replace it for this workflow's heartbeat and catch-up.
	if (this.getActivationMode() !== 'manual' && this.getMode() !== 'manual') {
		rememberNodeUrl(`${this.getWorkflow().id ?? ''}:${this.getNode().id}`, ourUrl);
		clearLeaving(ourUrl);
	}
	const remote = await readRemoteWebhook.call(this, operation);
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	const decision = decideRegistration({
		remote,
		ourUrl,
		hasSecret:
			sameUrl(staticData.webhookUrl, ourUrl) && (await canOpenStoredSecret.call(this, staticData)),
		takeOver: readTriggerOptions(this.getNodeParameter('options', {}) as IDataObject).takeOver,
		isTest: this.getActivationMode() === 'manual' || this.getMode() === 'manual',
		webhookId: this.getNode().webhookId,
	});
	if (decision.action === 'refuse')
		throw new AccountWebhookTakenError(this.getNode(), decision.message, decision.description);
	return { ourUrl, staticData, decision };
}

/**
 * A registration made by this node's webhook() for its heartbeat (heartbeat.ts), written into
 * main's activation-time copy of the static data, so that n8n's next whole save of that copy
 * keeps the new secret instead of wiping it.
 */
export function adoptRegistration(staticData: TriggerStaticData, answer: IDataObject): void {
	if (typeof answer.webhookUrl !== 'string' || typeof answer.sealedSecret !== 'string') return;
	staticData.webhookUrl = answer.webhookUrl;
	staticData.sealedSecret = answer.sealedSecret;
	if (typeof answer.registeredBy === 'string') staticData.registeredBy = answer.registeredBy;
	delete staticData.membership;
	rememberOwner(answer.webhookUrl, staticData.registeredBy);
}

/** The catch-up's scope of this trigger (workflow:node): its membership gaps are kept under it. */
function scopeOf(this: IHookFunctions | IWebhookFunctions): string {
	return `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
}

/** The API key, read once per webhook method; its account keys the lock (accountLock.ts). */
async function apiKeyOf(this: IHookFunctions): Promise<string> {
	return String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
}

/** The events this trigger selected, as a join announces them. */
export function selectedEvents(this: IHookFunctions | ITriggerFunctions): string[] {
	const events = this.getNodeParameter('events', ['message.inbound']) as unknown;
	return Array.isArray(events) ? events.map(String) : ['message.inbound'];
}

/**
 * Joins the trigger holding the account's webhook (§4): true when this trigger is a member now
 * or will be (the holder was unreachable: the heartbeat joins again), false when the holder's
 * URL is dead in this n8n (the caller registers instead). A 401 is a final refusal.
 */
async function joinHolder(
	this: IHookFunctions,
	holderUrl: string,
	ourUrl: string,
	apiKey: string,
): Promise<boolean> {
	const { outcome, detail } = await postJoin.call(this, holderUrl, {
		memberUrl: ourUrl,
		events: selectedEvents.call(this),
		apiKey,
	});
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	if (outcome === 'refused') {
		const { message, description } = otherKeyRefusal(holderUrl);
		throw new AccountWebhookTakenError(this.getNode(), message, description);
	}
	if (outcome === 'dead') {
		this.logger.info(
			`Business Messaging Trigger: the account's webhook ${holderUrl} is not active in this n8n any more (n8n answered 404); registering ${ourUrl}`,
		);
		return false;
	}
	if (outcome === 'unreachable') {
		this.logger.warn(
			`Business Messaging Trigger: could not join the trigger holding the account's webhook ${holderUrl} (${detail}); activated anyway, the heartbeat joins again within 30 s`,
		);
	}
	// A secret kept from when this trigger held the webhook opens nothing now.
	forgetRegistration(staticData);
	staticData.membership = { holderUrl };
	if (outcome === 'joined') closeGap(scopeOf.call(this));
	return true;
}

/**
 * A user's activation (not n8n's restart or a republish) is where a restart's catch-up may start
 * from. Until this trigger joins or holds, what the others get is not forwarded to it (§7): n8n 2.x
 * starts trigger() beside these methods, so its catch-up already counts from now.
 */
function stampActivation(this: IHookFunctions): void {
	if (this.getMode() === 'manual' || this.getActivationMode() === 'manual') return;
	openGap(scopeOf.call(this));
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	if (this.getActivationMode() === 'activate' || staticData.activatedAtMs === undefined)
		staticData.activatedAtMs = Date.now();
}

/** checkExists: true when the webhook is ours and we hold its secret (Manual: the credential's), or when we joined its holder. */
export async function webhookExists(this: IHookFunctions): Promise<boolean> {
	stampActivation.call(this);
	if (isManualRegistration.call(this)) {
		forgetManualSecret.call(this);
		if (await manualSigningSecret.call(this)) return true;
		throw new NodeOperationError(
			this.getNode(),
			'Registration is Manual but the credential has no Webhook Signing Secret',
			{
				description:
					"Paste the signing secret shown when the webhook was registered in the console into the credential's Webhook Signing Secret. Without it every event would be rejected.",
			},
		);
	}
	const apiKey = await apiKeyOf.call(this);
	return await withAccountLock(accountId(apiKey), async () => {
		const { ourUrl, staticData, decision } = await currentDecision.call(
			this,
			'Trigger → Check Webhook',
		);
		if (decision.action === 'join')
			return await joinHolder.call(this, decision.holderUrl, ourUrl, apiKey);
		delete staticData.membership;
		if (decision.action === 'keep') {
			rememberOwner(ourUrl, this.getWorkflow().id);
			closeGap(scopeOf.call(this));
		}
		return decision.action === 'keep';
	});
}

/** create: registers our URL and stores the secret shown once in the response (or joins the holder). */
export async function registerWebhook(this: IHookFunctions): Promise<boolean> {
	if (isManualRegistration.call(this)) return true;
	const apiKey = await apiKeyOf.call(this);
	return await withAccountLock(accountId(apiKey), async () => {
		// Read again rather than trust an earlier checkExists: the decision must hold now.
		const operation = 'Trigger → Register Webhook';
		const { ourUrl, staticData, decision } = await currentDecision.call(this, operation);
		if (decision.action === 'keep') return true;
		if (decision.action === 'join') {
			if (await joinHolder.call(this, decision.holderUrl, ourUrl, apiKey)) return true;
			return await registerOurUrl.call(this, ourUrl, staticData, apiKey, {
				reason: 'the trigger holding it is no longer active in this n8n',
				replacing: decision.holderUrl,
			});
		}
		return await registerOurUrl.call(this, ourUrl, staticData, apiKey, decision);
	});
}

/** POST /v1/console/webhook with our URL; the secret in the answer is stored sealed. */
export async function registerOurUrl(
	this: IHookFunctions | IWebhookFunctions,
	ourUrl: string,
	staticData: TriggerStaticData,
	apiKey: string,
	why: { reason: string; replacing?: string },
): Promise<boolean> {
	const operation = 'Trigger → Register Webhook';
	forgetRegistration(staticData);
	delete staticData.membership;
	if (why.replacing) {
		this.logger.warn(
			`Business Messaging Trigger: replacing the account's webhook ${why.replacing} with ${ourUrl} (${why.reason})`,
		);
	} else {
		this.logger.info(`Business Messaging Trigger: registering ${ourUrl} (${why.reason})`);
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
	const secret =
		isPlainObject(answer) && typeof answer.secret === 'string' ? answer.secret.trim() : '';
	if (!secret) {
		// Events for this URL could never be verified: take the registration back.
		const undo = await rawApiRequest.call(this, 'DELETE', WEBHOOK_PATH, {
			context: { operation: 'Trigger → Delete Webhook' },
		});
		throw new NodeOperationError(
			this.getNode(),
			'The service registered the webhook but its answer carried no signing secret',
			{
				description:
					`Without the secret no event can be verified, so none would be accepted. ` +
					(undo.statusCode < 300
						? 'The registration was deleted again. '
						: `Deleting the registration failed (${undo.statusCode}): delete it in the console. `) +
					`Register the webhook in the console instead and use Registration: Manual with the secret in the credential. The answer as it came: ${bodyAsText(response.body)}`,
			},
		);
	}
	storeRegistration(staticData, ourUrl, this.getWorkflow().id ?? '', secret, apiKey);
	rememberOwner(ourUrl, this.getWorkflow().id);
	closeGap(scopeOf.call(this));
	return true;
}

/**
 * delete: hands the webhook off to a live member (§6), or removes it when none takes it, only
 * when this workflow registered it and it still points at this node's URL. A copy of the workflow (same webhookId, so the same URL) is never the registering
 * workflow: n8n 1.x calls the copy's delete() after refusing to activate it, which must not
 * take the original's webhook away.
 */
export async function deleteWebhook(this: IHookFunctions): Promise<boolean> {
	if (isManualRegistration.call(this)) return true;
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	// Until it joins or holds again (a republish), what the others get is not forwarded to it (§7).
	if (this.getActivationMode() !== 'manual' && this.getMode() !== 'manual')
		openGap(scopeOf.call(this));
	try {
		const ourUrl = this.getNodeWebhookUrl('default');
		// n8n 1.x does not always save what create() stored, so the static data may be empty here:
		// this process's memory of who activated the URL comes first.
		const owner = (ourUrl && owners.get(ourUrl)) || staticData.registeredBy;
		if (owner !== undefined && owner !== this.getWorkflow().id) {
			this.logger.info(
				`Business Messaging Trigger: this workflow did not register the account's webhook (${ourUrl}); left in place`,
			);
			return true;
		}
		const apiKey = await apiKeyOf.call(this);
		const production = this.getActivationMode() !== 'manual' && this.getMode() !== 'manual';
		if (ourUrl && production) {
			markLeaving(ourUrl);
			void watchAfterLeaving.call(this, ourUrl, apiKey);
		}
		return await withAccountLock(accountId(apiKey), async () => {
			const remote = await readRemoteWebhook.call(this, 'Trigger → Delete Webhook');
			if (ourUrl && isJoinableUrl(remote.url, ourUrl)) {
				// A member leaves: the holder stops forwarding to it.
				const { outcome, detail } = await postJoin.call(this, remote.url as string, {
					memberUrl: ourUrl,
					events: selectedEvents.call(this),
					apiKey,
					leave: true,
				});
				if (outcome !== 'joined')
					this.logger.info(
						`Business Messaging Trigger: leaving ${remote.url} was not confirmed (${detail}); it stops forwarding at n8n's 404`,
					);
				return true;
			}
			if (ourUrl && remote.configured && sameUrl(remote.url, ourUrl)) {
				// n8n 2.x has already removed our URL's route: the hand-off goes to the member's URL.
				const { url, asked } = await handOff.call(this, ourUrl, apiKey, accountId(apiKey));
				if (url) {
					owners.delete(ourUrl);
					return true;
				}
				// A member may have registered although its answer never came (a timeout): read again.
				if (asked > 0)
					return await deleteIfOurs.call(
						this,
						await readRemoteWebhook.call(this, 'Trigger → Delete Webhook'),
						ourUrl,
					);
			}
			return await deleteIfOurs.call(this, remote, ourUrl);
		});
	} finally {
		// Whatever happened, the stored secret no longer belongs to a registration we
		// rely on: a later activation registers again and gets a new one.
		forgetRegistration(staticData);
		delete staticData.membership;
		delete staticData.activatedAtMs;
	}
}

/** When the deactivated trigger checks that the webhook did not end up at its URL (tests shorten them). */
export const afterLeaving = { checksMs: [3_000, 10_000, 30_000] };

/**
 * After delete(): the webhook must not stay at this URL, which n8n no longer serves. A hand-off
 * or claim that crossed the deactivation (n8n deactivates workflows in the background, and 1.x
 * routes to a URL until after delete()) could still have put it here; if so, hand it on to a
 * live trigger or delete it. Stops as soon as the trigger is activated again.
 */
async function watchAfterLeaving(this: IHookFunctions, ourUrl: string, apiKey: string) {
	let waitedMs = 0;
	for (const atMs of afterLeaving.checksMs) {
		await sleep(atMs - waitedMs);
		waitedMs = atMs;
		if (!isLeaving(ourUrl)) return;
		try {
			const done = await withAccountLock(accountId(apiKey), async () => {
				if (!isLeaving(ourUrl)) return true;
				const remote = await readRemoteWebhook.call(this, 'Trigger → Delete Webhook');
				if (!remote.configured || !sameUrl(remote.url, ourUrl)) return false;
				this.logger.warn(
					`Business Messaging Trigger: the account's webhook points at ${ourUrl}, deactivated (a hand-off crossed its deactivation); passing it on`,
				);
				const { url } = await handOff.call(this, ourUrl, apiKey, accountId(apiKey));
				if (!url)
					await deleteIfOurs.call(
						this,
						await readRemoteWebhook.call(this, 'Trigger → Delete Webhook'),
						ourUrl,
					);
				return true;
			});
			if (done) return;
		} catch (error) {
			this.logger.warn(
				`Business Messaging Trigger: checking the webhook after deactivating ${ourUrl} failed: ${(error as Error).message}`,
			);
		}
	}
}

async function deleteIfOurs(
	this: IHookFunctions,
	remote: RemoteWebhook,
	ourUrl: string | undefined,
): Promise<boolean> {
	if (!ourUrl || !remote.configured || !sameUrl(remote.url, ourUrl)) {
		this.logger.info(
			remote.configured
				? `Business Messaging Trigger: the account's webhook now points at ${remote.url}, not at ${ourUrl}; left in place`
				: 'Business Messaging Trigger: no webhook is configured any more; nothing to delete',
		);
		return true;
	}
	await apiRequest.call(this, 'DELETE', WEBHOOK_PATH, {
		context: { operation: 'Trigger → Delete Webhook' },
	});
	owners.delete(ourUrl);
	return true;
}
