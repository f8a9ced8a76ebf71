// Reads a stopped n8n's SQLite database with n8n's own sqlite3 module. Run with the Node binary
// of that n8n install (the module is built for it), not with the repository's Node:
//
//   <node24> db-scan.cjs <n8n install dir> <request.json>
//
// request.json: { db: "<.n8n/database.sqlite>", needles: { label: value }, loadWorkflowId?: "id" }
// Prints one JSON object: every table/column whose decoded values contain a needle (row counts),
// raw-byte hit counts per needle in the database files (main, -wal, -journal), executions per
// workflow and status, and for the load workflow the platform message ids its executions carry.
// Needle values are never printed, only their labels.
'use strict';
const { readFileSync, existsSync } = require('node:fs');
const { createRequire } = require('node:module');
const { join } = require('node:path');

const [installDir, requestFile] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestFile, 'utf8'));
const requireFromN8n = createRequire(join(installDir, 'node_modules', 'n8n', 'package.json'));
const sqlite3 = requireFromN8n('sqlite3');

const needles = Object.entries(request.needles).filter(
	([, value]) => typeof value === 'string' && value.length >= 8,
);

function all(db, sql, params = []) {
	return new Promise((resolve, reject) =>
		db.all(sql, params, (error, rows) => (error ? reject(error) : resolve(rows))),
	);
}

function text(value) {
	if (value === null || value === undefined) return '';
	if (Buffer.isBuffer(value)) return value.toString('utf8');
	return String(value);
}

async function main() {
	const out = { tables: {}, decodedHits: [], rawHits: {}, executions: {}, load: null };

	// Raw bytes of every database file, as left on disk.
	for (const suffix of ['', '-wal', '-journal', '-shm']) {
		const file = request.db + suffix;
		if (!existsSync(file)) continue;
		const bytes = readFileSync(file);
		for (const [label, value] of needles) {
			let count = 0;
			let at = bytes.indexOf(value);
			while (at !== -1) {
				count++;
				at = bytes.indexOf(value, at + 1);
			}
			out.rawHits[label] = out.rawHits[label] || {};
			out.rawHits[label][`database.sqlite${suffix}`] = count;
		}
	}

	const db = await new Promise((resolve, reject) => {
		const handle = new sqlite3.Database(request.db, sqlite3.OPEN_READONLY, (error) =>
			error ? reject(error) : resolve(handle),
		);
	});
	try {
		const tables = (await all(db, "SELECT name FROM sqlite_master WHERE type = 'table'")).map(
			(r) => r.name,
		);
		// Every value of every table, decoded by SQLite (so values split across pages are whole).
		for (const table of tables) {
			const count = (await all(db, `SELECT COUNT(*) AS n FROM "${table}"`))[0].n;
			out.tables[table] = count;
			const pageSize = 500;
			for (let offset = 0; offset < count; offset += pageSize) {
				const rows = await all(db, `SELECT * FROM "${table}" LIMIT ? OFFSET ?`, [pageSize, offset]);
				for (const row of rows) {
					for (const [column, value] of Object.entries(row)) {
						const content = text(value);
						if (content.length < 8) continue;
						for (const [label, needle] of needles) {
							if (!content.includes(needle)) continue;
							let hit = out.decodedHits.find(
								(h) => h.table === table && h.column === column && h.label === label,
							);
							if (!hit) out.decodedHits.push((hit = { table, column, label, rows: 0 }));
							hit.rows++;
						}
					}
				}
			}
		}

		if (tables.includes('execution_entity')) {
			for (const row of await all(
				db,
				'SELECT workflowId, status, COUNT(*) AS n FROM execution_entity GROUP BY workflowId, status',
			)) {
				out.executions[row.workflowId] = out.executions[row.workflowId] || {};
				out.executions[row.workflowId][row.status] = row.n;
			}
		}

		if (request.loadWorkflowId && tables.includes('execution_data')) {
			const rows = await all(
				db,
				'SELECT e.id AS id, e.status AS status, d.data AS data FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id WHERE e.workflowId = ?',
				[request.loadWorkflowId],
			);
			const load = {
				executions: rows.length,
				statuses: {},
				withoutData: 0,
				idsPerExecution: {},
				waIds: [],
			};
			for (const row of rows) {
				load.statuses[row.status] = (load.statuses[row.status] || 0) + 1;
				const data = text(row.data);
				if (!data) {
					load.withoutData++;
					continue;
				}
				const ids = [...new Set(data.match(/wamid\.[A-Za-z0-9_-]{8,}/g) || [])];
				load.idsPerExecution[ids.length] = (load.idsPerExecution[ids.length] || 0) + 1;
				load.waIds.push(...ids);
			}
			out.load = load;
		}
	} finally {
		await new Promise((resolve) => db.close(() => resolve()));
	}
	process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((error) => {
	process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
	process.exit(1);
});
