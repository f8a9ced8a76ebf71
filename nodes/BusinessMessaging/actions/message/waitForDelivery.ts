/** Reply → Wait for Delivery: GET /v1/messages/{id} until a final status or the limit. */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { NodeOperationError, sleep } from 'n8n-workflow';

import { apiRequest } from '../../../shared/transport';
import { boundedNumber } from '../../../shared/fields';
import { isPlainObject } from '../../../shared/json';

const FINAL_STATUSES: readonly string[] = ['delivered', 'read', 'failed'];
const DEFAULT_DELIVERY_LIMIT_SECONDS = 60;
const MAX_DELIVERY_LIMIT_SECONDS = 600;
const DEFAULT_CHECK_INTERVAL_SECONDS = 2;
const SENT_ONCE =
	"The reply was sent (don't send it again), but reading its delivery status failed";

export const deliveryOptions: INodeProperties[] = [
	{
		displayName: 'Wait for Delivery',
		name: 'waitForDelivery',
		type: 'boolean',
		default: false,
		description:
			'Whether to read the message\'s status after sending until it is delivered, read or failed (or the time limit passes); the item then carries "delivery"',
	},
	{
		displayName: 'Delivery Time Limit (Seconds)',
		name: 'deliveryTimeLimit',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: MAX_DELIVERY_LIMIT_SECONDS },
		default: DEFAULT_DELIVERY_LIMIT_SECONDS,
		description:
			'How long Wait for Delivery waits for a final status (1 to 600). After it the item carries the last status seen, with final false.',
	},
	{
		displayName: 'Check Every (Seconds)',
		name: 'deliveryCheckInterval',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 60 },
		default: DEFAULT_CHECK_INTERVAL_SECONDS,
		description:
			'Time between two status reads of Wait for Delivery (1 to 60): at most one request per interval',
	},
];

export async function waitForDelivery(
	this: IExecuteFunctions,
	itemIndex: number,
	sent: IDataObject,
	options: IDataObject,
): Promise<IDataObject> {
	const id = sent.id;
	if (typeof id !== 'string' || id.trim() === '' || /[/?#\\]|^\.\.?$/.test(id)) {
		throw new NodeOperationError(
			this.getNode(),
			`${SENT_ONCE}: the service's answer has no message ID to follow. Turn Wait for Delivery off, and follow the trigger's message.status events instead`,
			{
				itemIndex,
				description: `The reply was sent once and not again. Its answer as it came: ${JSON.stringify(sent).slice(0, 1000)}`,
			},
		);
	}
	const limitMs =
		boundedNumber(
			options.deliveryTimeLimit,
			DEFAULT_DELIVERY_LIMIT_SECONDS,
			1,
			MAX_DELIVERY_LIMIT_SECONDS,
		) * 1000;
	const intervalMs =
		boundedNumber(options.deliveryCheckInterval, DEFAULT_CHECK_INTERVAL_SECONDS, 1, 60) * 1000;
	const startedMs = Date.now();
	for (let checks = 1; ; checks++) {
		const response = await apiRequest
			.call(this, 'GET', `/v1/messages/${encodeURIComponent(id)}`, {
				context: {
					operation: 'Message → Reply (Wait for Delivery)',
					scope: 'messages:read',
					itemIndex,
					notFound:
						"the service has no status for the ID the reply returned. Turn Wait for Delivery off and follow the trigger's message.status events instead",
				},
			})
			.catch((error: unknown) => {
				// The reply went out: whatever failed after, running the node again would send it twice.
				if (error instanceof Error) error.message = `${SENT_ONCE}. ${error.message}`;
				throw error;
			});
		const record = isPlainObject(response) ? response : {};
		const status = record.status ?? null;
		const final =
			typeof status === 'string' && FINAL_STATUSES.includes(status.trim().toLowerCase());
		if (final || Date.now() - startedMs + intervalMs > limitMs) {
			return {
				final,
				status,
				error: record.error ?? null,
				waited_ms: Date.now() - startedMs,
				checks,
				...(!final && {
					reason: `The service reported no final status (delivered, read or failed) within ${limitMs / 1000} s; status is the last one it reported.`,
				}),
			};
		}
		await sleep(intervalMs);
	}
}
