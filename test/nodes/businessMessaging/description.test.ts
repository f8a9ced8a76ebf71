// The node's description as n8n (and an AI Agent choosing a tool) sees it.
import type { INode, INodeProperties, INodePropertyOptions } from 'n8n-workflow';
import { getNodeParameters } from 'n8n-workflow';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { BusinessMessaging } from '../../../nodes/BusinessMessaging/BusinessMessaging.node';
import * as account from '../../../nodes/BusinessMessaging/actions/account/Account.resource';
import * as key from '../../../nodes/BusinessMessaging/actions/key/Key.resource';
import * as log from '../../../nodes/BusinessMessaging/actions/log/Log.resource';
import * as media from '../../../nodes/BusinessMessaging/actions/media/Media.resource';
import * as message from '../../../nodes/BusinessMessaging/actions/message/Message.resource';
import * as webhook from '../../../nodes/BusinessMessaging/actions/webhook/Webhook.resource';
import { nodeOutputs } from '../../harness';
import { ACTION_TYPE } from '../../support';

const ROOT = path.resolve(__dirname, '../../..');
const { description } = new BusinessMessaging();
const properties = description.properties;
const modules: Record<string, Record<string, unknown>> = {
	account,
	key,
	log,
	media,
	message,
	webhook,
};

const resourceOptions = (properties.find((p) => p.name === 'resource')?.options ??
	[]) as INodePropertyOptions[];
const operationSelectors = properties.filter((p) => p.name === 'operation');
const operationsOf = (resource: string) =>
	(operationSelectors.find((p) => p.displayOptions?.show?.resource?.includes(resource))?.options ??
		[]) as INodePropertyOptions[];
const fieldsOf = (resource: string, operation: string) =>
	properties.filter(
		(p) =>
			p.displayOptions?.show?.resource?.includes(resource) &&
			p.displayOptions?.show?.operation?.includes(operation),
	);

const isSorted = (names: string[]) =>
	names.every((name, i) => i === 0 || names[i - 1].localeCompare(name) <= 0);

