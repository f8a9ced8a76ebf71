/**
 * The workflows the real-n8n hardening run imports: every operation of the action node behind the
 * trigger (secrets phase), every operation with keys that fail (behind n8n's own Webhook node, so
 * it does not need the account's one webhook), and a trigger-only workflow for the load.
 */
import { randomUUID } from 'node:crypto';

import { webhookNode, type WorkflowJson } from '../../real-n8n/n8n';
import { ACTION_TYPE, CREDENTIAL_TYPE, TRIGGER_NAME, TRIGGER_TYPE } from '../../support/constants';

type Node = WorkflowJson['nodes'][number];
type Credential = { id: string; name: string };

export const ERRORS_WEBHOOK_PATH = 'hardening-secrets-errors';

function credentialRef(credential: Credential) {
	return { [CREDENTIAL_TYPE]: { id: credential.id, name: credential.name } };
}

function action(
	name: string,
	parameters: Record<string, unknown>,
	credential: Credential,
	x: number,
	y: number,
	continueOnFail = true,
): Node {
	return {
		id: randomUUID(),
		name,
		type: ACTION_TYPE,
		typeVersion: 1,
		position: [x, y],
		parameters,
		credentials: credentialRef(credential),
		...(continueOnFail ? { onError: 'continueRegularOutput' } : {}),
	};
}

/** One node per operation, each fed by `source` directly (so one failing never stops the others). */
function everyOperation(
	prefix: string,
	credential: Credential,
	y: number,
	inputs: { to: string; from: string; messageId: string; media: string },
): Node[] {
	const ops: Array<[string, Record<string, unknown>]> = [
		['Ping', { resource: 'account', operation: 'ping' }],
		[
			'Reply',
			{
				resource: 'message',
				operation: 'reply',
				to: inputs.to,
				from: inputs.from,
				text: '=Thanks {{ $json.data?.contact_name ?? "" }}',
			},
		],
		['Get Status', { resource: 'message', operation: 'getStatus', messageId: inputs.messageId }],
		[
			'Get Many',
			{ resource: 'message', operation: 'getMany', direction: 'in', returnAll: false, limit: 5 },
		],
		['Download', { resource: 'media', operation: 'download', media: inputs.media }],
		[
			'Logs',
			{ resource: 'log', operation: 'getMany', category: 'webhook', returnAll: false, limit: 5 },
		],
		['Keys', { resource: 'key', operation: 'getMany', returnAll: true }],
		['Webhook', { resource: 'webhook', operation: 'get' }],
	];
	return ops.map(([label, parameters], i) =>
		action(`${prefix} ${label}`, parameters, credential, 300, y + i * 120),
	);
}

/** The trigger, Automatic registration, with these events and options. */
function trigger(credential: Credential, events: string[], options: Record<string, unknown>): Node {
	return {
		id: randomUUID(),
		name: TRIGGER_NAME,
		type: TRIGGER_TYPE,
		typeVersion: 1,
		position: [0, 0],
		webhookId: randomUUID(),
		parameters: { registration: 'automatic', events, options },
		credentials: credentialRef(credential),
	};
}

function fanOut(from: string, to: Node[]) {
	return { [from]: { main: [to.map((node) => ({ node: node.name, type: 'main', index: 0 }))] } };
}

/** Trigger (inbound, status; media downloaded) → every operation with the good key. */
export function secretsTriggerWorkflow(credential: Credential): WorkflowJson {
	const nodes = everyOperation('Good', credential, 0, {
		to: '={{ $json.data?.from ?? "+15550001111" }}',
		from: '={{ $json.data?.number }}',
		messageId: '={{ $json.data?.id ?? "msg_unknown" }}',
		media: '={{ $json.data?.media_url || $json.data?.media_id || "0000000000000000" }}',
	});
	return {
		name: 'Hardening: secrets (trigger → every operation)',
		nodes: [
			trigger(credential, ['message.inbound', 'message.status'], { downloadMedia: true }),
			...nodes,
		],
		connections: fanOut(TRIGGER_NAME, nodes),
		settings: { executionOrder: 'v1' },
	};
}

/**
 * n8n's Webhook node → every operation with a revoked key and with a key without scopes
 * (Continue On Fail), then one node with the revoked key that stops the execution with its error.
 */
export function secretsErrorsWorkflow(revoked: Credential, noScopes: Credential): WorkflowJson {
	const hook = webhookNode('POST', ERRORS_WEBHOOK_PATH, 'onReceived');
	const inputs = {
		to: '+15550001111',
		from: '100000000000001',
		messageId: 'msg_unknown',
		media: '1234567890123456',
	};
	const revokedNodes = everyOperation('Revoked', revoked, 0, inputs);
	const scopeNodes = everyOperation('No scope', noScopes, 1000, inputs);
	const stop = action(
		'Revoked Ping (stops)',
		{ resource: 'account', operation: 'ping' },
		revoked,
		600,
		0,
		false,
	);
	return {
		name: 'Hardening: secrets (failing keys)',
		nodes: [hook, ...revokedNodes, ...scopeNodes, stop],
		connections: {
			...fanOut('Webhook', [...revokedNodes, ...scopeNodes]),
			[revokedNodes[revokedNodes.length - 1].name]: {
				main: [[{ node: stop.name, type: 'main', index: 0 }]],
			},
		},
		settings: { executionOrder: 'v1' },
	};
}

/** Trigger (inbound only) → No Operation: one execution per accepted event. */
export function loadWorkflow(
	credential: Credential,
	name = 'Hardening: load (trigger → no-op)',
	options: Record<string, unknown> = {},
): WorkflowJson {
	return {
		name,
		nodes: [
			trigger(credential, ['message.inbound'], options),
			{
				id: randomUUID(),
				name: 'Done',
				type: 'n8n-nodes-base.noOp',
				typeVersion: 1,
				position: [260, 0],
				parameters: {},
			},
		],
		connections: { [TRIGGER_NAME]: { main: [[{ node: 'Done', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}

/** Catch-up interval of the media load's trigger: its shortest, so a missed event is recovered within the phase. */
export const MEDIA_LOAD_CATCH_UP_SECONDS = 10;

/**
 * Trigger (inbound only, Download Media on, the catch-up every 10 s) → No Operation: one
 * execution per accepted event, its file attached by the trigger's execute().
 */
export function mediaLoadWorkflow(credential: Credential): WorkflowJson {
	return loadWorkflow(credential, 'Hardening: load with Download Media (trigger → no-op)', {
		downloadMedia: true,
		catchUpInterval: MEDIA_LOAD_CATCH_UP_SECONDS,
	});
}
