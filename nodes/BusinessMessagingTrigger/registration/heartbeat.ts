/**
 * The heartbeat (docs/several-workflows.md §4, §6): trigger() runs it while the workflow is
 * active, even with Catch Up off. Every 30 s, under the account's lock, it reads who holds the
 * account's webhook and acts on it: ours → hold; another trigger of this n8n → join it again
 * (repairs a join lost to a concurrent save of static data); none → register and hold (the
 * holder was deactivated: the catch-up recovers the gap); anything else → say so once, never take it.
 */
import type { IDataObject, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { JOIN_LABEL, verifyWithDerivedKey } from '../../shared/credentialKeys';
import { isPlainObject, parseJsonBody } from '../../shared/json';
import { ReplayGuard } from '../../shared/replayGuard';
import { accountId } from '../../shared/replyAndWait';
import { postSigned } from '../../shared/signedPost';
import { CREDENTIAL_TYPE } from '../../shared/transport';
import { withAccountLock } from './accountLock';
import { isJoinableUrl, sameUrl } from './decision';
import { postJoin, rememberMembers } from './join';
import { closeGap } from './membershipGaps';
import { enterRegistry, liveMembers, nodeUrlOf, onNodeUrl } from './registry';
import { isManualRegistration, type TriggerStaticData } from './signingSecrets';
import {
	adoptRegistration,
	readRemoteWebhook,
	registerOurUrl,
	selectedEvents,
} from './webhookMethods';

export const HEARTBEAT_MS = 30_000;
/** The trigger's webhook() reads the webhook, registers and n8n saves its static data before answering. */
const CLAIM_TIMEOUT_MS = 15_000;
/** The trigger asking its own webhook() to register it (a request whose static data n8n saves). */
export const CLAIM_HEADER = 'x-business-messaging-claim';
const LOG_PREFIX = 'Business Messaging Trigger';

export type Role = 'holder' | 'member' | 'registered' | 'foreign' | 'unknown';

export interface Heartbeat {
	/** One re-check now (the loop calls it every HEARTBEAT_MS); what this trigger is afterwards. */
	beat(): Promise<Role>;
	/** Before each emit: a holder copies the live members of its account into its static data. */
	beforeEmit(): void;
	close(): void;
}

/**
 * Registering from trigger() itself would keep the secret in main's activation-time copy of the
 * static data only, which n8n saves at the next emit: every event until then would be refused.
 * So the trigger asks its own webhook() to register (n8n saves that request's static data before
 * answering) and writes the same registration into its own copy (adoptRegistration).
 */
async function claim(
	this: ITriggerFunctions,
	url: string,
	apiKey: string,
	/** The dead holder's URL the webhook still points at (n8n answered 404), if any. */
	replacing: string | undefined,
): Promise<boolean> {
	const body = JSON.stringify({
		member_url: url,
		...(replacing && { replacing }),
		workflow_id: this.getWorkflow().id ?? '',
		instance_id: this.getInstanceId(),
		issued_at_ms: Date.now(),
	});
	// Signed as a join is (the same derived key): receiveClaim checks it so.
	const response = await postSigned.call(this, url, body, {
		header: CLAIM_HEADER,
		apiKey,
		label: JOIN_LABEL,
		timeoutMs: CLAIM_TIMEOUT_MS,
	});
	let answer: unknown = response.body;
	if (typeof answer === 'string') {
		try {
			answer = JSON.parse(answer);
		} catch {
			answer = undefined;
		}
	}
	if (response.statusCode !== 200 || !isPlainObject(answer) || answer.registered !== true) {
		this.logger.warn(
			`${LOG_PREFIX}: registering ${url} in place of the gone holder failed (${response.statusCode}); trying again in ${HEARTBEAT_MS / 1000} s`,
		);
		return false;
	}
	adoptRegistration(this.getWorkflowStaticData('node') as TriggerStaticData, answer);
	return true;
}

export async function startHeartbeat(this: ITriggerFunctions): Promise<Heartbeat> {
	const idle: Heartbeat = { beat: async () => 'unknown', beforeEmit: () => {}, close: () => {} };
	if (this.getMode() === 'manual' || isManualRegistration.call(this)) return idle;
	const apiKey = await this.getCredentials(CREDENTIAL_TYPE).then(
		(credentials) => String(credentials.apiKey ?? ''),
		() => '',
	);
	if (!apiKey) return idle;
	const workflowId = this.getWorkflow().id ?? '';
	const key = `${workflowId}:${this.getNode().id}`;
	const account = accountId(apiKey);
	const events = selectedEvents.call(this);
	// The URL is known once this process ran the webhook methods (the leader main, where trigger()
	// runs too). n8n 2.x runs trigger() side by side with them (WorkflowTriggerActivator
	// activateInternal: Promise.allSettled), and checkExists may wait for the account lock while
	// other triggers activate: trigger() often starts first. So the trigger enters the registry the
	// moment checkExists records the URL (before it posts the join: main's save of the holder's copy
	// right after a processor saved the join keeps the member), and looks it up again each second
	// as a fallback. Giving up at the first look left
	// it with no heartbeat and out of the registry for good: the holder's next emit saved main's
	// copy of the members without it, and nothing joined again (queue suite, several-workflows).
	let url: string | undefined;
	let closed = false;
	let leaveRegistry = () => {};
	const known = (): string | undefined => {
		if (url !== undefined || closed) return url;
		url = nodeUrlOf(key);
		if (url !== undefined)
			leaveRegistry = enterRegistry(key, {
				url,
				account,
				events,
				workflowId,
				adopt: (answer) =>
					adoptRegistration(this.getWorkflowStaticData('node') as TriggerStaticData, answer),
			});
		return url;
	};
	known();
	const stopListening = url === undefined ? onNodeUrl(key, known) : () => {};
	let lastProblem = '';
	const once = (problem: string, log: () => void) => {
		if (problem !== lastProblem) log();
		lastProblem = problem;
	};

	const beat = async (): Promise<Role> => {
		const role = await recheck();
		// Joined or holding again: what the holder gets from now on reaches this trigger (§7).
		if (role === 'holder' || role === 'member' || role === 'registered') closeGap(key);
		return role;
	};
	const recheck = async (): Promise<Role> => {
		const url = known();
		if (url === undefined) return 'unknown';
		return await withAccountLock(account, async () => {
			const remote = await readRemoteWebhook.call(this, 'Trigger → Heartbeat');
			if (remote.configured && sameUrl(remote.url, url)) {
				lastProblem = '';
				return 'holder';
			}
			if (remote.configured && isJoinableUrl(remote.url, url)) {
				const { outcome, detail } = await postJoin.call(this, remote.url as string, {
					memberUrl: url,
					events,
					apiKey,
				});
				if (outcome === 'joined') {
					lastProblem = '';
					return 'member';
				}
				if (outcome !== 'dead') {
					once(`join:${outcome}`, () =>
						this.logger.warn(
							`${LOG_PREFIX}: joining the trigger holding the account's webhook ${remote.url} failed (${detail})`,
						),
					);
					return 'unknown';
				}
				// n8n's 404: the holder is gone, and the webhook points nowhere live: take its place.
			} else if (remote.configured) {
				once(`foreign:${remote.url}`, () =>
					this.logger.error(
						`${LOG_PREFIX}: the account's webhook now points at ${remote.url}, which is not a trigger of this n8n; this trigger gets no events until it is deleted (it is never replaced from here)`,
					),
				);
				return 'foreign';
			}
			const registered = await claim.call(
				this,
				url,
				apiKey,
				remote.configured ? (remote.url ?? undefined) : undefined,
			);
			if (registered) lastProblem = '';
			return registered ? 'registered' : 'unknown';
		});
	};

	const loop = async () => {
		while (!closed) {
			for (let waited = 0; waited < HEARTBEAT_MS && !closed; waited += 1000) {
				await sleep(1000);
				known();
			}
			if (closed) return;
			try {
				await beat();
			} catch (error) {
				once(`error:${(error as Error).message}`, () =>
					this.logger.warn(`${LOG_PREFIX}: heartbeat failed: ${(error as Error).message}`),
				);
			}
		}
	};
	void loop();

	return {
		beat,
		beforeEmit: () => {
			const url = known();
			const node = this.getWorkflowStaticData('node') as TriggerStaticData;
			if (url === undefined || !sameUrl(node.webhookUrl, url)) return;
			rememberMembers(
				this.getWorkflowStaticData('global') as IDataObject,
				workflowId,
				liveMembers(account, url).map((member) => ({ ...member })),
			);
		},
		close: () => {
			closed = true;
			stopListening();
			leaveRegistry();
		},
	};
}

// ---------------------------------------------------------------------------
// The webhook() end of a claim

const claimsSeen = new ReplayGuard(1000);
const CLAIM_MAX_AGE_MS = 5 * 60_000;

/**
 * The trigger's own heartbeat asking to register this node's URL: signed with the API key's join
 * key, fresh, from this n8n, for this very URL, and only while no webhook is configured. The
 * registration is stored in the static data n8n saves before answering; the answer carries it
 * (the secret sealed under the API key) so the heartbeat can write it into main's copy too.
 */
export async function receiveClaim(
	this: IWebhookFunctions,
	rawBody: Buffer | undefined,
	signature: string | string[] | undefined,
): Promise<IDataObject | { status: 400 | 401; reason: string }> {
	if (!rawBody) return { status: 400, reason: 'the raw request body is not available' };
	const verified = await verifyWithDerivedKey.call(this, JOIN_LABEL, rawBody, signature);
	if (verified !== true) return { status: 401, reason: verified };
	const parsed = parseJsonBody(rawBody);
	if (!parsed) return { status: 400, reason: 'the body is not JSON' };
	const body = parsed.json;
	const ownUrl = this.getNodeWebhookUrl('default') ?? '';
	const nowMs = Date.now();
	if (
		!isPlainObject(body) ||
		typeof body.issued_at_ms !== 'number' ||
		nowMs - body.issued_at_ms > CLAIM_MAX_AGE_MS ||
		body.issued_at_ms - nowMs > 60_000
	)
		return { status: 401, reason: 'the claim is not fresh' };
	if (body.instance_id !== this.getInstanceId() || !sameUrl(String(body.member_url), ownUrl))
		return { status: 401, reason: "the claim is not this node's" };
	const header = String(Array.isArray(signature) ? signature[0] : signature).toLowerCase();
	if (!claimsSeen.firstSighting(header, body.issued_at_ms + CLAIM_MAX_AGE_MS, nowMs))
		return { status: 401, reason: 'this claim was already received (replay)' };
	if (isManualRegistration.call(this)) return { registered: false, reason: 'manual registration' };
	const remote = await readRemoteWebhook.call(this, 'Trigger → Heartbeat');
	// Only in place of nothing, or of the dead trigger URL of this n8n the heartbeat found (n8n's 404).
	const replacing = typeof body.replacing === 'string' ? body.replacing : undefined;
	const replaceable =
		!remote.configured ||
		(replacing !== undefined && sameUrl(remote.url, replacing) && isJoinableUrl(replacing, ownUrl));
	if (!replaceable) return { registered: false, reason: 'a webhook is configured again meanwhile' };
	const apiKey = String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	await registerOurUrl.call(this, ownUrl, staticData, apiKey, {
		reason: remote.configured
			? 'the trigger holding it is no longer active in this n8n'
			: 'no webhook is configured for the account any more (its holder was deactivated)',
		...(remote.configured && replacing && { replacing }),
	});
	return {
		registered: true,
		webhookUrl: staticData.webhookUrl ?? null,
		registeredBy: staticData.registeredBy ?? null,
		sealedSecret: staticData.sealedSecret ?? null,
	};
}
