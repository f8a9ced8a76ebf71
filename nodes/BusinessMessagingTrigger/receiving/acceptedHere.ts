import { ReplayGuard } from '../../shared/replayGuard';

/**
 * The messages webhook() handed to n8n in this process, per workflow and node, for two hours.
 * The catch-up (same process in regular mode: triggers and webhooks both run on main) counts
 * them as received even when n8n answered the service too late (then the service logs a
 * timeout although the execution runs): exactly once without a shared store. In queue mode
 * the webhook processors are other processes, and only the Late Delivery Cutoff stands.
 */
const acceptedHere = new ReplayGuard();
const ACCEPTED_MEMORY_MS = 2 * 3600_000;

export function rememberAccepted(scope: string, waMessageId: string, nowMs: number): void {
	acceptedHere.firstSighting(`${scope}:${waMessageId}`, nowMs + ACCEPTED_MEMORY_MS, nowMs);
}

export function wasAcceptedHere(scope: string, waMessageId: string, nowMs: number): boolean {
	return acceptedHere.has(`${scope}:${waMessageId}`, nowMs);
}
