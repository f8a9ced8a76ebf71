// Media → Download against a hostile media host (the sandbox's media-host modes, CONTRACT M8),
// through the workflow harness with n8n-core's real HTTP helpers and real sockets on loopback.
// Each test names what the code before the limits did (commit 51cacdd).
import type { INodeParameters } from 'n8n-workflow';

import { errorOf, inbound, run } from '../nodes/businessMessaging/helpers';
import type { MediaHostMode, Sandbox } from '../sandbox';
import { describeWithSandbox, inboundItem } from '../support';

const DOWNLOAD = { resource: 'media', operation: 'download' };
const FILE = Buffer.alloc(2048, 0x41);

async function setMode(sandbox: Sandbox, mode: MediaHostMode): Promise<void> {
	const response = await fetch(`${sandbox.baseUrl}/_sandbox/media-host/mode`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify(mode),
	});
	if (response.status !== 200)
		throw new Error(`media-host mode: ${response.status} ${await response.text()}`);
}

describeWithSandbox('Media → Download: limits against a hostile media host', (sandbox) => {
	async function download(
		parameters: INodeParameters = {},
		media: { mime?: string; filename?: string } = {},
		binaryDataMode: 'default' | 'filesystem' = 'filesystem',
	) {
		const record = await inbound(sandbox, {
			type: 'document',
			text: '',
			media: {
				mime: media.mime ?? 'application/pdf',
				data_base64: FILE.toString('base64'),
				filename: media.filename ?? 'a.pdf',
			},
		});
		return await run(
			sandbox,
			{ ...DOWNLOAD, ...parameters },
			{ inputItems: [inboundItem(record)], binaryDataMode },
		);
	}
	const mediaRequests = () => sandbox.state().media_requests;

	describe('redirects', () => {
		it("up to 3 redirects after the service's 302 are followed, each without the key", async () => {
			await setMode(sandbox, { kind: 'redirects', count: 3 });
			const result = await download();
			expect(result.error).toBeUndefined();
			expect(await result.binary('Business Messaging', 0)).toEqual(FILE);
			expect(mediaRequests().map((request) => request.status)).toEqual([302, 302, 302, 200]);
			expect(JSON.stringify(mediaRequests())).not.toContain(sandbox.keys.all);
		});

		it('a 4th redirect is refused (old: followed up to 21)', async () => {
			await setMode(sandbox, { kind: 'redirects', count: 4 });
			const error = errorOf(await download());
			expect(error.message).toBe(
				"Media → Download: the media host redirected more than 3 times. Try again later; if it keeps happening, report it to the service's support",
			);
			expect(mediaRequests()).toHaveLength(4);
		});

		it('a redirect loop stops after 4 requests (old: 88 requests)', async () => {
			await setMode(sandbox, { kind: 'redirect_loop' });
			const error = errorOf(await download());
			expect(error.message).toMatch(/redirected more than 3 times/);
			expect(mediaRequests()).toHaveLength(4);
		});

		it('a redirect to another origin gets no key: the API there answers 401', async () => {
			await setMode(sandbox, { kind: 'redirect_to', location: `${sandbox.baseUrl}/v1/ping` });
			const error = errorOf(await download());
			expect(error.message).toMatch(/media link was refused \(401\)/);
			const pings = sandbox.state().requests.filter((request) => request.path === '/v1/ping');
			expect(pings.map((request) => request.status)).toEqual([401]);
		});

		it("a host name is resolved through n8n's resolver and followed when allowed (localhost, loopback sandbox)", async () => {
			const port = new URL(sandbox.baseUrl).port;
			await setMode(sandbox, { kind: 'redirect_to', location: `http://localhost:${port}/v1/ping` });
			const error = errorOf(await download());
			expect(error.message).toMatch(/media link was refused \(401\)/);
			expect(
				sandbox.state().requests.filter((request) => request.path === '/v1/ping'),
			).toHaveLength(1);
		});

		it.each([
			['a private address', 'http://10.0.0.1/file', /its address 10\.0\.0\.1 is a private address/],
			[
				'the cloud metadata address',
				'http://169.254.169.254/latest/meta-data/',
				/169\.254\.169\.254 is a link-local address/,
			],
			['a CGNAT address', 'http://100.64.0.1/', /100\.64\.0\.1 is a private address/],
			['an IPv6 unique-local address', 'http://[fd00::1]/', /fd00::1\] is a private address/],
			['an IPv4-mapped private address', 'http://[::ffff:192.168.1.1]/', /is a private address/],
			[
				'0.0.0.0 (reaches loopback on Linux)',
				'http://0.0.0.0:9/',
				/0\.0\.0\.0 is an unspecified address/,
			],
			['a data: URL', 'data:text/plain;base64,SGVsbG8=', /scheme is "data:"/],
			['a file: URL', 'file:///etc/passwd', /scheme is "file:"/],
			['a URL with a password', 'http://user:pass@127.0.0.1:9/', /user name or password/],
		])('a redirect to %s is refused before any connection', async (_label, location, reason) => {
			await setMode(sandbox, { kind: 'redirect_to', location });
			const error = errorOf(await download());
			expect(error.message).toMatch(/^Media → Download: refused to fetch the media from /);
			expect(error.message).toMatch(reason);
			expect(error.description).toMatch(/Nothing was requested from it/);
			// Only the first (valid) request reached the media host; the refused hop was never requested.
			expect(mediaRequests()).toHaveLength(1);
		});
	});

	describe('size', () => {
		it('a gzip bomb is cut once the decompressed bytes pass Max File Size, with little memory (old: 67 MB file, +200 MiB)', async () => {
			await setMode(sandbox, { kind: 'gzip_bomb', decompressed_bytes: 256 * 1024 * 1024 });
			global.gc?.();
			const before = process.memoryUsage().rss;
			let peak = before;
			const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
			const started = Date.now();
			const result = await download({ options: { maxFileSize: 2 } });
			clearInterval(sampler);
			const error = errorOf(result);
			expect(error.message).toBe(
				"Media → Download: the media file is larger than the Max File Size of 2 MB and was stopped. Raise Max File Size (MB) in the node's options if such a file is expected",
			);
			expect(error.description).toMatch(/counted after decompression/);
			const peakGrowthMiB = (peak - before) / 1024 / 1024;
			// Printed for the report: how fast and how much memory the cut took.
			console.log(
				`gzip bomb (256 MiB inflated): cut after ${Date.now() - started} ms, peak RSS growth ${peakGrowthMiB.toFixed(1)} MiB`,
			);
			expect(peakGrowthMiB).toBeLessThan(64);
		});

		it("the bomb is cut in n8n's default (memory) binary mode too, and a small file still arrives there", async () => {
			await setMode(sandbox, { kind: 'gzip_bomb', decompressed_bytes: 64 * 1024 * 1024 });
			expect(
				errorOf(await download({ options: { maxFileSize: 1 } }, {}, 'default')).message,
			).toMatch(/larger than the Max File Size of 1 MB/);
			await setMode(sandbox, { kind: 'normal' });
			const result = await download({}, {}, 'default');
			expect(result.error).toBeUndefined();
			expect(await result.binary('Business Messaging', 0)).toEqual(FILE);
		});

		it('a plain file over the limit is refused from its Content-Length', async () => {
			const error = errorOf(await download({ options: { maxFileSize: 0.001 } }));
			expect(error.message).toMatch(/larger than the Max File Size of 0\.001 MB/);
		});

		it('a file under the limit arrives whole', async () => {
			const result = await download({ options: { maxFileSize: 1 } });
			expect(result.error).toBeUndefined();
			expect(await result.binary('Business Messaging', 0)).toEqual(FILE);
		});

		it('an invalid limit is refused before anything is sent', async () => {
			const error = errorOf(await download({ options: { maxFileSize: -5 } }));
			expect(error.message).toMatch(/^Max File Size \(MB\) must be a number above 0/);
			expect(mediaRequests()).toHaveLength(0);
		});
	});

	describe('deadline', () => {
		it('a host trickling 1 byte/s is cut at the Download Timeout with a clear error (old: held 70 s, no error)', async () => {
			await setMode(sandbox, { kind: 'trickle', bytes_per_second: 1 });
			const started = Date.now();
			const error = errorOf(await download({ options: { downloadTimeout: 2 } }));
			const elapsed = Date.now() - started;
			console.log(`trickle: cut after ${elapsed} ms (Download Timeout 2 s)`);
			expect(error.message).toBe(
				"Media → Download: the download took longer than the Download Timeout of 2 s and was stopped. Try again later, or raise Download Timeout (Seconds) in the node's options",
			);
			expect(elapsed).toBeLessThan(5000);
		}, 15_000);
	});

	describe('file names and types as sent', () => {
		it.each([
			['CR, LF and NUL', 'in\r\nvoice\u0000.pdf', 'invoice.pdf'],
			['path separators', '../../etc/passwd', '_.._etc_passwd'],
			['Windows separators', '..\\..\\boot.ini', '_.._boot.ini'],
			['only control characters', '\r\n', undefined],
		])('a name with %s is cleaned', async (_label, sent, expected) => {
			await setMode(sandbox, { kind: 'normal', filename: sent });
			const result = await download();
			expect(result.error).toBeUndefined();
			const name = result.items[0].binary?.data.fileName;
			if (expected === undefined)
				expect(name).toMatch(/^\d+$/); // the media id
			else expect(name).toBe(expected);
			// eslint-disable-next-line no-control-regex
			expect(name).not.toMatch(/[\u0000-\u001f/\\]/);
		});

		it('a very long name is cut to 200 characters, its extension kept', async () => {
			await setMode(sandbox, { kind: 'normal', filename: `${'x'.repeat(5000)}.pdf` });
			const result = await download();
			const name = String(result.items[0].binary?.data.fileName);
			expect(name).toHaveLength(200);
			expect(name.endsWith('.pdf')).toBe(true);
		});

		it.each([
			'text/html',
			'image/svg+xml',
			'application/javascript',
			'text/html; charset=utf-8',
			'application/xhtml+xml',
			'text/xml',
		])(
			'%s is stored as application/octet-stream, the type as sent in media.mimeTypeAsSent',
			async (type) => {
				await setMode(sandbox, { kind: 'normal', content_type: type });
				const result = await download();
				expect(result.error).toBeUndefined();
				expect(result.items[0].binary?.data.mimeType).toBe('application/octet-stream');
				expect(result.items[0].json.media).toMatchObject({
					mimeType: 'application/octet-stream',
					mimeTypeAsSent: type,
				});
			},
		);

		it('an ordinary type is kept, with no mimeTypeAsSent', async () => {
			const result = await download({}, { mime: 'image/png', filename: 'p.png' });
			expect(result.items[0].binary?.data.mimeType).toBe('image/png');
			expect(result.items[0].json.media).not.toHaveProperty('mimeTypeAsSent');
		});
	});
});
