/**
 * The signing secret sealed for the static data, which anyone who can read the workflow sees (n8n
 * 1.x copies it into every execution): AES-256-GCM, key HKDF-SHA256 from the API key. Never throws.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'crypto';

const VERSION = 'v1';
const INFO = 'n8n-nodes-business-messaging webhook signing secret';

function keyFor(apiKey: string, salt: Buffer): Buffer {
	return Buffer.from(hkdfSync('sha256', apiKey.trim(), salt, INFO, 32));
}

export function sealSecret(secret: string, apiKey: string): string {
	const salt = randomBytes(16);
	const iv = randomBytes(12);
	const cipher = createCipheriv('aes-256-gcm', keyFor(apiKey, salt), iv);
	const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
	return [VERSION, salt, iv, cipher.getAuthTag(), sealed]
		.map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
		.join('.');
}

/** The secret, or undefined when the value is not one we sealed or the API key is another. */
export function openSecret(sealed: unknown, apiKey: unknown): string | undefined {
	if (typeof sealed !== 'string' || typeof apiKey !== 'string') return undefined;
	const [version, ...parts] = sealed.split('.');
	if (version !== VERSION || parts.length !== 4) return undefined;
	try {
		const [salt, iv, tag, data] = parts.map((part) => Buffer.from(part, 'base64url'));
		if (iv.length !== 12 || tag.length !== 16) return undefined;
		const decipher = createDecipheriv('aes-256-gcm', keyFor(apiKey, salt), iv);
		decipher.setAuthTag(tag);
		return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
	} catch {
		return undefined;
	}
}
