// What n8n evaluates per webhook request for this trigger. With N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true
// an isolate (about 30 ms of CPU) is built only for a request whose handling reaches the expression
// engine; these are n8n's own rules (n8n-workflow, and parseRequestBody in n8n's webhook-helpers),
// applied to the node's description and to what the Workflow constructor makes of its parameters.
import type { INode } from 'n8n-workflow';
import { nodeParametersAreStatic, webhookDescriptionIsNativelyResolvable } from 'n8n-workflow';

import { BusinessMessagingTrigger } from '../../../nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node';
import { nodeWithDefaults } from '../../harness';
import { triggerNode } from './helpers';

const trigger = new BusinessMessagingTrigger();

/** The node as n8n holds it while handling a request: parameters with the defaults filled in. */
const workflowNode = (typeVersion: number, parameters: Record<string, unknown>): INode =>
	nodeWithDefaults(trigger, triggerNode(parameters, typeVersion), true);

describe('per-request expressions', () => {
	it('new triggers are version 2, and version-1 workflows still load', () => {
		// n8n 2.x evaluates ={{$parameter["options"]["binaryData"]}} for every request to a version-1 start node.
		expect(trigger.description.defaultVersion).toBe(2);
		expect(trigger.description.version).toEqual([1, 2]);
	});

	it('the webhook description resolves without the expression engine', () => {
		const webhooks = trigger.description.webhooks ?? [];
		expect(webhooks.length).toBeGreaterThan(0);
		for (const webhook of webhooks)
			expect(webhookDescriptionIsNativelyResolvable(webhook)).toBe(true);
	});

	it.each([
		['defaults', {}],
		[
			'every option set',
			{
				registration: 'manual',
				events: ['message.inbound', 'message.status', 'message.echo'],
				separateOutputs: true,
				options: {
					maxAge: 60,
					numbers: '109876543210',
					statuses: 'delivered, failed',
					downloadMedia: true,
					maxFileSize: 5,
				},
			},
		],
	])(
		'a version-2 node with %s has static parameters (nothing for n8n to evaluate)',
		(_label, parameters) => {
			const node = workflowNode(2, parameters);
			expect(nodeParametersAreStatic(node)).toBe(true);
		},
	);

	it('an expression a user writes into a parameter is still evaluated (the node is then not static)', () => {
		expect(
			nodeParametersAreStatic(workflowNode(2, { options: { numbers: '={{ $vars.numbers }}' } })),
		).toBe(false);
	});
});
