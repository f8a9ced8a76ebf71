/**
 * Message → Reply and Wait for Answer: sends the reply once, then n8n's putExecutionToWait. The
 * trigger posts the contact's answer to $execution.resumeUrl (webhook() below). At the time limit
 * n8n resumes on its timer without running the node again, passing its stored input through: the
 * timed-out items are stored in advance as that input (docs/conversations.md).
 */
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeOperationError, WAIT_INDEFINITELY } from 'n8n-workflow';

import { asNodeError } from '../../../shared/errors';
import { accountId } from '../../../shared/credentialKeys';
import { inboundParts } from '../../../shared/history';
import {
	MAX_ENTRY_LIFE_MS,
	entryExpiry,
	registerWithTrigger,
	type WaitRegistration,
} from '../../../shared/replyAndWait/registration';
import {
	RESUMED_BODY,
	keepWaitIds,
	newWaitId,
	takeResumeRequest,
} from '../../../shared/replyAndWait/resume';
import {
	NO_ROOM,
	keepWaitingEntriesCurrent,
	persistableStaticData,
	registerWaiting,
	triggerOfWorkflow,
	waitingKey,
} from '../../../shared/replyAndWait/waitingEntries';
import { type WaitingEntry } from '../../../shared/replyAndWait/entry';
import { serviceLine } from '../../../shared/redact';
import { withReplyWindow } from '../../../shared/replyWindow';
import { CREDENTIAL_TYPE } from '../../../shared/transport';
import { updateDisplayOptions } from '../../helpers/descriptions';
import { replyFields, sendReply } from './reply.operation';

const UNIT_MS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const;

const properties: INodeProperties[] = [
	...replyFields,
	{
		displayName: 'Limit Wait Time',
		name: 'limitWaitTime',
		type: 'boolean',
		default: true,
		description:
			'Whether the execution stops waiting after a time and continues on the Timed Out output. Off: it waits until the contact answers.',
	},
	{
		displayName: 'Amount',
		name: 'waitAmount',
		type: 'number',
		typeOptions: { minValue: 0.001, numberPrecision: 3 },
		default: 1,
		description: 'How long to wait for the answer',
		displayOptions: { show: { limitWaitTime: [true] } },
	},
	{
		displayName: 'Unit',
		name: 'waitUnit',
		type: 'options',
		options: [
			{ name: 'Days', value: 'days' },
			{ name: 'Hours', value: 'hours' },
			{ name: 'Minutes', value: 'minutes' },
		],
		default: 'hours',
		description: 'Unit of the amount',
		displayOptions: { show: { limitWaitTime: [true] } },
	},
	{
		displayName: 'Options',
		name: 'waitOptions',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: "Also Start the Trigger's Workflow",
				name: 'alsoStart',
				type: 'boolean',
				default: false,
				description:
					"Whether the answer also starts a new execution of the trigger's workflow, as any inbound message does. Off: it only resumes this execution.",
			},
		],
	},
];

const displayOptions = { show: { resource: ['message'], operation: ['replyAndWait'] } };

export const description = updateDisplayOptions(displayOptions, properties);

