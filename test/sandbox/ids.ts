import { randomBytes, randomInt } from 'node:crypto';

export const randomHex = (bytes: number): string => randomBytes(bytes).toString('hex');

export const newMessageId = (): string => `msg_${randomHex(12)}`;
export const newRecordId = (): string => `inb_${randomHex(12)}`;
export const newLogId = (): string => `log_${randomHex(8)}`;
export const newDeliveryId = (): string => `dlv_${randomHex(8)}`;
export const newKeyId = (): string => `key_${randomHex(6)}`;
export const newFaultId = (): string => `flt_${randomHex(6)}`;
export const newKeyValue = (): string => `sk_live_${randomHex(24)}`;
export const newWebhookSecret = (): string => `whsec_${randomHex(32)}`;

/** Platform-style message id: "wamid." followed by base64url. */
export const newWaMessageId = (): string => `wamid.${randomBytes(24).toString('base64url')}`;

/** Platform media ids are numeric strings. */
export const newMediaId = (): string =>
	`${randomInt(1, 10)}${String(randomInt(0, 1e9)).padStart(9, '0')}${String(randomInt(0, 1e6)).padStart(6, '0')}`;
