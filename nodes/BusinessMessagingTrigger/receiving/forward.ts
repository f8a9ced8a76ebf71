/**
 * Passing an event on to the members (docs/several-workflows.md §5), both ends. The holder
 * forwards the raw bytes the service signed, signed again with a key derived from the API key
 * (another one than the join's: a captured join is no forward). The forwards start before the
 * holder's own route and are not awaited: a slow member never holds back the service's answer.
 */
import type { IDataObject, IWebhookFunctions } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { FORWARD_LABEL, derivedKeyOf, verifyWithDerivedKey } from '../../shared/credentialKeys';
import { computeSignature } from '../../shared/signature';
import { forgetMember, currentMembers, isN8nNotRegistered } from '../registration/join';
import { membersFor } from '../registration/members';

export const FORWARD_HEADER = 'x-business-messaging-forward';
export const FORWARDED_AT_HEADER = 'x-business-messaging-forwarded-at';
/** The service's signature header of the delivery: the member's deduplication id. */
export const DELIVERY_HEADER = 'x-business-messaging-delivery';
/**
 * The workflow whose waiting execution this answer resumed (docs/several-workflows.md §8), with
 * `;also-start` when that wait asked to start the trigger's workflow too. Covered by the signature.
 */
export const RESUMED_HEADER = 'x-business-messaging-resumed';
const ALSO_START = ';also-start';
const RESUMED_VALUE = /^(?:[\w-]{1,128}(?:;also-start)?)?$/;

/** A wait the holder resumed for a member: the header's value once the resume is settled ('' when it was not). */
export interface ResumedFor {
	workflowId: string;
	header: Promise<string>;
}

export function resumedHeader(workflowId: string, alsoStart: boolean): string {
	return `${workflowId}${alsoStart ? ALSO_START : ''}`;
}

/** The member's reading of the header: whose wait was resumed, and whether that workflow starts too. */
export function parseResumed(
	value: string,
): { workflowId: string; alsoStart: boolean } | undefined {
	if (value === '') return undefined;
	const alsoStart = value.endsWith(ALSO_START);
	return { workflowId: alsoStart ? value.slice(0, -ALSO_START.length) : value, alsoStart };
}

const FORWARD_TIMEOUT_MS = 5000;
/** Within the default Max Event Age (300 s): a member still takes the event after the last one. */
export const RETRY_DELAYS_MS = [2000, 10_000, 60_000, 200_000];
const FRESHNESS_MS = 5 * 60_000;
const LOG_PREFIX = 'Business Messaging Trigger';

/** What the forward signature covers: when, for whose resumed wait (none: empty), and the body. */
export function forwardMessage(
	forwardedAtMs: number | string,
	resumedWorkflowId: string,
	rawBody: Buffer,
): Buffer {
	return Buffer.concat([Buffer.from(`${forwardedAtMs}.${resumedWorkflowId}.`), rawBody]);
}

export function signForward(
	forwardKey: string,
	forwardedAtMs: number,
	resumedWorkflowId: string,
	rawBody: Buffer,
): string {
	return `sha256=${computeSignature(forwardMessage(forwardedAtMs, resumedWorkflowId, rawBody), forwardKey)}`;
}

function single(value: string | string[] | undefined): string | undefined {
	return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}

/** What a forward's answer means to the holder. */
export type ForwardAnswer = 'delivered' | 'gone' | 'refused' | 'retry';

export function classifyForwardAnswer(statusCode: number, body: unknown): ForwardAnswer {
	if (statusCode >= 200 && statusCode < 300) return 'delivered';
	if (isN8nNotRegistered(statusCode, body)) return 'gone';
	if (statusCode === 401) return 'refused';
	return 'retry';
}

/** Members whose 401 (keys differ after a rotation) was already logged, so it is logged once. */
const refusalsLogged = new Set<string>();

