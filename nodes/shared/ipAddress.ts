/** IP address literals, pure: where an address points. No lookup: a host name is not an address. */

/** A loopback host as the URL parser gives it: 127.0.0.0/8, [::1] or localhost. */
export function isLoopbackHost(hostname: string): boolean {
	const host = hostname.toLowerCase();
	if (host === 'localhost' || host === '[::1]' || host === '::1') return true;
	return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Where an address points: only `public` is a place a media file may come from. */
type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'reserved';

function ipv4Class(octets: number[]): AddressClass {
	const [a, b] = octets;
	if (a === 0) return 'unspecified'; // 0.0.0.0/8 ("this network"; 0.0.0.0 reaches loopback on Linux)
	if (a === 127) return 'loopback';
	if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
	if (a === 100 && b >= 64 && b <= 127) return 'private'; // 100.64.0.0/10, carrier-grade NAT
	if (a === 169 && b === 254) return 'link-local'; // cloud metadata services live here
	if (a >= 224) return 'reserved'; // multicast, 240/4 and broadcast
	if ((a === 192 && b === 0 && octets[2] === 0) || (a === 198 && (b === 18 || b === 19)))
		return 'reserved';
	return 'public';
}

function parseIpv4(text: string): number[] | undefined {
	const parts = text.split('.');
	if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part))) return undefined;
	const octets = parts.map(Number);
	return octets.every((octet) => octet <= 255) ? octets : undefined;
}

function parseIpv6(text: string): number[] | undefined {
	let value = text
		.replace(/^\[|\]$/g, '')
		.replace(/%.*$/, '')
		.toLowerCase();
	const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(value);
	if (dotted) {
		const octets = parseIpv4(dotted[2]);
		if (!octets) return undefined;
		value = `${dotted[1]}${((octets[0] << 8) | octets[1]).toString(16)}:${((octets[2] << 8) | octets[3]).toString(16)}`;
	}
	const halves = value.split('::');
	if (halves.length > 2) return undefined;
	const groups = (half: string) => (half === '' ? [] : half.split(':'));
	const head = groups(halves[0]);
	const tail = halves.length === 2 ? groups(halves[1]) : [];
	const missing = 8 - head.length - tail.length;
	if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1))
		return undefined;
	const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
	if (!all.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined;
	return all.map((group) => parseInt(group, 16));
}

/** The class of an IP literal, or undefined for a host name; IPv6 carrying IPv4 takes its class. */
export function ipAddressClass(address: string): AddressClass | undefined {
	const v4 = parseIpv4(address);
	if (v4) return ipv4Class(v4);
	const v6 = parseIpv6(address);
	if (!v6) return undefined;
	const embeddedV4 = [v6[6] >> 8, v6[6] & 0xff, v6[7] >> 8, v6[7] & 0xff];
	const firstFiveZero = v6.slice(0, 5).every((group) => group === 0);
	if (firstFiveZero && v6[5] === 0xffff) return ipv4Class(embeddedV4);
	if (v6[0] === 0x64 && v6[1] === 0xff9b && v6.slice(2, 6).every((group) => group === 0))
		return ipv4Class(embeddedV4);
	if (firstFiveZero && v6[5] === 0) {
		if (v6[6] === 0 && v6[7] === 0) return 'unspecified';
		if (v6[6] === 0 && v6[7] === 1) return 'loopback';
		return ipv4Class(embeddedV4);
	}
	// ::ffff:0:a.b.c.d (IPv4-translated, ::ffff:0:0/96) carries an IPv4 address too.
	if (v6.slice(0, 4).every((group) => group === 0) && v6[4] === 0xffff && v6[5] === 0)
		return ipv4Class(embeddedV4);
	// 2002::/16 (6to4) carries its IPv4 address in the next 32 bits.
	if (v6[0] === 0x2002) return ipv4Class([v6[1] >> 8, v6[1] & 0xff, v6[2] >> 8, v6[2] & 0xff]);
	// 64:ff9b:1::/48, NAT64 for local use: translated inside a private network.
	if (v6[0] === 0x64 && v6[1] === 0xff9b && v6[2] === 0x1) return 'private';
	if ((v6[0] & 0xfe00) === 0xfc00) return 'private'; // fc00::/7, unique local
	if ((v6[0] & 0xffc0) === 0xfe80) return 'link-local'; // fe80::/10
	if ((v6[0] & 0xffc0) === 0xfec0) return 'private'; // fec0::/10, site-local (deprecated, still routed inside)
	if ((v6[0] & 0xff00) === 0xff00) return 'reserved'; // multicast
	// 2001:db8::/32 documentation, 2001::/32 Teredo, 100::/64 discard-only.
	if (v6[0] === 0x2001 && (v6[1] === 0x0db8 || v6[1] === 0)) return 'reserved';
	if (v6[0] === 0x100 && v6.slice(1, 4).every((group) => group === 0)) return 'reserved';
	return 'public';
}
