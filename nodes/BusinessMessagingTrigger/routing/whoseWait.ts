/**
 * Whose Reply and Wait a trigger resumes when several triggers share the account
 * (docs/several-workflows.md §8). The trigger of the waiting execution's workflow plays the part
 * of the answer: its workflow is resumed instead of started. Live, the holder resumes a member's
 * wait for it (the entries are registered with the holder) and tells that member so; a wait
 * whose workflow has no member trigger is the holder's part, as with one trigger.
 */
import type { IDataObject, ITriggerFunctions, IWebhookFunctions } from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';
import {
	resumeEntry,
	waitingEntryFor,
	type TriggerIdentity,
	type WaitFilter,
	type WaitingEntry,
} from '../../shared/replyAndWait';
import type { EventEnvelope } from '../receiving/envelope';
import { resumedHeader, type ResumedFor } from '../receiving/forward';
import { membersFor, readMembers, type MemberTable } from '../registration/members';
import { eventItem } from './route';

export interface WaitRole {
	/** This trigger's workflow. */
	workflowId: string;
	/** The holder: the workflows of its members that take inbound messages. A member: undefined. */
	memberWorkflows?: ReadonlySet<string>;
}

/** The workflows whose member trigger receives inbound messages (an answer reaches only those). */
export function inboundMemberWorkflows(table: MemberTable): Set<string> {
	return new Set(membersFor(table, 'message.inbound').map((url) => table[url].workflowId));
}

/** Pure: the waits this trigger plays the part of. */
export function ownWaits(role: WaitRole): WaitFilter {
	return (entry: WaitingEntry) => {
		// Registered before waits named their workflow: the holder's, as with one trigger, or a member's own.
		if (entry.workflowId === undefined)
			return role.memberWorkflows !== undefined || entry.home === role.workflowId;
		if (entry.workflowId === role.workflowId) return true;
		return role.memberWorkflows !== undefined && !role.memberWorkflows.has(entry.workflowId);
	};
}

/** Pure: the waits the holder resumes for one of its members (and then tells it). */
export function membersWaits(role: WaitRole): WaitFilter {
	return (entry: WaitingEntry) =>
		entry.workflowId !== undefined &&
		entry.workflowId !== role.workflowId &&
		role.memberWorkflows?.has(entry.workflowId) === true;
}

/** The holder's role, from the members in this copy of its static data. */
export function holderRole(
	this: IWebhookFunctions | ITriggerFunctions,
	members: MemberTable,
): WaitRole {
	return {
		workflowId: this.getWorkflow().id ?? '',
		memberWorkflows: inboundMemberWorkflows(members),
	};
}

/** The catch-up's role: a member when its node static data names a holder, else the holder (or the only trigger). */
export function roleFromStaticData(this: ITriggerFunctions): WaitRole {
	const node = this.getWorkflowStaticData('node') as IDataObject;
	if (isPlainObject(node.membership)) return { workflowId: this.getWorkflow().id ?? '' };
	return holderRole.call(
		this,
		readMembers(this.getWorkflowStaticData('global') as IDataObject, Date.now()),
	);
}

/**
 * The holder, live: when the event answers a wait of a member's workflow, resumes it once (the
 * entry is forgotten before this returns) and returns what that member's forward will say. Not
 * awaited: the service's answer never waits for a member's resume, as for its forward. The
 * holder's own filters and hand over do not stop it: they are the holder's, not the member's.
 */
export function resumeForMember(
	this: IWebhookFunctions,
	envelope: EventEnvelope,
	identity: TriggerIdentity | undefined,
	role: WaitRole,
): ResumedFor | undefined {
	if (!identity || envelope.event !== 'message.inbound') return undefined;
	const item = eventItem(envelope);
	const found = waitingEntryFor.call(this, item, identity, membersWaits(role));
	const workflowId = found?.entry.workflowId;
	if (!found || workflowId === undefined) return undefined;
	const header = resumeEntry
		.call(this, item, identity, found)
		.then((outcome) => (outcome.resumed ? resumedHeader(workflowId, outcome.alsoStart) : ''))
		// Not resumed: the member starts its workflow as usual (the fail-safe).
		.catch(() => '');
	return { workflowId, header };
}
