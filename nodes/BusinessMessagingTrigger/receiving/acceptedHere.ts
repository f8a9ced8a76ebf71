import { ReplayGuard } from '../../shared/replayGuard';

/** What webhook() accepted here (2 h): the catch-up counts it received despite a logged timeout. */
const acceptedHere = new ReplayGuard();
const ACCEPTED_MEMORY_MS = 2 * 3600_000;
/** Nodes (nodeKeyOf) whose webhook() accepted a message in this process: it serves their URL. */
const servingHere = new Set<string>();

export function rememberAccepted(scope: string, waMessageId: string, nowMs: number): void {
	acceptedHere.firstSighting(`${scope}:${waMessageId}`, nowMs + ACCEPTED_MEMORY_MS, nowMs);
	servingHere.add(scope);
}

export function acceptedAnyHere(scope: string): boolean {
	return servingHere.has(scope);
}

export function wasAcceptedHere(scope: string, waMessageId: string, nowMs: number): boolean {
	return acceptedHere.has(`${scope}:${waMessageId}`, nowMs);
}
