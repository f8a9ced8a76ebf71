import type { SandboxClock } from './clock';
import type { MediaSigner } from './media';
import type { SandboxStore } from './store';
import type { WebhookDispatcher } from './webhook';

/** What route handlers need from one running sandbox. */
export interface SandboxContext {
	store: SandboxStore;
	clock: SandboxClock;
	webhooks: WebhookDispatcher;
	signer: MediaSigner;
	baseUrl: string;
	mediaBaseUrl: string;
}
