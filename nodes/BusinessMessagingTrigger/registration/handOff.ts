/**
 * When the holder goes away (docs/several-workflows.md §6), both ends. The holder's delete() asks
 * a live member to take the account's webhook over: the member registers its own URL and stores
 * the new secret in one request of its own workflow (only such a request can write its static
 * data), so the webhook is never deleted while another trigger of this n8n still needs it.
 */
import type { IDataObject, IHookFunctions, IWebhookFunctions } from 'n8n-workflow';

import { JOIN_LABEL, verifyWithDerivedKey } from '../../shared/credentialKeys';
import { isPlainObject, parseJsonBody } from '../../shared/json';
import { ReplayGuard } from '../../shared/replayGuard';
import {
	STATIC_DATA_KEY as WAITING_KEY,
	isWaitingEntry,
	registerWaiting,
} from '../../shared/replyAndWait';
import { postSigned } from '../../shared/signedPost';
import { CREDENTIAL_TYPE } from '../../shared/transport';
import { isJoinableUrl, sameUrl } from './decision';
import { rememberMembers, signJoin } from './join';
import { MEMBERS_KEY, readMembers, type MemberTable } from './members';
import { isLeaving, isLiveHere, liveMembers, runsTriggersHere } from './registry';
import { isManualRegistration, type TriggerStaticData } from './signingSecrets';
import { readRemoteWebhook, registerOurUrl } from './webhookMethods';

export const HANDOFF_HEADER = 'x-business-messaging-handoff';
const MAX_AGE_MS = 5 * 60_000;
const FUTURE_TOLERANCE_MS = 60_000;
/** The candidate reads the webhook, registers and n8n saves its static data before answering. */
const HANDOFF_TIMEOUT_MS = 15_000;
const LOG_PREFIX = 'Business Messaging Trigger';

export interface HandOffBody {
	from_url: string;
	/** Reply and Wait's entries the holder kept (§8): the new holder resumes them. */
	waiting: IDataObject;
	/** The other members, so that the new holder forwards to them before they join it again. */
	members: MemberTable;
	instance_id: string;
	issued_at_ms: number;
}

/** Signed as a join is: the same key (derived from the API key), the same form. */
export const signHandOff = signJoin;

/**
 * Who may take over: the triggers live in this process (the registry), none being deactivated.
 * delete() runs where trigger() runs (the leader main), so the registry is the truth there; a
 * stored member may be a workflow n8n is deactivating at this moment, whose URL still answers
 * (1.x removes the route after delete()): handing off to it would leave the webhook at a dead URL.
 * Only a process that runs no trigger() (never seen in n8n) falls back to the static data's members.
 */
export function handOffCandidates(account: string, ownUrl: string, members: MemberTable): string[] {
	const live = liveMembers(account, ownUrl).map((member) => member.url);
	const stored = runsTriggersHere()
		? []
		: Object.entries(members)
				.filter(([, member]) => member.account === account)
				.sort(([, a], [, b]) => a.joinedAtMs - b.joinedAtMs)
				.map(([url]) => url);
	return [...new Set([...live, ...stored])].filter(
		(url) => isJoinableUrl(url, ownUrl) && !isLeaving(url),
	);
}

/**
 * The holder's delete(): offers the registration to each candidate in turn; the new holder's URL
 * (undefined when none took it: the caller deletes the webhook) and how many were asked. The
 * webhook must still be ours (the caller read it under the account's lock).
 */
export async function handOff(
	this: IHookFunctions,
	ownUrl: string,
	apiKey: string,
	account: string,
): Promise<{ url?: string; asked: number }> {
	const global = this.getWorkflowStaticData('global') as IDataObject;
	const members = readMembers(global, Date.now());
	const candidates = handOffCandidates(account, ownUrl, members);
	for (const url of candidates) {
		const rest = Object.fromEntries(
			Object.entries(members).filter(([memberUrl]) => memberUrl !== url),
		);
		const body = JSON.stringify({
			from_url: ownUrl,
			waiting: isPlainObject(global[WAITING_KEY]) ? global[WAITING_KEY] : {},
			members: rest,
			instance_id: this.getInstanceId(),
			issued_at_ms: Date.now(),
		} satisfies HandOffBody);
		const startedMs = Date.now();
		let status: number | string;
		let answer: unknown;
		try {
			const response = await postSigned.call(this, url, body, {
				header: HANDOFF_HEADER,
				apiKey,
				label: JOIN_LABEL,
				timeoutMs: HANDOFF_TIMEOUT_MS,
			});
			status = response.statusCode;
			answer = typeof response.body === 'string' ? JSON.parse(response.body) : response.body;
		} catch (error) {
			status = (error as Error).message;
		}
		if (
			status === 200 &&
			isPlainObject(answer) &&
			answer.handedOff === true &&
			typeof answer.sealedSecret === 'string'
		) {
			// main's activation-time copy of the new holder's static data gets the same secret:
			// its next whole save would otherwise wipe it (every event refused).
			liveMembers(account, ownUrl)
				.find((member) => sameUrl(member.url, url))
				?.adopt?.(answer);
			this.logger.info(
				`${LOG_PREFIX}: handed the account's webhook off to ${url} in ${Date.now() - startedMs} ms`,
			);
			return { url, asked: candidates.indexOf(url) + 1 };
		}
		this.logger.info(`${LOG_PREFIX}: ${url} did not take the account's webhook over (${status})`);
	}
	return { asked: candidates.length };
}

