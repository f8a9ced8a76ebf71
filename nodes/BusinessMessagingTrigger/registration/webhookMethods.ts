/** checkExists, create and delete; in Manual registration nothing is registered or deleted. */
import type { IDataObject, IHookFunctions, INode } from 'n8n-workflow';
import { NodeOperationError, WebhookPathTakenError } from 'n8n-workflow';

import { forgetCredentialRead } from '../../shared/credentialKeys';
import { serviceLine } from '../../shared/redact';
import { CREDENTIAL_TYPE, apiRequest } from '../../shared/transport';
import { readTriggerOptions } from '../options';
import { decideRegistration, sameUrl } from './decision';
import { WEBHOOK_PATH, readRemoteWebhook } from '../../shared/webhookAnswer';
import { postRegistration } from './register';
import {
	canOpenStoredSecret,
	forgetRegistration,
	forgetRenewed,
	markLeaving,
	isManualRegistration,
	storeRegistration,
	type TriggerStaticData,
} from './signingSecrets';

/** Which workflow activated each URL: n8n 1.x calls a refused copy's delete() (same URL). */
const owners = new Map<string, string>();

function holdUrl(this: IHookFunctions, url: string): void {
	markLeaving(url, false);
	const workflowId = this.getWorkflow().id;
	if (!workflowId) return;
	if (owners.size >= 10_000) owners.delete(owners.keys().next().value as string);
	owners.set(url, workflowId);
}

/** Final: n8n 2.x retries a failed activation 5 times unless it is a WebhookPathTakenError. */
export class AccountWebhookTakenError extends WebhookPathTakenError {
	constructor(node: INode, message: string, description: string) {
		super(node.name);
		this.message = message;
		this.description = description;
		this.node = node;
	}
}

async function currentDecision(this: IHookFunctions, operation: string) {
	const ourUrl = this.getNodeWebhookUrl('default');
	if (!ourUrl) {
		throw new NodeOperationError(
			this.getNode(),
			'n8n did not provide a webhook URL for this trigger: save the workflow and publish (activate) it again',
			{ description: 'n8n gives a trigger its URL from the saved workflow.' },
		);
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

/** A user's activation (not a restart or republish) is where a restart's catch-up may start. */
function stampActivation(this: IHookFunctions): void {
	if (this.getMode() === 'manual' || this.getActivationMode() === 'manual') return;
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	if (this.getActivationMode() === 'activate' || staticData.activatedAtMs === undefined)
		staticData.activatedAtMs = Date.now();
}

/** checkExists: true when the webhook is ours and we hold its secret (Manual: the credential's). */
export async function webhookExists(this: IHookFunctions): Promise<boolean> {
	// Imported without a webhookId (REST API, `n8n import:workflow`), n8n 1.x builds a URL it 404s.
	if (!this.getNode().webhookId)
		throw new AccountWebhookTakenError(
			this.getNode(),
			'This trigger has no webhook ID, so n8n cannot route events to it',
			'The workflow was imported without the trigger\'s "webhookId" (through the REST API or n8n import:workflow). ' +
				'Open the workflow in the editor, delete the trigger and add it again (or paste it into a new workflow), save, then publish; ' +
				'or give the node a "webhookId" (any new UUID) in the JSON before importing.',
		);
	stampActivation.call(this);
	if (isManualRegistration.call(this)) {
		forgetCredentialRead.call(this);
		const { webhookSecret } = await this.getCredentials(CREDENTIAL_TYPE);
		if (typeof webhookSecret === 'string' && webhookSecret.trim()) return true;
		throw new NodeOperationError(
			this.getNode(),
			'Registration is Manual but the credential has no Webhook Signing Secret: paste the secret shown when the webhook was registered in the console into the credential',
			{
				description:
					"Paste the signing secret shown when the webhook was registered in the console into the credential's Webhook Signing Secret. Without it every event would be rejected.",
			},
		);
	}
	const { ourUrl, decision } = await currentDecision.call(this, 'Trigger → Check Webhook');
	if (decision.action === 'keep') holdUrl.call(this, ourUrl);
	return decision.action === 'keep';
}

/** create: registers our URL and stores the secret shown once in the answer, sealed. */
export async function registerWebhook(this: IHookFunctions): Promise<boolean> {
	if (isManualRegistration.call(this)) return true;
	const operation = 'Trigger → Register Webhook';
	// Read again rather than trust an earlier checkExists: the decision must hold now.
	const { ourUrl, staticData, decision: why } = await currentDecision.call(this, operation);
	if (why.action === 'keep') return true;
	const apiKey = String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
	forgetRegistration(staticData);
	if (why.replacing) {
		this.logger.warn(
			`Business Messaging Trigger: replacing the account's webhook ${why.replacing} with ${ourUrl} (${why.reason})`,
		);
	} else {
		this.logger.info(`Business Messaging Trigger: registering ${ourUrl} (${why.reason})`);
	}
	const secret = await postRegistration.call(this, ourUrl, operation);
	storeRegistration(staticData, ourUrl, this.getWorkflow().id ?? '', secret, apiKey);
	forgetRenewed.call(this);
	holdUrl.call(this, ourUrl);
	return true;
}

/** delete: removes the webhook only when this workflow registered it and it still points here. */
export async function deleteWebhook(this: IHookFunctions): Promise<boolean> {
	if (isManualRegistration.call(this)) return true;
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	try {
		const ourUrl = this.getNodeWebhookUrl('default');
		// n8n 1.x does not always save what create() stored: this process's memory comes first.
		const owner = (ourUrl && owners.get(ourUrl)) || staticData.registeredBy;
		if (owner !== undefined && owner !== this.getWorkflow().id) {
			this.logger.info(
				`Business Messaging Trigger: this workflow did not register the account's webhook (${ourUrl}); left in place`,
			);
			return true;
		}
		// Before the DELETE: the catch-up's watch, still running, must not register it again.
		if (ourUrl) markLeaving(ourUrl, true);
		const remote = await readRemoteWebhook.call(this, 'Trigger → Delete Webhook');
		if (!ourUrl || !remote.configured || !sameUrl(remote.url, ourUrl)) {
			this.logger.info(
				remote.configured
					? `Business Messaging Trigger: the account's webhook now points at ${serviceLine(remote.url)}, not at ${ourUrl}; left in place`
					: 'Business Messaging Trigger: no webhook is configured any more; nothing to delete',
			);
			return true;
		}
		await apiRequest.call(this, 'DELETE', WEBHOOK_PATH, {
			context: { operation: 'Trigger → Delete Webhook' },
		});
		owners.delete(ourUrl);
		return true;
	} finally {
		// Whatever happened, a later activation registers again and gets a new secret.
		forgetRegistration(staticData);
		forgetRenewed.call(this);
		delete staticData.activatedAtMs;
	}
}
