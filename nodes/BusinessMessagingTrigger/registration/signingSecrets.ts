/** The secret: Automatic, sealed in static data; Manual, the credential's; read via its cache. */
import type {
	IDataObject,
	IHookFunctions,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { credentialRead, nodeKeyOf } from '../../shared/credentialKeys';
import { CREDENTIAL_TYPE } from '../../shared/transport';
import { openSecret, sealSecret } from '../../shared/seal';

/** What the trigger keeps in the node's static data. Never output. */
export interface TriggerStaticData extends IDataObject {
	webhookUrl?: string;
	/** The workflow that registered webhookUrl: a copy (same URL) must never delete it. */
	registeredBy?: string;
	sealedSecret?: string;
	/** Versions before 0.2 kept the secret here in plain text; it is removed and registered again. */
	secret?: string;
	/** A user's last activation: where a restart's catch-up starts if its state was lost. */
	activatedAtMs?: number;
}

const CACHE_BOUND = 1000;
type OpenedSecret = { secret: string };

/** The watch's re-registrations here: webhook() tries them until n8n saves the static data. */
const renewed = new Map<string, OpenedSecret>();
/** URLs this process's delete() is taking away: the watch must not register them again. */
const leaving = new Set<string>();

export function markLeaving(url: string, gone: boolean): void {
	if (!gone) return void leaving.delete(url);
	if (leaving.size >= CACHE_BOUND) leaving.clear();
	leaving.add(url);
}

/** A registration by create() (or its removal) replaces what the watch registered. */
export function forgetRenewed(this: IHookFunctions): void {
	renewed.delete(nodeKeyOf.call(this));
}

export function isLeaving(url: string): boolean {
	return leaving.has(url);
}

/** The watch registered `url` again: stored as create() stores it, and usable here at once. */
export async function renewRegistration(
	this: ITriggerFunctions,
	staticData: TriggerStaticData,
	url: string,
	secret: string,
): Promise<void> {
	const apiKey = String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
	storeRegistration(staticData, url, this.getWorkflow().id ?? '', secret, apiKey);
	if (renewed.size >= CACHE_BOUND) renewed.clear();
	renewed.set(nodeKeyOf.call(this), { secret });
}

export function isManualRegistration(this: IHookFunctions | IWebhookFunctions | ITriggerFunctions) {
	return this.getNodeParameter('registration', 'automatic') === 'manual';
}

export function forgetRegistration(staticData: TriggerStaticData): void {
	delete staticData.webhookUrl;
	delete staticData.registeredBy;
	delete staticData.sealedSecret;
	delete staticData.secret;
}

export function storeRegistration(
	staticData: TriggerStaticData,
	webhookUrl: string,
	workflowId: string,
	secret: string,
	apiKey: string,
): void {
	staticData.webhookUrl = webhookUrl;
	staticData.registeredBy = workflowId;
	staticData.sealedSecret = sealSecret(secret, apiKey);
}

/** Whether the stored secret opens with the credential's API key; logs why when it does not. */
export async function canOpenStoredSecret(
	this: IHookFunctions,
	staticData: TriggerStaticData,
): Promise<boolean> {
	if (staticData.secret !== undefined) {
		this.logger.info(
			'Business Messaging Trigger: the signing secret was stored in plain text by an older version; registering again to store it sealed',
		);
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

const NO_MANUAL_SECRET =
	'Registration is Manual but the credential has no Webhook Signing Secret, so no event can be verified: every event is rejected until it is set';
const SEAL_NOT_OPENED =
	"the stored signing secret cannot be opened with the credential's API key (was the key changed?): every event is rejected. Unpublish and publish (deactivate and activate) the workflow to register again";

/** The secret to verify with, or why none; after a `mismatched` one: rotated (Manual) or renewed. */
export async function signingSecret(
	this: IWebhookFunctions,
	mismatched?: string,
): Promise<OpenedSecret | { problem: string }> {
	if (isManualRegistration.call(this)) {
		const read = await credentialRead.call(this, {
			reread: (cached) => !cached.webhookSecret || cached.webhookSecret === mismatched,
		});
		if (typeof read === 'string') return { problem: read };
		return read.webhookSecret ? { secret: read.webhookSecret } : { problem: NO_MANUAL_SECRET };
	}
	const fresher = renewed.get(nodeKeyOf.call(this));
	if (mismatched !== undefined)
		return fresher ?? { problem: 'no other secret was registered here' };
	const { sealedSecret } = this.getWorkflowStaticData('node') as TriggerStaticData;
	if (typeof sealedSecret !== 'string') {
		return {
			problem:
				'no signing secret is stored for this trigger (the registration was lost): every event is rejected. Unpublish and publish (deactivate and activate) the workflow to register again',
		};
	}
	const read = await credentialRead.call(this, {
		sealed: sealedSecret,
		reread: (cached) => cached.sealed?.secret === undefined,
	});
	if (typeof read === 'string') return { problem: read };
	const secret = read.sealed?.secret;
	return secret ? { secret } : { problem: SEAL_NOT_OPENED };
}
