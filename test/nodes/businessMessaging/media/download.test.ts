import { MEDIA_RETENTION_SECONDS } from '../../../sandbox';
import { apiRequests, echo, errorOf, inbound, injectFault, pairedIndexes, run } from '../helpers';
import { describeWithSandbox, inboundItem } from '../../../support';
import { HarnessCredentialsHelper } from '../../../harness/credentials';

const DOWNLOAD = { resource: 'media', operation: 'download' };
const PNG = Buffer.concat([
	Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
	Buffer.alloc(4096, 7),
]);

describeWithSandbox('Media → Download', (sandbox) => {
	async function imageInbound(extra: Record<string, unknown> = {}) {
		return await inbound(sandbox, {
			type: 'image',
			text: '',
			media: { mime: 'image/png', data_base64: PNG.toString('base64'), filename: 'photo.png' },
			...extra,
		});
	}
	const mediaApiRequests = () => apiRequests(sandbox, '/v1/media/');

	it.each(['default', 'filesystem'] as const)(
		'right after the trigger needs no typing: the file as binary data (%s binary mode)',
		async (binaryDataMode) => {
			const record = await imageInbound();
			const event = inboundItem(record);
			const result = await run(sandbox, DOWNLOAD, { inputItems: [event], binaryDataMode });
			expect(result.error).toBeUndefined();
			expect(result.items).toHaveLength(1);
			const [item] = result.items;
			expect(item.binary?.data).toMatchObject({ fileName: 'photo.png', mimeType: 'image/png' });
			expect(await result.binary('Business Messaging', 0, 'data')).toEqual(PNG);
			// The event stays, so a Reply after the download still finds data.from.
			expect(item.json).toMatchObject({
				...event.json,
				media: { id: record.media_id, fileName: 'photo.png', mimeType: 'image/png' },
			});
			expect(pairedIndexes(result.items)).toEqual([0]);
		},
	);

	it('takes a bare media id, into the field asked for', async () => {
		const record = await imageInbound();
		const result = await run(sandbox, {
			...DOWNLOAD,
			media: String(record.media_id),
			binaryPropertyName: 'photo',
		});
		expect(result.error).toBeUndefined();
		expect(Object.keys(result.items[0].binary ?? {})).toEqual(['photo']);
		expect(await result.binary('Business Messaging', 0, 'photo')).toEqual(PNG);
	});

	it('reads the credential once per download, not again for the request', async () => {
		const record = await imageInbound();
		const reads = jest.spyOn(HarnessCredentialsHelper.prototype, 'getDecrypted');
		try {
			const result = await run(sandbox, DOWNLOAD, { inputItems: [inboundItem(record)] });
			expect(result.error).toBeUndefined();
			expect(reads.mock.calls.filter(([, , type]) => type === 'businessMessagingApi')).toHaveLength(
				1,
			);
		} finally {
			reads.mockRestore();
		}
	});

	it("never sends the API key to the signed URL's host", async () => {
		const record = await imageInbound();
		await run(sandbox, DOWNLOAD, { inputItems: [inboundItem(record)] });
		const { media_requests } = sandbox.state();
		expect(media_requests).toHaveLength(1);
		expect(media_requests[0].status).toBe(200);
		const headerNames = Object.keys(media_requests[0].headers).map((name) => name.toLowerCase());
		expect(headerNames).not.toContain('authorization');
		expect(JSON.stringify(media_requests[0].headers)).not.toContain(sandbox.keys.all);
	});

	it("media past the account's retention window: says so", async () => {
		const record = await imageInbound();
		sandbox.advanceClock(MEDIA_RETENTION_SECONDS + 60);
		const error = errorOf(await run(sandbox, DOWNLOAD, { inputItems: [inboundItem(record)] }));
		expect(error.message).toMatch(/past the account's retention window/);
		expect(sandbox.state().media_requests).toHaveLength(0);
	});

	it('a media_url of another host is refused before any request: the key stays home', async () => {
		const record = await imageInbound();
		const result = await run(sandbox, {
			...DOWNLOAD,
			media: `${sandbox.mediaBaseUrl}/v1/media/${String(record.media_id)}`,
		});
		expect(errorOf(result).message).toMatch(
			/^Media ID or URL is not a media URL of this credential's service/,
		);
		expect(mediaApiRequests()).toHaveLength(0);
		expect(sandbox.state().media_requests).toHaveLength(0);
	});

	it.each(['../console/keys', 'a/b', '..'])(
		'an id such as %j never reaches another endpoint',
		async (id) => {
			const error = errorOf(await run(sandbox, { ...DOWNLOAD, media: id }));
			expect(error.message).toMatch(
				/^Media ID or URL ".*" is not a valid ID: enter a single ID, without slashes or dot segments$/,
			);
			expect(apiRequests(sandbox)).toHaveLength(0);
		},
	);

	it('a media_url whose id hides a path is refused too', async () => {
		const error = errorOf(
			await run(sandbox, { ...DOWNLOAD, media: `${sandbox.baseUrl}/v1/media/..%2Fconsole%2Fkeys` }),
		);
		expect(error.message).toMatch(/Media ID or URL/);
		expect(apiRequests(sandbox)).toHaveLength(0);
	});

	it.each([
		[
			'empty (no media in the event)',
			{ media: '={{ $json.data?.media_url || $json.data?.media_id }}' },
			/^Media ID or URL (is empty|must be text, got null)/,
		],
		[
			'whitespace',
			{ media: '   ' },
			/^Media ID or URL is empty: enter it, or check that the expression that fills it/,
		],
		[
			'an object',
			{ media: '={{ { id: 1 } }}' },
			/^Media ID or URL must be text, got an object: check the expression that fills it/,
		],
		[
			'an empty output field',
			{ binaryPropertyName: ' ' },
			/^Put Output File in Field is empty: enter it, or check that the expression that fills it/,
		],
	])('%s is refused, naming the field', async (_label, parameters, message) => {
		const textOnly = await inbound(sandbox);
		const error = errorOf(
			await run(sandbox, { ...DOWNLOAD, ...parameters }, { inputItems: [inboundItem(textOnly)] }),
		);
		expect(error.message).toMatch(message);
		expect(mediaApiRequests()).toHaveLength(0);
	});

	it('survives a transient fault on GET /v1/media/{id}', async () => {
		const record = await imageInbound();
		await injectFault(sandbox, { kind: 'status_500', path_prefix: '/v1/media/' });
		await injectFault(sandbox, { kind: 'reset', path_prefix: '/v1/media/' });
		const result = await run(sandbox, DOWNLOAD, { inputItems: [inboundItem(record)] });
		expect(result.error).toBeUndefined();
		expect(await result.binary('Business Messaging', 0)).toEqual(PNG);
		expect(mediaApiRequests()).toHaveLength(3);
	});

	it('a revoked key: 401 with what to do', async () => {
		const record = await imageInbound();
		const error = errorOf(
			await run(sandbox, DOWNLOAD, { key: 'revoked', inputItems: [inboundItem(record)] }),
		);
		expect(error.message).toMatch(/revoked or unknown \(401\)/);
	});

	it('continueOnFail: good and bad items, all paired, input binaries kept', async () => {
		const a = await imageInbound();
		const b = await imageInbound({
			media: {
				mime: 'application/pdf',
				data_base64: Buffer.from('%PDF-1.4').toString('base64'),
				filename: 'doc.pdf',
			},
		});
		const echoed = await echo(sandbox, { type: 'image', text: '', media_mime: 'image/jpeg' });
		const result = await run(sandbox, DOWNLOAD, {
			continueOnFail: true,
			inputItems: [
				inboundItem(a),
				{ json: { data: { media_id: 'a/b' } } },
				{ json: { data: { media_id: 'med_unknown' } } },
				inboundItem(b),
				// An echo has media metadata only: its media cannot be downloaded.
				{ json: { event: 'message.echo', data: echoed } },
			],
		});
		expect(result.error).toBeUndefined();
		expect(pairedIndexes(result.items)).toEqual([0, 1, 2, 3, 4]);
		expect(result.items[0].binary?.data.fileName).toBe('photo.png');
		expect(result.items[1].json.error).toMatch(/is not a valid ID/);
		expect(result.items[2].json.error).toMatch(/\(404\)/);
		expect(result.items[3].binary?.data).toMatchObject({
			fileName: 'doc.pdf',
			mimeType: 'application/pdf',
		});
		expect(result.items[4].json.error).toMatch(/\(404\)/);
	});
});
