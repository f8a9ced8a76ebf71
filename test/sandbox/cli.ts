/* `npm run sandbox [-- --port 4010 --media-port 4011 --host 127.0.0.1 --webhook-timeout-ms 8000 --answers list_shape=items_next_url]` */
import { parseAnswersSpec } from './answers';
import { CONTROL_API_SUMMARY } from './control-routes';
import { startSandbox } from './server';
import type { SandboxOptions } from './types';

const USAGE =
	'Usage: npm run sandbox -- [--port 4010] [--media-port 4011] [--host 127.0.0.1] [--webhook-timeout-ms 8000] [--answers setting=value,...]';

export function parseArgs(argv: string[]): SandboxOptions {
	const options: SandboxOptions = { port: 4010 };
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		const value = argv[i + 1];
		const number = (): number => {
			const parsed = Number(value);
			if (value === undefined || !Number.isInteger(parsed) || parsed < 0)
				throw new Error(`${flag} needs a whole number\n${USAGE}`);
			i++;
			return parsed;
		};
		if (flag === '--port') options.port = number();
		else if (flag === '--media-port') options.mediaPort = number();
		else if (flag === '--webhook-timeout-ms') options.webhookTimeoutMs = number();
		else if (flag === '--host' && value) {
			options.host = value;
			i++;
		} else if (flag === '--answers' && value) {
			try {
				options.answers = { ...options.answers, ...parseAnswersSpec(value) };
			} catch (err) {
				throw new Error(`${(err as Error).message}\n${USAGE}`);
			}
			i++;
		} else throw new Error(`Unknown argument ${flag}\n${USAGE}`);
	}
	// The media host defaults to the next port so that both origins are predictable.
	if (options.mediaPort === undefined && options.port) options.mediaPort = options.port + 1;
	return options;
}

async function main(): Promise<void> {
	const argv = process.argv.slice(2);
	if (argv.includes('--help') || argv.includes('-h')) {
		console.log(USAGE);
		return;
	}
	const sandbox = await startSandbox(parseArgs(argv));
	const lines = [
		'Messaging API sandbox',
		`  Base URL      ${sandbox.baseUrl}   (API under /v1)`,
		`  Media origin  ${sandbox.mediaBaseUrl}   (signed media links)`,
		`  Chat page     ${sandbox.baseUrl}/   (open in a browser: conversations, statuses, delivery log)`,
		`  Answers       ${Object.entries(sandbox.answers())
			.map(([name, value]) => `${name}=${value}`)
			.join(',')}`,
		'',
		'Numbers (phone_number_id  display number)',
		...sandbox.numbers.map((n) => `  ${n.phone_number_id}  ${n.display_number}`),
		'',
		'Seeded keys (same values after a reset; new values on each start)',
		...Object.entries(sandbox.keys).map(([label, value]) => `  ${label.padEnd(11)} ${value}`),
		'',
		`Control API (no auth) under ${sandbox.baseUrl}/_sandbox`,
		...CONTROL_API_SUMMARY.map((line) => `  ${line}`),
		'',
		'Ctrl-C to stop.',
	];
	console.log(lines.join('\n'));
	const stop = (): void => {
		void sandbox.close().then(() => process.exit(0));
	};
	process.once('SIGINT', stop);
	process.once('SIGTERM', stop);
}

// Only when run as a program, so tests can import parseArgs.
if (require.main === module) {
	main().catch((err: Error) => {
		console.error(err.message);
		process.exit(1);
	});
}
