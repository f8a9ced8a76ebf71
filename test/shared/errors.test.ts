import { explainHttpError } from '../../nodes/shared/errors';
import { bodyAsText, serviceMessage } from '../../nodes/shared/serviceText';

const getStatus = { operation: 'Message → Get Status', scope: 'messages:read' };

describe('explainHttpError', () => {
	it('401 says the key is revoked or unknown and, in the message, where to make a new one', () => {
		const { message, description } = explainHttpError(401, { error: 'revoked' }, getStatus);
		expect(message).toMatch(/revoked or unknown \(401\): make one in the console's Keys tab/);
		expect(message).toMatch(/The service said: "revoked"$/);
		expect(description).toMatch(/Keys tab/);
		expect(description).toContain('{"error":"revoked"}');
	});

	it('403 names the scope the operation needs, and in the message to use a key with it', () => {
		const { message, description } = explainHttpError(403, {}, getStatus);
		expect(message).toContain('messages:read');
		expect(message).toMatch(/use a key with messages:read: make one in the console's Keys tab/);
		expect(description).toContain('Message → Get Status');
	});

	it('403 on a reply names the from number and the allowed-numbers rule', () => {
		const { message } = explainHttpError(
			403,
			{},
			{ operation: 'Message → Reply', reply: { from: '1002' } },
		);
		expect(message).toContain('"1002"');
		expect(message).toMatch(/not among the numbers the key is limited to/);
		expect(message).toMatch(/messages:send/);
		expect(message).toMatch(/Set From to one of the key's numbers \(Key → Get Many lists them\)/);
	});

	it('a refused reply without from, whose body speaks of from, says from is required', () => {
		const { message, description } = explainHttpError(
			422,
			{ error: { code: 'from_required' } },
			{
				operation: 'Message → Reply',
				reply: {},
			},
		);
		expect(message).toMatch(/From is required/);
		expect(message).toMatch(/Set From to the "number" field of the inbound event/);
		expect(description).toMatch(/"number" field/);
	});

	it('a refused reply whose body speaks of the window says it is closed and a template is needed', () => {
		const { message } = explainHttpError(
			422,
			{ error: { message: 'the 24-hour window is closed' } },
			{
				operation: 'Message → Reply',
				reply: { from: '1001' },
			},
		);
		expect(message).toMatch(/24-hour reply window is closed/);
		expect(message).toMatch(/template message/);
		expect(message).toMatch(/The service said: "the 24-hour window is closed"$/);
	});

	it('a refused reply with an unknown body still mentions the window, hedged, and shows the body', () => {
		const { message, description } = explainHttpError(409, 'nope', {
			operation: 'Message → Reply',
			reply: { from: '1001' },
		});
		expect(message).toBe(
			'The service refused the reply (409). Check To and Text; if the contact last wrote more than 24 hours ago, send a template message instead. The service said: "nope"',
		);
		expect(description).toMatch(/more than 24 hours old/);
		expect(description).toContain('nope');
	});

	it('a refused reply without from and with an unknown body names both causes, hedged', () => {
		const { message, description } = explainHttpError(
			400,
			{ error: { code: 'invalid_request', message: 'bad to' } },
			{
				operation: 'Message → Reply',
				reply: {},
			},
		);
		expect(message).toBe(
			'The service refused the reply (400). Set From (the inbound event\'s "number") if the key is limited to several numbers; if the contact last wrote more than 24 hours ago, send a template message instead. The service said: "bad to"',
		);
		expect(description).toMatch(/From was empty/);
		expect(description).toMatch(/template message/);
		expect(description).toContain('bad to');
		// A body with no sentence is not quoted in the message, but shown as it came.
		const other = explainHttpError(
			400,
			{ error: { code: 'bad_to' } },
			{ operation: 'Message → Reply', reply: {} },
		);
		expect(other.message).toMatch(/^The service refused the reply \(400\)\. Set From .* instead$/);
		expect(other.description).toContain('{"error":{"code":"bad_to"}}');
	});

	it("a refused reply leads with the service's own sentence when the body has one (e.g. text too long)", () => {
		const { message, description } = explainHttpError(
			400,
			{
				error: {
					code: 'invalid_request',
					message: 'Invalid body: text: String must contain at most 4096 character(s)',
				},
			},
			{ operation: 'Message → Reply', reply: { from: '1001' } },
		);
		expect(message).toMatch(/^The service refused the reply \(400\)\. Check To and Text/);
		expect(message).toMatch(
			/The service said: "Invalid body: text: String must contain at most 4096 character\(s\)"$/,
		);
		expect(description).toContain('"code":"invalid_request"');
	});

	it('429 says the service is limiting requests and how long to wait; a reply is not retried', () => {
		const read = explainHttpError(429, { error: { code: 'rate_limited' } }, getStatus, {
			'retry-after': '60',
		});
		expect(read.message).toBe(
			'Message → Get Status: the service is limiting requests (429). Wait 60 s and run it again, or space out the calls',
		);
		expect(read.description).toMatch(/retried up to 3 times/);
		expect(read.description).toContain('rate_limited');
		const reply = explainHttpError(429, '', {
			operation: 'Message → Reply',
			reply: { from: '1001' },
		});
		expect(reply.message).toBe(
			'Message → Reply: the service is limiting requests (429) and the reply was not sent again. Wait a moment, then send it again',
		);
		expect(reply.description).toMatch(/never retried/);
	});

	it('a 5xx on a reply says it was not sent again and to check before resending', () => {
		const { message, description } = explainHttpError(
			503,
			{ error: 'down' },
			{ operation: 'Message → Reply', reply: {} },
		);
		expect(message).toBe(
			'Message → Reply failed (503): the service had an error and the reply was not sent again. It may have gone out: check Log → Get Many (category Sends) before sending it again. The service said: "down"',
		);
		expect(description).toMatch(/may or may not have sent the reply/);
		expect(description).toContain('{"error":"down"}');
	});

	it('a closed window is recognised before a missing from', () => {
		const { message } = explainHttpError(
			422,
			{ error: { code: 'window_closed', message: 'from +1 outside 24h window' } },
			{
				operation: 'Message → Reply',
				reply: {},
			},
		);
		expect(message).toMatch(/24-hour reply window is closed/);
	});

	it('410 on media means past the retention window; 404 is hedged; both say what to do', () => {
		expect(
			explainHttpError(410, '', { operation: 'Media → Download', media: true }).message,
		).toMatch(/retention window.*Download media soon after its event arrives/);
		const notFound = explainHttpError(404, '', { operation: 'Media → Download', media: true });
		expect(notFound.message).toBe(
			"Media → Download failed (404): the service has no media with this ID. Use the media_id or media_url of an inbound event, soon after it arrives (an echo's media is never hosted)",
		);
		expect(notFound.description).toMatch(/retention window/);
	});

	it('414/431 say the address is too long, 413 that the request is too large', () => {
		expect(explainHttpError(431, '', getStatus).message).toBe(
			"Message → Get Status failed (431): the request's address is too long for the service. Shorten the ID or query value, or fix the expression that fills it",
		);
		expect(explainHttpError(414, '', getStatus).description).toMatch(
			/too long to be sent in the URL.*answered 414/,
		);
		expect(explainHttpError(413, { error: 'big' }, getStatus).message).toBe(
			'Message → Get Status failed (413): the request is too large for the service. Shorten the value sent, or fix the expression that fills it. The service said: "big"',
		);
	});

	it('a 5xx says to run it again later; the body without a sentence stays in the description', () => {
		const { message, description } = explainHttpError(500, { weird: [1, 2] }, getStatus);
		expect(message).toBe(
			"Message → Get Status failed (500): the service had an error. Run it again later; if it keeps failing, tell the service's support",
		);
		expect(description).toBe('The service answered 500: {"weird":[1,2]}');
	});

	it('another 4xx says the request was refused and to check the fields', () => {
		const { message } = explainHttpError(409, { message: 'Conflict on x' }, getStatus);
		expect(message).toBe(
			'Message → Get Status failed (409): the service refused the request. Check the node\'s fields and the expressions that fill them. The service said: "Conflict on x"',
		);
	});

	it('a redirect on a keyed request says to fix the Base URL', () => {
		expect(explainHttpError(301, '', getStatus).message).toMatch(
			/failed \(301\): the service answered with a redirect\. Set the credential's Base URL/,
		);
	});

	it("a 404 uses the operation's own advice when it has some, else names the ID and Base URL", () => {
		const body = { error: { code: 'message_not_found', message: 'No message msg_x' } };
		const generic = explainHttpError(404, body, getStatus);
		expect(generic.message).toBe(
			'Message → Get Status failed (404): the service has nothing at this address. Check the ID or value this operation reads, and that the credential\'s Base URL is the service\'s address (without /v1). The service said: "No message msg_x"',
		);
		const specific = explainHttpError(404, body, { ...getStatus, notFound: 'use the other ID' });
		expect(specific.message).toBe(
			'Message → Get Status failed (404): use the other ID. The service said: "No message msg_x"',
		);
		expect(specific.description).toContain('"message_not_found"');
	});
});

describe('serviceMessage', () => {
	it('finds the sentence in error.message, detail, message, a string error, then title', () => {
		expect(serviceMessage({ error: { code: 'x', message: ' Too  long ' } })).toBe('Too long');
		expect(serviceMessage({ message: 'm' })).toBe('m');
		expect(serviceMessage({ error: 'e' })).toBe('e');
		expect(serviceMessage({ detail: 'd' })).toBe('d');
		expect(serviceMessage({ title: 'Not Found', detail: 'No message 1' })).toBe('No message 1');
		expect(serviceMessage({ type: 'about:blank', title: 'Not Found', status: 404 })).toBe(
			'Not Found',
		);
		expect(serviceMessage({ error: { code: 'x' } })).toBeUndefined();
		expect(serviceMessage({ error: { code: 'x' }, message: 'm2' })).toBe('m2');
		expect(serviceMessage('text body')).toBe('text body');
		expect(serviceMessage(Buffer.from('from a buffer'))).toBe('from a buffer');
		expect(serviceMessage('{"detail":"json as text"}')).toBe('json as text');
		expect(serviceMessage('{"detail": broken')).toBeUndefined();
		expect(serviceMessage([{ message: 'x' }])).toBeUndefined();
		expect(serviceMessage(null)).toBeUndefined();
		expect(serviceMessage({ message: 'y'.repeat(1000) })).toHaveLength(301);
	});

	it('quotes no HTML page, no long text dump and nothing empty; keeps the quote on one line', () => {
		expect(serviceMessage('<!DOCTYPE html><html><body>Bad gateway</body></html>')).toBeUndefined();
		expect(serviceMessage('<h1>502 Bad Gateway</h1>')).toBeUndefined();
		expect(serviceMessage('x '.repeat(400))).toBeUndefined();
		expect(serviceMessage('   ')).toBeUndefined();
		expect(serviceMessage('')).toBeUndefined();
		expect(serviceMessage({ message: '  ' })).toBeUndefined();
		expect(serviceMessage('line one\n\tline two\u0007')).toBe('line one line two');
	});

	it('never quotes a key, a signing secret or a bearer token', () => {
		const said = serviceMessage({
			detail: 'Key sk_live_abcdef123456 and whsec_zzzzzzzz9 refused; got Bearer abc.def',
		});
		expect(said).not.toMatch(/abcdef123456|zzzzzzzz9|abc\.def/);
		expect(said).toContain('[redacted]');
	});
});

describe('bodyAsText', () => {
	it('keeps small bodies whole and shortens huge ones', () => {
		expect(bodyAsText(undefined)).toBe('(empty body)');
		expect(bodyAsText(Buffer.from('raw'))).toBe('raw');
		const huge = bodyAsText('x'.repeat(5000));
		expect(huge.length).toBeLessThan(2100);
		expect(huge).toMatch(/5000 chars/);
	});
});
