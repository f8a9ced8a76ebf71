import { request } from 'undici';
import { CONTACT, useSandbox } from '../../support';
import { api, call, control, inbound } from './helpers';

/** CONTRACT.md values, written out so that a change of the constants fails here. */
const SIGNED_URL_TTL_SECONDS = 300;
const MEDIA_RETENTION_SECONDS = 30 * 24 * 60 * 60;

const sb = useSandbox();
const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4, 5]);

async function hostImage(extra: Record<string, unknown> = {}): Promise<string> {
	const result = await inbound(sb, sb.numbers[0].phone_number_id, {
		media: { mime: 'image/png', data_base64: bytes.toString('base64'), filename: 'photo.png' },
		...extra,
	});
	return result.body.record.media_id as string;
}

async function signedLocation(mediaId: string): Promise<string> {
	const result = await api(sb, 'GET', `/v1/media/${mediaId}`, sb.keys.all);
	expect(result.status).toBe(302);
	return result.headers.location as string;
}

/** GET on the media host the way a careful client does it: no Authorization. */
async function download(url: string, headers: Record<string, string> = {}) {
	const response = await request(url, { headers });
	return {
		status: response.statusCode,
		headers: response.headers,
		body: Buffer.from(await response.body.arrayBuffer()),
	};
}

describe('GET /v1/media/{id}', () => {
	it('answers 302 to a signed URL on the other origin', async () => {
		const mediaId = await hostImage();
		const result = await api(sb, 'GET', `/v1/media/${mediaId}`, sb.keys.all);
		expect(result.status).toBe(302);
		const location = new URL(result.headers.location as string);
		expect(location.origin).toBe(sb.mediaBaseUrl);
		expect(location.origin).not.toBe(new URL(sb.baseUrl).origin);
		expect(location.pathname).toBe(`/media/${mediaId}`);
		const expires = Number(location.searchParams.get('expires'));
		expect(expires - Math.floor(sb.now().getTime() / 1000)).toBeGreaterThan(
			SIGNED_URL_TTL_SECONDS - 5,
		);
		expect(expires - Math.floor(sb.now().getTime() / 1000)).toBeLessThanOrEqual(
			SIGNED_URL_TTL_SECONDS,
		);
		expect(location.searchParams.get('signature')).toMatch(/^[0-9a-f]{64}$/);
		expect(result.body.url).toBe(result.headers.location);
	});

	it('the signed URL serves the bytes with type, length and filename', async () => {
		const location = await signedLocation(await hostImage());
		const file = await download(location);
		expect(file.status).toBe(200);
		expect(file.headers['content-type']).toBe('image/png');
		expect(file.headers['content-length']).toBe(String(bytes.length));
		expect(file.headers['content-disposition']).toContain('filename="photo.png"');
		expect(file.body.equals(bytes)).toBe(true);
	});

	it('names the file from the media id when no filename was given', async () => {
		const mediaId = (
			await inbound(sb, sb.numbers[0].phone_number_id, {
				media: { mime: 'application/pdf', data_base64: 'JVBERi0=' },
			})
		).body.record.media_id as string;
		const file = await download(await signedLocation(mediaId));
		expect(file.headers['content-disposition']).toContain(`filename="${mediaId}.pdf"`);
		expect(file.headers['content-type']).toBe('application/pdf');
	});

	it('the signed URL expires with the sandbox clock (403 url_expired)', async () => {
		const location = await signedLocation(await hostImage());
		sb.advanceClock(SIGNED_URL_TTL_SECONDS - 60);
		expect((await download(location)).status).toBe(200);
		sb.advanceClock(61);
		const expired = await download(location);
		expect(expired.status).toBe(403);
		expect(JSON.parse(expired.body.toString()).error.code).toBe('url_expired');
		// A fresh link works again.
		expect(
			(await download(await signedLocation((sb.state().media[0] as { id: string }).id))).status,
		).toBe(200);
	});

	it('refuses a wrong or missing signature, or a signature for another id (403 invalid_signature)', async () => {
		const first = new URL(await signedLocation(await hostImage()));
		const secondId = await hostImage();
		const tampered = new URL(first);
		tampered.searchParams.set('signature', '0'.repeat(64));
		const otherId = new URL(first);
		otherId.pathname = `/media/${secondId}`;
		const laterExpiry = new URL(first);
		laterExpiry.searchParams.set(
			'expires',
			String(Number(first.searchParams.get('expires')) + 3600),
		);
		const unsigned = `${sb.mediaBaseUrl}${first.pathname}`;
		for (const url of [tampered.toString(), otherId.toString(), laterExpiry.toString(), unsigned]) {
			const result = await download(url);
			expect({ url, status: result.status }).toEqual({ url, status: 403 });
			expect(JSON.parse(result.body.toString()).error.code).toBe('invalid_signature');
		}
	});

	it('past the retention window answers 410 media_expired', async () => {
		const mediaId = await hostImage();
		sb.advanceClock(MEDIA_RETENTION_SECONDS - 3600);
		expect((await api(sb, 'GET', `/v1/media/${mediaId}`, sb.keys.all)).status).toBe(302);
		sb.advanceClock(3601);
		const result = await api(sb, 'GET', `/v1/media/${mediaId}`, sb.keys.all);
		expect(result.status).toBe(410);
		expect(result.body.error.code).toBe('media_expired');
	});

	it('unknown media and media not hosted are 404', async () => {
		const unknown = await api(sb, 'GET', '/v1/media/4242', sb.keys.all);
		expect(unknown.status).toBe(404);
		expect(unknown.body.error.code).toBe('media_not_found');
		const notHosted = await hostImage({ host_media: false });
		const result = await api(sb, 'GET', `/v1/media/${notHosted}`, sb.keys.all);
		expect(result.status).toBe(404);
		expect(result.body.error.code).toBe('media_not_hosted');
	});

	it('echo media ids are metadata only: not downloadable', async () => {
		const echo = await control(sb, 'POST', '/echo', {
			to: CONTACT,
			number: sb.numbers[0].phone_number_id,
			media_mime: 'image/jpeg',
		});
		expect(echo.body.record.media_id).toEqual(expect.any(String));
		expect(
			(await api(sb, 'GET', `/v1/media/${echo.body.record.media_id}`, sb.keys.all)).status,
		).toBe(404);
	});
});

describe('media host request log', () => {
	it('records method, path and headers of every request; the API key never reaches it', async () => {
		const location = await signedLocation(await hostImage());
		await download(location, { 'x-probe': 'one' });
		await download(`${sb.mediaBaseUrl}/elsewhere`);
		const { media_requests: requests } = sb.state();
		expect(requests).toHaveLength(2);
		expect(requests[0]).toMatchObject({
			method: 'GET',
			path: location.slice(sb.mediaBaseUrl.length),
			status: 200,
		});
		expect(requests[0].headers['x-probe']).toBe('one');
		expect(requests[1]).toMatchObject({ path: '/elsewhere', status: 404 });
		for (const r of requests) expect(r.headers.authorization).toBeUndefined();
		// Also exposed over HTTP for tools outside this process.
		const state = await call(sb.baseUrl, 'GET', '/_sandbox/state');
		expect(state.body.media_requests).toHaveLength(2);
	});

	it('records an Authorization header if a client leaks it (so tests can catch that)', async () => {
		const location = await signedLocation(await hostImage());
		await download(location, { authorization: `Bearer ${sb.keys.all}` });
		expect(sb.state().media_requests[0].headers.authorization).toBe(`Bearer ${sb.keys.all}`);
	});
});
