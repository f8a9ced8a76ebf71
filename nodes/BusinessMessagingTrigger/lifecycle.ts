/**
 * Webhook registration for the trigger (Automatic mode).
 *
 * The account has ONE webhook. The trigger only keeps, replaces or deletes a webhook
 * that is its own: the URL n8n gives this node right now. Anything else is left alone
 * unless the user enabled "Take Over Existing Webhook", and a test listener
 * ("Listen for test event", a /webhook-test/ URL) never replaces this workflow's own
 * production URL, even with take-over, so testing never breaks the active workflow.
 *
 * `decideRegistration` is the whole policy as a pure function; the rest talks to n8n.
 */
import type { IDataObject, IHookFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { bodyAsText } from '../shared/errors';
import { apiRequest, rawApiRequest, throwForStatus } from '../shared/transport';

export const WEBHOOK_PATH = '/v1/console/webhook';
export const WEBHOOK_NAME = 'default';

/** What the trigger keeps in the workflow's static data. Never output. */
export interface TriggerStaticData {
	webhookUrl?: string;
	secret?: string;
}

export interface RemoteWebhook {
	configured: boolean;
	url: string | null;
}

export type RegistrationDecision =
	| { action: 'keep' }
	| { action: 'register'; reason: string; replacing?: string }
	| { action: 'refuse'; message: string; description: string };

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The webhook configuration from GET /v1/console/webhook, read defensively. */
export function readRemoteWebhook(body: unknown): RemoteWebhook {
	let record: Record<string, unknown> = isRecord(body) ? body : {};
	if (!('url' in record) && !('configured' in record)) {
		for (const key of ['data', 'webhook']) {
			const nested = record[key];
			if (isRecord(nested)) {
				record = nested;
				break;
			}
		}
	}
	const url = typeof record.url === 'string' && record.url.trim() !== '' ? record.url.trim() : null;
	const configured = typeof record.configured === 'boolean' ? record.configured && url !== null : url !== null;
	return { configured, url: configured ? url : null };
}

/** The signing secret from the registration response, or undefined when absent. */
export function readSigningSecret(body: unknown): string | undefined {
	const candidates: unknown[] = [];
	const collect = (record: unknown) => {
		if (!isRecord(record)) return;
		for (const key of ['secret', 'signing_secret', 'signingSecret', 'webhook_secret', 'webhookSecret']) {
			candidates.push(record[key]);
		}
	};
	collect(body);
	if (isRecord(body)) {
		collect(body.data);
		collect(body.webhook);
	}
	const found = candidates.find((value) => typeof value === 'string' && value.trim() !== '');
	return typeof found === 'string' ? found.trim() : undefined;
}

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
 * Whether `url` is another URL n8n gives this same node: its production URL seen from a
 * test listener, its test URL, or an old address of it (n8n's base URL changed). All of
 * them end in /<webhookId>/<path>; the webhookId is unique per node and renewed when a
 * node is duplicated.
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
	if (isSameNodeUrl(current, webhookId)) {
		if (isTest) {
			return {
				action: 'refuse',
				message: `This workflow is active: the account's webhook points at its production URL ${current}`,
				description:
					`The account has one webhook: listening for a test event would register the test URL ${ourUrl} in its place and the active workflow would stop receiving events. ` +
					'This is refused even with "Take Over Existing Webhook". To see real events, open the active workflow\'s executions; ' +
					'to test in the editor, deactivate the workflow first and activate it again afterwards.',
			};
		}
		return {
			action: 'register',
			reason: `the webhook points at another URL of this same node (${current})`,
			replacing: current,
		};
	}
	if (takeOver) {
		return { action: 'register', reason: '"Take Over Existing Webhook" is on', replacing: current };
	}
	return {
		action: 'refuse',
		message: `Another webhook is registered for this account: ${current}`,
		description:
			`${ONE_WEBHOOK} This trigger never replaces a webhook it did not register. ` +
			'If that address is no longer used, delete the webhook in the console (or from its own workflow), then activate again; ' +
			'to replace it anyway, turn on "Take Over Existing Webhook" in this node\'s options. ' +
			(isTest
				? 'If that address is another active n8n workflow, testing here would stop it from receiving events. '
				: '') +
			'Alternatively set Registration to Manual to use a webhook you manage in the console.',
	};
}

// ---------------------------------------------------------------------------
// n8n side

export function getStaticData(context: IHookFunctions): TriggerStaticData & IDataObject {
	return context.getWorkflowStaticData('node') as TriggerStaticData & IDataObject;
}

export function clearStaticData(staticData: TriggerStaticData & IDataObject): void {
	delete staticData.webhookUrl;
	delete staticData.secret;
}

export function isTestListener(context: IHookFunctions): boolean {
	return context.getActivationMode() === 'manual' || context.getMode() === 'manual';
}

export function ourWebhookUrl(context: IHookFunctions): string {
	const url = context.getNodeWebhookUrl(WEBHOOK_NAME);
	if (!url) {
		throw new NodeOperationError(context.getNode(), 'n8n did not provide a webhook URL for this trigger', {
			description: 'Save the workflow and try again.',
		});
	}
	return url;
}

export function takeOverEnabled(context: IHookFunctions): boolean {
	const options = context.getNodeParameter('options', {}) as IDataObject;
	return options.takeOver === true;
}

export async function readRemote(context: IHookFunctions, operation: string): Promise<RemoteWebhook> {
	const body = await apiRequest.call(context, 'GET', WEBHOOK_PATH, { context: { operation } });
	return readRemoteWebhook(body);
}

function currentDecision(context: IHookFunctions, remote: RemoteWebhook, ourUrl: string): RegistrationDecision {
	const staticData = getStaticData(context);
	const hasSecret =
		typeof staticData.secret === 'string' && staticData.secret !== '' && sameUrl(staticData.webhookUrl, ourUrl);
	return decideRegistration({
		remote,
		ourUrl,
		hasSecret,
		takeOver: takeOverEnabled(context),
		isTest: isTestListener(context),
		webhookId: context.getNode().webhookId,
	});
}

function refusal(context: IHookFunctions, decision: { message: string; description: string }): NodeOperationError {
	return new NodeOperationError(context.getNode(), decision.message, { description: decision.description });
}

/** checkExists: true only when the webhook is ours and we hold its secret. */
export async function webhookExists(context: IHookFunctions): Promise<boolean> {
	const ourUrl = ourWebhookUrl(context);
	const remote = await readRemote(context, 'Trigger → Check Webhook');
	const decision = currentDecision(context, remote, ourUrl);
	if (decision.action === 'refuse') throw refusal(context, decision);
	return decision.action === 'keep';
}

/** create: registers our URL and stores the secret shown once in the response. */
export async function registerWebhook(context: IHookFunctions): Promise<boolean> {
	const ourUrl = ourWebhookUrl(context);
	// Read again rather than trust an earlier checkExists: the decision must hold now.
	const remote = await readRemote(context, 'Trigger → Register Webhook');
	const decision = currentDecision(context, remote, ourUrl);
	if (decision.action === 'refuse') throw refusal(context, decision);
	if (decision.action === 'keep') return true;

	const staticData = getStaticData(context);
	clearStaticData(staticData);
	if (decision.replacing) {
		context.logger.warn(
			`Business Messaging Trigger: replacing the account's webhook ${decision.replacing} with ${ourUrl} (${decision.reason})`,
		);
	} else {
		context.logger.info(`Business Messaging Trigger: registering ${ourUrl} (${decision.reason})`);
	}

	const context_ = { operation: 'Trigger → Register Webhook' };
	const response = await rawApiRequest.call(context, 'POST', WEBHOOK_PATH, { body: { url: ourUrl }, context: context_ });
	if (response.statusCode < 200 || response.statusCode >= 300) {
		// Only a refusal of the request itself (400/422) can be about the URL; a 401, 403 or 429
		// means something else, which throwForStatus explains.
		const refusedAsInvalid = response.statusCode === 400 || response.statusCode === 422;
		if (/^http:\/\//i.test(ourUrl) && refusedAsInvalid) {
			throw new NodeOperationError(
				context.getNode(),
				`The service refused to register ${ourUrl} (${response.statusCode}): it accepts HTTPS addresses only`,
				{
					description: `n8n's webhook URL is plain http. Make n8n reachable over HTTPS and set its public address (WEBHOOK_URL), then activate again. The service answered ${response.statusCode}: ${bodyAsText(response.body)}`,
				},
			);
		}
		throwForStatus(context.getNode(), response, context_);
	}

	const secret = readSigningSecret(response.body);
	if (!secret) {
		// Events for this URL could never be verified: take the registration back.
		const undo = await rawApiRequest.call(context, 'DELETE', WEBHOOK_PATH, {
			context: { operation: 'Trigger → Delete Webhook' },
		});
		throw new NodeOperationError(
			context.getNode(),
			'The service registered the webhook but its answer carried no signing secret',
			{
				description:
					`Without the secret no event can be verified, so none would be accepted. ` +
					(undo.statusCode < 300
						? 'The registration was deleted again. '
						: `Deleting the registration failed (${undo.statusCode}): delete it in the console. `) +
					'Register the webhook in the console instead and use Registration: Manual with the secret in the credential.',
			},
		);
	}
	staticData.webhookUrl = ourUrl;
	staticData.secret = secret;
	return true;
}

/** delete: removes the webhook only while it still points at this node's URL. */
export async function deleteWebhook(context: IHookFunctions): Promise<boolean> {
	const staticData = getStaticData(context);
	try {
		const ourUrl = ourWebhookUrl(context);
		const remote = await readRemote(context, 'Trigger → Delete Webhook');
		if (!remote.configured || !sameUrl(remote.url, ourUrl)) {
			context.logger.info(
				remote.configured
					? `Business Messaging Trigger: the account's webhook now points at ${remote.url}, not at ${ourUrl}; left in place`
					: 'Business Messaging Trigger: no webhook is configured any more; nothing to delete',
			);
			return true;
		}
		await apiRequest.call(context, 'DELETE', WEBHOOK_PATH, { context: { operation: 'Trigger → Delete Webhook' } });
		return true;
	} finally {
		// Whatever happened, the stored secret no longer belongs to a registration we
		// rely on: a later activation registers again and gets a new one.
		clearStaticData(staticData);
	}
}
