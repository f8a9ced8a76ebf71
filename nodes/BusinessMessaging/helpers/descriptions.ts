import type { IDisplayOptions, INodeProperties } from 'n8n-workflow';

/** Return All, Limit and Simplify: every Get Many's. */
export const listFields: INodeProperties[] = [
	{
		displayName: 'Return All',
		name: 'returnAll',
		type: 'boolean',
		default: false,
		description: 'Whether to return all results or only up to a given limit',
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		displayOptions: { show: { returnAll: [false] } },
		typeOptions: { minValue: 1 },
		default: 50,
		description: 'Max number of results to return',
	},
	{
		displayName: 'Simplify',
		name: 'simple',
		type: 'boolean',
		// New in version 1.1: nodes of version 1 keep the records as the service sent them.
		displayOptions: { show: { '@version': [{ _cnd: { gte: 1.1 } }] } },
		default: true,
		description: 'Whether to return a simplified version of the response instead of the raw data',
	},
];

export const additionalQueryParameters: INodeProperties = {
	displayName: 'Additional Query Parameters',
	name: 'queryParameters',
	type: 'fixedCollection',
	typeOptions: { multipleValues: true },
	default: {},
	placeholder: 'Add Parameter',
	description:
		'Other query parameters, sent to the service as they are. The service documents none beyond the ones above, so any effect depends on the service.',
	options: [
		{
			displayName: 'Parameter',
			name: 'parameter',
			values: [
				{
					displayName: 'Name',
					name: 'name',
					type: 'string',
					default: '',
					placeholder: 'e.g. since',
				},
				{ displayName: 'Value', name: 'value', type: 'string', default: '' },
			],
		},
	],
};

/** nodes-base's `updateDisplayOptions` (not importable): resource and operation on each field. */
export function updateDisplayOptions(
	displayOptions: IDisplayOptions,
	properties: INodeProperties[],
): INodeProperties[] {
	return properties.map((property) => {
		const own = property.displayOptions ?? {};
		const merged: IDisplayOptions = { ...own };
		if (own.show || displayOptions.show) merged.show = { ...own.show, ...displayOptions.show };
		if (own.hide || displayOptions.hide) merged.hide = { ...own.hide, ...displayOptions.hide };
		return { ...property, displayOptions: merged };
	});
}
