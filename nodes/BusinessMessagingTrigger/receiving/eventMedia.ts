/**
 * Download Media for the trigger: an inbound event's media file attached as binary data, or
 * the reason there is none. Never fails the event: a failed download is emitted without the file.
 */
import type {
	IBinaryKeyData,
	IDataObject,
	ITriggerFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';

import { downloadMedia } from '../../shared/mediaDownload';
import { withReplyWindow } from '../../shared/replyWindow';
import type { TriggerOptions } from '../options';
import type { EventEnvelope } from './envelope';

const LOG_PREFIX = 'Business Messaging Trigger';

/** The event's item with its media file attached, or with the reason there is none (the webhook, and recovered messages). */
export async function attachMedia(
	this: IWebhookFunctions | ITriggerFunctions,
	envelope: EventEnvelope,
	options: TriggerOptions,
): Promise<{ json: IDataObject; binary?: IBinaryKeyData }> {
	const json: IDataObject = withReplyWindow({ ...(envelope as IDataObject) });
	const data = envelope.data;
	if (envelope.event === 'message.echo') {
		if (data.media_id !== null && data.media_id !== undefined) {
			json.media_download = {
				downloaded: false,
				reason:
					'Echo media cannot be downloaded: the platform relays only its metadata (media_id, media_mime).',
			};
		}
		return { json };
	}
	if (envelope.event !== 'message.inbound') return { json };

	const mediaUrl = data.media_url;
	if (typeof mediaUrl !== 'string' || mediaUrl.trim() === '') {
		const reason =
			data.media_id === null || data.media_id === undefined || data.media_id === ''
				? 'The message has no media (media_id and media_url are null).'
				: 'media_url is null: the media is not hosted (yet), or media hosting is disabled for the account. Nothing was downloaded.';
		json.media_download = { downloaded: false, reason };
		return { json };
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
		return { json, binary: { [options.binaryPropertyName]: binary } };
	} catch (error) {
		const reason = (error as Error).message || 'the download failed';
		this.logger.warn(
			`${LOG_PREFIX}: media download failed, the event is emitted without the file: ${reason}`,
		);
		json.media_download = { downloaded: false, reason };
		return { json };
	}
}
