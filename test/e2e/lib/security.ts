/**
 * Workflows and requests for the end-to-end security checks: where the API key travels when
 * the credential is used in n8n's HTTP Request node (redirects to the media host), and what
 * unsigned requests to the trigger's production URL cause.
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';

import { webhookNode, type WorkflowJson } from '../../real-n8n/n8n';
import { CREDENTIAL_TYPE } from '../../support/constants';
import { WRONG_SECRET } from '../../support/fixtures';
import { signBody } from '../../support/signature';

export const HTTP_REQUEST_TYPE = 'n8n-nodes-base.httpRequest';

/** The highest HTTP Request typeVersion this n8n knows, from /types/nodes.json. */
export function latestHttpRequestVersion(
	types: Array<Record<string, unknown> & { name: string }>,
): number {
	const versions = types
		.filter((type) => type.name === HTTP_REQUEST_TYPE)
		.flatMap((type) =>
			Array.isArray(type.version) ? (type.version as number[]) : [type.version as number],
		);
	if (versions.length === 0) throw new Error(`${HTTP_REQUEST_TYPE} is not in /types/nodes.json`);
	return Math.max(...versions);
}

export interface RedirectProbe {
	/** Node name -> the media ID it asks for (GET {Base URL}/v1/media/{id}, answered 302 to the media host). */
	byNode: Record<string, { version: number; mediaId: string }>;
	/** The node that reads the 302 (Never Error + Full Response) and the one that fetches its Location without credentials. */
	pointerNode: string;
	downloadNode: string;
	pointerMediaId: string;
	webhookPath: string;
	workflow: WorkflowJson;
}

/**
 * Webhook (GET, answers when the last node is done) → one HTTP Request node per version with
 * Authentication "Predefined Credential Type" = this credential and default options, each on
 * its own media ID; on error they continue (the error is their output). Then what a user does
 * to get the file: the latest version with Never Error + Full Response reads the 302, and an
 * HTTP Request without credentials downloads its Location.
 */
export function redirectProbeWorkflow(input: {
	versions: number[];
	latest: number;
	baseUrl: string;
	credential: { id: string; name: string };
	mediaIds: string[];
	pointerMediaId: string;
}): RedirectProbe {
	const webhookPath = randomUUID();
	const nodes: WorkflowJson['nodes'] = [webhookNode('GET', webhookPath, 'lastNode')];
	const byNode: RedirectProbe['byNode'] = {};
	const withCredential = (
		name: string,
		version: number,
		mediaId: string,
		options: Record<string, unknown>,
	) => ({
		id: randomUUID(),
		name,
		type: HTTP_REQUEST_TYPE,
		typeVersion: version,
		position: [220 * nodes.length, 0],
		onError: 'continueRegularOutput',
		alwaysOutputData: true,
		parameters: {
			url: `${input.baseUrl}/v1/media/${mediaId}`,
			authentication: 'predefinedCredentialType',
			nodeCredentialType: CREDENTIAL_TYPE,
			options,
		},
		credentials: { [CREDENTIAL_TYPE]: input.credential },
	});
	input.versions.forEach((version, index) => {
		const name = `HTTP Request ${version}`;
		byNode[name] = { version, mediaId: input.mediaIds[index] };
		nodes.push(withCredential(name, version, input.mediaIds[index], {}));
	});
	const pointerNode = `HTTP Request ${input.latest} (Never Error, Full Response)`;
	nodes.push(
		withCredential(pointerNode, input.latest, input.pointerMediaId, {
			response: { response: { neverError: true, fullResponse: true } },
		}),
	);
	const downloadNode = 'Download the Location without credentials';
	nodes.push({
		id: randomUUID(),
		name: downloadNode,
		type: HTTP_REQUEST_TYPE,
		typeVersion: input.latest,
		position: [220 * nodes.length, 0],
		onError: 'continueRegularOutput',
		parameters: {
			url: '={{ $json.headers.location }}',
			options: { response: { response: { responseFormat: 'file' } } },
		},
	});
	const connections: Record<string, unknown> = {};
	for (let i = 0; i < nodes.length - 1; i++) {
		connections[nodes[i].name] = { main: [[{ node: nodes[i + 1].name, type: 'main', index: 0 }]] };
	}
	return {
		byNode,
		pointerNode,
		downloadNode,
		pointerMediaId: input.pointerMediaId,
		webhookPath,
		workflow: {
			name: `e2e: API key across redirects (HTTP Request ${input.versions.join(', ')})`,
			nodes,
			connections,
			settings: { executionOrder: 'v1' },
		},
	};
}

/** Error Trigger → No Operation: set as another workflow's Error Workflow, it counts that workflow's failures. */
export function errorWorkflow(): WorkflowJson {
	const nodes: WorkflowJson['nodes'] = [
		{
			id: randomUUID(),
			name: 'Error Trigger',
			type: 'n8n-nodes-base.errorTrigger',
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
		},
		{
			id: randomUUID(),
			name: 'No Operation',
			type: 'n8n-nodes-base.noOp',
			typeVersion: 1,
			position: [220, 0],
			parameters: {},
		},
	];
	return {
		name: 'e2e: error workflow',
		nodes,
		connections: {
			'Error Trigger': { main: [[{ node: 'No Operation', type: 'main', index: 0 }]] },
		},
		settings: { executionOrder: 'v1' },
	};
}

/** What the unsigned requests send (fetch accepts each). */
export type RequestBody = string | Uint8Array | FormData;

export interface UnsignedRequest {
	label: string;
	headers: Record<string, string>;
	body?: RequestBody;
}

/**
 * Requests to the trigger's production URL that are not correctly signed: an event envelope
 * (a copy of a genuine one) in each content type a sender might use, an empty body and a
 * gzip-encoded body; each once without a signature and once signed with another secret.
 */
export function unsignedRequests(envelope: string): UnsignedRequest[] {
	const wrong = (bytes: string | Buffer) => signBody(bytes, WRONG_SECRET);
	const multipart = () => {
		const form = new FormData();
		form.append('payload', envelope);
		return form;
	};
	const urlencoded = new URLSearchParams({ payload: envelope }).toString();
	const xml = `<?xml version="1.0"?><event><json>${envelope.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</json></event>`;
	const gzipped = gzipSync(Buffer.from(envelope));
	const variants: Array<{
		label: string;
		headers: Record<string, string>;
		body?: () => RequestBody;
		signed: string | Buffer;
	}> = [
		{ label: 'multipart/form-data', headers: {}, body: multipart, signed: envelope },
		{
			label: 'application/x-www-form-urlencoded',
			headers: { 'content-type': 'application/x-www-form-urlencoded' },
			body: () => urlencoded,
			signed: urlencoded,
		},
		{
			label: 'text/plain',
			headers: { 'content-type': 'text/plain' },
			body: () => envelope,
			signed: envelope,
		},
		{
			label: 'application/xml',
			headers: { 'content-type': 'application/xml' },
			body: () => xml,
			signed: xml,
		},
		{ label: 'empty body', headers: { 'content-type': 'application/json' }, signed: '' },
		{
			label: 'gzip-encoded JSON',
			headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
			body: () => new Uint8Array(gzipped),
			signed: envelope,
		},
	];
	return variants.flatMap((variant) => [
		{ label: `${variant.label}, no signature`, headers: variant.headers, body: variant.body?.() },
		{
			label: `${variant.label}, signed with another secret`,
			headers: { ...variant.headers, 'x-service-signature': wrong(variant.signed) },
			body: variant.body?.(),
		},
	]);
}
