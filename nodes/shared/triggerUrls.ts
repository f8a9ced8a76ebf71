/** The trigger's two webhooks, events and Reply and Wait's registrations: one protocol per URL. */
export const EVENT_PATH = 'webhook';
export const REGISTRATION_PATH = 'wait-registration';

/** A trigger's event URL: [<base path>]/<webhook id>/webhook. */
export const TRIGGER_PATH =
	/^(?:\/[^/]+)*\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/webhook\/?$/i;

/** The registration URL beside an event URL: n8n gives both webhooks one base and webhook id. */
export function registrationUrlOf(eventUrl: string): string {
	const url = new URL(eventUrl);
	url.pathname = url.pathname.replace(/\/webhook\/?$/i, `/${REGISTRATION_PATH}`);
	return url.toString();
}
