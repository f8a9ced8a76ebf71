/**
 * The holder's table of members (docs/several-workflows.md §4): the other active triggers of
 * this n8n with the same API key, to which it forwards events. Kept in the holder's workflow's
 * global static data, which every webhook processor loads with each request, and mirrored in
 * this process's memory so that a save from an older copy cannot drop a member this process
 * knows. Pure: no n8n context.
 */
import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';

export const MEMBERS_KEY = 'businessMessagingMembers';
export const MAX_MEMBERS = 100;
/** A member that has not joined again for this long is gone (no time-based expiry short of it: see §4). */
export const MEMBER_PRUNE_MS = 7 * 24 * 3600_000;

export interface Member {
	events: string[];
	account: string;
	workflowId: string;
	joinedAtMs: number;
	seenAtMs: number;
}

export type MemberTable = Record<string, Member>;

function isMember(value: unknown): value is Member {
	return (
		isPlainObject(value) &&
		Array.isArray(value.events) &&
		value.events.every((event) => typeof event === 'string') &&
		typeof value.account === 'string' &&
		typeof value.workflowId === 'string' &&
		typeof value.joinedAtMs === 'number' &&
		typeof value.seenAtMs === 'number'
	);
}

/** The well-formed members in a copy of static data, pruned of those not seen for MEMBER_PRUNE_MS. */
export function readMembers(globalStaticData: IDataObject, nowMs: number): MemberTable {
	const stored = globalStaticData[MEMBERS_KEY];
	const table: MemberTable = {};
	if (!isPlainObject(stored)) return table;
	for (const [url, member] of Object.entries(stored)) {
		if (isMember(member) && nowMs - member.seenAtMs <= MEMBER_PRUNE_MS) table[url] = member;
	}
	return table;
}

/** A join: the entry replaced (its first join kept), the newest last, at most MAX_MEMBERS (the oldest seen dropped). */
export function withMember(
	table: MemberTable,
	url: string,
	joined: Pick<Member, 'events' | 'account' | 'workflowId'>,
	nowMs: number,
): MemberTable {
	const rest = { ...table };
	const before = rest[url];
	delete rest[url];
	const entries = Object.entries(rest)
		.sort(([, a], [, b]) => a.seenAtMs - b.seenAtMs)
		.slice(-(MAX_MEMBERS - 1));
	return {
		...Object.fromEntries(entries),
		[url]: {
			events: [...joined.events],
			account: joined.account,
			workflowId: joined.workflowId,
			joinedAtMs: before?.joinedAtMs ?? nowMs,
			seenAtMs: nowMs,
		},
	};
}

export function withoutMember(table: MemberTable, url: string): MemberTable {
	const rest = { ...table };
	delete rest[url];
	return rest;
}

/** The members an event goes to: those that selected it. */
export function membersFor(table: MemberTable, event: string): string[] {
	return Object.entries(table)
		.filter(([, member]) => member.events.includes(event))
		.map(([url]) => url);
}

/**
 * Merges what this process knows into a copy of the static data: members it saw join that
 * the copy lacks, minus those it saw leave (or answer n8n's 404). Assigned only when something
 * changed, so n8n saves nothing for a copy that was already current.
 */
export function keepMembersCurrent(
	globalStaticData: IDataObject,
	known: MemberTable,
	gone: ReadonlySet<string>,
	nowMs: number,
): MemberTable {
	const stored = readMembers(globalStaticData, nowMs);
	let merged: MemberTable = { ...stored };
	for (const [url, member] of Object.entries(known)) {
		if (!merged[url] || merged[url].seenAtMs < member.seenAtMs) merged[url] = member;
	}
	for (const url of gone) merged = withoutMember(merged, url);
	const bounded = Object.fromEntries(
		Object.entries(merged)
			.sort(([, a], [, b]) => a.seenAtMs - b.seenAtMs)
			.slice(-MAX_MEMBERS),
	);
	if (JSON.stringify(bounded) !== JSON.stringify(globalStaticData[MEMBERS_KEY] ?? {})) {
		globalStaticData[MEMBERS_KEY] = bounded as unknown as IDataObject;
	}
	return bounded;
}
