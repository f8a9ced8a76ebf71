/**
 * The table of E2E_SHARE (test/e2e/lib/ciShare.ts) against the end-to-end suite's source: every
 * entry names exactly one check that exists, on line 1 or 2, and the skip decision.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
	prefixPattern,
	runsElsewhere,
	shareEnabled,
	SHARED_CHECKS,
	sharedCheck,
} from './lib/ciShare';

/** Every `check(` / `ctx.check(` call's name in test/e2e/**.ts, `${…}` written `#`. */
function checkNamesInSource(): string[] {
	const names: string[] = [];
	const files = readdirSync(__dirname, { recursive: true, encoding: 'utf8' })
		.filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
		.map((file) => join(__dirname, file));
	for (const file of files) {
		const text = readFileSync(file, 'utf8');
		for (const match of text.matchAll(/\bcheck\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g)) {
			const raw = match[1] === '`' ? match[2].replace(/\$\{[^}]*\}/g, '#') : match[2];
			names.push(raw.replace(/\\(.)/g, '$1'));
		}
	}
	return names;
}

const names = checkNamesInSource();
const on = { E2E_SHARE: '1' };

describe('E2E_SHARE table (test/e2e/lib/ciShare.ts)', () => {
	it('finds the checks of the suite in the source', () => {
		// 57 calls when this was written: a plain name and a template one among them.
		expect(names.length).toBeGreaterThan(50);
		expect(names).toContain(
			'catch-up on reactivation: "Messages Since Last Active" (default) recovers what came while inactive; "Nothing From Before" does not',
		);
		expect(names.some((n) => n.startsWith('burst: # contacts write at once'))).toBe(true);
	});

	it.each(SHARED_CHECKS.map((entry) => [entry.prefix, entry]))(
		'"%s" matches exactly one check, on line 1 or 2',
		(_prefix, entry) => {
			const matching = names.filter((name) => name.startsWith(entry.prefix));
			expect(matching).toHaveLength(1);
			expect([1, 2]).toContain(entry.line);
			expect(entry.estimateS).toBeGreaterThan(0);
		},
	);

	it('no check is matched by two entries, and the table has no duplicate', () => {
		for (const name of names) {
			const entries = SHARED_CHECKS.filter((entry) => name.startsWith(entry.prefix));
			expect(entries.length).toBeLessThanOrEqual(1);
		}
		expect(new Set(SHARED_CHECKS.map((e) => e.prefix)).size).toBe(SHARED_CHECKS.length);
	});

	it('never shares a check that sets up what later checks use', () => {
		const setUp = names.filter((name) =>
			/activates$|^credential, Data Tables|gets an Error Workflow|^editor \(browser\): sign in/.test(
				name,
			),
		);
		expect(setUp.length).toBeGreaterThanOrEqual(4);
		for (const name of setUp) expect(sharedCheck(name)).toBeUndefined();
	});

	it('matches the names as run, `#` standing for the counts', () => {
		const lossy = (count: string) =>
			`catch-up: ${count} inbound at concurrency 16, 10% reset on the way and 10% held past the service timeout: each executed exactly once`;
		expect(sharedCheck(lossy('100'))?.line).toBe(1);
		expect(sharedCheck(lossy('1,000'))?.line).toBe(1);
		expect(
			sharedCheck(
				'combine: 50 contacts each send 3 messages at once: 50 replies, 150 messages in them, none lost, none twice',
			)?.line,
		).toBe(1);
		expect(sharedCheck('catch-up: n8n down while 50 inbound + 10 echo messages arrive')).toBe(
			undefined,
		);
		expect(prefixPattern('burst: # contacts').test('burst: many contacts')).toBe(false);
	});

	it('E2E_SHARE=1: a check runs only on its line; unset (or not 1): on both', () => {
		const lineOne = SHARED_CHECKS.find((e) => e.line === 1)!;
		const lineTwo = SHARED_CHECKS.find((e) => e.line === 2)!;
		const name = (prefix: string) => `${prefix.replace(/#/g, '50')}: and the rest of its name`;
		expect(shareEnabled(on)).toBe(true);
		expect(runsElsewhere(name(lineOne.prefix), 1, on)).toBeUndefined();
		expect(runsElsewhere(name(lineOne.prefix), 2, on)).toBe(1);
		expect(runsElsewhere(name(lineTwo.prefix), 1, on)).toBe(2);
		expect(runsElsewhere(name(lineTwo.prefix), 2, on)).toBeUndefined();
		// A check the table does not list runs on both lines.
		expect(
			runsElsewhere('auto-reply gets an Error Workflow (Error Trigger)', 1, on),
		).toBeUndefined();
		expect(
			runsElsewhere('auto-reply gets an Error Workflow (Error Trigger)', 2, on),
		).toBeUndefined();
		for (const env of [{}, { E2E_SHARE: '0' }, { E2E_SHARE: '' }]) {
			expect(shareEnabled(env)).toBe(false);
			for (const l of [1, 2] as const) {
				expect(runsElsewhere(name(lineOne.prefix), l, env)).toBeUndefined();
				expect(runsElsewhere(name(lineTwo.prefix), l, env)).toBeUndefined();
			}
		}
	});
});
