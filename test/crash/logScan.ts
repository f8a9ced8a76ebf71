/**
 * What n8n's log says after the first kill: the test starts n8n with N8N_LOG_FORMAT=json (both
 * lines), so each logger line carries its level. Counted: every error line; n8n's own "Error in
 * handling webhook request"; the package's lines ("Business Messaging …") at warn and error; and
 * the most frequent warn/error messages (numbers replaced by #), to say what happened. n8n's own
 * failed fetches of api.n8n.io (this machine is offline) are counted apart.
 */
export interface LogCount {
	lines: number;
	/** Error lines, n8n's failed fetches of api.n8n.io (no internet here) left out. */
	errorLines: number;
	/** Those failed fetches (warn and error): n8n's, harmless offline. */
	offlineLines: number;
	warnLines: number;
	webhookErrors: number;
	packageWarnings: number;
	packageErrors: number;
	/** Lines naming inputOverride (n8n's 500 on an answer posted to a crashed execution). */
	inputOverride: number;
	/** The most frequent warn and error messages, with their counts. */
	top: Array<{ level: string; count: number; message: string }>;
}

const PACKAGE = 'Business Messaging';
const WEBHOOK_ERROR = 'Error in handling webhook request';
/** n8n fetches from api.n8n.io (templates, MCP servers, system tasks): it fails offline. */
const OFFLINE = 'api.n8n.io';

function shape(message: string): string {
	return message
		.replace(/\+\d{6,}/g, '+#')
		.replace(/\d+/g, '#')
		.replace(/\s+/g, ' ')
		.slice(0, 180);
}

export function scanLog(text: string): LogCount {
	const count: LogCount = {
		lines: 0,
		errorLines: 0,
		offlineLines: 0,
		warnLines: 0,
		webhookErrors: 0,
		packageWarnings: 0,
		packageErrors: 0,
		inputOverride: 0,
		top: [],
	};
	const shapes = new Map<string, { level: string; count: number; message: string }>();
	for (const line of text.split('\n')) {
		if (!line.trim()) continue;
		count.lines++;
		if (line.includes('inputOverride')) count.inputOverride++;
		let level = '';
		let message = line;
		if (line.startsWith('{')) {
			try {
				const parsed = JSON.parse(line) as { level?: unknown; message?: unknown };
				level = typeof parsed.level === 'string' ? parsed.level : '';
				message = typeof parsed.message === 'string' ? parsed.message : line;
			} catch {
				/* not a logger line */
			}
		}
		if (level !== 'error' && level !== 'warn') continue;
		if (line.includes(OFFLINE)) {
			count.offlineLines++;
			continue;
		}
		if (level === 'error') count.errorLines++;
		else count.warnLines++;
		if (message.includes(WEBHOOK_ERROR)) count.webhookErrors++;
		if (message.includes(PACKAGE)) {
			if (level === 'error') count.packageErrors++;
			else count.packageWarnings++;
		}
		const key = `${level} ${shape(message)}`;
		const entry = shapes.get(key) ?? { level, count: 0, message: shape(message) };
		entry.count++;
		shapes.set(key, entry);
	}
	count.top = [...shapes.values()].sort((a, b) => b.count - a.count).slice(0, 12);
	return count;
}
