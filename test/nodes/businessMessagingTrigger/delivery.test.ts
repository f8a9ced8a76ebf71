// The trigger behind a real HTTP server, activated against the sandbox and fed by the
// sandbox's own signed webhook deliveries (its control API's inbound, echo and status).
import type { INodeExecutionData } from 'n8n-workflow';

import type { ServedWebhook, WebhookHarness, WebhookReceiveResult } from '../../harness';
import { MEDIA_RETENTION_SECONDS } from '../../sandbox';
import { CONTACT, inboundEnvelope, signedRequest, useSandbox } from '../../support';
import {
	api,
	asEmitted,
	control,
	registerForeign,
	servedTrigger,
	trigger,
	type Json,
	type ServedTrigger,
	storedSecret,
} from './helpers';

/** Reset after each test's servers are closed (below). */
const sb = useSandbox({ reset: 'never' });

interface Served {
	harness: WebhookHarness;
	served: ServedWebhook;
	/** What each request the server got produced (workflowData = the execution n8n would start). */
	results: WebhookReceiveResult[];
}

const open: ServedTrigger[] = [];
afterEach(async () => {
	jest.restoreAllMocks();
	await Promise.all(open.splice(0).map(async (served) => await served.close()));
	sb.reset();
});

async function served(
	parameters: Record<string, unknown> = {},
	options: Parameters<typeof trigger>[2] = {},
): Promise<Served> {
	const running = await servedTrigger(sb, parameters, options);
	open.push(running);
	return { harness: running.harness, served: running.served, results: running.results };
}

const number = () => sb.numbers[0].phone_number_id;

function lastDelivery(): Json {
	const { deliveries } = sb.state();
	return deliveries[deliveries.length - 1];
}

function onlyItem(result: WebhookReceiveResult, output = 0): INodeExecutionData {
	const items = result.workflowData?.[output];
	expect(items).toHaveLength(1);
	return items![0];
}

/** The one item the execution webhook() started passes on, once the trigger's execute() ran (Download Media happens there). */
async function ranItem(
	harness: WebhookHarness,
	result: WebhookReceiveResult,
): Promise<INodeExecutionData> {
	const outputs = await harness.execute(result.workflowData ?? []);
	expect(outputs.flat()).toHaveLength(1);
	return outputs.flat()[0];
}

async function sendReply(): Promise<string> {
	const reply = await api(sb, 'POST', '/v1/messages/reply', {
		to: CONTACT,
		text: 'thanks',
		from: number(),
	});
	expect(reply.status).toBe(201);
	return reply.body.id as string;
}

