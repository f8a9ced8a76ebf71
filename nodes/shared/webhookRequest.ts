/** What a webhook request carries, read the way n8n hands it to a node. */
import type { IWebhookFunctions } from 'n8n-workflow';

/** The request body exactly as it arrived, read now if n8n has not read it yet. */
export async function rawBodyOf(this: IWebhookFunctions): Promise<Buffer | undefined> {
	const req = this.getRequestObject();
	if (!Buffer.isBuffer(req.rawBody) && typeof req.readRawBody === 'function')
		await req.readRawBody();
	return Buffer.isBuffer(req.rawBody) ? req.rawBody : undefined;
}
