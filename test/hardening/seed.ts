// The seed every property test of test/hardening uses: HARDENING_SEED when set (to replay a
// failure), else a fresh one. It is printed once per file so a failing CI run can be replayed
// with `HARDENING_SEED=<seed> npx jest test/hardening`; fast-check also prints the seed and the
// shrunk counterexample's path on failure.
import fc from 'fast-check';

export function configureSeed(file: string): number {
	const fromEnv = process.env.HARDENING_SEED;
	const seed =
		fromEnv !== undefined && fromEnv !== ''
			? Number(fromEnv)
			: (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
	if (!Number.isInteger(seed))
		throw new Error(`HARDENING_SEED must be an integer, got "${fromEnv}"`);
	fc.configureGlobal({ seed });
	process.stdout.write(
		`[hardening] ${file}: fast-check seed ${seed} (replay: HARDENING_SEED=${seed})\n`,
	);
	return seed;
}
