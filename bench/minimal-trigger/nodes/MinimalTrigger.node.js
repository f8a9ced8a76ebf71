'use strict';
/**
 * The floor for bench/webhooks.ts: a community webhook trigger that does nothing but emit the
 * parsed body (no signature, no checks, no parameters), answering {received: true} like the
 * Business Messaging Trigger. Version 2, so that n8n evaluates no expression per request for it.
 */
class MinimalTrigger {
	constructor() {
		this.description = {
			displayName: 'Bench Minimal Trigger',
			name: 'minimalTrigger',
			group: ['trigger'],
			version: 2,
			description: 'Benchmark baseline: emits the request body',
			defaults: { name: 'Minimal Trigger' },
			inputs: [],
			outputs: ['main'],
			webhooks: [
				{
					name: 'default',
					httpMethod: 'POST',
					responseMode: 'onReceived',
					responseData: '',
					path: 'webhook',
				},
			],
			properties: [],
		};
	}

	async webhook() {
		return { webhookResponse: { received: true }, workflowData: [[{ json: this.getBodyData() }]] };
	}
}

module.exports = { MinimalTrigger };
