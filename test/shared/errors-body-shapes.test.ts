/**
 * Issue 37: the editor shows an error's message only, so the message must carry the way out and
 * the service's own sentence, whatever shape the (unspecified) error body has.
 */
import type { INode } from 'n8n-workflow';

import { explainHttpError, explainNetworkFailure } from '../../nodes/shared/errors';
import { throwForStatus } from '../../nodes/shared/transport';

const node: INode = {
	id: '1',
	name: 'Business Messaging',
	type: 'n8n-nodes-business-messaging.businessMessaging',
	typeVersion: 1,
	position: [0, 0],
	parameters: {},
};

const getStatus = {
	operation: 'Message → Get Status',
	scope: 'messages:read',
	notFound: 'the service has no message with this ID. Use the "id" a Reply returned',
};

const SENTENCE = 'No message msg_unknown';
const HTML = `<!DOCTYPE html><html><head><title>404</title></head><body><h1>${SENTENCE}</h1></body></html>`;

const shapes: Array<[string, unknown, string | undefined]> = [
	[
		'an error object {error: {code, message}}',
		{ error: { code: 'not_found', message: SENTENCE } },
		SENTENCE,
	],
	[
		'RFC 9457 {type, title, status, detail}',
		{ type: 'about:blank', title: 'Not Found', status: 404, detail: SENTENCE },
		SENTENCE,
	],
	['{message, code}', { message: SENTENCE, code: 'not_found' }, SENTENCE],
	['{error: "<sentence>"}', { error: SENTENCE }, SENTENCE],
	['plain text', SENTENCE, SENTENCE],
	['an HTML page', HTML, undefined],
	['an empty body', '', undefined],
	['no body', undefined, undefined],
];

describe('every body shape: the message says what to do and quotes the sentence (never a page)', () => {
	it.each(shapes)('%s', (_label, body, quoted) => {
		const { message, description } = explainHttpError(404, body, getStatus);
		expect(message).toMatch(/^Message → Get Status failed \(404\): the service has no message/);
		expect(message).toMatch(/Use the "id" a Reply returned/);
		if (quoted) expect(message).toMatch(new RegExp(`The service said: "${quoted}"$`));
		else expect(message).not.toMatch(/The service said|<|No message msg_unknown/);
		// The body stays in the description, on one line, without HTML tags.
		if (typeof body === 'string' && body !== '')
			expect(description).toContain(body === HTML ? `404 ${SENTENCE}` : body);
		expect(description).not.toMatch(/<[a-z!/]/i);
	});

	it.each(shapes)('%s, as the NodeApiError n8n shows', (_label, body, quoted) => {
		let thrown: Error | undefined;
		try {
			throwForStatus(node, { statusCode: 404, headers: {}, body }, getStatus);
		} catch (error) {
			thrown = error as Error;
		}
		expect(thrown?.message).toMatch(/Use the "id" a Reply returned/);
		if (quoted) expect(thrown?.message).toContain(`"${quoted}"`);
	});

	it.each([401, 403, 409, 413, 422, 429, 500, 503])(
		'%i: the RFC 9457 detail is quoted after the advice',
		(status) => {
			const { message } = explainHttpError(status, { title: 'T', detail: 'Said here' }, getStatus);
			expect(message).toMatch(
				/\. The service said: "Said here"$|: .*The service said: "Said here"$/,
			);
			expect(message.indexOf('The service said')).toBeLessThanOrEqual(270);
		},
	);
});

describe("n8n's own wording never replaces ours", () => {
	it('a quoted sentence naming ECONNRESET keeps the message and its advice', () => {
		let thrown: Error | undefined;
		try {
			throwForStatus(
				node,
				{ statusCode: 502, headers: {}, body: { detail: 'upstream ECONNRESET' } },
				getStatus,
			);
		} catch (error) {
			thrown = error as Error;
		}
		expect(thrown?.message).toBe(
			'Message → Get Status failed (502): the service had an error. Run it again later; if it keeps failing, tell the service\'s support. The service said: "upstream ECONNRESET"',
		);
	});
});

describe('explainNetworkFailure', () => {
	it('a refused connection on a read: check the Base URL, then run it again', () => {
		const { message, description } = explainNetworkFailure('ECONNREFUSED', getStatus, {
			write: false,
			attempts: 4,
		});
		expect(message).toBe(
			"Message → Get Status: could not reach the service (ECONNREFUSED). Check the credential's Base URL and that n8n can reach the service, then run it again",
		);
		expect(description).toMatch(/Tried 4 time\(s\)/);
	});

	it('a timeout on a read says the service did not answer in time', () => {
		expect(
			explainNetworkFailure('timeout of 30000ms exceeded', getStatus, { write: false, attempts: 4 })
				.message,
		).toMatch(/did not answer in time\. Tried 4 time\(s\)\. Run it again later/);
	});

	it('a reply that got no answer: not sent again, check the Sends log before resending', () => {
		const { message } = explainNetworkFailure(
			'ECONNRESET',
			{ operation: 'Message → Reply', reply: {} },
			{ write: true, attempts: 1 },
		);
		expect(message).toBe(
			'Message → Reply: could not reach the service (ECONNRESET). It was not sent again, because the service may already have acted on it: check Log → Get Many (category Sends) before sending it again',
		);
	});
});
