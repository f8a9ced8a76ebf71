import type { ExpressionString, IDataObject, INodeProperties } from 'n8n-workflow';

import { DEFAULT_DOWNLOAD_TIMEOUT_SECONDS, DEFAULT_MAX_FILE_SIZE_MB } from '../shared/mediaPolicy';
import { MESSAGE_EVENT_OPTIONS } from '../shared/history';
import {
	DEFAULT_CATCH_UP_INTERVAL_SECONDS,
	LONGEST_WAIT_SECONDS,
	QUIET_PERIOD_SECONDS,
	DEFAULT_HAND_OVER_MINUTES,
	DEFAULT_LATE_DELIVERY_CUTOFF_SECONDS,
	DEFAULT_MAX_AGE_SECONDS,
	DEFAULT_MAX_RECOVERED,
	MAX_CATCH_UP_DAYS,
	MAX_EVENT_AGE_SECONDS,
	MAX_HAND_OVER_MINUTES,
	MAX_RECOVERED,
	MIN_CATCH_UP_INTERVAL_SECONDS,
	handOverSettings,
} from './options';
import { EVENT_TYPES, type EventType } from './receiving/envelope';

/** The event types with an output of their own, or null for one. Agrees with OUTPUTS_EXPRESSION. */
export function outputLayout(events: unknown, separateOutputs: unknown): EventType[] | null {
	if (separateOutputs !== true) return null;
	const chosen = Array.isArray(events) ? events : ['message.inbound'];
	const list = EVENT_TYPES.filter((type) => chosen.includes(type));
	return list.length > 0 ? list : ['message.inbound'];
}

/** The node's raw Options collection (no expression evaluated), or {}. */
export function optionsOf(parameters: { options?: unknown }): IDataObject {
	const options = parameters.options;
	return typeof options === 'object' && options !== null ? (options as IDataObject) : {};
}

/** How many outputs OUTPUTS_EXPRESSION gives n8n: the event outputs, plus Hand Over. */
export function outputCount(parameters: IDataObject): number {
	return (
		(outputLayout(parameters.events, parameters.separateOutputs)?.length ?? 1) +
		(handOverSettings(optionsOf(parameters)).mode === 'output' ? 1 : 0)
	);
}

/** Outputs as an expression, as n8n's Switch node does; written by hand (no `}}` inside). */
export const OUTPUTS_EXPRESSION = ('={{ ((p) => { ' +
	'const names = { "message.inbound": "Inbound", "message.status": "Status", "message.echo": "Echo" }; ' +
	'const handOver = (p.options || {}).handOver === "output" ? [{ type: "main", displayName: "Hand Over" }] : []; ' +
	'if (p.separateOutputs !== true) return [{ type: "main" }].concat(handOver); ' +
	'const chosen = Array.isArray(p.events) ? p.events : ["message.inbound"]; ' +
	'const list = ["message.inbound", "message.status", "message.echo"].filter((e) => chosen.includes(e)); ' +
	'return (list.length ? list : ["message.inbound"]).map((e) => ({ type: "main", displayName: names[e] })).concat(handOver); ' +
	'})($parameter) }}') as ExpressionString;

