import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { downloadMedia } from '../../../shared/mediaDownload';
import {
	DEFAULT_DOWNLOAD_TIMEOUT_SECONDS,
	DEFAULT_MAX_FILE_SIZE_MB,
	downloadLimits,
	type LimitOptions,
} from '../../../shared/mediaPolicy';
import { requireText } from '../../../shared/fields';
import { updateDisplayOptions } from '../../helpers/descriptions';

const properties: INodeProperties[] = [
	{
		displayName: 'Media ID or URL',
		name: 'media',
		type: 'string',
		required: true,
		default: '={{ $json.data?.media_url || $json.data?.media_id }}',
		placeholder: 'e.g. med_01HZX3 or https://api.example.com/v1/media/med_01HZX3',
		description:
			"A media ID, or the media_url of an inbound event (a URL of the credential's own service). By default taken from the event coming from the trigger node.",
	},
	{
		displayName: 'Put Output File in Field',
		name: 'binaryPropertyName',
		type: 'string',
		required: true,
		default: 'data',
		description: 'The name of the output binary field to put the file in',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Download Timeout (Seconds)',
				name: 'downloadTimeout',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: DEFAULT_DOWNLOAD_TIMEOUT_SECONDS,
				description:
					'The whole download (every redirect and every byte) is stopped with an error after this long',
			},
			{
				displayName: 'Max File Size (MB)',
				name: 'maxFileSize',
				type: 'number',
				typeOptions: { minValue: 0.01, numberPrecision: 2 },
				default: DEFAULT_MAX_FILE_SIZE_MB,
				description:
					'Larger files are stopped with an error as they arrive (counted after decompression), and nothing is kept',
			},
		],
	},
];

const displayOptions = { show: { resource: ['media'], operation: ['download'] } };

export const description = updateDisplayOptions(displayOptions, properties);

export async function execute(
	this: IExecuteFunctions,
	itemIndex: number,
	input: INodeExecutionData,
): Promise<INodeExecutionData> {
	const node = this.getNode();
	const binaryPropertyName = requireText(
		node,
		this.getNodeParameter('binaryPropertyName', itemIndex),
		'Put Output File in Field',
		itemIndex,
	).trim();
	const options = this.getNodeParameter('options', itemIndex, {}) as LimitOptions;
	const { mediaId, binary, mimeTypeAsSent } = await downloadMedia.call(
		this,
		this.getNodeParameter('media', itemIndex),
		{
			itemIndex,
			fieldName: 'Media ID or URL',
			operation: 'Media → Download',
			limits: downloadLimits(node, options, itemIndex),
		},
	);
	// The input item's JSON stays (a following Reply still finds data.from), the file added beside.
	return {
		json: {
			...input.json,
			media: {
				id: mediaId,
				fileName: binary.fileName,
				mimeType: binary.mimeType,
				fileSize: binary.fileSize,
				// Set when the host's type was one a browser would run (HTML, SVG, script): stored as octet-stream.
				...(mimeTypeAsSent !== undefined && { mimeTypeAsSent }),
			},
		},
		binary: { ...input.binary, [binaryPropertyName]: binary },
	};
}
