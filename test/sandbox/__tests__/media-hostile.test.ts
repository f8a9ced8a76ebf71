// The media host's hostile modes (CONTRACT M8), driven through the control API and read with a
// plain client (undici, no redirects followed, no decompression) so each answer is seen as sent.
import { request } from 'undici';
import { gunzipSync } from 'node:zlib';
import { useSandbox } from '../../support';
import { api, control, inbound } from './helpers';

const sb = useSandbox();
const bytes = Buffer.from('%PDF-1.4 hello');

async function signedLocation(): Promise<string> {
	const hosted = await inbound(sb, sb.numbers[0].phone_number_id, {
		media: { mime: 'application/pdf', data_base64: bytes.toString('base64'), filename: 'a.pdf' },
	});
	const pointer = await api(
		sb,
		'GET',
		`/v1/media/${hosted.body.record.media_id as string}`,
		sb.keys.all,
	);
	return pointer.headers.location as string;
}

async function get(url: string) {
	const response = await request(url);
	return {
		status: response.statusCode,
		headers: response.headers,
		body: Buffer.from(await response.body.arrayBuffer()),
	};
}

async function setMode(mode: Record<string, unknown>) {
	return await control(sb, 'POST', '/media-host/mode', mode);
}

describe('POST /_sandbox/media-host/mode', () => {
	it('redirects: that many hops on the media host, then the file', async () => {
		expect((await setMode({ kind: 'redirects', count: 2 })).status).toBe(200);
		let url = await signedLocation();
		const statuses: number[] = [];
		for (let i = 0; i < 5; i++) {
			const answer = await get(url);
			statuses.push(answer.status);
			if (answer.status !== 302) {
				expect(answer.body).toEqual(bytes);
				break;
			}
			url = new URL(answer.headers.location as string, url).toString();
		}
		expect(statuses).toEqual([302, 302, 200]);
	});

	it('redirect_loop: every answer points back at itself', async () => {
		await setMode({ kind: 'redirect_loop' });
		const url = await signedLocation();
		const answer = await get(url);
		expect(answer.status).toBe(302);
		expect(new URL(answer.headers.location as string, url).toString()).toBe(url);
	});

	it('redirect_to: one redirect to any location (another origin, an internal address, data:)', async () => {
		await setMode({ kind: 'redirect_to', location: 'http://169.254.169.254/latest/meta-data/' });
		const answer = await get(await signedLocation());
		expect(answer.status).toBe(302);
		expect(answer.headers.location).toBe('http://169.254.169.254/latest/meta-data/');
	});

	it('gzip_bomb: Content-Encoding gzip, a small body that inflates to decompressed_bytes', async () => {
		await setMode({ kind: 'gzip_bomb', decompressed_bytes: 8 * 1024 * 1024 });
		const answer = await get(await signedLocation());
		expect(answer.headers['content-encoding']).toBe('gzip');
		expect(answer.body.length).toBeLessThan(64 * 1024);
		expect(gunzipSync(answer.body).length).toBe(8 * 1024 * 1024);
	});

	it('trickle: the file at bytes_per_second', async () => {
		await setMode({ kind: 'trickle', bytes_per_second: 7 });
		const started = Date.now();
		const answer = await get(await signedLocation());
		expect(answer.body).toEqual(bytes); // 14 bytes at 7 a second: about 2 s
		expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
	});

	it("content_type and filename replace the media's own, odd characters included", async () => {
		await setMode({
			kind: 'normal',
			content_type: 'text/html; charset=utf-8',
			filename: 'a\r\nb\u0000/../c.html',
		});
		const answer = await get(await signedLocation());
		expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
		expect(answer.headers['content-disposition']).toContain(
			`filename*=UTF-8''${encodeURIComponent('a\r\nb\u0000/../c.html')}`,
		);
	});

	it('reset puts the media host back to normal; a bad mode is 400', async () => {
		await setMode({ kind: 'redirect_loop' });
		await control(sb, 'POST', '/reset');
		expect((await get(await signedLocation())).status).toBe(200);
		expect((await setMode({ kind: 'redirects' })).status).toBe(400);
		expect((await setMode({ kind: 'explode' })).status).toBe(400);
		expect((await setMode({ kind: 'normal', content_type: 'a\r\nb' })).status).toBe(400);
	});
});
