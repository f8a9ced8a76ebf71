// The pure checks behind Media → Download: where a media file may come from, and the name and
// type it is stored under. Literal addresses and names only: nothing here opens a connection.
import type { IExecuteFunctions, INode } from 'n8n-workflow';

import { checkMediaTarget } from '../../nodes/shared/mediaDownload';
import {
	downloadLimits,
	mediaAddressProblem,
	mediaUrlProblem,
	safeFileName,
	storedMimeType,
} from '../../nodes/shared/mediaPolicy';
import { ipAddressClass } from '../../nodes/shared/ipAddress';

const PUBLIC_BASE = new URL('https://api.example.com/');
const LOOPBACK_BASE = new URL('http://127.0.0.1:4010/');

describe('ipAddressClass', () => {
	it.each([
		['8.8.8.8', 'public'],
		['1.1.1.1', 'public'],
		['172.32.0.1', 'public'],
		['100.128.0.1', 'public'],
		['2606:4700::1111', 'public'],
		['127.0.0.1', 'loopback'],
		['127.255.1.2', 'loopback'],
		['::1', 'loopback'],
		['[::1]', 'loopback'],
		['10.1.2.3', 'private'],
		['172.16.0.1', 'private'],
		['172.31.255.255', 'private'],
		['192.168.0.10', 'private'],
		['100.64.0.1', 'private'],
		['100.127.255.254', 'private'],
		['fc00::1', 'private'],
		['fd12:3456::1', 'private'],
		['169.254.169.254', 'link-local'],
		['fe80::1', 'link-local'],
		['febf::1', 'link-local'],
		['0.0.0.0', 'unspecified'],
		['::', 'unspecified'],
		['::ffff:10.0.0.1', 'private'],
		['::ffff:7f00:1', 'loopback'],
		['::ffff:8.8.8.8', 'public'],
		['64:ff9b::a9fe:a9fe', 'link-local'],
		['224.0.0.1', 'reserved'],
		['255.255.255.255', 'reserved'],
		['ff02::1', 'reserved'],
		// Security review 2, item 7: forms that carried a private address through on 2458c7e.
		['::ffff:0:a00:1', 'private'], // IPv4-translated 10.0.0.1
		['::ffff:0:7f00:1', 'loopback'], // IPv4-translated 127.0.0.1
		['2002:a00:1::1', 'private'], // 6to4 of 10.0.0.1
		['2002:7f00:1::', 'loopback'], // 6to4 of 127.0.0.1
		['2002:808:808::1', 'public'], // 6to4 of 8.8.8.8
		['64:ff9b:1::a00:1', 'private'], // NAT64 for local use
		['fec0::1', 'private'], // site-local
		['2001:db8::1', 'reserved'], // documentation
		['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], // Teredo
		['100::1', 'reserved'], // discard-only
	])('%s is %s', (address, kind) => {
		expect(ipAddressClass(address)).toBe(kind);
	});

	it.each(['example.com', 'localhost', '1.2.3', '256.1.1.1', '1:2:3', 'fe80::1::2', ''])(
		'%j is not an IP address',
		(text) => {
			expect(ipAddressClass(text)).toBeUndefined();
		},
	);
});

describe('mediaUrlProblem (the URL as text)', () => {
	it.each([
		['https://media.example.net/f?sig=1', PUBLIC_BASE],
		['https://93.184.216.34/f', PUBLIC_BASE],
		['http://media.example.net/f', LOOPBACK_BASE],
		['https://media.example.net/f', LOOPBACK_BASE],
		['http://127.0.0.1:4011/media/1', LOOPBACK_BASE],
		['http://localhost:4011/media/1', LOOPBACK_BASE],
	])('%s is allowed (Base URL %s)', (url, base) => {
		expect(mediaUrlProblem(new URL(url), base)).toBeUndefined();
	});

	it.each([
		['data:text/plain,hi', PUBLIC_BASE, /scheme is "data:"/],
		['javascript:alert(1)', PUBLIC_BASE, /scheme is "javascript:"/],
		['ftp://media.example.net/f', PUBLIC_BASE, /scheme is "ftp:"/],
		['file:///etc/passwd', LOOPBACK_BASE, /scheme is "file:"/],
		['http://media.example.net/f', PUBLIC_BASE, /http while the Base URL is https/],
		['https://127.0.0.1/f', PUBLIC_BASE, /loopback/],
		['https://[::1]/f', PUBLIC_BASE, /loopback/],
		['https://localhost/f', PUBLIC_BASE, /this machine/],
		['https://a.localhost/f', PUBLIC_BASE, /this machine/],
		['https://localhost.localdomain/f', PUBLIC_BASE, /this machine/],
		['https://ip6-localhost/f', PUBLIC_BASE, /this machine/],
		['https://ip6-loopback./f', PUBLIC_BASE, /this machine/],
		['https://2130706433/f', PUBLIC_BASE, /127\.0\.0\.1 is a loopback/], // WHATWG URL: decimal IPv4
		['https://0x7f.1/f', PUBLIC_BASE, /127\.0\.0\.1 is a loopback/],
		['https://10.0.0.5/f', PUBLIC_BASE, /private/],
		['http://10.0.0.5/f', LOOPBACK_BASE, /private/], // loopback base allows loopback only
		['http://192.168.1.1/f', LOOPBACK_BASE, /private/],
		['http://169.254.169.254/latest/meta-data', LOOPBACK_BASE, /link-local/],
		['http://[fe80::1]/f', LOOPBACK_BASE, /link-local/],
		['http://[fd00::1]/f', LOOPBACK_BASE, /private/],
		['http://100.64.1.1/f', LOOPBACK_BASE, /private/],
		['http://0.0.0.0:4011/f', LOOPBACK_BASE, /unspecified/],
		['http://[::]:4011/f', LOOPBACK_BASE, /unspecified/],
		['https://user:pw@media.example.net/f', PUBLIC_BASE, /user name or password/],
	])('%s is refused (Base URL %s)', (url, base, reason) => {
		expect(mediaUrlProblem(new URL(url), base)).toMatch(reason);
	});
});

describe('mediaAddressProblem (a resolved address)', () => {
	it('public addresses pass, whatever the Base URL', () => {
		expect(mediaAddressProblem('93.184.216.34', PUBLIC_BASE)).toBeUndefined();
		expect(mediaAddressProblem('2606:4700::1111', LOOPBACK_BASE)).toBeUndefined();
	});
	it('loopback passes only with a loopback Base URL', () => {
		expect(mediaAddressProblem('127.0.0.1', LOOPBACK_BASE)).toBeUndefined();
		expect(mediaAddressProblem('::1', LOOPBACK_BASE)).toBeUndefined();
		expect(mediaAddressProblem('127.0.0.1', PUBLIC_BASE)).toMatch(/loopback/);
	});
});

/**
 * checkMediaTarget resolves a host name through n8n's resolver (helpers.getSecureEgressFilter;
 * the scanner allows no DNS import) and checks every address. Here that resolver is a table,
 * so private names can be tested without DNS traffic; `connections` stays empty because the
 * check never connects.
 */
describe('checkMediaTarget (host names resolved before any connection)', () => {
	const node = { name: 'Business Messaging' } as INode;
	function contextResolving(table: Record<string, string[]>) {
		const lookups: string[] = [];
		const connections: string[] = [];
		const context = {
			getNode: () => node,
			helpers: {
				getSecureEgressFilter: () => ({
					createSecureLookup:
						() =>
						(
							hostname: string,
							_options: unknown,
							callback: (
								error: Error | null,
								addresses: Array<{ address: string; family: number }>,
							) => void,
						) => {
							lookups.push(hostname);
							const addresses = table[hostname];
							if (!addresses)
								callback(
									Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
										code: 'ENOTFOUND',
									}),
									[],
								);
							else
								callback(
									null,
									addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
								);
						},
				}),
				httpRequest: async (options: { url: string }) => {
					connections.push(options.url);
					throw new Error('no request expected');
				},
			},
		} as unknown as IExecuteFunctions;
		return { context, lookups, connections };
	}
	const check = async (context: IExecuteFunctions, url: string, base = PUBLIC_BASE) =>
		await checkMediaTarget.call(context, new URL(url), base, { operation: 'Media → Download' });

	it('a name resolving to public addresses passes', async () => {
		const { context, lookups } = contextResolving({
			'media.example.net': ['93.184.216.34', '2606:2800::1'],
		});
		await expect(check(context, 'https://media.example.net/f')).resolves.toBeUndefined();
		expect(lookups).toEqual(['media.example.net']);
	});

	it.each([
		['a private address', ['10.20.30.40'], /resolves to 10\.20\.30\.40: a private address/],
		[
			'one private among public ones',
			['93.184.216.34', '192.168.0.7'],
			/resolves to 192\.168\.0\.7/,
		],
		['the metadata address', ['169.254.169.254'], /link-local/],
		['loopback (public Base URL)', ['127.0.0.1'], /loopback/],
		['an IPv6 unique-local address', ['fd00::7'], /private/],
	])('a name resolving to %s is refused, nothing connected', async (_label, addresses, reason) => {
		const { context, connections } = contextResolving({ 'media.evil.example': addresses });
		const refusal = check(context, 'https://media.evil.example/f');
		await expect(refusal).rejects.toThrow(
			/^Media → Download: refused to fetch the media from https:\/\/media\.evil\.example: /,
		);
		await expect(refusal).rejects.toThrow(reason);
		expect(connections).toEqual([]);
	});

	it('a name that does not resolve is refused with the reason', async () => {
		const { context } = contextResolving({});
		const refusal = check(context, 'https://nowhere.example/f');
		await expect(refusal).rejects.toThrow(
			/refused to fetch the media from https:\/\/nowhere\.example: its host could not be resolved/,
		);
		await expect(refusal).rejects.toMatchObject({
			description: expect.stringMatching(
				/^The resolver said: getaddrinfo ENOTFOUND nowhere\.example\./,
			),
		});
	});

	it('an IP literal is judged without a lookup', async () => {
		const { context, lookups } = contextResolving({});
		await expect(check(context, 'https://10.0.0.1/f')).rejects.toThrow(/private/);
		expect(lookups).toEqual([]);
	});
});

