// Pure helpers of the node: list answers, display options, secret stripping.
import { updateDisplayOptions } from '../../../nodes/BusinessMessaging/helpers/descriptions';
import { splitPage } from '../../../nodes/BusinessMessaging/helpers/list';
import { asJsonObject, withoutSecrets } from '../../../nodes/BusinessMessaging/helpers/output';
import { API_KEY } from '../../support';

describe('splitPage: the one list shape, {data, has_more, next_cursor} (CONTRACT I4)', () => {
	it('takes the records of data and the cursor of the next page', () => {
		expect(splitPage({ data: [{ a: 1 }], has_more: true, next_cursor: 'cur_1' })).toEqual({
			records: [{ a: 1 }],
			cursor: 'cur_1',
		});
	});

	it('stops when the page says there is no more, or gives no cursor', () => {
		expect(
			splitPage({ data: [{ a: 1 }], has_more: false, next_cursor: 'x' }).cursor,
		).toBeUndefined();
		expect(
			splitPage({ data: [{ a: 1 }], has_more: true, next_cursor: null }).cursor,
		).toBeUndefined();
		expect(splitPage({ data: [{ a: 1 }], has_more: true, next_cursor: '' }).cursor).toBeUndefined();
		expect(splitPage({ data: [{ a: 1 }] })).toEqual({ records: [{ a: 1 }], cursor: undefined });
	});

	it('passes any other answer through as one record, as it came, with no next page', () => {
		expect(splitPage({ items: [{ a: 1 }], next_cursor: 'n' })).toEqual({
			records: [{ items: [{ a: 1 }], next_cursor: 'n' }],
		});
		expect(splitPage({ a: 1 })).toEqual({ records: [{ a: 1 }] });
		expect(splitPage([{ a: 1 }, { a: 2 }])).toEqual({ records: [{ data: [{ a: 1 }, { a: 2 }] }] });
		expect(splitPage({ data: 'not a list' })).toEqual({ records: [{ data: 'not a list' }] });
		expect(splitPage(undefined).records).toEqual([]);
		expect(splitPage('').records).toEqual([]);
	});

	it('puts a record of data that is not an object under data', () => {
		expect(splitPage({ data: ['x', { a: 1 }], has_more: false }).records).toEqual([
			{ data: 'x' },
			{ a: 1 },
		]);
	});
});

describe('asJsonObject', () => {
	it('keeps an object as it came, nothing as {}, anything else under data', () => {
		expect(asJsonObject({ id: 'm' })).toEqual({ id: 'm' });
		expect(asJsonObject(undefined)).toEqual({});
		expect(asJsonObject('')).toEqual({});
		expect(asJsonObject([1])).toEqual({ data: [1] });
		expect(asJsonObject(true)).toEqual({ data: true });
	});
});

describe('updateDisplayOptions', () => {
	it("adds resource/operation to every property and keeps the property's own conditions", () => {
		const [plain, limited] = updateDisplayOptions({ show: { resource: ['r'], operation: ['o'] } }, [
			{ displayName: 'A', name: 'a', type: 'string', default: '' },
			{
				displayName: 'B',
				name: 'b',
				type: 'number',
				default: 1,
				displayOptions: { show: { returnAll: [false] }, hide: { x: [1] } },
			},
		]);
		expect(plain.displayOptions).toEqual({ show: { resource: ['r'], operation: ['o'] } });
		expect(limited.displayOptions).toEqual({
			show: { returnAll: [false], resource: ['r'], operation: ['o'] },
			hide: { x: [1] },
		});
	});
});

describe('withoutSecrets', () => {
	it('drops the fields of a record that are named like a secret', () => {
		expect(
			withoutSecrets({
				url: 'u',
				configured: true,
				secret: 's',
				signing_secret: 's',
				webhookSecret: 's',
			}),
		).toEqual({
			url: 'u',
			configured: true,
		});
	});

	it('drops API key values, but keeps the bare prefix a key list shows', () => {
		expect(
			withoutSecrets({
				id: 'key_1',
				prefix: 'sk_live_',
				key: API_KEY,
				value: ` ${API_KEY}`,
				allowed_numbers: null,
			}),
		).toEqual({
			id: 'key_1',
			prefix: 'sk_live_',
			allowed_numbers: null,
		});
	});
});
