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
					[FORWARD_HEADER]: signForward(forwardKey, forwardedAtMs, '', rawBody),
					[FORWARDED_AT_HEADER]: String(forwardedAtMs),
					[DELIVERY_HEADER]: deliveryId,
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
 * (not awaited: see the top of this file). Returns how many were started.
 */
export async function forwardEvent(
	this: IWebhookFunctions,
	rawBody: Buffer,
	event: string,
	serviceSignature: string | string[] | undefined,
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
		void deliver.call(this, url, rawBody, forwardKey, deliveryId, holder).catch(() => undefined);
	}
	return targets.length;
}

/**
 * The member's side: true when the request is a forward signed with this trigger's API key and
 * forwarded within ±5 minutes, or why not. The signature is checked first, constant time.
 */
export async function verifyForward(
	this: IWebhookFunctions,
	rawBody: Buffer,
	headers: Record<string, string | string[] | undefined>,
	nowMs: number,
): Promise<true | string> {
	const at = single(headers[FORWARDED_AT_HEADER]);
	if (at === undefined || !/^\d{1,15}$/.test(at)) return 'the forward carries no valid time';
	if (!single(headers[DELIVERY_HEADER])) return 'the forward carries no delivery id';
	const verified = await verifyWithDerivedKey.call(
		this,
		FORWARD_LABEL,
		forwardMessage(at, '', rawBody),
		headers[FORWARD_HEADER],
	);
	if (verified !== true) return verified;
	if (Math.abs(nowMs - Number(at)) > FRESHNESS_MS)
		return 'the forward is not fresh (replayed, or a clock is off)';
	return true;
}
