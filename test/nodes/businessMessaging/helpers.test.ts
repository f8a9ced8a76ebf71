// Pure helpers of the node: list answers, display options, secret stripping.
import { splitPage } from '../../../nodes/BusinessMessaging/helpers/list';
import { updateDisplayOptions, withoutSecrets } from '../../../nodes/BusinessMessaging/helpers/utils';

describe('splitPage', () => {
	it('takes a plain array as the records, with no next page', () => {
		expect(splitPage([{ a: 1 }, { a: 2 }])).toEqual({ records: [{ a: 1 }, { a: 2 }] });
	});

	it('finds the records and the cursor of a page object', () => {
		expect(splitPage({ data: [{ a: 1 }], has_more: true, next_cursor: 'cur_1' })).toEqual({
			records: [{ a: 1 }],
			cursor: 'cur_1',
		});
		expect(splitPage({ items: [{ a: 1 }], paging: { next_cursor: 'n' } }).cursor).toBe('n');
		expect(splitPage({ logs: [{ a: 1 }], next: 'c2' }).cursor).toBe('c2');
	});

	it('stops when the page says there is no more, or gives a null cursor', () => {
		expect(splitPage({ data: [], has_more: false, next_cursor: 'x' }).cursor).toBeUndefined();
		expect(splitPage({ data: [{ a: 1 }], has_more: false, next_cursor: null }).cursor).toBeUndefined();
	});

	it('does not follow a next URL (it could point anywhere)', () => {
		expect(splitPage({ data: [{ a: 1 }], next: 'https://elsewhere.example.com/?page=2' }).cursor).toBeUndefined();
	});

	it('takes the only array of an unknown shape, else the object itself as one record', () => {
		expect(splitPage({ whatever: [{ a: 1 }], count: 1 }).records).toEqual([{ a: 1 }]);
		expect(splitPage({ a: 1 }).records).toEqual([{ a: 1 }]);
		expect(splitPage(undefined).records).toEqual([]);
		expect(splitPage(['x']).records).toEqual([{ value: 'x' }]);
	});
});

describe('updateDisplayOptions', () => {
	it('adds resource/operation to every property and keeps the property\'s own conditions', () => {
		const [plain, limited] = updateDisplayOptions({ show: { resource: ['r'], operation: ['o'] } }, [
			{ displayName: 'A', name: 'a', type: 'string', default: '' },
			{ displayName: 'B', name: 'b', type: 'number', default: 1, displayOptions: { show: { returnAll: [false] }, hide: { x: [1] } } },
		]);
		expect(plain.displayOptions).toEqual({ show: { resource: ['r'], operation: ['o'] } });
		expect(limited.displayOptions).toEqual({
			show: { returnAll: [false], resource: ['r'], operation: ['o'] },
			hide: { x: [1] },
		});
	});
});

describe('withoutSecrets', () => {
	it('drops every key that looks like a secret, at any depth', () => {
		expect(
			withoutSecrets({ url: 'u', secret: 's', signing_secret: 's', nested: { webhookSecret: 's', keep: [{ clientSecret: 1, ok: 2 }] } }),
		).toEqual({ url: 'u', nested: { keep: [{ ok: 2 }] } });
	});

	it('drops API key values wherever they are, but keeps the bare prefix a key list shows', () => {
		const key = `sk_live_${'ab'.repeat(24)}`;
		expect(withoutSecrets({ id: 'key_1', prefix: 'sk_live_', key, value: ` ${key}`, list: [key, 'x'], nested: { token: key } })).toEqual({
			id: 'key_1',
			prefix: 'sk_live_',
			list: ['x'],
			nested: {},
		});
	});
});
