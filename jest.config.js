/** @type {import('jest').Config} */
module.exports = {
	preset: 'ts-jest',
	testEnvironment: 'node',
	roots: ['<rootDir>/test'],
	testMatch: ['**/*.test.ts'],
	transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }] },
	testTimeout: 30000,
	// Most tests wait on real HTTP servers and timers, not the CPU: 4 workers on 2 cores took the
	// whole suite 42 s on a quiet machine (2026-11-26; one worker, the default on 2 cores, took
	// 88 s for a third of it).
	maxWorkers: 4,
};
