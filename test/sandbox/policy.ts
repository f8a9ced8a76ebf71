/** Numbers the spec leaves open; each one is listed in CONTRACT.md. */

/** Spec: free-text replies inside a 24-hour window. Open while now - last inbound <= this. */
export const REPLY_WINDOW_SECONDS = 24 * 60 * 60;

/** Guess: the account's media retention window. */
export const MEDIA_RETENTION_SECONDS = 30 * 24 * 60 * 60;

/** Guess: lifetime of a signed media URL. */
export const SIGNED_URL_TTL_SECONDS = 300;

/** Spec: "about 8 seconds". */
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 8000;

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 100;

/** Guess: each reply costs one credit. */
export const CREDITS_PER_REPLY = 1;

export const MAX_TEXT_LENGTH = 4096;

/** Hosts for which a plain-http webhook URL is accepted, so a local n8n can receive events. */
export const LOOPBACK_HOSTS = ['127.0.0.1', '[::1]', 'localhost'] as const;
