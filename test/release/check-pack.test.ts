import { packProblems } from '../../scripts/check-pack';

const declared = ['dist/nodes/A/A.node.js', 'dist/credentials/C.credentials.js'];
const good = [
	'LICENSE',
	'README.md',
	'package.json',
	'dist/icons/a.svg',
	...declared,
	'dist/nodes/A/A.node.js.map',
];
const goodMaps = new Map([['dist/nodes/A/A.node.js.map', ['../../../nodes/A/A.node.ts']]]);

describe('check:pack file rules', () => {
	it('accepts dist/ nodes, credentials and icons with package.json, README.md, LICENSE', () => {
		expect(packProblems(good, declared, goodMaps)).toEqual([]);
	});

	it.each([
		['a test file compiled into dist', 'dist/nodes/A/__tests__/a.test.js'],
		['the sandbox', 'dist/test/sandbox/server.js'],
		['a benchmark', 'dist/bench/run.js'],
		['a script', 'dist/scripts/dev.js'],
		['a file outside dist', 'examples/auto-reply.json'],
		['a stray top-level file', 'CHANGELOG.md'],
	])('refuses %s (%s)', (_label, file) => {
		const problems = packProblems([...good, file], declared, goodMaps);
		expect(problems).toHaveLength(1);
		expect(problems[0]).toContain(file);
	});

	it('refuses a map of a test file and a missing declared node', () => {
		const maps = new Map([['dist/nodes/A/A.node.js.map', ['../../../test/nodes/A.test.ts']]]);
		const problems = packProblems(
			good.filter((f) => f !== 'dist/credentials/C.credentials.js'),
			declared,
			maps,
		);
		expect(problems.join('\n')).toMatch(/test\/nodes\/A\.test\.ts/);
		expect(problems.join('\n')).toMatch(/C\.credentials\.js \(declared/);
	});
});
