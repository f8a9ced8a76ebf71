// Pure helpers of the node: display options, secret stripping (list answers: test/shared/pagination).
import { updateDisplayOptions } from '../../../nodes/BusinessMessaging/helpers/descriptions';
import { asJsonObject, withoutSecrets } from '../../../nodes/BusinessMessaging/helpers/output';
import { API_KEY } from '../../support';

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