describe('Business Messaging node description', () => {
	it('has the identity n8n and the community scanner expect', () => {
		expect(description).toMatchObject({
			name: 'businessMessaging',
			displayName: 'Business Messaging',
			version: [1, 1.1],
			usableAsTool: true,
			inputs: ['main'],
			credentials: [{ name: 'businessMessagingApi', required: true }],
			subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
			icon: {
				light: 'file:../../icons/businessMessaging.svg',
				dark: 'file:../../icons/businessMessaging.dark.svg',
			},
		});
		for (const file of ['icons/businessMessaging.svg', 'icons/businessMessaging.dark.svg']) {
			expect(readFileSync(path.join(ROOT, file), 'utf8')).toContain('<svg');
		}
	});

	it("offers the issue's resources and operations, each with an action and a description", () => {
		const table = Object.fromEntries(
			resourceOptions.map((r) => [r.value, operationsOf(String(r.value)).map((o) => o.value)]),
		);
		expect(table).toEqual({
			account: ['ping'],
			key: ['getMany'],
			log: ['getMany'],
			media: ['download'],
			message: ['getMany', 'getStatus', 'reply', 'replyAndWait'],
			webhook: ['get'],
		});
		for (const resource of resourceOptions) {
			for (const operation of operationsOf(String(resource.value))) {
				expect(operation.action).toMatch(/^[A-Z]/);
				expect((operation.description ?? '').length).toBeGreaterThan(20);
				const module = modules[String(resource.value)][String(operation.value)] as {
					execute?: unknown;
				};
				expect(typeof module?.execute).toBe('function');
			}
		}
	});

	it('describes Reply and Get Status so that an agent can tell them apart', () => {
		const [getMany, getStatus, reply] = operationsOf('message');
		expect(reply.description).toMatch(/reply/i);
		expect(reply.description).toMatch(/24 hours/);
		expect(getStatus.description).toMatch(/delivery status/);
		expect(getStatus.description).toMatch(/message ID/);
		expect(getMany.name).toBe('Get Many');
	});

	it('Reply needs no typing after the trigger: To and From default to the event', () => {
		const fields = Object.fromEntries(
			fieldsOf('message', 'reply')
				.filter((p) => !p.displayOptions?.show?.['@tool'])
				.map((p) => [p.name, p]),
		);
		expect(fields.to.default).toBe('={{ $json.data?.from }}');
		expect(fields.from.default).toBe('={{ $json.data?.number }}');
		expect(fields.from.required).toBeFalsy();
		expect(fields.text.default).toBe('');
		expect(fieldsOf('media', 'download').find((p) => p.name === 'media')?.default).toBe(
			'={{ $json.data?.media_url || $json.data?.media_id }}',
		);
	});

	it('every field belongs to exactly one resource and operation', () => {
		for (const property of properties.filter(
			(p) => p.name !== 'resource' && p.name !== 'operation',
		)) {
			expect(property.displayOptions?.show?.resource).toHaveLength(1);
			expect(property.displayOptions?.show?.operation).toHaveLength(1);
		}
		// Limit keeps its own condition next to the stamped ones.
		const limit = fieldsOf('message', 'getMany').find((p) => p.name === 'limit') as INodeProperties;
		expect(limit.displayOptions?.show).toEqual({
			returnAll: [false],
			resource: ['message'],
			operation: ['getMany'],
		});
	});

	it('option lists are alphabetized', () => {
		const lists: INodePropertyOptions[][] = [
			resourceOptions,
			...operationSelectors.map((p) => p.options as INodePropertyOptions[]),
		];
		for (const p of properties)
			if (p.type === 'options' && p.name !== 'operation')
				lists.push(p.options as INodePropertyOptions[]);
		for (const list of lists) expect(isSorted(list.map((o) => o.name))).toBe(true);
		const categories = fieldsOf('log', 'getMany').find((p) => p.name === 'category')
			?.options as INodePropertyOptions[];
		expect(categories.map((o) => o.value)).toEqual([
			'credits',
			'keys',
			'numbers',
			'receptions',
			'rejections',
			'sends',
			'webhook',
		]);
	});

	it('Get Many filters are documented as sent and applied here too', () => {
		const fields = fieldsOf('message', 'getMany');
		expect(fields.find((p) => p.name === 'filters')?.description).toMatch(
			/Sent to the service as query parameters and applied here too/,
		);
		expect(fields.find((p) => p.name === 'queryParameters')?.description).toMatch(
			/sent to the service as they are/,
		);
	});

	it('has a codex file and is registered in package.json', () => {
		const codex = JSON.parse(
			readFileSync(path.join(ROOT, 'nodes/BusinessMessaging/BusinessMessaging.node.json'), 'utf8'),
		);
		expect(codex).toMatchObject({
			node: 'n8n-nodes-business-messaging.businessMessaging',
			categories: ['Communication'],
			resources: {
				primaryDocumentation: [
					{
						url: 'https://github.com/n8n-nodes-business-messaging/n8n-nodes-business-messaging#business-messaging-action-node',
					},
				],
			},
		});
		const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
		expect(pkg.n8n.nodes).toContain('dist/nodes/BusinessMessaging/BusinessMessaging.node.js');
	});

	it("as an AI Agent tool, Reply's To and Text default to what the model decides ($fromAI), not to the trigger's event", () => {
		// n8n resolves displayOptions' @tool from the type name (the tool variant ends in "Tool").
		const resolve = (typeName: string) =>
			getNodeParameters(
				properties,
				{ resource: 'message', operation: 'reply' },
				true,
				false,
				{ typeVersion: 1 },
				{ ...description, name: typeName },
			) as Record<string, unknown>;
		const asNode = resolve('businessMessaging');
		expect(asNode).toMatchObject({
			to: '={{ $json.data?.from }}',
			from: '={{ $json.data?.number }}',
			text: '',
		});
		const asTool = resolve('businessMessagingTool');
		expect(asTool.to).toMatch(/^=\{\{ \$fromAI\('to', '[^']*leading plus[^']*', 'string'\) \}\}$/);
		expect(asTool.text).toMatch(/^=\{\{ \$fromAI\('text', /);
		expect(asTool.from).toBe('');
		for (const operation of ['reply', 'replyAndWait']) {
			for (const p of fieldsOf('message', operation).filter((p) =>
				['to', 'text', 'from'].includes(p.name),
			)) {
				expect(p.displayOptions?.show?.['@tool'] ?? p.displayOptions?.hide?.['@tool']).toEqual([
					true,
				]);
			}
		}
	});

	it('outputs as n8n computes them: one, and Answer + Timed Out for Reply and Wait for Answer', () => {
		const outputsFor = (parameters: Record<string, unknown>) =>
			nodeOutputs(new BusinessMessaging(), {
				id: 'n',
				name: 'B',
				type: ACTION_TYPE,
				typeVersion: 1,
				position: [0, 0],
				parameters: parameters as INode['parameters'],
			});
		expect(outputsFor({})).toEqual(['main']);
		expect(outputsFor({ resource: 'media', operation: 'download' })).toEqual(['main']);
		expect(outputsFor({ resource: 'message', operation: 'replyAndWait' })).toEqual([
			{ type: 'main', displayName: 'Answer' },
			{ type: 'main', displayName: 'Timed Out' },
		]);
	});
});
