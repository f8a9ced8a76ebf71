/** One poll: messages after the watermark (static data, which n8n saves when a poll emits). */
import type { IDataObject, INodeExecutionData, IPollFunctions } from 'n8n-workflow';

import {
	MESSAGE_EVENTS,
	readHistory,
	storedMessageItem,
	type MessageEvent,
} from '../shared/history';
import { byAge, selectNew, type Watermark } from '../shared/watermark';
import { splitList } from '../shared/fields';

export const DEFAULT_MAX_PER_POLL = 500;
export const MAX_RECOVER_MINUTES = 7 * 24 * 60;
const OPERATION = 'Polling Trigger → Read Messages';

function readPollOptions(raw: IDataObject) {
	return {
		numbers: splitList(raw.numbers),
		// Empty or 0: the default; below 1 otherwise: 1.
		maxPerPoll: Math.min(Math.max(Number(raw.maxPerPoll) || DEFAULT_MAX_PER_POLL, 1), 10_000),
		recoverMinutes: Math.min(Math.max(Number(raw.recoverMinutes) || 0, 0), MAX_RECOVER_MINUTES),
	};
}

type Found = Array<{ event: MessageEvent; record: IDataObject }>;

interface PollStaticData extends IDataObject {
	watermarks?: Partial<Record<MessageEvent, Watermark>>;
}

async function readNewest(
	this: IPollFunctions,
	event: MessageEvent,
	watermark: Watermark | undefined,
): Promise<IDataObject[]> {
	// An answer it cannot read throws: n8n shows the failed poll, and the watermark stays.
	const { records, complete, next } = await readHistory.call(this, event, watermark, OPERATION);
	// Said as an error: messages older than what was read are never emitted (no way to them).
	if (!complete)
		this.logger.error(
			next === undefined
				? `Business Messaging Polling Trigger: the service's list of ${event} messages gives no way to its next page; new messages older than the ${records.length} read are not emitted. Poll more often so that fewer arrive between two polls`
				: 'Business Messaging Polling Trigger: more than 100000 new messages; the oldest of them are not read',
		);
	return records;
}

export async function pollMessages(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
	const selected = this.getNodeParameter('events', ['message.inbound']) as string[];
	const events = MESSAGE_EVENTS.filter((event) => selected.includes(event));
	const { numbers, maxPerPoll, recoverMinutes } = readPollOptions(
		this.getNodeParameter('options', {}) as IDataObject,
	);
	const keep = (record: IDataObject) =>
		numbers.length === 0 || numbers.includes(String(record.number ?? '').trim());

	// "Fetch Test Event": the newest message, and nothing moves.
	if (this.getMode() === 'manual') {
		const found: Found = [];
		for (const event of events) {
			const [record] = (await readNewest.call(this, event, undefined)).filter(keep);
			if (record) found.push({ event, record });
		}
		const newest = found.sort((a, b) => byAge(b.record, a.record))[0];
		return newest ? [[storedMessageItem(newest.event, newest.record, { polled: true })]] : null;
	}

	const staticData = this.getWorkflowStaticData('node') as PollStaticData;
	const watermarks = (staticData.watermarks ??= {});

	const emitted: Found = [];
	for (const event of events) {
		// First poll after the first activation: start now, or as far back as the option says.
		const watermark = watermarks[event] ?? {
			createdAt: new Date(Date.now() - recoverMinutes * 60_000).toISOString(),
			ids: [],
		};
		const records = await readNewest.call(this, event, watermark);
		const selection = selectNew(records, watermark, maxPerPoll);
		watermarks[event] = selection.watermark;
		if (selection.left > 0) {
			this.logger.info(
				`Business Messaging Polling Trigger: ${selection.left} more ${event} message(s) wait for the next poll (Max Messages per Poll is ${maxPerPoll})`,
			);
		}
		emitted.push(...selection.emit.filter(keep).map((record) => ({ event, record })));
	}
	emitted.sort((a, b) => byAge(a.record, b.record));
	return emitted.length > 0
		? [emitted.map(({ event, record }) => storedMessageItem(event, record, { polled: true }))]
		: null;
}
