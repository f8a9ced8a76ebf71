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
import { withCanonicalFields } from '../../../shared/storedRecord';
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
			'Sent to the service as query parameters and applied here too (the service documents only the direction): a message that does not carry the field is left out',
		options: [
			{
				displayName: 'Contact',
				name: 'contact',
				type: 'string',
				default: '',
				placeholder: 'e.g. +33612345678',
				description:
					"The contact's phone number, in international format: the sender of inbound messages, the recipient of echoes (query parameter <code>contact</code>, and checked here)",
			},
			{
				displayName: 'Number (Phone Number ID)',
				name: 'number',
				type: 'string',
				default: '',
				placeholder: 'e.g. 109876543210',
				description:
					'The phone_number_id that received (or, for echoes, sent) the messages (query parameter <code>number</code>, and checked here)',
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
		{
			read: withCanonicalFields,
			keep: (record) => keepsMessage(record, { direction, contact, number }),
			filtered: contact !== undefined || number !== undefined,
		},
	);
}

/** Whether a stored message matches: direction (if it says), contact (an echo's `to`), number. */
export function keepsMessage(
	record: IDataObject,
	wanted: { direction: 'in' | 'echo'; contact?: string; number?: string },
): boolean {
	const direction = record.direction ?? wanted.direction;
	if (direction !== wanted.direction) return false;
	const contact = direction === 'echo' ? record.to : record.from;
	if (wanted.contact !== undefined && !samePhone(contact, wanted.contact)) return false;
	return wanted.number === undefined || samePhone(record.number, wanted.number);
}

/** Equal once spaces, dashes, dots and brackets are left out ("+33 6 12" is "+33612"). */
function samePhone(stored: unknown, wanted: string): boolean {
	const bare = (value: string) => value.replace(/[\s\-.()]/g, '');
	return typeof stored === 'string' && bare(stored) !== '' && bare(stored) === bare(wanted);
}
