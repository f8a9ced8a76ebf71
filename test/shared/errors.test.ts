import { bodyAsText, explainHttpError, serviceMessage } from '../../nodes/shared/errors';

const getStatus = { operation: 'Message → Get Status', scope: 'messages:read' };

describe('explainHttpError', () => {
	it('401 says the key is revoked or unknown and where to make a new one', () => {
		const { message, description } = explainHttpError(401, { error: 'revoked' }, getStatus);
		expect(message).toMatch(/revoked or unknown/);
		expect(description).toMatch(/Keys tab/);
		expect(description).toContain('{"error":"revoked"}');
	});

	it('403 names the scope the operation needs', () => {
		const { message, description } = explainHttpError(403, {}, getStatus);
		expect(message).toContain('messages:read');
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
	});

	it('a refused reply with an unknown body still mentions the window, hedged, and shows the body', () => {
		const { message, description } = explainHttpError(409, 'nope', {
			operation: 'Message → Reply',
			reply: { from: '1001' },
		});
		expect(message).toBe('The service refused the reply (409)');
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
		expect(message).toBe('The service refused the reply (400): bad to');
		expect(description).toMatch(/From was empty/);
		expect(description).toMatch(/template message/);
		expect(description).toContain('bad to');
		// A body of another shape is not quoted in the message, but shown as it came.
		const other = explainHttpError(
			400,
			{ error: 'bad to' },
			{ operation: 'Message → Reply', reply: {} },
		);
		expect(other.message).toBe('The service refused the reply (400)');
		expect(other.description).toContain('{"error":"bad to"}');
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
		expect(message).toBe(
			'The service refused the reply (400): Invalid body: text: String must contain at most 4096 character(s)',
		);
		expect(description).toContain('"code":"invalid_request"');
	});

	it('429 says the service is limiting requests and how long to wait; a reply is not retried', () => {
		const read = explainHttpError(429, { error: { code: 'rate_limited' } }, getStatus, {
			'retry-after': '60',
		});
		expect(read.message).toBe(
			'Message → Get Status: the service is limiting requests (429), retry after 60 s',
		);
		expect(read.description).toMatch(/retried up to 3 times/);
		expect(read.description).toContain('rate_limited');
		const reply = explainHttpError(429, '', {
			operation: 'Message → Reply',
			reply: { from: '1001' },
		});
		expect(reply.message).toBe('Message → Reply: the service is limiting requests (429)');
		expect(reply.description).toMatch(/never retried/);
	});

	it('a 5xx on a reply says it was not sent again and to check before resending', () => {
		const { message, description } = explainHttpError(
			503,
			{ error: 'down' },
			{ operation: 'Message → Reply', reply: {} },
		);
		expect(message).toBe(
			'Message → Reply failed (503): the service had an error; the reply was not sent again',
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

	it('410 on media means past the retention window; 404 is hedged', () => {
		expect(
			explainHttpError(410, '', { operation: 'Media → Download', media: true }).message,
		).toMatch(/retention window/);
		const notFound = explainHttpError(404, '', { operation: 'Media → Download', media: true });
		expect(notFound.message).toBe('The media was not found (404)');
		expect(notFound.description).toMatch(/retention window/);
	});

	it('414/431 say the address is too long, 413 that the request is too large', () => {
		expect(explainHttpError(431, '', getStatus).message).toBe(
			"Message → Get Status failed (431): the request's address is too long for the service",
		);
		expect(explainHttpError(414, '', getStatus).description).toMatch(
			/too long to be sent in the URL.*answered 414/,
		);
		expect(explainHttpError(413, { error: 'big' }, getStatus).message).toBe(
			'Message → Get Status failed (413): the request is too large for the service',
		);
	});

	it('anything else shows the status and the body as they came', () => {
		const { message, description } = explainHttpError(500, { weird: [1, 2] }, getStatus);
		expect(message).toBe('Message → Get Status failed (500)');
		expect(description).toBe('The service answered 500: {"weird":[1,2]}');
	});
});

describe('serviceMessage', () => {
	it('finds the sentence in error.message (CONTRACT G1) or a top-level message, nowhere else', () => {
		expect(serviceMessage({ error: { code: 'x', message: ' Too  long ' } })).toBe('Too long');
		expect(serviceMessage({ message: 'm' })).toBe('m');
		expect(serviceMessage({ error: 'e' })).toBeUndefined();
		expect(serviceMessage({ detail: 'd' })).toBeUndefined();
		expect(serviceMessage({ error: { code: 'x' } })).toBeUndefined();
		expect(serviceMessage('text body')).toBeUndefined();
		expect(serviceMessage([{ message: 'x' }])).toBeUndefined();
		expect(serviceMessage(null)).toBeUndefined();
		expect(serviceMessage({ message: 'y'.repeat(1000) })).toHaveLength(301);
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