describe('downloadLimits', () => {
	const node = { name: 'Business Messaging' } as INode;
	it('defaults: 100 MB, 300 s', () => {
		expect(downloadLimits(node, {})).toEqual({ maxFileSizeMb: 100, timeoutSeconds: 300 });
		expect(downloadLimits(node, { maxFileSize: '', downloadTimeout: null })).toEqual({
			maxFileSizeMb: 100,
			timeoutSeconds: 300,
		});
	});
	it.each([0, -1, 'abc', Number.NaN, Infinity, {}])('refuses %p', (value) => {
		expect(() => downloadLimits(node, { maxFileSize: value })).toThrow(
			/^Max File Size \(MB\) must be a number above 0/,
		);
		expect(() => downloadLimits(node, { downloadTimeout: value })).toThrow(
			/^Download Timeout \(Seconds\) must be a number above 0/,
		);
	});
});

describe('safeFileName', () => {
	it.each([
		['photo.png', 'photo.png'],
		['in\r\nvoice\u0000.pdf', 'invoice.pdf'],
		['a\u0085b\u2028c.txt', 'abc.txt'],
		['../../etc/passwd', '_.._etc_passwd'],
		['C:\\Windows\\x.exe', 'C:_Windows_x.exe'],
		['.htaccess', 'htaccess'],
		['  spaced.txt  ', 'spaced.txt'],
		['', '123'],
		['\r\n\u0000', '123'],
		['..', '123'],
		['Ünïcödé 😀.jpg', 'Ünïcödé 😀.jpg'],
	])('%j → %j', (sent, expected) => {
		expect(safeFileName(sent, '123')).toBe(expected);
	});

	it('caps at 200 characters and keeps the extension', () => {
		const name = safeFileName(`${'a'.repeat(1000)}.jpeg`, '1');
		expect(name).toHaveLength(200);
		expect(name.endsWith('.jpeg')).toBe(true);
	});

	it('counts characters, not UTF-16 units: an emoji is never cut in half', () => {
		const name = safeFileName('😀'.repeat(300), '1');
		expect(Array.from(name)).toHaveLength(200);
		expect(name).toBe('😀'.repeat(200));
	});

	it('an undefined name falls back to the media id', () => {
		expect(safeFileName(undefined, '4567')).toBe('4567');
	});
});

describe('storedMimeType', () => {
	it.each([
		['image/png', 'image/png'],
		['IMAGE/JPEG', 'image/jpeg'],
		['application/pdf; name=x', 'application/pdf'],
		['text/plain; charset=utf-8', 'text/plain'],
		[undefined, 'application/octet-stream'],
		['', 'application/octet-stream'],
	])('%j is stored as %s, nothing to report', (sent, stored) => {
		expect(storedMimeType(sent)).toEqual({ mimeType: stored });
	});

	it.each([
		'text/html',
		'TEXT/HTML; charset=utf-8',
		'application/xhtml+xml',
		'image/svg+xml',
		'text/javascript',
		'application/javascript',
		'application/ecmascript',
		'text/xml',
		'application/xml',
		'application/rss+xml',
		'not a type',
		'text/html\u0000',
	])('%j is stored as application/octet-stream, the type as sent kept', (sent) => {
		expect(storedMimeType(sent)).toEqual({
			mimeType: 'application/octet-stream',
			mimeTypeAsSent: sent,
		});
	});
});
