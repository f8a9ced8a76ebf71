/** trigger()'s loop on the leader main, now and every interval: webhook watch, then catch-up. */
import type { ITriggerFunctions, ITriggerResponse } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { nodeKeyOf } from '../../shared/credentialKeys';
import { MESSAGE_EVENTS } from '../../shared/history';
import type { OnActivation } from '../options';
import { nodeParameters, readNodeSettings } from '../receiving/accept';
import { isManualRegistration, type TriggerStaticData } from '../registration/signingSecrets';
import { LOG_PREFIX, OPERATION, catchUpOnce, type CatchUpRun } from './catchUp';
import { UNNAMED_LOG_NOTICE, isWebhookLogUnnamed } from './deliveryLog';
import {
	processStartedMs,
	startingWatermark,
	type CatchUpState,
	type Watermarks,
} from './recoveries';
import { watchWebhook } from './webhookWatch';

/** Where a Stop-ped catch-up had reached, per node: n8n 1.x retries with the old static data. */
const stoppedAt = new Map<string, CatchUpState>();
const STOPPED_BOUND = 1000;

const copyOf = (state: CatchUpState): CatchUpState => ({
	watermarks: { ...state.watermarks },
	...(state.emitted && { emitted: [...state.emitted] }),
	...(state.windowFromMs !== undefined && { windowFromMs: state.windowFromMs }),
});

function rememberStop({ scope, state }: CatchUpRun): void {
	if (stoppedAt.size >= STOPPED_BOUND) stoppedAt.clear();
	stoppedAt.set(scope, copyOf(state));
}

/** A crash's held messages (burstHold.ts) since `sinceMs`; `done` once the watermark passed. */
export interface CrashRecovery {
	sinceMs: number;
	done: () => void;
}
/** Before the saved time: a message is stored before it is delivered, on the service's clock. */
const RECOVERY_MARGIN_MS = 60_000;
/** Nodes (nodeKeyOf) whose trigger() ran in this process: each looks back to its start once. */
const startedHere = new Set<string>();

/** A window a process before left unresolved is carried on, if it began this recently. */
const CARRY_WINDOW_MS = 10 * 60_000;

/**
 * Since a crash's held messages, this process's start (docs/reliability.md, "n8n starting"), or a
 * window the process before left unresolved (killed again before it could tell who serves the URL).
 */
function startWindow(
	this: ITriggerFunctions,
	recovery: CrashRecovery | undefined,
	state: CatchUpState,
	firstHere: boolean,
): CatchUpRun['recovery'] {
	// What the process before took was stored there (run or crashed): receiving/answerDelivery.ts.
	const processStart = firstHere ? processStartedMs() : Infinity;
	const carried = state.windowFromMs;
	const unresolved =
		typeof carried === 'number' && carried >= processStartedMs() - CARRY_WINDOW_MS
			? carried
			: Infinity;
	const fromMs = Math.min(
		processStart,
		unresolved,
		(recovery?.sinceMs ?? Infinity) - RECOVERY_MARGIN_MS,
	);
	if (fromMs === Infinity) {
		delete state.windowFromMs;
		return undefined;
	}
	// n8n starting (or a window carried on): saved with the next emit until resolved (catchUp.ts), so
	// a kill meanwhile does not narrow it.
	if (this.getActivationMode() === 'init' || unresolved !== Infinity) state.windowFromMs = fromMs;
	else delete state.windowFromMs;
	// Held messages were taken by this very trigger's webhook(): this process serves its URL.
	const servedHere = recovery ? true : undefined;
	return { fromMs, untilMs: Date.now(), done: recovery?.done ?? (() => undefined), servedHere };
}

