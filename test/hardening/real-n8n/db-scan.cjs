// Reads a stopped n8n's SQLite database with n8n's own sqlite3 module. Run with the Node binary
// of that n8n install (the module is built for it), not with the repository's Node:
//
//   <node24> db-scan.cjs <n8n install dir> <request.json>
//
// request.json: { db: "<.n8n/database.sqlite>", needles: { label: value }, loadWorkflowId?: "id",
//                 media?: { workflowId, triggerName, binaryField } }
// Prints one JSON object: every table/column whose decoded values contain a needle (row counts),
// raw-byte hit counts per needle in the database files (main, -wal, -journal), executions per
// workflow and status, for the load workflow the platform message ids its executions carry, and
// for the media load workflow each execution's trigger output: the event, its media_download and
// the stored file's SHA-256 (read from n8n's binary data folder, or decoded when stored inline).
// Needle values are never printed, only their labels.
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync, existsSync } = require('node:fs');
const { createRequire } = require('node:module');
const { dirname, join } = require('node:path');

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
	const out = { tables: {}, decodedHits: [], rawHits: {}, executions: {}, load: null, media: null };

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
		if (request.media && tables.includes('execution_data'))
			out.media = await mediaExecutions(db, request.media);
	} finally {
		await new Promise((resolve) => db.close(() => resolve()));
	}
	process.stdout.write(`${JSON.stringify(out)}\n`);
}

/** Where n8n keeps a file stored outside the database (filesystem mode), by the id it gave it. */
function binaryFile(id) {
	const relativePath = id.slice(id.indexOf(':') + 1);
	const folder = dirname(request.db);
	for (const root of ['storage', 'binaryData']) {
		const path = join(folder, root, relativePath);
		if (existsSync(path)) return path;
	}
	return undefined;
}

/** The stored file of an item's binary property: where it is, its size and SHA-256. */
function storedFile(binary) {
	if (!binary || typeof binary !== 'object') return null;
	let bytes;
	let where;
	if (typeof binary.id === 'string' && binary.id.includes(':')) {
		const path = binaryFile(binary.id);
		if (!path) return { where: 'missing file', id: binary.id };
		bytes = readFileSync(path);
		where = 'file';
	} else if (typeof binary.data === 'string' && binary.data.length > 0) {
		bytes = Buffer.from(binary.data, 'base64');
		where = 'inline';
	} else return { where: 'no data' };
	return { where, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Each execution of the media load workflow: mode, status, the trigger's items, whether the next node ran. */
async function mediaExecutions(db, media) {
	const { parse } = requireFromN8n('flatted');
	const rows = await all(
		db,
		'SELECT e.id AS id, e.status AS status, e.mode AS mode, d.data AS data FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id WHERE e.workflowId = ?',
		[media.workflowId],
	);
	const executions = [];
	for (const row of rows) {
		const raw = text(row.data);
		const execution = {
			id: String(row.id),
			status: row.status,
			mode: row.mode,
			ids: [...new Set(raw.match(/wamid\.[A-Za-z0-9_-]{8,}/g) || [])],
			items: null,
			nextNodeItems: 0,
			error: null,
		};
		executions.push(execution);
		if (!raw) continue;
		let data;
		try {
			data = parse(raw);
		} catch (error) {
			execution.error = `unparsable execution data: ${error.message}`;
			continue;
		}
		const runData = (data && data.resultData && data.resultData.runData) || {};
		const triggerRun = (runData[media.triggerName] || [])[0];
		if (data.resultData && data.resultData.error)
			execution.error = String(data.resultData.error.message || 'error');
		if (!triggerRun) continue;
		const items = ((triggerRun.data && triggerRun.data.main) || []).flatMap(
			(output) => output || [],
		);
		execution.items = items.map((item) => {
			const json = item.json || {};
			const event = json.data || {};
			return {
				waId: event.wa_message_id || null,
				recovered: json.recovered === true,
				mediaDownload: json.media_download || null,
				file: storedFile(item.binary && item.binary[media.binaryField]),
			};
		});
		const next = (runData.Done || [])[0];
		execution.nextNodeItems = ((next && next.data && next.data.main) || []).reduce(
			(n, output) => n + ((output && output.length) || 0),
			0,
		);
	}
	return executions;
}

main().catch((error) => {
	process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
	process.exit(1);
});