/** Outputs: Answer, then Timed Out. */
export async function execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const node = this.getNode();
	if (node.type.endsWith('Tool')) {
		throw new NodeOperationError(
			node,
			'Reply and Wait for Answer cannot be used as an AI Agent tool: give the agent Reply instead',
			{
				description:
					"An agent's tool call must return at once, and this operation suspends the whole execution until the contact answers. Give the agent Reply instead; the next message of the contact starts the agent's workflow again.",
			},
		);
	}
	const items = this.getInputData();
	const now = Date.now();
	const limit = this.getNodeParameter('limitWaitTime', 0, true) as boolean;
	let waitTill = WAIT_INDEFINITELY;
	if (limit) {
		const amount = Number(this.getNodeParameter('waitAmount', 0, 1));
		const unit = this.getNodeParameter('waitUnit', 0, 'hours') as keyof typeof UNIT_MS;
		if (!Number.isFinite(amount) || amount <= 0 || !(unit in UNIT_MS)) {
			throw new NodeOperationError(
				node,
				'Amount must be a number greater than 0: set how long to wait for the answer, or turn Limit Wait Time off',
				{
					description: 'Set how long to wait for the answer, or turn Limit Wait Time off.',
				},
			);
		}
		if (amount * UNIT_MS[unit] > MAX_ENTRY_LIFE_MS) {
			const days = MAX_ENTRY_LIFE_MS / UNIT_MS.days;
			throw new NodeOperationError(
				node,
				`The wait is longer than ${days} days, the longest an answer can resume it: set at most ${days} days`,
				{
					description: `An answer resumes a wait for at most ${days} days (a bound that keeps the trigger's list of waits from being filled with far-future entries). Set Amount and Unit to ${days} days or less.`,
				},
			);
		}
		waitTill = new Date(now + amount * UNIT_MS[unit]);
	}
	const options = this.getNodeParameter('waitOptions', 0, {}) as IDataObject;
	const resumeUrl = String(this.evaluateExpression('{{ $execution.resumeUrl }}', 0));
	const executionId = String(this.evaluateExpression('{{ $execution.id }}', 0));
	const apiKey = String((await this.getCredentials(CREDENTIAL_TYPE)).apiKey ?? '');
	const account = accountId(apiKey);
	const workflowId = this.getWorkflow().id ?? undefined;
	const registrations: WaitRegistration[] = [];
	const staticData =
		this.getMode() === 'manual'
			? undefined
			: persistableStaticData(this.getWorkflowStaticData('global'));
	// Where the trigger's trigger() runs here (or in the editor), nothing else keeps the entries.
	const postsToTrigger =
		this.getMode() !== 'manual' && !(staticData && triggerOfWorkflow(workflowId));

	const sent: INodeExecutionData[] = [];
	const timedOut: INodeExecutionData[] = [];
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		let reply: IDataObject;
		try {
			reply = await sendReply.call(this, itemIndex, 'Message → Reply and Wait for Answer');
		} catch (error) {
			if (!this.continueOnFail()) throw asNodeError(node, error, itemIndex);
			timedOut.push({ json: { error: (error as Error).message }, pairedItem: { item: itemIndex } });
			continue;
		}
		const contact = String(this.getNodeParameter('to', itemIndex)).trim();
		// The number the reply left from: the service's answer says it, else the From field.
		const number =
			[reply.from, this.getNodeParameter('from', itemIndex, '')].find(
				(value): value is string => typeof value === 'string' && value !== '',
			) ?? '';
		const registration: WaitRegistration = {
			key: waitingKey(contact, number),
			entry: {
				resumeUrl,
				executionId,
				expiresAtMs: entryExpiry(waitTill, now),
				alsoStart: options.alsoStart === true,
				node: node.name,
				waitId: newWaitId(),
				account,
				home: staticData ? workflowId : undefined,
				...askedAfter(items[itemIndex].json),
			},
		};
		// Posted to the trigger: this copy is written only if the trigger does not take it (below).
		const copy = postsToTrigger ? undefined : staticData;
		if (!registerWaiting(copy, registration.key, registration.entry) && !postsToTrigger)
			this.logger.warn(
				`Business Messaging: Reply and Wait for Answer could not keep its wait for ${serviceLine(registration.key)}: ${NO_ROOM}; the contact's answer starts a new execution, and this one continues on Timed Out`,
			);
		registrations.push(registration);
		sent.push({ json: reply, pairedItem: { item: itemIndex } });
		timedOut.push({
			json: {
				...items[itemIndex].json,
				timed_out: true,
				waited_for: { contact, number: number || null },
				reply,
			},
			pairedItem: { item: itemIndex },
		});
	}
	if (sent.length === 0) return [[], timedOut];

	// What n8n's timer resume will forward (the node is not run again then): the timed-out items.
	const stored = this.getExecuteData();
	// The waits this execution is in now and their contacts, saved with it: webhook() refuses any other.
	keepWaitIds(
		stored,
		Object.fromEntries(registrations.map(({ key, entry }) => [entry.waitId, key])),
	);
	if (forwardsAllOutputs(resumeUrl)) {
		stored.data.main = [[], timedOut];
		// Items stored as a second input trace back through the same source as the first.
		if (stored.source?.main?.[0]) stored.source.main[1] = stored.source.main[0];
		stored.metadata = { ...stored.metadata, forwardAllOutputs: true } as typeof stored.metadata;
	} else {
		// 1.x forwards only the first: there the timed-out items (timed_out: true) leave on Answer.
		stored.data.main = [timedOut];
	}

	// The trigger's request saves a copy n8n loads fresh; this execution's copy may be older (an
	// execution n8n re-runs at boot, before any trigger runs) and would drop what was saved since.
	const taken =
		postsToTrigger && (await registerWithTrigger.call(this, apiKey, resumeUrl, registrations));
	if (postsToTrigger && !taken && staticData)
		for (const { key, entry } of registrations) registerWaiting(staticData, key, entry);
	// As late as possible before n8n saves this execution's copy: every entry registered meanwhile.
	if (staticData && !taken) keepWaitingEntriesCurrent(staticData, workflowId);
	await this.putExecutionToWait(waitTill);
	return [sent, []];
}

/** Whether n8n forwards every stored output on resume (2.x: resumeUrl has a token) or the first. */
function forwardsAllOutputs(resumeUrl: string): boolean {
	return URL.canParse(resumeUrl) && new URL(resumeUrl).search !== '';
}

/** The trigger's resume request: the answer and the resume token; anything else is refused. */
export async function webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const taken = await takeResumeRequest.call(this);
	if (!taken) {
		const reason = 'not an answer sent by the Business Messaging Trigger';
		this.getResponseObject().status(403).json({ error: 'forbidden', reason });
		return { noWebhookResponse: true };
	}
	return {
		webhookResponse: { ...RESUMED_BODY },
		workflowData: [[{ json: withReplyWindow(taken.answer) }], []],
	};
}

/** The inbound message this item carries (from the trigger), which can never be the answer. */
function askedAfter(json: IDataObject): Pick<WaitingEntry, 'askedAfter'> {
	const { id, at } = inboundParts(json) ?? {};
	return id || at ? { askedAfter: { ...(id && { id }), ...(at && { at }) } } : {};
}
