import type { IDataObject } from 'n8n-workflow';

import { isPlainObject } from '../../shared/json';

/** A body as one item's JSON: an object as it came, nothing as {}, anything else under `data`. */
export function asJsonObject(body: unknown): IDataObject {
	if (body === undefined || body === null || body === '') return {};
	return isPlainObject(body) ? body : { data: body as IDataObject[keyof IDataObject] };
}

/** A record without secret-named fields and API key values, should the service ever return them. */
export function withoutSecrets(record: IDataObject): IDataObject {
	return Object.fromEntries(
		Object.entries(record).filter(
			([key, value]) =>
				!/secret/i.test(key) && !(typeof value === 'string' && /^\s*sk_live_\S/.test(value)),
		),
	);
}

/** Simplify: only `fields`, in order; never the record whole (a model may read it), even if {}. */
export function pick(record: IDataObject, fields: readonly string[]): IDataObject {
	const kept = fields.filter((field) => record[field] !== undefined);
	return Object.fromEntries(kept.map((field) => [field, record[field]]));
}
