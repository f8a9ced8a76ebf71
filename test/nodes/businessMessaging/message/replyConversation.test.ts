// Reply's conversation options through the harness against the sandbox: the 24-hour window
// read from the item (reply_window_closes_at) and Wait for Delivery.
import { apiRequests, errorOf, inbound, run } from '../helpers';
import { CONTACT, describeWithSandbox, inboundItem, OTHER_CONTACT } from '../../../support';

const REPLY = { resource: 'message', operation: 'reply' };

async function setStatus(baseUrl: string, id: string, status: string): Promise<void> {
	const response = await fetch(`${baseUrl}/_sandbox/status`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ id, status }),
	});
	if (!response.ok) throw new Error(`status → ${response.status}`);
}

describeWithSandbox('Message → Reply: the 24-hour window in the data', (sandbox) => {
	const itemWithWindow = async (closesAt: Date, from = CONTACT) => {
		const record = await inbound(sandbox, { from });
		const item = inboundItem(record);
		item.json.reply_window_closes_at = closesAt.toISOString();
		return item;
	};

	it("a window already closed by the item's clock fails before sending, saying to send a template", async () => {
		const item = await itemWithWindow(new Date(Date.now() - 10 * 60 * 1000));
		const error = errorOf(await run(sandbox, { ...REPLY, text: 'Late' }, { inputItems: [item] }));
		expect(error.message).toMatch(/24-hour reply window is closed/);
		expect(error.message).toMatch(/template message/);
		expect(error.description).toMatch(/Nothing was sent/);
		expect(apiRequests(sandbox, '/v1/messages/reply')).toHaveLength(0);
	});

	it("an open window by the item's clock is sent, and the service's refusal stays the authority", async () => {
		const item = await itemWithWindow(new Date(Date.now() + 60 * 60 * 1000));
		sandbox.advanceClock(24 * 60 * 60 + 60);
		const error = errorOf(await run(sandbox, { ...REPLY, text: 'Late' }, { inputItems: [item] }));
		expect(error.message).toMatch(/24-hour reply window is closed/);
		expect(apiRequests(sandbox, '/v1/messages/reply')).toHaveLength(1);
	});

	it('within the clock-skew allowance the reply is sent (the clocks may disagree)', async () => {
		const item = await itemWithWindow(new Date(Date.now() - 20 * 1000));
		const result = await run(sandbox, { ...REPLY, text: 'Just in time' }, { inputItems: [item] });
		expect(result.error).toBeUndefined();
		expect(sandbox.state().messages).toHaveLength(1);
	});

	it("the item's window says nothing about another contact: a reply to them is sent", async () => {
		await inbound(sandbox, { from: OTHER_CONTACT });
		const item = await itemWithWindow(new Date(Date.now() - 10 * 60 * 1000));
		const result = await run(
			sandbox,
			{ ...REPLY, to: OTHER_CONTACT, text: 'Hi' },
			{ inputItems: [item] },
		);
		expect(result.error).toBeUndefined();
		expect(sandbox.state().messages).toEqual([expect.objectContaining({ to: OTHER_CONTACT })]);
	});
});

describeWithSandbox('Message → Reply → Wait for Delivery', (sandbox) => {
	it('sees the status change to delivered and returns it with how long it took', async () => {
		const record = await inbound(sandbox);
		const running = run(
			sandbox,
			{
				...REPLY,
				text: 'Tracked',
				replyOptions: { waitForDelivery: true, deliveryTimeLimit: 20, deliveryCheckInterval: 1 },
			},
			{ inputItems: [inboundItem(record)] },
		);
		// The reply is sent at once; mark it delivered 1.5 s later.
		let id: string | undefined;
		for (let i = 0; i < 50 && !id; i++) {
			await new Promise((resolve) => setTimeout(resolve, 50));
			id = sandbox.state().messages[0]?.id as string | undefined;
		}
		await new Promise((resolve) => setTimeout(resolve, 1500));
		await setStatus(sandbox.baseUrl, id!, 'delivered');
		const result = await running;
		expect(result.error).toBeUndefined();
		const delivery = result.items[0].json.delivery as Record<string, unknown>;
		expect(result.items[0].json).toMatchObject({ id, to: CONTACT, status: 'sent' });
		expect(delivery).toMatchObject({ final: true, status: 'delivered', error: null });
		expect(delivery.waited_ms as number).toBeGreaterThanOrEqual(1400);
		expect(delivery.waited_ms as number).toBeLessThan(5000);
		// Bounded rate: one read per second at most.
		const reads = apiRequests(sandbox, `/v1/messages/${id}`);
		expect(reads.length).toBe(delivery.checks);
		expect(reads.length).toBeLessThanOrEqual(Math.ceil((delivery.waited_ms as number) / 1000) + 1);
	});

	it("a failed status is final too, with the service's error", async () => {
		const record = await inbound(sandbox);
		const running = run(
			sandbox,
			{
				...REPLY,
				text: 'Tracked',
				replyOptions: { waitForDelivery: true, deliveryTimeLimit: 20, deliveryCheckInterval: 1 },
			},
			{ inputItems: [inboundItem(record)] },
		);
		let id: string | undefined;
		for (let i = 0; i < 50 && !id; i++) {
			await new Promise((resolve) => setTimeout(resolve, 50));
			id = sandbox.state().messages[0]?.id as string | undefined;
		}
		await setStatus(sandbox.baseUrl, id!, 'failed');
		const delivery = (await running).items[0].json.delivery as Record<string, unknown>;
		expect(delivery).toMatchObject({
			final: true,
			status: 'failed',
			error: { code: 'undeliverable' },
		});
	});

	it('no final status within the limit: says so honestly, with the last status seen and few requests', async () => {
		const record = await inbound(sandbox);
		const started = Date.now();
		const result = await run(
			sandbox,
			{
				...REPLY,
				text: 'Never delivered',
				replyOptions: { waitForDelivery: true, deliveryTimeLimit: 3, deliveryCheckInterval: 1 },
			},
			{ inputItems: [inboundItem(record)] },
		);
		const elapsed = Date.now() - started;
		expect(result.error).toBeUndefined();
		const delivery = result.items[0].json.delivery as Record<string, unknown>;
		expect(delivery).toMatchObject({ final: false, status: 'sent' });
		expect(String(delivery.reason)).toMatch(/no final status/);
		expect(elapsed).toBeLessThan(6000);
		expect(delivery.checks as number).toBeLessThanOrEqual(4);
		expect(sandbox.state().messages).toHaveLength(1);
	});
});
