// The pure rules of several triggers on one account (docs/several-workflows.md §4, §5, §7).
import { receivedByThisN8n } from '../../../nodes/BusinessMessagingTrigger/registration/decision';
import {
	classifyJoinAnswer,
	joinProblem,
	type JoinBody,
} from '../../../nodes/BusinessMessagingTrigger/registration/join';
import {
	MAX_MEMBERS,
	MEMBERS_KEY,
	MEMBER_PRUNE_MS,
	keepMembersCurrent,
	membersFor,
	readMembers,
	withMember,
	withoutMember,
	type MemberTable,
} from '../../../nodes/BusinessMessagingTrigger/registration/members';
import {
	RETRY_DELAYS_MS,
	classifyForwardAnswer,
	forwardMessage,
	signForward,
} from '../../../nodes/BusinessMessagingTrigger/receiving/forward';
import { verifySignature } from '../../../nodes/shared/signature';

const ORIGIN = 'https://n8n.example.com';
const url = (n: number) =>
	`${ORIGIN}/webhook/${String(n).padStart(8, '0')}-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook`;
const OWN = url(0);
const NOT_REGISTERED = {
	code: 404,
	message: 'The requested webhook "POST x/webhook" is not registered.',
};
const joined = (events = ['message.inbound']) => ({ events, account: 'acc', workflowId: 'wf' });

describe('members table', () => {
	it(`holds at most ${MAX_MEMBERS}: the one seen longest ago goes first`, () => {
		let table: MemberTable = {};
		for (let i = 1; i <= MAX_MEMBERS + 5; i++) table = withMember(table, url(i), joined(), i);
		expect(Object.keys(table)).toHaveLength(MAX_MEMBERS);
		expect(table[url(1)]).toBeUndefined();
		expect(table[url(6)]).toBeDefined();
		expect(table[url(MAX_MEMBERS + 5)]).toBeDefined();
	});

	it('a join again replaces the entry, keeps its first join time, refreshes seen', () => {
		let table = withMember({}, url(1), joined(), 10);
		table = withMember(table, url(1), joined(['message.status']), 20);
		expect(table[url(1)]).toEqual({
			events: ['message.status'],
			account: 'acc',
			workflowId: 'wf',
			joinedAtMs: 10,
			seenAtMs: 20,
		});
	});

	it('members not seen for 7 days are pruned; malformed entries ignored', () => {
		const now = 100 * 86_400_000;
		const data = {
			[MEMBERS_KEY]: {
				[url(1)]: { ...joined(), joinedAtMs: 0, seenAtMs: now - MEMBER_PRUNE_MS - 1 },
				[url(2)]: { ...joined(), joinedAtMs: 0, seenAtMs: now - MEMBER_PRUNE_MS + 1000 },
				[url(3)]: { events: 'message.inbound' },
			},
		};
		expect(Object.keys(readMembers(data as never, now))).toEqual([url(2)]);
	});

	it('only the members that selected an event get it', () => {
		let table = withMember({}, url(1), joined(['message.inbound']), 1);
		table = withMember(table, url(2), joined(['message.status']), 2);
		expect(membersFor(table, 'message.status')).toEqual([url(2)]);
		expect(membersFor(withoutMember(table, url(2)), 'message.status')).toEqual([]);
	});

	it('a copy of static data gets what this process knows, minus the gone; untouched when current', () => {
		const known = withMember({}, url(1), joined(), 5);
		const data: Record<string, unknown> = { [MEMBERS_KEY]: withMember({}, url(2), joined(), 5) };
		keepMembersCurrent(data as never, known, new Set([url(2)]), 10);
		expect(Object.keys(data[MEMBERS_KEY] as object)).toEqual([url(1)]);
		const before = data[MEMBERS_KEY];
		keepMembersCurrent(data as never, known, new Set(), 10);
		expect(data[MEMBERS_KEY]).toBe(before);
	});
});

