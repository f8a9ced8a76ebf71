import { newKeyValue } from './ids';
import {
	SCOPES,
	type Scope,
	type SeededKeyIds,
	type SeededKeyLabel,
	type SeededKeys,
	type SeededNumber,
} from './types';

export const ACCOUNT_ID = 'acct_sandbox';
export const INITIAL_CREDIT_BALANCE = 1000;

export const SEEDED_NUMBERS: readonly SeededNumber[] = [
	{ phone_number_id: '100000000000001', display_number: '+15550000001' },
	{ phone_number_id: '100000000000002', display_number: '+15550000002' },
	{ phone_number_id: '100000000000003', display_number: '+15550000003' },
];

export interface SeedKey {
	label: SeededKeyLabel;
	id: string;
	value: string;
	scopes: Scope[];
	allowed_numbers: string[] | null;
	revoked: boolean;
}

export interface Seed {
	numbers: readonly SeededNumber[];
	keys: readonly SeedKey[];
}

const allBut = (missing: Scope): Scope[] => SCOPES.filter((scope) => scope !== missing);

/** Key values are drawn once per server start and survive reset(), so a test can keep its copies. */
export function createSeed(): Seed {
	const [first, second] = SEEDED_NUMBERS;
	const key = (
		label: SeededKeyLabel,
		id: string,
		scopes: Scope[],
		allowed: string[] | null,
		revoked = false,
	): SeedKey => ({ label, id, value: newKeyValue(), scopes, allowed_numbers: allowed, revoked });
	return {
		numbers: SEEDED_NUMBERS,
		keys: [
			key('all', 'key_all', [...SCOPES], null),
			key('oneNumber', 'key_one_number', [...SCOPES], [first.phone_number_id]),
			key(
				'twoNumbers',
				'key_two_numbers',
				[...SCOPES],
				[first.phone_number_id, second.phone_number_id],
			),
			key('noSend', 'key_no_send', allBut('messages:send'), null),
			key('noBalance', 'key_no_balance', allBut('balance:read'), null),
			key('revoked', 'key_revoked', [...SCOPES], null, true),
		],
	};
}

export function seededKeyValues(seed: Seed): SeededKeys {
	return Object.fromEntries(seed.keys.map((k) => [k.label, k.value])) as unknown as SeededKeys;
}

export function seededKeyIds(seed: Seed): SeededKeyIds {
	return Object.fromEntries(seed.keys.map((k) => [k.label, k.id])) as unknown as SeededKeyIds;
}