describe('real deliveries from the sandbox', () => {
	it('inbound: delivered (200), one execution with the event byte-for-byte as the service sent it', async () => {
		const { served: server, results } = await served();
		expect(sb.state().webhook.url).toBe(server.url);

		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'hello',
		});
		expect(sent.status).toBe(201);
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });

		const delivery = lastDelivery();
		const item = onlyItem(results[0]);
		expect(item.json).toEqual(asEmitted(JSON.parse(delivery.body)));
		expect(item.json).toMatchObject({
			event: 'message.inbound',
			data: { text: 'hello', number: number() },
		});
		expect(item.binary).toBeUndefined();
	});

	it('echo with the default events: acknowledged (delivered, 200) but no execution', async () => {
		const { results } = await served();
		const sent = await control(sb, 'POST', '/echo', {
			to: CONTACT,
			number: number(),
			text: 'from the app',
		});
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		expect(results[0].workflowData).toBeUndefined();
	});

	it('inbound, status and echo on separate outputs', async () => {
		const { results } = await served({
			events: ['message.inbound', 'message.status', 'message.echo'],
			separateOutputs: true,
		});
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'hi',
		});
		const id = await sendReply();
		const status = await control(sb, 'POST', '/status', { id, status: 'delivered' });
		expect(status.body.delivery).toMatchObject({ delivered: true, status: 200 });
		await control(sb, 'POST', '/echo', { to: CONTACT, number: number(), text: 'from the app' });

		expect(results.map((r) => r.workflowData?.map((output) => output.length))).toEqual([
			[1, 0, 0],
			[0, 1, 0],
			[0, 0, 1],
		]);
		expect(onlyItem(results[1], 1).json).toMatchObject({
			event: 'message.status',
			data: { id, status: 'delivered', error: null },
		});
		expect(onlyItem(results[2], 2).json).toMatchObject({
			event: 'message.echo',
			data: { text: 'from the app' },
		});
	});

	it('status filter: an unlisted status is acknowledged, the listed one runs', async () => {
		const { results } = await served({
			events: ['message.status'],
			options: { statuses: 'failed' },
		});
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'hi',
		});
		const id = await sendReply();
		expect(
			(await control(sb, 'POST', '/status', { id, status: 'delivered' })).body.delivery.delivered,
		).toBe(true);
		expect(
			(await control(sb, 'POST', '/status', { id, status: 'failed' })).body.delivery.delivered,
		).toBe(true);
		const runs = results.filter((r) => r.workflowData !== undefined);
		expect(runs).toHaveLength(1);
		expect(onlyItem(runs[0]).json).toMatchObject({
			data: { status: 'failed', error: { code: 'undeliverable' } },
		});
	});

	it('receiving number filter with the second number of the account', async () => {
		const { results } = await served({ options: { numbers: sb.numbers[1].phone_number_id } });
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: sb.numbers[0].phone_number_id,
			text: 'a',
		});
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: sb.numbers[1].phone_number_id,
			text: 'b',
		});
		expect(results.map((r) => r.workflowData !== undefined)).toEqual([false, true]);
	});

	it('a captured delivery replayed five minutes later is rejected', async () => {
		const { harness } = await served();
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'hello',
		});
		const delivery = lastDelivery();
		const replay = {
			headers: { 'content-type': 'application/json', 'x-service-signature': delivery.signature },
			rawBody: Buffer.from(delivery.body),
		};
		const now = Date.now();
		jest.spyOn(Date, 'now').mockReturnValue(now + 301_000);
		const answer = await harness.receive(replay);
		expect(answer.status).toBe(401);
		expect(answer.workflowData).toBeUndefined();
	});

	it('service clock an hour ahead: deliveries are refused (401) and the service logs the failure', async () => {
		await served();
		sb.advanceClock(3600);
		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'hi',
		});
		expect(sent.body.delivery).toMatchObject({ delivered: false, status: 401 });
		const logs = await api(sb, 'GET', '/v1/logs?category=webhook');
		expect(logs.body.data[0]).toMatchObject({
			success: false,
			status_code: 401,
			reason: 'HTTP 401',
		});
	});

	it('after deactivation nothing is delivered', async () => {
		const { harness, results } = await served();
		await harness.deactivate();
		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'hi',
		});
		expect(sent.body.delivery).toMatchObject({ delivered: false, reason: 'no webhook registered' });
		expect(results).toHaveLength(0);
	});

	it('a test listener refused while production is active: production keeps receiving', async () => {
		const production = await served();
		const test = await trigger(
			sb,
			{},
			{
				webhookId: production.harness.node.webhookId,
				isTest: true,
				staticData: { ...production.harness.staticData },
			},
		);
		await expect(test.activate()).rejects.toThrow(/This workflow is active/);

		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'still here',
		});
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });
		expect(onlyItem(production.results[0]).json).toMatchObject({ data: { text: 'still here' } });
	});

	it('after a take-over the former receiver no longer gets events and the trigger does', async () => {
		await registerForeign(sb);
		const { results } = await served({ options: { takeOver: true } });
		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'x',
		});
		expect(sent.body.delivery.delivered).toBe(true);
		expect(results[0].workflowData).toBeDefined();
	});
});

