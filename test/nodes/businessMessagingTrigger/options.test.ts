// The trigger's option readers on values an expression or an old workflow can hold: a positive
// number is taken, anything else (empty, text, 0 or less) falls back to the default.
import {
	catchUpSettings,
	handOverSettings,
	readTriggerOptions,
} from '../../../nodes/BusinessMessagingTrigger/options';

const NOT_POSITIVE = [undefined, null, '', 'soon', -1, 0, Number.NaN, Infinity];

describe('trigger options: a positive number or the default', () => {
	it('While a Person Answers (Minutes): default 30, at most 10080', () => {
		for (const value of NOT_POSITIVE)
			expect(handOverSettings({ handOverMinutes: value as never }).minutes).toBe(30);
		expect(handOverSettings({ handOverMinutes: '12' }).minutes).toBe(12);
		expect(handOverSettings({ handOverMinutes: 0.5 }).minutes).toBe(0.5);
		expect(handOverSettings({ handOverMinutes: 1e9 }).minutes).toBe(10_080);
		expect(handOverSettings(undefined)).toEqual({ mode: 'off', minutes: 30 });
	});

	it('Catch-Up Interval: default 60 s, at least 10 s', () => {
		for (const value of NOT_POSITIVE)
			expect(catchUpSettings({ catchUpInterval: value as never }).intervalMs).toBe(60_000);
		expect(catchUpSettings({ catchUpInterval: '25' }).intervalMs).toBe(25_000);
		expect(catchUpSettings({ catchUpInterval: 3 }).intervalMs).toBe(10_000);
	});

	it('Late Delivery Cutoff: default 5 s; none without the catch-up', () => {
		for (const value of NOT_POSITIVE)
			expect(readTriggerOptions({ lateDeliveryCutoff: value as never }).lateDeliveryCutoffMs).toBe(
				5_000,
			);
		expect(readTriggerOptions({ lateDeliveryCutoff: 3 }).lateDeliveryCutoffMs).toBe(3_000);
		expect(readTriggerOptions({ lateDeliveryCutoff: 0.5 }).lateDeliveryCutoffMs).toBe(500);
		expect(
			readTriggerOptions({ lateDeliveryCutoff: 3 }, false).lateDeliveryCutoffMs,
		).toBeUndefined();
	});
});
