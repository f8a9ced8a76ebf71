import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';

/**
 * A response body as the JSON of one output item: an object as it came, nothing as an
 * empty object, anything else (a list, a bare value) under `data`.
 */
export function asJsonObject(body: unknown): IDataObject {
	if (body === undefined || body === null || body === '') return {};
	return isPlainObject(body) ? body : { data: body as IDataObject[keyof IDataObject] };
}

/**
 * A record without secret-named fields and API key values. The service never returns either
 * on a read (the spec: the secret and the key are shown once); this keeps them out of the
 * output if it ever did.
 */
export function withoutSecrets(record: IDataObject): IDataObject {
	return Object.fromEntries(
		Object.entries(record).filter(
			([key, value]) =>
				!/secret/i.test(key) && !(typeof value === 'string' && /^\s*sk_live_\S/.test(value)),
		),
	);
}
