import type {
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IPollFunctions,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { MESSAGE_EVENT_OPTIONS } from '../shared/history';
import { CREDENTIAL_TYPE } from '../shared/transport';
import { DEFAULT_MAX_PER_POLL, MAX_RECOVER_MINUTES, pollMessages } from './poll';

export class BusinessMessagingPollingTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Business Messaging Polling Trigger',
		name: 'businessMessagingPollingTrigger',
		icon: {
			light: 'file:../../icons/businessMessaging.svg',
			dark: 'file:../../icons/businessMessaging.dark.svg',
		},
		group: ['trigger'],
		version: 1,
		subtitle: '={{($parameter["events"] || []).join(", ")}}',
		description:
			'Starts the workflow on new inbound messages and echoes, read from the message history on a schedule',
		defaults: { name: 'Business Messaging Polling Trigger' },
		polling: true,
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: CREDENTIAL_TYPE, required: true }],
		properties: [
			{
				displayName:
					'Use this trigger when the service cannot reach n8n (no public HTTPS address): it registers no webhook and reads new messages from the history on the schedule below. With a public HTTPS address, the Business Messaging Trigger is instant. Delivery statuses are not stored by the service, so they cannot be polled: read them with Message → Get Status.',
				name: 'pollingNotice',
				type: 'notice',
				default: '',
			},
			{
				displayName: 'Events',
				name: 'events',
				type: 'multiOptions',
				required: true,
				noDataExpression: true,
				options: MESSAGE_EVENT_OPTIONS,
				default: ['message.inbound'],
				description: 'Which stored messages start the workflow',
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [
					{
						displayName: 'Max Messages per Poll',
						name: 'maxPerPoll',
						type: 'number',
						typeOptions: { minValue: 1, maxValue: 10000 },
						default: DEFAULT_MAX_PER_POLL,
						description:
							"More new messages than this wait for the next poll (oldest first); n8n's log says so",
					},
					{
						displayName: 'Receiving Numbers',
						name: 'numbers',
						type: 'string',
						default: '',
						placeholder: 'e.g. 109876543210, 109876543211',
						description: 'Comma-separated phone_number_ids. Messages of other numbers are skipped.',
					},
					{
						displayName: 'Recover Earlier Messages (Minutes)',
						name: 'recoverMinutes',
						type: 'number',
						typeOptions: { minValue: 0, maxValue: MAX_RECOVER_MINUTES },
						default: 0,
						description:
							'When the workflow first goes active (published), also emit messages stored this many minutes earlier. 0: only messages that arrive afterwards. Later it carries on where the last poll stopped.',
					},
				],
			},
		],
	};

	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		return await pollMessages.call(this);
	}
}
