/**
 * A stopped n8n searched for the API keys and signing secrets: its SQLite database (every decoded
 * value, with n8n's own sqlite3 through test/hardening/real-n8n/db-scan.cjs, and the raw files),
 * the rest of its user folder (the installed package excluded) and its log. Used at the end of
 * each end-to-end line, after every check ran there.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

import type { Installation } from './n8n';

function filesUnder(dir: string, skip: string[]): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name);
		if (skip.some((s) => path.startsWith(s))) return [];
		if (entry.isDirectory()) return filesUnder(path, skip);
		return entry.isFile() ? [path] : [];
	});
}

/**
 * Where any of `needles` (label → value) was found; empty when nowhere. `registered`: the labels
 * of signing secrets the service issued, which may stay in freed SQLite pages after the workflow
 * was unpublished (no live row holds them): for those only decoded values count.
 */
export function storedSecretPlaces(
	installation: Installation,
	userFolder: string,
	logFile: string,
	needles: Record<string, string>,
	registered: Set<string>,
): { places: string[]; searched: string } {
	const db = join(userFolder, '.n8n', 'database.sqlite');
	const work = mkdtempSync(join(tmpdir(), 'bm-stored-secrets-'));
	const requestFile = join(work, 'request.json');
	writeFileSync(requestFile, JSON.stringify({ db, needles }));
	const scanner = join(__dirname, '..', 'hardening', 'real-n8n', 'db-scan.cjs');
	const scan = spawnSync(installation.nodeBin, [scanner, installation.dir, requestFile], {
		encoding: 'utf8',
		maxBuffer: 256 * 1024 * 1024,
	});
	rmSync(work, { recursive: true, force: true });
	if (scan.status !== 0) throw new Error(`db-scan failed: ${scan.stderr}`);
	const result = JSON.parse(scan.stdout) as {
		tables: Record<string, number>;
		decodedHits: Array<{ table: string; column: string; label: string; rows: number }>;
		rawHits: Record<string, Record<string, number>>;
	};
	const places = result.decodedHits.map((h) => `${h.label} in ${h.table}.${h.column} (${h.rows})`);
	for (const [label, files] of Object.entries(result.rawHits)) {
		const count = Object.values(files).reduce((a, b) => a + b, 0);
		if (count > 0 && !registered.has(label)) places.push(`${label} in the raw database (${count})`);
	}
	const skip = [join(userFolder, '.n8n', 'nodes'), db];
	for (const file of filesUnder(join(userFolder, '.n8n'), skip)) {
		if (statSync(file).size > 64 * 1024 * 1024) continue;
		const bytes = readFileSync(file);
		for (const [label, value] of Object.entries(needles))
			if (bytes.includes(value)) places.push(`${label} in ${relative(userFolder, file)}`);
	}
	const logText = readFileSync(logFile, 'utf8');
	for (const [label, value] of Object.entries(needles))
		if (logText.includes(value)) places.push(`${label} in n8n's log`);
	const rows = Object.values(result.tables).reduce((a, b) => a + b, 0);
	return {
		places,
		searched: `${Object.keys(needles).length} values in ${Object.keys(result.tables).length} tables (${rows} rows), the user folder and ${logText.length} bytes of log`,
	};
}
