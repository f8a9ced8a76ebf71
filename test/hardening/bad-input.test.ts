// Bad input on every operation of the Business Messaging node, run through the workflow harness
// against the sandbox: each refused value gets a NodeOperationError whose message names the field,
// and the sandbox saw no request at all.
//
// Decisions (README → Reliability):
// - Refused before sending: blank values of required fields (empty, whitespace, null); wrong types
//   from expressions (object, array, boolean; a number where text is required); in IDs that go into
//   the URL path (Message ID, Media ID): slashes, backslashes, dot segments, control characters,
//   numbers that are not exact (not a safe integer); media URLs that are not the credential's own
//   service or do not parse; options and limits outside their values.
// - Sent as they are: unicode IDs (percent-encoded into one path segment: they cannot change the
//   endpoint; the service answers 404 for an unknown one) and any text in a JSON body or a query
//   value (To, From, filters: a slash there cannot change the endpoint). Reply text has no limit in
//   the spec, so none is invented: a 100,000-character text is sent and the service's refusal (the
//   sandbox caps at 4,096, CONTRACT R1) comes back with its own sentence.
// - A whole number is accepted as an ID (an expression may have turned "100000000000001" into
//   100000000000001), but only when it is exact (a safe integer).
// - Operations without fields (Account → Ping, Webhook → Get) take no input to get wrong.
import type { INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { errorOf, inbound, run } from '../nodes/businessMessaging/helpers';
import { ACTION_NAME, CONTACT, inboundItem, useSandbox } from '../support';

const sandbox = useSandbox();
let event: INodeExecutionData;
let mediaEvent: INodeExecutionData;

beforeEach(async () => {
	event = inboundItem(await inbound(sandbox));
	mediaEvent = inboundItem(
		await inbound(sandbox, {
			type: 'image',
			text: '',
			media: { mime: 'image/png', data_base64: Buffer.from('png').toString('base64') },
		}),
	);
});

const apiRequests = () => sandbox.state().requests.filter((r) => r.path.startsWith('/v1'));

/** `={{ <js> }}`: the value an expression resolves to. */
const expr = (js: string) => `={{ ${js} }}`;

const HUGE = 'x'.repeat(100_000);

/** Values of the wrong type an expression can produce, with the word the message uses. */
const WRONG_TYPES: Array<[string, string, RegExp]> = [
	['an object', expr('{ id: 1 }'), /must be text, got an object/],
	['an array', expr('["a", "b"]'), /must be text, got (a list|an object)/],
	['a boolean', expr('true'), /must be text, got a boolean/],
];

const BLANKS: Array<[string, string]> = [
	['empty (expression)', expr('""')],
	['whitespace', '   '],
	['tabs and newlines', '\t\n '],
];

interface Field {
	op: string;
	field: string;
	/** The field's name as messages show it. */
	label: string;
	/** Parameters and input of a valid run, with `value` in this field. */
	build(value: unknown): { parameters: INodeParameters; inputItems?: INodeExecutionData[] };
}

const setIn = (parameters: INodeParameters, path: string[], value: unknown): INodeParameters => {
	const copy = structuredClone(parameters) as Record<string, unknown>;
	let target = copy;
	for (const key of path.slice(0, -1)) target = (target[key] ??= {}) as Record<string, unknown>;
	target[path[path.length - 1]] = value;
	return copy as INodeParameters;
};

const GET_STATUS = { resource: 'message', operation: 'getStatus' };
const REPLY = { resource: 'message', operation: 'reply' };
const GET_MANY = {
	resource: 'message',
	operation: 'getMany',
	direction: 'in',
	returnAll: false,
	limit: 10,
};
const DOWNLOAD = { resource: 'media', operation: 'download' };
const LOGS = {
	resource: 'log',
	operation: 'getMany',
	category: 'webhook',
	returnAll: false,
	limit: 10,
};
const KEYS = { resource: 'key', operation: 'getMany', returnAll: false, limit: 10 };

/** Fields that must be non-blank text (required IDs and texts). */
const REQUIRED: Field[] = [
	{
		op: 'Message → Get Status',
		field: 'messageId',
		label: 'Message ID',
		build: (v) => ({ parameters: { ...GET_STATUS, messageId: v } as INodeParameters }),
	},
	{
		op: 'Message → Reply',
		field: 'to',
		label: 'To',
		build: (v) => ({
			parameters: { ...REPLY, text: 'Hi', to: v } as INodeParameters,
			inputItems: [event],
		}),
	},
	{
		op: 'Message → Reply',
		field: 'text',
		label: 'Text',
		build: (v) => ({ parameters: { ...REPLY, text: v } as INodeParameters, inputItems: [event] }),
	},
	{
		op: 'Media → Download',
		field: 'media',
		label: 'Media ID or URL',
		build: (v) => ({
			parameters: { ...DOWNLOAD, media: v } as INodeParameters,
			inputItems: [mediaEvent],
		}),
	},
	{
		op: 'Media → Download',
		field: 'binaryPropertyName',
		label: 'Put Output File in Field',
		build: (v) => ({
			parameters: { ...DOWNLOAD, binaryPropertyName: v } as INodeParameters,
			inputItems: [mediaEvent],
		}),
	},
];

/** Optional IDs: blank means "not set"; wrong types are refused. */
const OPTIONAL: Field[] = [
	{
		op: 'Message → Reply',
		field: 'from',
		label: 'From (Phone Number ID)',
		build: (v) => ({
			parameters: { ...REPLY, text: 'Hi', from: v } as INodeParameters,
			inputItems: [event],
		}),
	},
	{
		op: 'Message → Get Many',
		field: 'filters.number',
		label: 'Filters → Number (Phone Number ID)',
		build: (v) => ({ parameters: setIn(GET_MANY, ['filters', 'number'], v) }),
	},
	{
		op: 'Message → Get Many',
		field: 'filters.contact',
		label: 'Filters → Contact',
		build: (v) => ({ parameters: setIn(GET_MANY, ['filters', 'contact'], v) }),
	},
];

/** IDs that go into the URL path. */
const PATH_IDS = REQUIRED.filter((f) => f.field === 'messageId' || f.field === 'media');

async function expectRefused(field: Field, value: unknown, message: RegExp) {
	const { parameters, inputItems } = field.build(value);
	const before = apiRequests().length;
	const result = await run(sandbox, parameters, { inputItems });
	const error = errorOf(result);
	expect(error.message.startsWith(`${field.label} `)).toBe(true);
	expect(error.message).toMatch(message);
	expect((result.nodeError(ACTION_NAME) as { name?: string } | undefined)?.name).toBe(
		'NodeOperationError',
	);
	expect(apiRequests().length - before).toBe(0);
	return error;
}

const tally = { refused: 0, sent: 0 };
afterAll(() => {
	process.stdout.write(
		`[hardening] bad input: ${tally.refused} refused before sending, ${tally.sent} sent as decided\n`,
	);
});

describe.each(REQUIRED)('$op: $label (required)', (field) => {
	it.each(BLANKS)('%s → "is empty", nothing sent', async (_label, value) => {
		await expectRefused(
			field,
			value,
			/is empty: enter it, or check that the expression that fills it resolves/,
		);
		tally.refused++;
	});

	it('null from an expression → refused, nothing sent', async () => {
		await expectRefused(
			field,
			expr('null'),
			/is empty: enter it|must be text, got null: check the expression/,
		);
		tally.refused++;
	});

	it.each(WRONG_TYPES)(
		'%s from an expression → "must be text", nothing sent',
		async (_label, value, message) => {
			await expectRefused(field, value, message);
			tally.refused++;
		},
	);
});

describe.each(REQUIRED.filter((f) => !PATH_IDS.includes(f)))(
	'$op: $label (text) given a number',
	(field) => {
		it('a number from an expression → "must be text, got a number", nothing sent', async () => {
			await expectRefused(field, expr('42'), /must be text, got a number/);
			tally.refused++;
		});
	},
);

describe.each(PATH_IDS)('$op: $label (an ID in the URL path)', (field) => {
	it.each([
		['a slash', 'a/b'],
		['a path up', '../ping'],
		['a dot segment', '..'],
		['a single dot', '.'],
		['a backslash', 'a\\b'],
		['a control character', 'a\u0000b'],
		['a newline inside', 'msg\nx'],
	])('%s → "is not a valid ID", nothing sent', async (_label, value) => {
		await expectRefused(field, value, /is not a valid ID/);
		tally.refused++;
	});

	it.each([
		['too large to be exact', expr('12345678901234567890')],
		['a fraction', expr('1.5')],
		['not finite', expr('1/0')],
		['NaN', expr('NaN')],
	])('a number %s → refused, nothing sent', async (_label, value) => {
		await expectRefused(field, value, /must be text|not an exact ID/);
		tally.refused++;
	});

	it('a unicode ID is percent-encoded into one path segment and sent; the 404 is clear', async () => {
		const id = 'msg_é✓📷';
		const { parameters, inputItems } = field.build(id);
		const result = await run(sandbox, parameters, { inputItems });
		const error = errorOf(result);
		expect(error.message).toMatch(/\(404\)/);
		expect(error.description).toContain('not_found');
		const [request] = apiRequests();
		expect(request.path).toBe(
			`${field.field === 'media' ? '/v1/media/' : '/v1/messages/'}${encodeURIComponent(id)}`,
		);
		tally.sent++;
	});

	it('a 100,000-character ID is sent (no invented limit) and the refusal is clear', async () => {
		const { parameters, inputItems } = field.build(HUGE);
		const result = await run(sandbox, parameters, { inputItems });
		const error = errorOf(result);
		// node:http's limit on the request head (16 KiB) answers 431 before any handler runs.
		expect(error.message).toBe(
			`${field.op} failed (431): the request's address is too long for the service. Shorten the ID or query value, or fix the expression that fills it`,
		);
		expect(error.message.length).toBeLessThan(300);
		expect(error.description.length).toBeLessThan(3000);
		tally.sent++;
	});

	it('a whole number is taken as its decimal text', async () => {
		const { parameters, inputItems } = field.build(expr('4242'));
		errorOf(await run(sandbox, parameters, { inputItems })); // unknown id: 404
		expect(apiRequests().map((r) => r.path)).toEqual([
			`${field.field === 'media' ? '/v1/media/' : '/v1/messages/'}4242`,
		]);
		tally.sent++;
	});
});

describe('Media → Download: media URLs', () => {
	const field = REQUIRED.find((f) => f.field === 'media') as Field;
	it.each([
		[
			'another host',
			'https://evil.example.com/v1/media/1',
			/not a media URL of this credential's service/,
		],
		[
			'another endpoint of the service',
			() => `${sandbox.baseUrl}/v1/ping`,
			/not a media URL of this credential's service/,
		],
		[
			'a dot segment after /media/',
			() => `${sandbox.baseUrl}/v1/media/../ping`,
			/not a media URL of this credential's service/,
		],
		[
			'an encoded dot segment',
			() => `${sandbox.baseUrl}/v1/media/%2e%2e`,
			/not a media URL of this credential's service/,
		],
		['an encoded slash in the id', () => `${sandbox.baseUrl}/v1/media/a%2Fb`, /is not a valid ID/],
		[
			'a broken percent-encoding',
			() => `${sandbox.baseUrl}/v1/media/%E0%A4%A`,
			/is not a valid (ID|media URL)/,
		],
		['a URL that does not parse', 'http://exa mple.com/v1/media/1', /is not a valid media URL/],
		['a URL with no host', 'http:///v1/media/1', /is not a (valid )?media URL/],
	])('%s → refused, nothing sent', async (_label, value, message) => {
		await expectRefused(field, typeof value === 'function' ? value() : value, message);
		tally.refused++;
	});
});

describe.each(OPTIONAL)('$op: $label (optional)', (field) => {
	it.each(WRONG_TYPES)(
		'%s from an expression → "must be text", nothing sent',
		async (_label, value, message) => {
			await expectRefused(field, value, message);
			tally.refused++;
		},
	);

	it.each([
		['a number too large to be exact', expr('12345678901234567890')],
		['a fraction', expr('1.5')],
	])('%s → refused, nothing sent', async (_label, value) => {
		await expectRefused(field, value, /must be text|not an exact ID/);
		tally.refused++;
	});

	if (field.field.startsWith('filters.')) {
		it('a 100,000-character value is sent (no invented limit) and the refusal is clear', async () => {
			const { parameters, inputItems } = field.build(HUGE);
			const error = errorOf(await run(sandbox, parameters, { inputItems }));
			expect(error.message).toBe(
				`${field.op} failed (431): the request's address is too long for the service. Shorten the ID or query value, or fix the expression that fills it`,
			);
			expect(error.description).toMatch(/query value is too long/);
			tally.sent++;
		});
	}

	it.each([...BLANKS, ['null', expr('null')] as [string, string]])(
		'%s → left out of the request',
		async (_label, value) => {
			const { parameters, inputItems } = field.build(value);
			await run(sandbox, parameters, { inputItems });
			expect(apiRequests().length).toBe(1);
			tally.sent++;
		},
	);
});

describe('Message → Reply: what goes in the JSON body is sent as it is', () => {
	it('a 100,000-character text is sent; the service refuses it and the message quotes its reason', async () => {
		const result = await run(sandbox, { ...REPLY, text: HUGE }, { inputItems: [event] });
		const error = errorOf(result);
		expect(error.message).toBe(
			'The service refused the reply (400). Check To and Text; if the contact last wrote more than 24 hours ago, send a template message instead. The service said: "Invalid body: text: String must contain at most 4096 character(s)"',
		);
		expect(error.description.length).toBeLessThan(3000);
		expect(error.description).not.toContain(HUGE.slice(0, 5000));
		expect(apiRequests().map((r) => r.path)).toEqual(['/v1/messages/reply']);
		expect(sandbox.state().messages).toHaveLength(0);
		tally.sent++;
	});

	it('4,096 characters of unicode text (the sandbox limit) are sent and stored exactly', async () => {
		const text = '✓'.repeat(4095) + '📷'.slice(0, 1);
		const result = await run(sandbox, { ...REPLY, text }, { inputItems: [event] });
		expect(result.error).toBeUndefined();
		expect(sandbox.state().messages[0].text).toBe(text);
		tally.sent++;
	});

	it.each([
		['To with a slash', { to: '+1555/123', text: 'Hi' }, /refused the reply \(400\)/],
		[
			'From with a slash',
			{ text: 'Hi', from: '100000000000001/../2' },
			/may not send this reply \(403\)/,
		],
		['To in unicode digits', { to: '+١٥٥٥٠٠٠٠٠٠١', text: 'Hi' }, /refused the reply \(400\)/],
	])('%s: sent in the body, the refusal is clear', async (_label, parameters, message) => {
		const result = await run(sandbox, { ...REPLY, ...parameters }, { inputItems: [event] });
		expect(errorOf(result).message).toMatch(message);
		expect(apiRequests()).toHaveLength(1);
		tally.sent++;
	});

	it('a number for From is taken as its decimal text', async () => {
		const result = await run(
			sandbox,
			{ ...REPLY, text: 'Hi', to: CONTACT, from: expr('100000000000001') },
			{ inputItems: [event] },
		);
		expect(result.error).toBeUndefined();
		expect(sandbox.state().messages[0].from).toBe('100000000000001');
		tally.sent++;
	});
});

describe('options and limits', () => {
	const cases: Array<[string, Field, unknown, RegExp]> = [];
	const direction: Field = {
		op: 'Message → Get Many',
		field: 'direction',
		label: 'Direction',
		build: (v) => ({ parameters: { ...GET_MANY, direction: v } as INodeParameters }),
	};
	const category: Field = {
		op: 'Log → Get Many',
		field: 'category',
		label: 'Category',
		build: (v) => ({ parameters: { ...LOGS, category: v } as INodeParameters }),
	};
	for (const [label, value] of [
		['unknown value', expr('"out"')],
		['empty', expr('""')],
		['a number', expr('1')],
		['an object', expr('{}')],
		['null', expr('null')],
		['an array', expr('["in"]')],
	] as const) {
		cases.push([`Direction: ${label}`, direction, value, /must be one of echo, in/]);
		cases.push([`Category: ${label}`, category, value, /must be one of credits, keys/]);
	}
	for (const [op, base] of [
		['Message → Get Many', GET_MANY],
		['Log → Get Many', LOGS],
		['Key → Get Many', KEYS],
	] as const) {
		const limit: Field = {
			op,
			field: 'limit',
			label: 'Limit',
			build: (v) => ({ parameters: { ...base, limit: v } as INodeParameters }),
		};
		for (const [label, value] of [
			['0', 0],
			['negative', -5],
			['a fraction', 2.5],
			['text', expr('"ten"')],
			['an object', expr('{}')],
			['a boolean', expr('true')],
			['null', expr('null')],
		] as const) {
			cases.push([`${op} Limit: ${label}`, limit, value, /must be a whole number of 1 or more/]);
		}
	}

	it.each(cases)('%s → refused, nothing sent', async (_label, field, value, message) => {
		await expectRefused(field, value, message);
		tally.refused++;
	});

	it.each([
		['Message → Get Many', GET_MANY],
		['Log → Get Many', LOGS],
	] as const)(
		'%s: Additional Query Parameters without a name, with a reserved name, or an object value → refused',
		async (_op, base) => {
			for (const [pair, message] of [
				[{ name: '  ', value: 'x' }, /a parameter has no name/],
				[{ name: 'cursor', value: 'x' }, /"cursor" is set by the node itself/],
				[
					{ name: 'since', value: expr('{ a: 1 }') },
					/the value of "since" must be text or a number/,
				],
			] as const) {
				const before = apiRequests().length;
				const result = await run(sandbox, {
					...base,
					queryParameters: { parameter: [pair] },
				} as INodeParameters);
				expect(errorOf(result).message).toMatch(
					new RegExp(`^Additional Query Parameters: .*${message.source}`),
				);
				expect(apiRequests().length).toBe(before);
				tally.refused++;
			}
		},
	);
});

describe('continueOnFail: a refused item becomes an error item, the others are sent', () => {
	it('Get Status with a good, a blank, a slashed and an object ID', async () => {
		const reply = await run(sandbox, { ...REPLY, text: 'Hi' }, { inputItems: [event] });
		const id = String(reply.items[0].json.id);
		sandbox.state().requests.length = 0;
		const before = apiRequests().length;
		const result = await run(
			sandbox,
			{ ...GET_STATUS, messageId: expr('$json.id') },
			{
				continueOnFail: true,
				inputItems: [
					{ json: { id } },
					{ json: { id: '  ' } },
					{ json: { id: 'a/b' } },
					{ json: { id: { x: 1 } } },
				],
			},
		);
		expect(result.items.map((item) => item.json.error ?? item.json.id)).toEqual([
			id,
			'Message ID is empty: enter it, or check that the expression that fills it resolves for this item',
			'Message ID "a/b" is not a valid ID: enter a single ID, without slashes or dot segments',
			'Message ID must be text, got an object: check the expression that fills it (it should resolve to an ID)',
		]);
		expect(apiRequests().length - before).toBe(1);
	});
});
