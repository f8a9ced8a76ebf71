// Service text made safe wherever it leaves the node: one printable line, bounded, control and
// format characters removed before redaction, no raw HTML tags (serviceLine, through the quote and
// the body the errors carry).
import { explainHttpError } from '../../nodes/shared/errors';
import { bodyAsText, serviceMessage } from '../../nodes/shared/serviceText';

const KEY = 'sk_live_0123456789abcdefABCDEF0123456789';
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe('service text in errors', () => {
	it('a key split by a zero-width character is redacted, in the quote and in the body', () => {
		const split = `${KEY.slice(0, 14)}\u200b${KEY.slice(14)}`;
		const body = { error: { message: `bad key ${split}` } };
		const quote = serviceMessage(body) as string;
		expect(quote).toBe('bad key sk_live_[redacted]');
		expect(bodyAsText(body)).not.toContain(KEY.slice(14));
		const { message, description } = explainHttpError(400, body, { operation: 'Message → Get' });
		for (const text of [message, description]) {
			expect(text).not.toContain(KEY.slice(14));
			expect(text).not.toMatch(UNPRINTABLE);
		}
	});

	it('line feeds, terminal escapes, bidi and zero-width marks never reach a message or description', () => {
		const said =
			'line one\nINFO forged\r\n\u001b[31mred\u001b[0m \u202eevil\u202c \u2066x\u2069 zero\u200dwidth\u2028end';
		const { message, description } = explainHttpError(
			500,
			{ error: { message: said } },
			{ operation: 'Message → Get' },
		);
		for (const text of [message, description]) expect(text).not.toMatch(UNPRINTABLE);
		expect(message).toContain('"line one INFO forged [31mred [0m evil x zerowidth end"');
	});

	it('HTML tags in a quoted sentence are not passed raw', () => {
		const body = { error: { message: '<img src=x onerror=alert(1)>Not <b>allowed</b>' } };
		expect(serviceMessage(body)).toBe('Not allowed');
		const { message, description } = explainHttpError(403, body, { operation: 'Key → Get Many' });
		for (const text of [message, description]) expect(text).not.toMatch(/<[a-z/]/i);
	});

	it('a huge body stays a few hundred characters in the description', () => {
		const body = { error: { message: 'x'.repeat(1_000_000) } };
		const { message, description } = explainHttpError(500, body, { operation: 'Message → Get' });
		expect(message.length).toBeLessThan(700);
		expect(description.length).toBeLessThan(700);
		expect(bodyAsText('y'.repeat(5000)).length).toBeLessThan(700);
	});
});
