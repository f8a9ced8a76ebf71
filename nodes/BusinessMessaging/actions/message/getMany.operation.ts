import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';

import { optionalId, requireOneOf } from '../../../shared/fields';
import {
	additionalQueryParameters,
	listFields,
	updateDisplayOptions,
} from '../../helpers/descriptions';
import { getList } from '../../helpers/list';

const DIRECTIONS = ['echo', 'in'] as const;
/** What Simplify keeps of a message (`to`: an echo's contact). */
const SIMPLE_FIELDS = 'from to number text type media_id wa_message_id created_at'.split(' ');

const properties: INodeProperties[] = [
	{
		displayName: 'Direction',
		name: 'direction',
		type: 'options',
		options: [
			{
				name: 'Echo',
				value: 'echo',
				description: "Messages sent from the platform's own business app (coexistence)",
			},
			{
				name: 'Inbound',
				value: 'in',
				description: "Messages contacts sent to the account's numbers",
			},
		],
		default: 'in',
		description: 'Which stored messages to read',
	},
	...listFields,
	{
		displayName: 'Filters',
		name: 'filters',
		type: 'collection',
		placeholder: 'Add Filter',
		default: {},
		description:
			'Sent to the service as query parameters as they are. The service documents only the direction, so whether it applies these depends on the service.',
		options: [
			{
				displayName: 'Contact',
				name: 'contact',
				type: 'string',
				default: '',
				placeholder: 'e.g. +33612345678',
				description:
					"Query parameter <code>contact</code>: the contact's phone number, in international format",
			},
			{
				displayName: 'Number (Phone Number ID)',
				name: 'number',
				type: 'string',
				default: '',
				placeholder: 'e.g. 109876543210',
				description:
					'Query parameter <code>number</code>: the phone_number_id that received (or, for echoes, sent) the messages',
			},
		],
	},
	additionalQueryParameters,
];

const displayOptions = { show: { resource: ['message'], operation: ['getMany'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
): Promise<INodeExecutionData[]> {
	const node = this.getNode();
	const direction = requireOneOf(
		node,
		this.getNodeParameter('direction', itemIndex),
		DIRECTIONS,
		'Direction',
		itemIndex,
	);
	const filters = this.getNodeParameter('filters', itemIndex, {}) as IDataObject;

	const qs: IDataObject = {};
	// The spec names only direction=echo; inbound is what the endpoint reads by default.
	if (direction === 'echo') qs.direction = 'echo';
	const number = optionalId(node, filters.number, 'Filters → Number (Phone Number ID)', itemIndex);
	if (number !== undefined) qs.number = number;
	const contact = optionalId(node, filters.contact, 'Filters → Contact', itemIndex);
	if (contact !== undefined) qs.contact = contact;

	return await getList.call(
		this,
		itemIndex,
		'/v1/messages/inbound',
		SIMPLE_FIELDS,
		{ qs, reserved: ['direction', 'number', 'contact'] },
		// The spec does not name this endpoint's scope; messages:read is the one for reading messages.
		{ operation: 'Message → Get Many', scope: 'messages:read', itemIndex },
		// Records say their direction (spec); keep only the one asked for, whatever the default.
		(record) => record.direction === undefined || record.direction === direction,
	);
}