/** The state a run starts from: saved watermarks, or where Recover on Activation says. */
function startingState(
	this: ITriggerFunctions,
	onActivation: OnActivation,
	recoverFromMs?: number,
) {
	const staticData = this.getWorkflowStaticData('node') as TriggerStaticData & {
		catchUp?: CatchUpState;
	};
	const scope = nodeKeyOf.call(this);
	const stopped = onActivation === 'sinceLastActive' ? stoppedAt.get(scope) : undefined;
	stoppedAt.delete(scope);
	const carried = stopped ?? staticData.catchUp;
	const saved = carried?.watermarks ?? {};
	const nowMs = Date.now();
	const watermarks: Watermarks = {};
	for (const event of MESSAGE_EVENTS) {
		watermarks[event] = startingWatermark(
			saved[event],
			// A stopped catch-up carries on, as after a restart.
			stopped ? 'init' : this.getActivationMode(),
			onActivation,
			nowMs,
			staticData.activatedAtMs,
		);
	}
	const inbound = watermarks['message.inbound'];
	if (recoverFromMs !== undefined && inbound && Date.parse(inbound.createdAt) > recoverFromMs)
		watermarks['message.inbound'] = { createdAt: new Date(recoverFromMs).toISOString(), ids: [] };
	const emitted = carried?.emitted;
	const state: CatchUpState = { watermarks };
	if (Array.isArray(emitted) && MESSAGE_EVENTS.every((event) => watermarks[event] === saved[event]))
		state.emitted = emitted.map(String);
	if (typeof carried?.windowFromMs === 'number') state.windowFromMs = carried.windowFromMs;
	// Assigned only when changed: n8n then saves the whole copy (queue mode: over processors' waits).
	const persist = () => {
		const next = copyOf(state);
		if (JSON.stringify(next) !== JSON.stringify(staticData.catchUp)) staticData.catchUp = next;
	};
	persist();
	return { scope, state, persist };
}

async function noticeUnnamedLog(this: ITriggerFunctions, run: CatchUpRun): Promise<void> {
	try {
		if (!(await isWebhookLogUnnamed.call(this, OPERATION))) return;
		this.logger.error(`${LOG_PREFIX}: ${UNNAMED_LOG_NOTICE}`);
		run.logUnnamed = true;
	} catch (error) {
		this.logger.error(`${LOG_PREFIX}: ${(error as Error).message}`);
	}
}

export async function startCatchUp(
	this: ITriggerFunctions,
	recovery?: CrashRecovery,
): Promise<ITriggerResponse> {
	const scope = nodeKeyOf.call(this);
	const firstHere = !startedHere.has(scope);
	startedHere.add(scope);
	const parameters = nodeParameters.call(this);
	const recover = parameters.catchUp === true;
	const watching = !isManualRegistration.call(this);
	if (!recover && !watching) return {};
	const settings = readNodeSettings(parameters);
	const { intervalMs, onActivation } = settings.options.catchUp;
	const stopWhenTaken = watching && settings.options.onWebhookTaken === 'stop';
	let closed = false;
	const isClosed = () => closed;
	const watch = { intervalSeconds: intervalMs / 1000, stopWhenTaken, isClosed };
	// Stop: a webhook taken already is a refused start (thrown here), not a runtime failure.
	let firstLook = stopWhenTaken
		? await watchWebhook.call(this, { kind: 'ours' }, { ...watch, starting: true })
		: undefined;
	// Only held messages move the watermark back: they were taken before it moved on.
	const heldFromMs = recovery && recovery.sinceMs - RECOVERY_MARGIN_MS;
	const starting = startingState.call(this, onActivation, heldFromMs);
	const window = startWindow.call(this, recovery, starting.state, firstHere);
	starting.persist();
	const run: CatchUpRun = { ...starting, settings, isClosed, webhook: { kind: 'ours' } };
	if (window) run.recovery = window;
	const loop = async () => {
		if (recover) await noticeUnnamedLog.call(this, run);
		while (!closed) {
			if (watching) {
				run.webhook = firstLook ?? (await watchWebhook.call(this, run.webhook, watch));
				firstLook = undefined;
				// Stop: emitError() handed the failure to n8n, which closes this trigger.
				if (run.webhook.kind === 'taken' && watch.stopWhenTaken) {
					closed = true;
					if (recover) rememberStop(run);
				}
			}
			if (recover && !closed) {
				try {
					await catchUpOnce.call(this, run);
				} catch (error) {
					// Every run it fails: an answer it cannot read is never skipped in silence.
					this.logger.error(
						`${LOG_PREFIX}: ${(error as Error).message} (retrying every ${intervalMs / 1000} s)`,
					);
				}
			}
			for (let waited = 0; waited < intervalMs && !closed; waited += 1000)
				await sleep(Math.min(1000, intervalMs - waited));
		}
	};
	void loop();
	return {
		closeFunction: async () => {
			closed = true;
		},
	};
}