describe('media', () => {
	const PNG = Buffer.from(
		'89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489',
		'hex',
	);

	it('Download Media: the file is attached as binary; the signed URL is fetched without the key', async () => {
		const { harness, results } = await served({ options: { downloadMedia: true } });
		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			media: { mime: 'image/png', data_base64: PNG.toString('base64'), filename: 'photo.png' },
		});
		expect(sent.body.delivery).toMatchObject({ delivered: true, status: 200 });

		const item = await ranItem(harness, results[0]);
		const { event, data, timestamp } = JSON.parse(lastDelivery().body);
		expect(item.json).toEqual({
			...asEmitted({ event, data, timestamp }),
			media_download: {
				downloaded: true,
				media_id: data.media_id,
				binary_field: 'data',
				file_name: 'photo.png',
				mime_type: 'image/png',
			},
		});
		expect(item.binary?.data).toMatchObject({ mimeType: 'image/png', fileName: 'photo.png' });
		expect(Buffer.from(item.binary!.data.data, 'base64').equals(PNG)).toBe(true);

		const { media_requests } = sb.state();
		expect(media_requests).toHaveLength(1);
		expect(media_requests[0].status).toBe(200);
		expect(media_requests[0].headers.authorization).toBeUndefined();
		expect(JSON.stringify(media_requests[0].headers)).not.toContain(sb.keys.all);
	});

	it('Download Media into a chosen binary field', async () => {
		const { harness, results } = await served({
			options: { downloadMedia: true, binaryPropertyName: 'photo' },
		});
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			media: { mime: 'image/png', data_base64: PNG.toString('base64') },
		});
		const item = await ranItem(harness, results[0]);
		expect(Object.keys(item.binary ?? {})).toEqual(['photo']);
		expect(item.json.media_download).toMatchObject({ downloaded: true, binary_field: 'photo' });
	});

	it('media not hosted (media_url null): no binary, a field says why, the event is unchanged', async () => {
		const { harness, results } = await served({ options: { downloadMedia: true } });
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			media: { mime: 'image/png', data_base64: PNG.toString('base64') },
			host_media: false,
		});
		const item = await ranItem(harness, results[0]);
		expect(item.binary).toBeUndefined();
		expect(item.json.data).toEqual(JSON.parse(lastDelivery().body).data);
		expect(item.json.data).toMatchObject({ media_url: null, media_id: expect.any(String) });
		expect(item.json.media_download).toEqual({
			downloaded: false,
			reason: expect.stringMatching(/media_url is null: the media is not hosted/),
		});
		expect(sb.state().requests.filter((r) => r.path.startsWith('/v1/media'))).toHaveLength(0);
	});

	it('a text message with Download Media on: no binary, reason "no media"', async () => {
		const { harness, results } = await served({ options: { downloadMedia: true } });
		await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			text: 'just text',
		});
		expect((await ranItem(harness, results[0])).json.media_download).toEqual({
			downloaded: false,
			reason: expect.stringMatching(/has no media/),
		});
	});

	it('echo media is metadata only: nothing is downloaded', async () => {
		const { harness, results } = await served({
			events: ['message.echo'],
			options: { downloadMedia: true },
		});
		await control(sb, 'POST', '/echo', { to: CONTACT, number: number(), media_mime: 'image/jpeg' });
		const item = await ranItem(harness, results[0]);
		expect(item.binary).toBeUndefined();
		expect(item.json.data).toMatchObject({
			media_mime: 'image/jpeg',
			media_id: expect.any(String),
		});
		expect(item.json.media_download).toMatchObject({
			downloaded: false,
			reason: expect.stringMatching(/Echo media cannot be downloaded/),
		});
		expect(sb.state().media_requests).toHaveLength(0);
	});

	it('media past retention: the event is still emitted, with the reason', async () => {
		const { harness } = await served({ options: { downloadMedia: true } });
		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			media: { mime: 'image/png', data_base64: PNG.toString('base64') },
		});
		const mediaUrl = sent.body.record.media_url as string;
		sb.advanceClock(MEDIA_RETENTION_SECONDS + 60);
		const answer = await harness.receive(
			signedRequest(
				inboundEnvelope({
					media_id: sent.body.record.media_id,
					media_url: mediaUrl,
					type: 'image',
				}),
				storedSecret(harness.staticData, sb.keys.all) as string,
			),
		);
		expect(answer.status).toBe(200);
		const item = await ranItem(harness, answer);
		expect(item.binary).toBeUndefined();
		expect(item.json.media_download).toEqual({
			downloaded: false,
			reason: expect.stringMatching(/retention/),
		});
		expect(item.json.data).toMatchObject({ media_url: mediaUrl });
	});

	it('a media_url on another host is not fetched with the key', async () => {
		const { harness } = await served({ options: { downloadMedia: true } });
		const answer = await harness.receive(
			signedRequest(
				inboundEnvelope({
					media_id: 'm1',
					media_url: 'https://evil.example.com/v1/media/m1',
					type: 'image',
				}),
				storedSecret(harness.staticData, sb.keys.all) as string,
			),
		);
		const item = await ranItem(harness, answer);
		expect(item.binary).toBeUndefined();
		expect(item.json.media_download).toEqual({
			downloaded: false,
			reason: expect.stringMatching(/not a media URL of this credential's service/),
		});
	});

	it('with Download Media the service is answered when n8n stores the execution, before any download: the file is fetched in the execution', async () => {
		const { harness } = await served({ options: { downloadMedia: true } });
		const sent = await control(sb, 'POST', '/inbound', {
			from: CONTACT,
			contact_name: 'Ada',
			number: number(),
			media: { mime: 'image/png', data_base64: PNG.toString('base64') },
		});
		const answer = await harness.receive(
			signedRequest(
				inboundEnvelope({
					media_id: sent.body.record.media_id,
					media_url: sent.body.record.media_url,
					type: 'image',
				}),
				storedSecret(harness.staticData, sb.keys.all) as string,
			),
		);
		// n8n's own answer (webhookResponse), which it sends once it has stored the execution.
		expect(answer.noWebhookResponse).toBeUndefined();
		expect(answer).toMatchObject({ status: 200, body: { received: true } });
		expect(onlyItem(answer).binary).toBeUndefined();
		const mediaRequests = sb.state().media_requests.length;
		const item = await ranItem(harness, answer);
		expect(item.binary?.data).toMatchObject({ mimeType: 'image/png' });
		expect(sb.state().media_requests.length).toBe(mediaRequests + 1);
	});
});
