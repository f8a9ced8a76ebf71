// The reply window an inbound item carries (reply_window_closes_at): 24 hours after the message, from the
// service's timestamp, else the stored record's created_at; never a failure for a date JavaScript cannot add to.
import { withReplyWindow } from '../../nodes/shared/replyWindow';

const inbound = (fields: Record<string, unknown>, data: Record<string, unknown> = {}) => ({
	event: 'message.inbound',
	...fields,
	data: { from: '+15550001', ...data },
});

describe('withReplyWindow', () => {
	it('closes 24 hours after the timestamp, else after created_at', () => {
		expect(withReplyWindow(inbound({ timestamp: '2026-12-05T10:00:00Z' }))).toMatchObject({
			reply_window_closes_at: '2026-12-06T10:00:00.000Z',
		});
		const stored = inbound(
			{ timestamp: 'not a date' },
			{ created_at: '2026-12-05T10:00:00+01:00' },
		);
		expect(withReplyWindow(stored).reply_window_closes_at).toBe('2026-12-06T09:00:00.000Z');
	});

	it('a timestamp within a day of the latest JavaScript date gives no window, and the item passes unchanged', () => {
		for (const timestamp of ['+275760-09-13T00:00:00.000Z', '+275760-09-12T12:00:00.000Z']) {
			const json = inbound({ timestamp });
			expect(() => withReplyWindow(json)).not.toThrow();
			expect(withReplyWindow(json)).toBe(json);
		}
	});

	it('other events pass unchanged', () => {
		const status = { event: 'message.status', timestamp: '2026-12-05T10:00:00Z' };
		expect(withReplyWindow(status)).toBe(status);
	});
});