export const properties: INodeProperties[] = [
	{
		displayName:
			'One trigger per account: the account has one webhook, and a second Business Messaging Trigger on it is refused. For several workflows, route events from this one to the others with the Execute Workflow node (each starting with "When Executed by Another Workflow"), or use a Business Messaging Polling Trigger there. A webhook registered by anything else is never replaced unless Take Over Existing Webhook is on.',
		name: 'oneWebhookNotice',
		type: 'notice',
		default: '',
		displayOptions: { show: { registration: ['automatic'] } },
	},
	{
		displayName: 'Registration',
		name: 'registration',
		type: 'options',
		noDataExpression: true,
		options: [
			{
				name: 'Automatic',
				value: 'automatic',
				description:
					'Registers the webhook when the workflow goes active (published), removes it after',
			},
			{
				name: 'Manual',
				value: 'manual',
				description:
					'You registered the URL in the console; the credential holds its signing secret',
			},
		],
		default: 'automatic',
	},
	{
		displayName:
			"The account has one webhook. Register this node's Production URL in the console and paste the signing secret shown there into the credential's Webhook Signing Secret. Without it every event is rejected.",
		name: 'manualNotice',
		type: 'notice',
		default: '',
		displayOptions: { show: { registration: ['manual'] } },
	},
	{
		displayName: 'Events',
		name: 'events',
		type: 'multiOptions',
		required: true,
		noDataExpression: true,
		options: [
			...MESSAGE_EVENT_OPTIONS,
			{
				name: 'Status Update',
				value: 'message.status',
				description: 'A delivery status change of a message you sent',
			},
		],
		default: ['message.inbound'],
		description: 'Events that start the workflow. Other events are acknowledged and ignored.',
	},
	{
		displayName: 'Separate Output per Event',
		name: 'separateOutputs',
		type: 'boolean',
		noDataExpression: true,
		default: false,
		description:
			'Whether each selected event gets an output of its own (in the order Inbound, Status, Echo), so no IF or Switch node is needed',
	},
	{
		displayName: 'Recover Missed Messages',
		name: 'catchUp',
		type: 'boolean',
		noDataExpression: true,
		default: true,
		description:
			'Whether inbound messages and echoes the workflow did not receive (n8n down, restarting, too busy or unreachable) are read from the service and emitted once, marked recovered, within a minute. Status updates are not stored by the service and cannot be recovered.',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Catch-Up Interval (Seconds)',
				name: 'catchUpInterval',
				type: 'number',
				typeOptions: { minValue: MIN_CATCH_UP_INTERVAL_SECONDS },
				default: DEFAULT_CATCH_UP_INTERVAL_SECONDS,
				displayOptions: { show: { '/catchUp': [true] } },
				description:
					'How often the service is asked for missed messages (two or more requests each time)',
			},
			{
				displayName: "Combine a Contact's Messages",
				name: 'combineMessages',
				type: 'boolean',
				default: false,
				description:
					"Whether to emit one item per burst of a contact's inbound messages (for an AI agent): once the contact has been quiet for the Quiet Period, one item holds all of them, oldest first, in `messages` and one joined `text`",
			},
			{
				displayName: 'Download Media',
				name: 'downloadMedia',
				type: 'boolean',
				default: false,
				description:
					'Whether to download the media of inbound messages and attach it as binary data. Echo media cannot be downloaded (metadata only).',
			},
			{
				displayName: 'Download Timeout (Seconds)',
				name: 'downloadTimeout',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: DEFAULT_DOWNLOAD_TIMEOUT_SECONDS,
				displayOptions: { show: { downloadMedia: [true] } },
				description:
					'A media download (every redirect and every byte) is stopped after this long; the event is emitted without the file',
			},
			{
				displayName: 'Late Delivery Cutoff (Seconds)',
				name: 'lateDeliveryCutoff',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 7 },
				default: DEFAULT_LATE_DELIVERY_CUTOFF_SECONDS,
				displayOptions: { show: { '/catchUp': [true] } },
				description:
					"An inbound or echo message older than this when n8n gets to it is answered 503 and not run: the service (which waits about 8 s) may already count it as failed, and then the catch-up runs it, once. A status event is run however late (the service keeps none to catch up). With Combine a Contact's Messages in regular mode, an inbound message is held for its burst and answered at once instead.",
			},
			{
				displayName: 'Longest Wait (Seconds)',
				name: 'longestWait',
				type: 'number',
				typeOptions: { minValue: LONGEST_WAIT_SECONDS.min, maxValue: LONGEST_WAIT_SECONDS.max },
				default: 60,
				displayOptions: { show: { combineMessages: [true] } },
				description: `A burst that goes on longer than this (from its first message) is emitted anyway, so a contact who never pauses still gets an answer. ${LONGEST_WAIT_SECONDS.min} to ${LONGEST_WAIT_SECONDS.max}.`,
			},
			{
				displayName: 'Max File Size (MB)',
				name: 'maxFileSize',
				type: 'number',
				typeOptions: { minValue: 0.01, numberPrecision: 2 },
				default: DEFAULT_MAX_FILE_SIZE_MB,
				displayOptions: { show: { downloadMedia: [true] } },
				description:
					'Larger media is stopped as it arrives (counted after decompression); the event is emitted without the file',
			},
			{
				displayName: 'Max Recovered per Run',
				name: 'maxRecovered',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: MAX_RECOVERED },
				default: DEFAULT_MAX_RECOVERED,
				displayOptions: { show: { '/catchUp': [true] } },
				description:
					"More missed messages than this wait for the next run (oldest first); n8n's log says so",
			},
			{
				displayName: 'Maximum Event Age (Seconds)',
				name: 'maxAge',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: MAX_EVENT_AGE_SECONDS },
				default: DEFAULT_MAX_AGE_SECONDS,
				description:
					'Events whose timestamp is older than this are rejected, and a delivery received twice within it runs once, so a captured request cannot be replayed. At most 3600. The service never retries and waits about 8 s, so genuine events are seconds old.',
			},
			{
				displayName: 'On Webhook Taken',
				name: 'onWebhookTaken',
				type: 'options',
				options: [
					{
						name: 'Keep Running Through the Catch-Up',
						value: 'catchUp',
						description:
							'Leave the other webhook alone, run every message through the catch-up (late, marked late_reason) and log an error each interval',
					},
					{
						name: 'Stop and Report an Error',
						value: 'stop',
						description:
							"Stop the workflow as a failing trigger: the editor shows the error, the workflow's Error Workflow runs; publish again once the webhook is free",
					},
				],
				default: 'catchUp',
				displayOptions: { show: { '/registration': ['automatic'] } },
				description:
					"What to do when, while this workflow is active, the account's one webhook is found pointing at another URL (checked every catch-up interval). A deleted webhook is always registered again.",
			},
			{
				displayName: 'Put Output File in Field',
				name: 'binaryPropertyName',
				type: 'string',
				default: 'data',
				displayOptions: { show: { downloadMedia: [true] } },
				description: 'Name of the binary field the downloaded media is put in',
			},
			{
				displayName: 'Quiet Period (Seconds)',
				name: 'quietPeriod',
				type: 'number',
				typeOptions: { minValue: QUIET_PERIOD_SECONDS.min, maxValue: QUIET_PERIOD_SECONDS.max },
				default: 5,
				displayOptions: { show: { combineMessages: [true] } },
				description: `A burst ends when the contact sends nothing for this long; its item comes about 1 s after. ${QUIET_PERIOD_SECONDS.min} to ${QUIET_PERIOD_SECONDS.max}.`,
			},
			{
				displayName: 'Receiving Numbers',
				name: 'numbers',
				type: 'string',
				default: '',
				placeholder: 'e.g. 109876543210, 109876543211',
				description:
					'Comma-separated phone_number_ids. Inbound and echo events of other numbers are ignored. Status events carry no number and are not filtered by it.',
			},
			{
				displayName: 'Recover on Activation',
				name: 'onActivation',
				type: 'options',
				options: [
					{
						name: 'Messages Since Last Active',
						value: 'sinceLastActive',
						description: `What arrived while it was off (up to ${MAX_CATCH_UP_DAYS} days); none from before it first went on`,
					},
					{
						name: 'Nothing From Before',
						value: 'fromActivation',
						description: 'Only messages stored after it goes active (published) again',
					},
				],
				default: 'sinceLastActive',
				displayOptions: { show: { '/catchUp': [true] } },
				description:
					'What the catch-up recovers when the workflow is published (activated) again. A restart of n8n always recovers what it missed.',
			},
			{
				displayName: 'Status Values',
				name: 'statuses',
				type: 'string',
				default: '',
				placeholder: 'e.g. delivered, failed',
				description:
					'Comma-separated delivery statuses. Status events with another status are ignored. Empty: all.',
			},
			{
				displayName: 'Take Over Existing Webhook',
				name: 'takeOver',
				type: 'boolean',
				default: false,
				displayOptions: { show: { '/registration': ['automatic'] } },
				description:
					"Whether to replace a webhook registered for another URL. Off: publishing (activating) fails and names that URL. On: the other receiver stops getting events. Never replaces this workflow's own production webhook while listening for a test event.",
			},
			{
				displayName: 'While a Person Answers',
				name: 'handOver',
				type: 'options',
				options: [
					{
						name: 'Do Not Emit',
						value: 'drop',
						description: 'Inbound messages of a contact a person answers start no execution',
					},
					{
						name: 'Emit as Usual',
						value: 'off',
						description: 'Echoes do not change where inbound messages go',
					},
					{
						name: 'Send to Hand Over Output',
						value: 'output',
						description: 'Inbound messages of a contact a person answers go to an extra output',
					},
				],
				default: 'off',
				description:
					'Where inbound messages go while a person of the business answers that contact from the business app (an echo to them on that number in the last minutes below), so the bot stays quiet',
			},
			{
				displayName: 'While a Person Answers (Minutes)',
				name: 'handOverMinutes',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: MAX_HAND_OVER_MINUTES },
				default: DEFAULT_HAND_OVER_MINUTES,
				displayOptions: { hide: { handOver: ['off'] } },
				description:
					'How long after the last echo to a contact the person is still answering them (1 to 10080)',
			},
		],
	},
];
