/** Registration (create() and the watch); the answers' shapes are guesses (CONTRACT W3, W5). */
import type { IDataObject } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { bodyAsText } from '../../shared/serviceText';
import { serviceLine } from '../../shared/redact';
import { isPlainObject } from '../../shared/json';
import { rawApiRequest, throwForStatus, type ApiContext } from '../../shared/transport';
import { WEBHOOK_PATH } from '../../shared/webhookAnswer';

/** Where a registration answer may carry the secret: our guess first, then common names. */
const SECRET_FIELDS = [
	'secret',
	'signing_secret',
	'signingSecret',
	'webhook_secret',
	'webhookSecret',
];

function secretOf(answer: unknown): string | undefined {
	if (!isPlainObject(answer)) return undefined;
	const places = [answer, answer.data, answer.webhook].filter(isPlainObject);
	for (const place of places) {
		for (const field of SECRET_FIELDS) {
			const value = place[field];
			if (typeof value === 'string' && value.trim() !== '') return value.trim();
		}
	}
	return undefined;
}

function fieldNames(body: unknown): string {
	if (!isPlainObject(body)) return `(not a JSON object: ${typeof body})`;
	return serviceLine(Object.keys(body).slice(0, 30).join(', ')) || '(none)';
}

/** POSTs `url` as the webhook; returns its signing secret, or deletes it again and throws. */
export async function postRegistration(
	this: ApiContext,
	url: string,
	operation: string,
): Promise<string> {
	const response = await rawApiRequest.call(this, 'POST', WEBHOOK_PATH, {
		body: { url } as IDataObject,
		context: { operation },
		unredacted: true,
	});
	// Only a refusal of the request itself (400/422) can be about the URL.
	if (/^http:\/\//i.test(url) && (response.statusCode === 400 || response.statusCode === 422)) {
		throw new NodeOperationError(
			this.getNode(),
			`The service refused to register ${url} (${response.statusCode}): it accepts HTTPS addresses only. Make n8n reachable over HTTPS, set its public address (WEBHOOK_URL), then publish again`,
			{ description: `The service answered ${response.statusCode}: ${bodyAsText(response.body)}` },
		);
	}
	throwForStatus(this.getNode(), response, { operation });
	const secret = secretOf(response.unredactedBody);
	if (secret) return secret;
	// Events for this URL could never be verified: take the registration back.
	const undo = await rawApiRequest.call(this, 'DELETE', WEBHOOK_PATH, {
		context: { operation: 'Trigger → Delete Webhook' },
	});
	const undone =
		undo.statusCode < 300
			? 'The registration was deleted again'
			: `Deleting the registration failed (${undo.statusCode}): delete it in the console`;
	throw new NodeOperationError(
		this.getNode(),
		`The service registered the webhook but its answer carried no signing secret under a name this node reads (${SECRET_FIELDS.join(', ')}). Register the webhook in the console and set Registration to Manual, with the secret in the credential. ${undone}`,
		{
			// Field names only: a secret under a name we do not read would not be redacted.
			description: `Without the secret no event can be verified, so none would be accepted. The answer's fields: ${fieldNames(response.unredactedBody)}`,
		},
	);
}
