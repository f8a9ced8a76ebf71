// Issue 49: one replay guard (100,000 deliveries) served every trigger of the process, so one
// trigger's flood of deliveries pushed out another trigger's, and a captured delivery to that other
// trigger could be replayed. Every guard is made small here (the module mocked), so a flood past a
// guard's bound takes 60 deliveries, not 100,000: the same code paths, the same eviction.
import { inboundEnvelope, signedRequest, SIGNING_SECRET, useSandbox } from '../../support';
import { trigger } from './helpers';

jest.mock('../../../nodes/shared/replayGuard', () => {
	const actual = jest.requireActual<typeof import('../../../nodes/shared/replayGuard')>(
		'../../../nodes/shared/replayGuard',
	);
	class SmallReplayGuard extends actual.ReplayGuard {
		constructor(capacity?: number) {
			super(Math.min(capacity ?? 100_000, 50));
		}
	}
	return { ...actual, ReplayGuard: SmallReplayGuard };
});

const sb = useSandbox({ reset: 'afterEach' });

/** A trigger of its own (Manual registration: nothing registered at the service), active. */
async function manualTrigger() {
	const harness = await trigger(
		sb,
		{ registration: 'manual' },
		{ credentialExtra: { webhookSecret: SIGNING_SECRET } },
	);
	await harness.activate();
	return harness;
}

describe('replay guards per trigger', () => {
	it("trigger A flooded past its guard's bound: a replay of trigger B's delivery is still refused (401)", async () => {
		const [a, b] = [await manualTrigger(), await manualTrigger()];
		const captured = signedRequest(inboundEnvelope({ text: 'to B' }), SIGNING_SECRET);
		expect((await b.receive(captured)).status).toBe(200);
		for (let i = 0; i < 60; i++) {
			const flood = await a.receive(
				signedRequest(inboundEnvelope({ text: `flood ${i}` }), SIGNING_SECRET),
			);
			expect(flood.status).toBe(200);
		}
		const replayed = await b.receive(captured);
		expect([replayed.status, replayed.workflowData]).toEqual([401, undefined]);
	});
});