// ---------------------------------------------------------------------------
// The candidate's end

const handOffsSeen = new ReplayGuard(1000);

function parseHandOff(rawBody: Buffer): HandOffBody | string {
	const parsed = parseJsonBody(rawBody);
	if (!parsed) return 'the body is not JSON';
	const body = parsed.json;
	if (
		!isPlainObject(body) ||
		typeof body.from_url !== 'string' ||
		typeof body.instance_id !== 'string' ||
		typeof body.issued_at_ms !== 'number'
	)
		return 'the body is not a hand-off';
	return {
		from_url: body.from_url,
		waiting: isPlainObject(body.waiting) ? body.waiting : {},
		members: isPlainObject(body.members) ? (body.members as unknown as MemberTable) : {},
		instance_id: body.instance_id,
		issued_at_ms: body.issued_at_ms,
	};
}

/**
 * A member's webhook() asked to take the webhook over: checked as a join (signature with the
 * join key, fresh, unseen, from this n8n, from another trigger's URL of it), and only while the
 * webhook still points at `from_url` (a stale hand-off never replaces a newer registration).
 * Registers this node's URL, keeps the secret sealed, the waiting entries and the other
 * members in this workflow's static data (saved by n8n before it answers).
 */
export async function receiveHandOff(
	this: IWebhookFunctions,
	rawBody: Buffer | undefined,
	signature: string | string[] | undefined,
): Promise<IDataObject | { status: 400 | 401 | 409; reason: string }> {
	if (!rawBody) return { status: 400, reason: 'the raw request body is not available' };
	const verified = await verifyWithDerivedKey.call(this, JOIN_LABEL, rawBody, signature);
	if (verified !== true) return { status: 401, reason: verified };
	const body = parseHandOff(rawBody);
	if (typeof body === 'string') return { status: 400, reason: body };
	const nowMs = Date.now();
	const ownUrl = this.getNodeWebhookUrl('default') ?? '';
	if (nowMs - body.issued_at_ms > MAX_AGE_MS || body.issued_at_ms - nowMs > FUTURE_TOLERANCE_MS)
		return { status: 401, reason: 'the hand-off is not fresh (replayed, or its clock is off)' };
	if (body.instance_id !== this.getInstanceId())
		return { status: 401, reason: 'the hand-off comes from another n8n' };
	if (!isJoinableUrl(body.from_url, ownUrl))
		return { status: 401, reason: "the hand-off is not from another trigger's URL of this n8n" };
	const header = String(Array.isArray(signature) ? signature[0] : signature).toLowerCase();
	if (!handOffsSeen.firstSighting(header, body.issued_at_ms + MAX_AGE_MS, nowMs))
		return { status: 401, reason: 'this hand-off was already received (replay)' };
	if (isManualRegistration.call(this))
		return { status: 401, reason: 'this trigger uses Manual registration' };
	// Where trigger() runs, a URL still routed may belong to a workflow being deactivated (its
	// trigger() closed or its delete() begun): taking the webhook would leave it at a dead URL.
	if (runsTriggersHere() && !isLiveHere(ownUrl))
		return { status: 409, reason: 'this trigger is not active (being deactivated)' };
	const remote = await readRemoteWebhook.call(this, 'Trigger → Take Over From Leaving Trigger');
	if (!remote.configured || !sameUrl(remote.url, body.from_url))
		return {
			status: 401,
			reason: "the account's webhook no longer points at the leaving trigger (a stale hand-off)",
		};
	const apiKey = String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData;
	await registerOurUrl.call(this, ownUrl, staticData, apiKey, {
		reason: 'the trigger holding it was deactivated and handed it off',
		replacing: body.from_url,
	});
	const global = this.getWorkflowStaticData('global') as IDataObject;
	const workflowId = this.getWorkflow().id ?? '';
	for (const [key, entry] of Object.entries(body.waiting)) {
		if (isWaitingEntry(entry) && entry.expiresAtMs > nowMs)
			registerWaiting(global, key, { ...entry, home: workflowId }, nowMs);
	}
	const others = Object.entries(readMembers({ [MEMBERS_KEY]: body.members } as IDataObject, nowMs))
		.filter(([url]) => isJoinableUrl(url, ownUrl) && !sameUrl(url, body.from_url))
		.map(([url, member]) => ({ url, ...member }));
	rememberMembers(global, workflowId, others, nowMs);
	return {
		handedOff: true,
		webhookUrl: staticData.webhookUrl ?? null,
		registeredBy: staticData.registeredBy ?? null,
		sealedSecret: staticData.sealedSecret ?? null,
	};
}