async function deliver(
	this: IWebhookFunctions,
	memberUrl: string,
	rawBody: Buffer,
	forwardKey: string,
	deliveryId: string,
	holderWorkflowId: string,
	resumed: string,
): Promise<void> {
	let last = '';
	for (let attempt = 0; attempt <= RETRY_DELAYS_MS.length; attempt++) {
		if (attempt > 0) await sleep(RETRY_DELAYS_MS[attempt - 1]);
		const forwardedAtMs = Date.now();
		let answer: ForwardAnswer;
		try {
			const response = (await this.helpers.httpRequest({
				method: 'POST',
				url: memberUrl,
				body: rawBody,
				headers: {
					'content-type': 'application/json',
					[FORWARD_HEADER]: signForward(forwardKey, forwardedAtMs, resumed, rawBody),
					[FORWARDED_AT_HEADER]: String(forwardedAtMs),
					[DELIVERY_HEADER]: deliveryId,
					...(resumed !== '' && { [RESUMED_HEADER]: resumed }),
				},
				timeout: FORWARD_TIMEOUT_MS,
				disableFollowRedirect: true,
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				json: false,
			})) as { statusCode: number; body: unknown };
			answer = classifyForwardAnswer(response.statusCode, response.body);
			last = String(response.statusCode);
		} catch (error) {
			answer = 'retry';
			last = (error as Error).message;
		}
		if (answer === 'delivered') {
			refusalsLogged.delete(memberUrl);
			return;
		}
		if (answer === 'gone') {
			forgetMember(holderWorkflowId, memberUrl);
			this.logger.info(
				`${LOG_PREFIX}: member ${memberUrl} is no longer active (n8n answered 404); it gets no more events`,
			);
			return;
		}
		if (answer === 'refused') {
			if (!refusalsLogged.has(memberUrl)) {
				if (refusalsLogged.size >= 1000) refusalsLogged.clear();
				refusalsLogged.add(memberUrl);
				this.logger.warn(
					`${LOG_PREFIX}: member ${memberUrl} refused a forwarded event (401): its API key differs from this trigger's`,
				);
			}
			return;
		}
	}
	this.logger.warn(
		`${LOG_PREFIX}: an event could not be passed on to ${memberUrl} after ${RETRY_DELAYS_MS.length + 1} attempts (${last}); abandoned`,
	);
}

/**
 * The holder's side: starts one forward per member that selected the event and returns at once
 * (not awaited: see the top of this file). Returns how many were started. A member whose wait
 * the holder is resuming gets its forward once the resume is settled, saying so.
 */
export async function forwardEvent(
	this: IWebhookFunctions,
	rawBody: Buffer,
	event: string,
	serviceSignature: string | string[] | undefined,
	resumedFor?: ResumedFor,
): Promise<number> {
	const holder = this.getWorkflow().id ?? '';
	const ownUrl = this.getNodeWebhookUrl('default');
	const members = currentMembers(this.getWorkflowStaticData('global') as IDataObject, holder);
	const targets = membersFor(members, event).filter((url) => url !== ownUrl);
	if (targets.length === 0) return 0;
	const forwardKey = await derivedKeyOf.call(this, FORWARD_LABEL);
	const deliveryId = single(serviceSignature);
	if (!forwardKey || !deliveryId) return 0;
	for (const url of targets) {
		const resumed =
			resumedFor && members[url].workflowId === resumedFor.workflowId
				? resumedFor.header
				: Promise.resolve('');
		void resumed
			.then(
				async (header) =>
					await deliver.call(this, url, rawBody, forwardKey, deliveryId, holder, header),
			)
			.catch(() => undefined);
	}
	return targets.length;
}

/**
 * The member's side: the resumed header's value ('' when none) when the request is a forward
 * signed with this trigger's API key and forwarded within ±5 minutes, or why not. The signature
 * is checked first, constant time.
 */
export async function verifyForward(
	this: IWebhookFunctions,
	rawBody: Buffer,
	headers: Record<string, string | string[] | undefined>,
	nowMs: number,
): Promise<{ resumed: string } | string> {
	const at = single(headers[FORWARDED_AT_HEADER]);
	if (at === undefined || !/^\d{1,15}$/.test(at)) return 'the forward carries no valid time';
	if (!single(headers[DELIVERY_HEADER])) return 'the forward carries no delivery id';
	const resumed = single(headers[RESUMED_HEADER]) ?? '';
	if (!RESUMED_VALUE.test(resumed)) return 'the forward carries no valid resumed workflow';
	const verified = await verifyWithDerivedKey.call(
		this,
		FORWARD_LABEL,
		forwardMessage(at, resumed, rawBody),
		headers[FORWARD_HEADER],
	);
	if (verified !== true) return verified;
	if (Math.abs(nowMs - Number(at)) > FRESHNESS_MS)
		return 'the forward is not fresh (replayed, or a clock is off)';
	return { resumed };
}
