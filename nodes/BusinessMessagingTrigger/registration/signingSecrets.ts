/**
 * The signing secret: Automatic, sealed under the API key in the node's static data; Manual, the
 * credential's. Reading a credential costs n8n 2.x an expression isolate (~30 ms CPU), so it is
 * read once per registration or node, not per event.
 */
import type {
	IDataObject,
	IHookFunctions,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { CREDENTIAL_TYPE } from '../../shared/transport';
import { openSecret, sealSecret } from './seal';

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

type TriggerContext = IHookFunctions | IWebhookFunctions;

const CACHE_BOUND = 1000;
const MANUAL_REREAD_INTERVAL_MS = 10_000;

type OpenedSecret = { secret: string };
type ManualRead = OpenedSecret & { readAtMs: number };
const openedSecrets = new Map<string, OpenedSecret>();
const manualSecrets = new Map<string, ManualRead>();

/**
 * A credential that could not be read or gave no secret, per sealed secret or node: not read
 * before `untilMs`, so forged events cost no read each.
 */
const unreadable = new Map<string, { problem: string; untilMs: number }>();

function recentFailure(key: string): { problem: string } | undefined {
	const failed = unreadable.get(key);
	if (failed && failed.untilMs > Date.now()) return { problem: failed.problem };
	unreadable.delete(key);
	return undefined;
}

function rememberFailure(key: string, problem: string): { problem: string } {
	if (unreadable.size >= CACHE_BOUND) unreadable.clear();
	unreadable.set(key, { problem, untilMs: Date.now() + MANUAL_REREAD_INTERVAL_MS });
	return { problem };
}

const unreadableCredential = (error: unknown) =>
	`the credential could not be read (${(error as Error).message})`;

/**
 * Registrations the webhook watch made again in this process, per node: webhook() here tries that
 * secret when the stored one does not match, until n8n saves the static data (with the next emit).
 */
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
	renewed.delete(manualSecretKey.call(this));
}

export function isLeaving(url: string): boolean {
	return leaving.has(url);
}

/** The watch registered `url` again: stored as create() stores it, and usable here at once. */
export function renewRegistration(
	this: ITriggerFunctions,
	staticData: TriggerStaticData,
	url: string,
	secret: string,
	apiKey: string,
): void {
	storeRegistration(staticData, url, this.getWorkflow().id ?? '', secret, apiKey);
	if (renewed.size >= CACHE_BOUND) renewed.clear();
	renewed.set(manualSecretKey.call(this), { secret });
}

export function isManualRegistration(this: TriggerContext | ITriggerFunctions): boolean {
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

/** Whether the stored secret opens with the credential's API key; says so in the log when it does not. */
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

function manualSecretKey(this: TriggerContext | ITriggerFunctions): string {
	return `${this.getWorkflow().id ?? ''}:${this.getNode().id}`;
}

export async function manualSigningSecret(this: TriggerContext): Promise<string | undefined> {
	return manualSecretOf(await this.getCredentials(CREDENTIAL_TYPE));
}

function manualSecretOf(credentials: IDataObject): string | undefined {
	const secret =
		typeof credentials.webhookSecret === 'string' ? credentials.webhookSecret.trim() : '';
	return secret || undefined;
}

/** An activation may follow a change of the credential's secret: webhook() reads it afresh. */
export function forgetManualSecret(this: IHookFunctions): void {
	manualSecrets.delete(manualSecretKey.call(this));
	unreadable.delete(manualSecretKey.call(this));
}

export type SigningSecret = OpenedSecret & {
	/** Reads the secret again (Manual registration, after a mismatch); undefined when read too recently. */
	reread?: () => Promise<OpenedSecret | { problem: string }>;
};

/** The secret events are verified with, or why there is none (then every event is refused). */
export async function signingSecret(
	this: IWebhookFunctions,
): Promise<SigningSecret | { problem: string }> {
	if (isManualRegistration.call(this)) {
		const key = manualSecretKey.call(this);
		const found =
			manualSecrets.get(key) ?? recentFailure(key) ?? (await readManualSecret.call(this, key));
		if ('problem' in found) return found;
		// A secret rotated in the credential: read it again when a signature does not match, at most every 10 s.
		const stale = Date.now() - found.readAtMs >= MANUAL_REREAD_INTERVAL_MS;
		const reread = stale ? async () => await readManualSecret.call(this, key) : undefined;
		return { secret: found.secret, reread };
	}
	const { sealedSecret } = this.getWorkflowStaticData('node') as TriggerStaticData;
	if (typeof sealedSecret !== 'string') {
		return {
			problem:
				'no signing secret is stored for this trigger (the registration was lost): every event is rejected. Unpublish and publish (deactivate and activate) the workflow to register again',
		};
	}
	const fresher = renewed.get(manualSecretKey.call(this));
	const reread = fresher && (async () => await Promise.resolve(fresher));
	const opened = openedSecrets.get(sealedSecret);
	if (opened) return { ...opened, reread };
	const failed = recentFailure(sealedSecret);
	if (failed) return failed;
	let apiKey: unknown;
	try {
		apiKey = (await this.getCredentials(CREDENTIAL_TYPE)).apiKey;
	} catch (error) {
		return rememberFailure(sealedSecret, unreadableCredential(error));
	}
	const secret = openSecret(sealedSecret, apiKey);
	if (!secret) {
		return rememberFailure(
			sealedSecret,
			"the stored signing secret cannot be opened with the credential's API key (was the key changed?): every event is rejected. Unpublish and publish (deactivate and activate) the workflow to register again",
		);
	}
	if (openedSecrets.size >= CACHE_BOUND) openedSecrets.clear();
	const found = { secret };
	openedSecrets.set(sealedSecret, found);
	return { ...found, reread };
}

async function readManualSecret(
	this: IWebhookFunctions,
	key: string,
): Promise<ManualRead | { problem: string }> {
	let credentials: IDataObject;
	try {
		credentials = await this.getCredentials(CREDENTIAL_TYPE);
	} catch (error) {
		return rememberFailure(key, unreadableCredential(error));
	}
	const secret = manualSecretOf(credentials);
	if (manualSecrets.size >= CACHE_BOUND) manualSecrets.clear();
	if (!secret) {
		manualSecrets.delete(key);
		return rememberFailure(
			key,
			'Registration is Manual but the credential has no Webhook Signing Secret, so no event can be verified: every event is rejected until it is set',
		);
	}
	const read = { secret, readAtMs: Date.now() };
	manualSecrets.set(key, read);
	return read;
}