describe('join', () => {
	const body = (overrides: Partial<JoinBody> = {}): JoinBody => ({
		member_url: url(1),
		workflow_id: 'wf',
		events: ['message.inbound'],
		account: 'acc',
		instance_id: 'n8n-1',
		issued_at_ms: 1_000_000,
		...overrides,
	});
	it('taken only fresh, from this n8n, for another trigger URL of this n8n', () => {
		const now = 1_000_000;
		expect(joinProblem(body(), OWN, 'n8n-1', now)).toBeUndefined();
		expect(joinProblem(body({ issued_at_ms: now - 5 * 60_000 - 1 }), OWN, 'n8n-1', now)).toMatch(
			/fresh/,
		);
		expect(joinProblem(body({ issued_at_ms: now + 61_000 }), OWN, 'n8n-1', now)).toMatch(/fresh/);
		expect(joinProblem(body({ instance_id: 'n8n-2' }), OWN, 'n8n-1', now)).toMatch(/another n8n/);
		for (const member of [OWN, 'https://other.example.com/webhook/x/webhook', `${ORIGIN}/hook`]) {
			expect(joinProblem(body({ member_url: member }), OWN, 'n8n-1', now)).toMatch(/member URL/);
		}
	});
	it('answers: 200 joined, 401 refused, only n8n 404 is dead, the rest unreachable', () => {
		expect(classifyJoinAnswer(200, '{"joined":true}')).toBe('joined');
		expect(classifyJoinAnswer(401, '')).toBe('refused');
		expect(classifyJoinAnswer(404, NOT_REGISTERED)).toBe('dead');
		expect(classifyJoinAnswer(404, JSON.stringify(NOT_REGISTERED))).toBe('dead');
		expect(classifyJoinAnswer(404, 'nginx')).toBe('unreachable');
		for (const status of [500, 502, 503, 408])
			expect(classifyJoinAnswer(status, '')).toBe('unreachable');
	});
});

describe('forward', () => {
	it('signs the time, the resumed workflow and the raw bytes; any change breaks it', () => {
		const raw = Buffer.from('{"event":"message.inbound"}');
		const header = signForward('k'.repeat(64), 1234, '', raw);
		expect(verifySignature(forwardMessage('1234', '', raw), header, 'k'.repeat(64)).valid).toBe(
			true,
		);
		expect(verifySignature(forwardMessage('1235', '', raw), header, 'k'.repeat(64)).valid).toBe(
			false,
		);
		expect(verifySignature(forwardMessage('1234', 'wf', raw), header, 'k'.repeat(64)).valid).toBe(
			false,
		);
		expect(
			verifySignature(forwardMessage('1234', '', Buffer.from(`${raw} `)), header, 'k'.repeat(64))
				.valid,
		).toBe(false);
	});
	it('answers: 2xx delivered, n8n 404 gone, 401 refused, anything else retried after 2, 10, 60, 200 s', () => {
		expect(classifyForwardAnswer(200, '')).toBe('delivered');
		expect(classifyForwardAnswer(404, NOT_REGISTERED)).toBe('gone');
		expect(classifyForwardAnswer(401, '')).toBe('refused');
		expect(classifyForwardAnswer(503, '')).toBe('retry');
		expect(classifyForwardAnswer(404, 'other')).toBe('retry');
		expect(RETRY_DELAYS_MS).toEqual([2000, 10_000, 60_000, 200_000]);
	});
});

describe('catch-up: which deliveries count as received (§7)', () => {
	it("this node's URL and any other trigger URL of this n8n; not another n8n's or system's", () => {
		const counts = receivedByThisN8n(OWN);
		expect(counts(OWN)).toBe(true);
		expect(counts(url(7))).toBe(true);
		expect(
			counts('https://staging.example.com/webhook/00000007-1b2a-4c5d-9e8f-0a1b2c3d4e5f/webhook'),
		).toBe(false);
		expect(counts('https://crm.example.org/hooks/messaging')).toBe(false);
	});
});
