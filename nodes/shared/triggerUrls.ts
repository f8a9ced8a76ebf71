/**
 * The Business Messaging Trigger's two URLs as n8n builds them, [<base path>]/<webhook id>/<path>:
 * the service's events (`webhook`) and Reply and Wait's registrations (`wait-registration`), each
 * a webhook of its own in the node's description, so the event URL speaks one protocol.
 */
export const EVENT_PATH = 'webhook';
export const REGISTRATION_PATH = 'wait-registration';

/** A trigger's event URL: [<base path>]/<webhook id>/webhook. */
export const TRIGGER_PATH =
	/^(?:\/[^/]+)*\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/webhook\/?$/i;

/**
 * The registration URL of the trigger whose event URL is `eventUrl` (the account's webhook, which
 * Reply and Wait reads from the service): the same URL with its last path segment, `webhook`,
 * replaced by `wait-registration`. n8n gives both webhooks of one node the same base and webhook id.
 */
export function registrationUrlOf(eventUrl: string): string {
	const url = new URL(eventUrl);
	url.pathname = url.pathname.replace(/\/webhook\/?$/i, `/${REGISTRATION_PATH}`);
	return url.toString();
}
