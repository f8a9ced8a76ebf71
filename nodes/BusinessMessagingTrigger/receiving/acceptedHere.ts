import { ReplayGuard } from '../../shared/replayGuard';

/**
 * The messages webhook() handed to n8n in this process, for two hours: the catch-up (same process
 * in regular mode) counts them as received even when the service logged a timeout.
 */
const acceptedHere = new ReplayGuard();
const ACCEPTED_MEMORY_MS = 2 * 3600_000;

export function rememberAccepted(scope: string, waMessageId: string, nowMs: number): void {
	acceptedHere.firstSighting(`${scope}:${waMessageId}`, nowMs + ACCEPTED_MEMORY_MS, nowMs);
}

export function wasAcceptedHere(scope: string, waMessageId: string, nowMs: number): boolean {
	return acceptedHere.has(`${scope}:${waMessageId}`, nowMs);
}
