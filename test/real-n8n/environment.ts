/**
 * A running sandbox + real n8n with the package loaded, a credential pointing at the sandbox
 * and the examples imported. Used by `npm run dev` (scripts/dev.ts) and the screenshot script.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';

import {
	activateRouter,
	EXAMPLES,
	importExamples,
	importRouter,
	type ExampleKey,
	type Imported,
	type ImportedRouter,
} from './examples';
import {
	installN8n,
	installPackage,
	N8nClient,
	N8nProcess,
	OWNER,
	RestError,
	type Installation,
	type Line,
	type SavedWorkflow,
} from './n8n';
import { TRIGGER_TYPE } from '../support/constants';
import { launchSandbox, type Sandbox } from './sandbox';
import { freePort, log } from './util';

export interface EnvironmentOptions {
	line: Line;
	tarball: string;
	userFolder: string;
	/** Wipe userFolder first. */
	fresh: boolean;
	n8nPort: number;
	sandboxPort: number;
	/** The standalone example activated on a new instance (the account has one webhook: one at most). */
	activate: ExampleKey[];
	/** Also import the router and its sub-workflows (examples/router*.json) and activate them. */
	router?: boolean;
}

export interface Environment {
	installation: Installation;
	n8n: N8nProcess;
	sandbox: Sandbox;
	client: N8nClient;
	imported: Imported;
	/** The router and its sub-workflows, with `router: true`. */
	router?: ImportedRouter;
	/** Names of the workflows active once the environment is up. */
	active: string[];
	/** Notes about ports that were taken, etc. */
	notes: string[];
	stop(): Promise<void>;
}

async function portIsFree(port: number): Promise<boolean> {
	return await new Promise((resolve) => {
		const server = createServer();
		server.once('error', () => resolve(false));
		server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
	});
}

async function choosePort(
	wanted: number,
	what: string,
	notes: string[],
	avoid: number[] = [],
): Promise<number> {
	if (wanted > 0 && !avoid.includes(wanted) && (await portIsFree(wanted))) return wanted;
	const port = await freePort(avoid);
	if (wanted > 0) notes.push(`port ${wanted} is taken: ${what} uses ${port}`);
	return port;
}

export async function startEnvironment(options: EnvironmentOptions): Promise<Environment> {
	const notes: string[] = [];
	const installLog = join(dirname(options.tarball), `install-n8n-line${options.line}.log`);
	log(
		`n8n ${options.line === 2 ? '2.41.1' : '1.123.81'}: checking the install (the first run downloads it: a few minutes; npm's log: ${installLog})`,
	);
	const installation = installN8n(options.line, installLog, true);

	if (options.fresh && existsSync(options.userFolder))
		rmSync(options.userFolder, { recursive: true, force: true });
	const isNew = !existsSync(join(options.userFolder, '.n8n', 'database.sqlite'));
	mkdirSync(options.userFolder, { recursive: true });
	installPackage(options.userFolder, options.tarball);
	log(`package installed into ${options.userFolder}/.n8n/nodes`);

	const sandboxPort = await choosePort(options.sandboxPort, 'the sandbox', notes);
	const mediaPort = await choosePort(sandboxPort + 1, 'the sandbox media host', notes, [
		sandboxPort,
	]);
	const sandbox = await launchSandbox(sandboxPort, mediaPort);
	log(`sandbox at ${sandbox.baseUrl}`);

	let n8n: N8nProcess | undefined;
	try {
		const n8nPort = await choosePort(options.n8nPort, 'n8n', notes, [sandboxPort, mediaPort]);
		const brokerPort = await freePort([n8nPort, sandboxPort, mediaPort]);
		log(`starting n8n on port ${n8nPort} (log ${join(options.userFolder, 'n8n.log')})`);
		n8n = await N8nProcess.start({
			installation,
			userFolder: options.userFolder,
			port: n8nPort,
			brokerPort,
			logFile: join(options.userFolder, 'n8n.log'),
		});
		const client = new N8nClient(n8n.url, options.line, installation.dir);
		if (isNew) await client.setupOwner();
		else {
			try {
				await client.login();
			} catch (error) {
				if (!(error instanceof RestError)) throw error;
				await client.setupOwner();
			}
		}
		const imported = await importExamples(client, {
			apiKey: sandbox.keys.all,
			baseUrl: sandbox.baseUrl,
		});

		const router = options.router ? await importRouter(client, imported) : undefined;

		// The sandbox draws new key values and forgets its webhook on every start, so workflows
		// left active by a previous run were activated at n8n's start with the old key: activate
		// them again now that the credential holds the new key.
		const all = await client.listWorkflows();
		let active = all.filter((w) => w.active);
		if (isNew && active.length === 0) {
			for (const key of options.activate) {
				const outcome = await client.activateAndSettle(imported.workflows[key].id);
				if (!outcome.ok) throw new Error(`Activating ${EXAMPLES[key]} failed: ${outcome.message}`);
			}
			if (router) await activateRouter(client, router);
		} else {
			// All off first, then on again, the router first: the account has one webhook, and a
			// second Business Messaging Trigger on it is refused.
			const again: SavedWorkflow[] = [];
			for (const summary of active) {
				const workflow = await client.getWorkflow(summary.id);
				if (!workflow.nodes.some((node) => node.type === TRIGGER_TYPE)) continue;
				await client.deactivate(workflow.id);
				// The standalone examples an earlier `npm run dev` activated stay off beside the router.
				const standalone = Object.values(imported.workflows).some((w) => w.id === workflow.id);
				if (workflow.id !== router?.router.id && !(router && standalone)) again.push(workflow);
			}
			if (router) await activateRouter(client, router);
			for (const workflow of again) {
				const outcome = await client.activateAndSettle(workflow.id);
				if (!outcome.ok)
					notes.push(`"${workflow.name}" could not be activated again: ${outcome.message}`);
			}
		}
		active = (await client.listWorkflows()).filter((w) => w.active);

		const started = n8n;
		return {
			installation,
			n8n,
			sandbox,
			client,
			imported,
			router,
			active: active.map((w) => w.name),
			notes,
			async stop() {
				await started.stop();
				await sandbox.close();
			},
		};
	} catch (error) {
		await n8n?.stop();
		await sandbox.close();
		throw error;
	}
}

export { OWNER };
