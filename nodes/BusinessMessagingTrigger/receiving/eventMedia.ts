/** Download Media, run in execute() so that a download never holds the service's answer back. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';
import { downloadMedia } from '../../shared/mediaDownload';
import { readTriggerOptions, type TriggerOptions } from '../options';

export async function withMediaFiles(
	this: IExecuteFunctions,
	outputs: INodeExecutionData[][],
): Promise<INodeExecutionData[][]> {
	if (!outputs.some((items) => items.length > 0)) return outputs;
	const options = readTriggerOptions(this.getNodeParameter('options', 0, {}) as IDataObject);
	if (!options.downloadMedia) return outputs;
	const result: INodeExecutionData[][] = [];
	for (const items of outputs) {
		const withFiles: INodeExecutionData[] = [];
		for (const item of items) withFiles.push(await attachMedia.call(this, item, options));
		result.push(withFiles);
	}
	return result;
}

async function attachMedia(
	this: IExecuteFunctions,
	item: INodeExecutionData,
	options: TriggerOptions,
): Promise<INodeExecutionData> {
	const json: IDataObject = { ...item.json };
	const data = isPlainObject(json.data) ? json.data : {};
	if (json.event === 'message.echo') {
		if (data.media_id !== null && data.media_id !== undefined) {
			json.media_download = {
				downloaded: false,
				reason:
					'Echo media cannot be downloaded: the platform relays only its metadata (media_id, media_mime).',
			};
		}
		return { ...item, json };
	}
	if (json.event !== 'message.inbound') return item;

	const mediaUrl = data.media_url;
	if (typeof mediaUrl !== 'string' || mediaUrl.trim() === '') {
		const reason =
			data.media_id === null || data.media_id === undefined || data.media_id === ''
				? 'The message has no media (media_id and media_url are null).'
				: 'media_url is null: the media is not hosted (yet), or media hosting is disabled for the account. Nothing was downloaded.';
		json.media_download = { downloaded: false, reason };
		return { ...item, json };
	}
	try {
		const limits = options.downloadLimits;
		if ('problem' in limits) throw new Error(limits.problem);
		const { mediaId, binary, mimeTypeAsSent } = await downloadMedia.call(this, mediaUrl, {
			fieldName: 'media_url',
			operation: 'Trigger → Download Media',
			limits,
		});
		json.media_download = {
			downloaded: true,
			media_id: mediaId,
			binary_field: options.binaryPropertyName,
			file_name: binary.fileName ?? null,
			mime_type: binary.mimeType,
			...(mimeTypeAsSent !== undefined && { mime_type_as_sent: mimeTypeAsSent }),
		};
		return { ...item, json, binary: { ...item.binary, [options.binaryPropertyName]: binary } };
	} catch (error) {
		const reason = (error as Error).message || 'the download failed';
		this.logger.warn(
			`Business Messaging Trigger: media download failed, the event is emitted without the file: ${reason}`,
		);
		json.media_download = { downloaded: false, reason };
		return { ...item, json };
	}
}
