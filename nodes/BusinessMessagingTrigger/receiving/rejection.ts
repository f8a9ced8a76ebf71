/** Answering a refused request (400, 401, 503); at most 10 log lines a minute per trigger. */
import type { IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';

import { nodeKeyOf } from '../../shared/credentialKeys';
import { serviceLine } from '../../shared/redact';
import { lruOf } from '../../shared/replayGuard';

const LOG_PREFIX = 'Business Messaging Trigger';

/** At most `perMinute` lines a minute; the next minute's first line says how many were left out. */
export class LogThrottle {
	private windowStartMs = 0;
	private logged = 0;
	private suppressed = 0;

	constructor(private readonly perMinute = 10) {}

	allow(nowMs: number, flush: (suppressed: number) => void): boolean {
		if (nowMs - this.windowStartMs >= 60_000) {
			if (this.suppressed > 0) flush(this.suppressed);
			this.windowStartMs = nowMs;
			this.logged = 0;
			this.suppressed = 0;
		}
		if (this.logged < this.perMinute) {
			this.logged++;
			return true;
		}
		this.suppressed++;
		return false;
	}
}

/** One bound per trigger (workflow and node): junk sent to one trigger's URL must not hide another's lines. */
const rejectionLogs = new Map<string, LogThrottle>();
const MAX_TRIGGERS_TRACKED = 1000;

/** What an unsigned caller is told (details go to n8n's log); the service is told the reason. */
const GENERIC_REASONS = {
	400: 'the request is not a valid event of the service',
	401: 'the request is not signed for this webhook',
	503: 'the event came too late to be run here; it is recovered from the service',
	507: 'the request could not be kept',
} as const;

export function reject(
	this: IWebhookFunctions,
	status: keyof typeof GENERIC_REASONS,
	reason: string,
	{ problem, signed = false }: { problem?: string; signed?: boolean } = {},
): IWebhookResponseData {
	const meta = { node: this.getNode().name, workflowId: this.getWorkflow().id };
	const flush = (left: number) =>
		this.logger.warn(
			`${LOG_PREFIX}: ${left} more rejected request(s) in the last minute were not logged`,
			meta,
		);
	const key = nodeKeyOf.call(this);
	const throttle = lruOf(rejectionLogs, key, MAX_TRIGGERS_TRACKED, () => new LogThrottle());
	if (throttle.allow(Date.now(), flush)) {
		if (problem) this.logger.error(`${LOG_PREFIX}: ${problem}`, meta);
		else
			this.logger.warn(
				`${LOG_PREFIX}: rejected a request (${status}): ${serviceLine(reason)}`,
				meta,
			);
	}
	const res = this.getResponseObject();
	const error = { 400: 'bad_request', 401: 'unauthorized', 503: 'too_late', 507: 'full' }[status];
	if (!res.headersSent)
		res.status(status).json({ error, reason: signed ? reason : GENERIC_REASONS[status] });
	return { noWebhookResponse: true };
}
