/**
 * Joining the account's holder (docs/several-workflows.md §4), both ends. A member posts a join
 * to the holder's URL, signed with a key derived from the API key (only a holder of the same
 * key can join); the holder keeps it in its members table and forwards events to it.
 */
import type {
	IDataObject,
	IHookFunctions,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { JOIN_LABEL, verifyWithDerivedKey } from '../../shared/credentialKeys';
import { isPlainObject, parseJsonBody } from '../../shared/json';
import { ReplayGuard } from '../../shared/replayGuard';
import { accountId } from '../../shared/replyAndWait';
import { postSigned, signWithDerivedKey } from '../../shared/signedPost';
import { isJoinableUrl } from './decision';
import { keepMembersCurrent, withMember, type MemberTable } from './members';

export const JOIN_HEADER = 'x-business-messaging-join';
const MAX_AGE_MS = 5 * 60_000;
const FUTURE_TOLERANCE_MS = 60_000;
const JOIN_TIMEOUT_MS = 5000;

export interface JoinBody {
	member_url: string;
	workflow_id: string;
	events: string[];
	account: string;
	instance_id: string;
	issued_at_ms: number;
	leave?: boolean;
}

export function signJoin(apiKey: string, rawBody: string | Buffer): string {
	return signWithDerivedKey(apiKey, JOIN_LABEL, rawBody);
}

/** n8n's own 404 for a path with no active webhook (live-webhooks.js): the holder's workflow is gone. */
export function isN8nNotRegistered(statusCode: number, body: unknown): boolean {
	if (statusCode !== 404) return false;
	const text = typeof body === 'string' ? body : JSON.stringify(body ?? '');
	return /is not registered/i.test(text);
}

/** What a join's answer means to the member. */
export type JoinOutcome = 'joined' | 'refused' | 'dead' | 'unreachable';

export function classifyJoinAnswer(statusCode: number, body: unknown): JoinOutcome {
	if (statusCode === 200) return 'joined';
	if (statusCode === 401) return 'refused';
	if (isN8nNotRegistered(statusCode, body)) return 'dead';
	return 'unreachable';
}

/** The member's side: one join (or leave) posted to the holder; never throws. */
export async function postJoin(
	this: IHookFunctions | ITriggerFunctions,
	holderUrl: string,
	join: { memberUrl: string; events: string[]; apiKey: string; leave?: boolean },
): Promise<{ outcome: JoinOutcome; detail: string }> {
	const payload: JoinBody = {
		member_url: join.memberUrl,
		workflow_id: this.getWorkflow().id ?? '',
		events: join.events,
		account: accountId(join.apiKey),
		instance_id: this.getInstanceId(),
		issued_at_ms: Date.now(),
		...(join.leave && { leave: true }),
	};
	const body = JSON.stringify(payload);
	try {
		const response = await postSigned.call(this, holderUrl, body, {
			header: JOIN_HEADER,
			apiKey: join.apiKey,
			label: JOIN_LABEL,
			timeoutMs: JOIN_TIMEOUT_MS,
		});
		return {
			outcome: classifyJoinAnswer(response.statusCode, response.body),
			detail: `${response.statusCode}`,
		};
	} catch (error) {
		return { outcome: 'unreachable', detail: (error as Error).message };
	}
}

// ---------------------------------------------------------------------------
// The holder's side

/** Joins taken in this process, by signature, while they are fresh. */
const joinsSeen = new ReplayGuard(10_000);
/** Per holder workflow: the members this process saw join, and the URLs it saw leave or vanish. */
const known = new Map<string, { members: MemberTable; gone: Set<string> }>();

function knownOf(holderWorkflowId: string) {
	let entry = known.get(holderWorkflowId);
	if (!entry) {
		if (known.size >= 1000) known.clear();
		entry = { members: {}, gone: new Set() };
		known.set(holderWorkflowId, entry);
	}
	return entry;
}

/** A member answered n8n's 404 to a forward (its workflow is no longer active): dropped from the next save. */
export function forgetMember(holderWorkflowId: string, url: string): void {
	const entry = knownOf(holderWorkflowId);
	delete entry.members[url];
	entry.gone.add(url);
}

/** The members table this copy of the static data should hold now, written into it when it differs. */
export function currentMembers(
	globalStaticData: IDataObject,
	holderWorkflowId: string,
	nowMs = Date.now(),
): MemberTable {
	const entry = knownOf(holderWorkflowId);
	return keepMembersCurrent(globalStaticData, entry.members, entry.gone, nowMs);
}

/** Adds (or refreshes) members in this process's memory and in this copy of the static data. */
export function rememberMembers(
	globalStaticData: IDataObject,
	holderWorkflowId: string,
	joined: Array<{ url: string; events: string[]; account: string; workflowId: string }>,
	nowMs = Date.now(),
): MemberTable {
	const entry = knownOf(holderWorkflowId);
	for (const member of joined) {
		entry.members = withMember(entry.members, member.url, member, nowMs);
		entry.gone.delete(member.url);
	}
	return currentMembers(globalStaticData, holderWorkflowId, nowMs);
}

/** A verified body's shape, or why it is not one. */
export function parseJoin(rawBody: Buffer): JoinBody | string {
	const parsed = parseJsonBody(rawBody);
	if (!parsed) return 'the body is not JSON';
	const body = parsed.json;
	if (
		!isPlainObject(body) ||
		typeof body.member_url !== 'string' ||
		typeof body.workflow_id !== 'string' ||
		!Array.isArray(body.events) ||
		!body.events.every((event) => typeof event === 'string') ||
		typeof body.account !== 'string' ||
		typeof body.instance_id !== 'string' ||
		typeof body.issued_at_ms !== 'number'
	) {
		return 'the body is not a join';
	}
	return body as unknown as JoinBody;
}

/**
 * Why a signed join may not be taken by the holder at `ownUrl` (of n8n `instanceId`), or
 * undefined: fresh, from this very n8n, for another trigger's URL of this n8n.
 */
export function joinProblem(
	join: JoinBody,
	ownUrl: string,
	instanceId: string,
	nowMs: number,
): string | undefined {
	if (nowMs - join.issued_at_ms > MAX_AGE_MS || join.issued_at_ms - nowMs > FUTURE_TOLERANCE_MS)
		return 'the join is not fresh (replayed, or its clock is off)';
	if (join.instance_id !== instanceId) return 'the join comes from another n8n';
	if (!isJoinableUrl(join.member_url, ownUrl))
		return "the member URL is not another Business Messaging Trigger's URL of this n8n";
	return undefined;
}

/**
 * The holder's webhook() for a join or a leave: stored in the workflow's static data, which n8n
 * saves before answering; no execution. A refusal is answered (401/400) by the caller.
 */
export async function receiveJoin(
	this: IWebhookFunctions,
	rawBody: Buffer | undefined,
	signature: string | string[] | undefined,
): Promise<{ joined: boolean } | { status: 400 | 401; reason: string }> {
	if (!rawBody) return { status: 400, reason: 'the raw request body is not available' };
	const verified = await verifyWithDerivedKey.call(this, JOIN_LABEL, rawBody, signature);
	if (verified !== true) return { status: 401, reason: verified };
	const join = parseJoin(rawBody);
	if (typeof join === 'string') return { status: 400, reason: join };
	const nowMs = Date.now();
	const ownUrl = this.getNodeWebhookUrl('default') ?? '';
	const problem = joinProblem(join, ownUrl, this.getInstanceId(), nowMs);
	if (problem) return { status: 401, reason: problem };
	const header = String(Array.isArray(signature) ? signature[0] : signature).toLowerCase();
	if (!joinsSeen.firstSighting(header, join.issued_at_ms + MAX_AGE_MS, nowMs))
		return { status: 401, reason: 'this join was already received (replay)' };
	const staticData = this.getWorkflowStaticData('global') as IDataObject;
	const holder = this.getWorkflow().id ?? '';
	if (join.leave) {
		forgetMember(holder, join.member_url);
		currentMembers(staticData, holder, nowMs);
		return { joined: false };
	}
	rememberMembers(
		staticData,
		holder,
		[
			{
				url: join.member_url,
				events: join.events,
				account: join.account,
				workflowId: join.workflow_id,
			},
		],
		nowMs,
	);
	return { joined: true };
}
