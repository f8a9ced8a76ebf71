/**
 * `npm run dev`: the sandbox and a real n8n with this package loaded, a credential pointing at
 * the sandbox and the example workflows imported; the router (examples/router.json, the account's
 * one trigger) and its sub-workflows active. Run by scripts/dev.sh after build + pack.
 *
 *   npm run dev [-- --line 1|2] [--port 5678] [--sandbox-port 4010] [--fresh]
 *
 * The n8n data (workflows, executions) is kept between runs in
 * ~/.cache/n8n-nodes-business-messaging/dev-n8n<line>; --fresh starts from an empty one.
 * Ctrl-C stops n8n and the sandbox.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

import {
	CREDENTIAL_NAME,
	EXAMPLES,
	ROUTER_EXAMPLES,
	SUB_WORKFLOWS,
} from '../test/real-n8n/examples';
import { startEnvironment, type Environment } from '../test/real-n8n/environment';
import { OWNER, type Line } from '../test/real-n8n/n8n';
import { inboundCurl, type SandboxState } from '../test/real-n8n/sandbox';
import { errorText, log } from '../test/real-n8n/util';

const USAGE = 'Usage: npm run dev -- [--line 2|1] [--port 5678] [--sandbox-port 4010] [--fresh]';

function parseArgs(argv: string[]) {
	const options = { line: 2 as Line, port: 5678, sandboxPort: 4010, fresh: false, tarball: '' };
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		const value = (): string => {
			const v = argv[++i];
			if (v === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
			return v;
		};
		if (flag === '--line') {
			const line = Number(value());
			if (line !== 1 && line !== 2)
				throw new Error(`--line is 1 (n8n 1.123.81) or 2 (n8n 2.41.1)\n${USAGE}`);
			options.line = line;
		} else if (flag === '--port') options.port = Number(value());
		else if (flag === '--sandbox-port') options.sandboxPort = Number(value());
		else if (flag === '--fresh') options.fresh = true;
		else if (flag === '--tarball') options.tarball = value();
		else if (flag === '--help' || flag === '-h') {
			console.log(USAGE);
			process.exit(0);
		} else throw new Error(`Unknown argument ${flag}\n${USAGE}`);
	}
	if (!options.tarball) throw new Error('--tarball is set by scripts/dev.sh: run `npm run dev`');
	return options;
}

/** Prints each webhook delivery and each message the account sends, as they happen. */
function watchSandbox(env: Environment): NodeJS.Timeout {
	let deliveries = env.sandbox.state().deliveries.length;
	let messages = env.sandbox.state().messages.length;
	return setInterval(() => {
		let state: SandboxState;
		try {
			state = env.sandbox.state();
		} catch {
			return;
		}
		for (const d of state.deliveries.slice(deliveries)) {
			const outcome = d.delivered
				? `${d.status} in ${d.duration_ms} ms`
				: `NOT delivered: ${d.reason}`;
			log(`sandbox -> webhook  ${d.event}  ${outcome}`);
		}
		for (const m of state.messages.slice(messages)) {
			log(`sandbox <- reply    ${m.id} from ${m.from} to ${m.to}: "${m.text}"`);
		}
		deliveries = state.deliveries.length;
		messages = state.messages.length;
	}, 500);
}

async function main(): Promise<void> {
	const options = parseArgs(process.argv.slice(2));
	const userFolder = join(
		homedir(),
		'.cache',
		'n8n-nodes-business-messaging',
		`dev-n8n${options.line}`,
	);
	let env: Environment | undefined;
	let stopping = false;
	const stop = async (signal: string) => {
		if (stopping) return;
		stopping = true;
		log(`${signal}: stopping n8n and the sandbox ...`);
		try {
			await env?.stop();
		} finally {
			log('stopped.');
			process.exit(0);
		}
	};
	process.on('SIGINT', () => void stop('Ctrl-C'));
	process.on('SIGTERM', () => void stop('SIGTERM'));
	process.on('SIGHUP', () => void stop('SIGHUP'));

	env = await startEnvironment({
		line: options.line,
		tarball: options.tarball,
		userFolder,
		fresh: options.fresh,
		n8nPort: options.port,
		sandboxPort: options.sandboxPort,
		// The account has one webhook: the router's trigger takes every event and starts the
		// sub-workflows (Execute Workflow); the standalone examples stay inactive.
		activate: [],
		router: true,
	});
	if (stopping) return;

	log('ready');
	const { n8n, sandbox, imported } = env;
	const number = sandbox.numbers[0].phone_number_id;
	const row = (file: string, w: { id: string; name: string }) => {
		const state = env?.active.includes(w.name) ? 'active' : 'inactive';
		return `    ${file.padEnd(28)} ${state.padEnd(9)} ${n8n.url}/workflow/${w.id}`;
	};
	const router = env.router!;
	const workflows = [
		row(ROUTER_EXAMPLES.router, router.router),
		...SUB_WORKFLOWS.map((key) => row(ROUTER_EXAMPLES[key], router.subWorkflows[key])),
	];
	const standalone = (Object.keys(EXAMPLES) as Array<keyof typeof EXAMPLES>).map((key) =>
		row(EXAMPLES[key], imported.workflows[key]),
	);
	const lines = [
		'',
		`Business Messaging dev environment: n8n ${env.installation.version} (Node ${env.installation.line === 2 ? '24' : process.version})`,
		'',
		`  n8n editor    ${n8n.url}`,
		`                sign in as ${OWNER.email} / ${OWNER.password}`,
		`  Sandbox       ${sandbox.baseUrl}        control API: ${sandbox.baseUrl}/_sandbox`,
		`  Chat page     ${sandbox.baseUrl}/       write as a contact, see the replies, set statuses, the delivery log`,
		`  Credential    "${CREDENTIAL_NAME}": the sandbox key with every scope, Base URL ${sandbox.baseUrl}`,
		`  Workflows (examples/): the router's one trigger starts the sub-workflows with Execute Workflow${env.installation.line === 2 ? '' : ' (n8n 1.x runs them inactive)'}`,
		...workflows,
		'  Standalone (one trigger each: only one can be active per account; a second is refused)',
		...standalone,
		'  Data tables   Contacts, Delivery status (Overview > Data tables)',
		'',
		'Simulate an inbound message (the router starts auto-reply, the conversation, which asks for the order number, and CRM sync), on the chat page or with:',
		`  ${inboundCurl(sandbox.baseUrl, number)}`,
		'',
		`Other sandbox keys (numbers ${sandbox.numbers.map((n) => n.phone_number_id).join(', ')}):`,
		...Object.entries(sandbox.keys)
			.filter(([label]) => label !== 'all')
			.map(([label, value]) => `  ${label.padEnd(11)} ${value}`),
		'',
		`n8n log: ${n8n.logFile}   data: ${userFolder} (--fresh to start over)`,
		...env.notes.map((note) => `note: ${note}`),
		'Ctrl-C stops n8n and the sandbox.',
		'',
	];
	console.log(lines.join('\n'));
	watchSandbox(env);
	const exitWatch = setInterval(() => {
		if (!n8n.running && !stopping) {
			clearInterval(exitWatch);
			console.error(`n8n exited unexpectedly; last lines of ${n8n.logFile}:\n${n8n.logTail(30)}`);
			void stop('n8n exited');
		}
	}, 1000);
}

main().catch((error) => {
	console.error(`npm run dev failed: ${errorText(error)}`);
	process.exit(1);
});
