/** The one reader of GET /v1/console/webhook (`{url, configured}`, CONTRACT W5). */
import { NodeApiError } from 'n8n-workflow';

import { isPlainObject } from './json';
import { bodyAsText } from './serviceText';
import { apiRequest, type ApiContext } from './transport';

export const WEBHOOK_PATH = '/v1/console/webhook';

/** What the account's webhook is: none, or configured at a URL (never one without the other). */
export type RemoteWebhook = { configured: false; url: null } | { configured: true; url: string };

/** Pure: the answer read, or why it cannot be ("the configuration <unreadable>", said by the caller). */
export function readWebhookAnswer(body: unknown): RemoteWebhook | { unreadable: string } {
	if (
		!isPlainObject(body) ||
		typeof body.configured !== 'boolean' ||
		!(typeof body.url === 'string' || body.url === null || body.url === undefined)
	)
		return { unreadable: 'is not in the shape {url, configured} this node reads' };
	if (!body.configured) return { configured: false, url: null };
	const url = typeof body.url === 'string' ? body.url.trim() : '';
	if (url === '')
		return {
			unreadable:
				'says a webhook is configured but gives no URL (a contradiction, not read as "none")',
		};
	return { configured: true, url };
}

export async function readRemoteWebhook(
	this: ApiContext,
	operation: string,
): Promise<RemoteWebhook> {
	const body = await apiRequest.call(this, 'GET', WEBHOOK_PATH, { context: { operation } });
	const read = readWebhookAnswer(body);
	if (!('unreadable' in read)) return read;
	throw new NodeApiError(
		this.getNode(),
		{ body: bodyAsText(body) },
		{
			message: `${operation}: the service's webhook configuration ${read.unreadable}, so nothing was registered or deleted. Set Registration to Manual and manage the webhook in the console. The body: ${bodyAsText(body).slice(0, 200)}`,
			description: `The body as it came: ${bodyAsText(body)}`,
		},
	);
}
