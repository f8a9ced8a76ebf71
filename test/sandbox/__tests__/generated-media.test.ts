import { createHash } from 'node:crypto';
import { request } from 'undici';
import { generatedMediaBytes, MAX_GENERATED_MEDIA_BYTES } from '../media';
import { MAX_BODY_BYTES } from '../http';
import { CONTACT, useSandbox } from '../../support';
import { api, control, inbound } from './helpers';

const sb = useSandbox();

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('generatedMediaBytes', () => {
	it('is deterministic: 64 KiB of sha256("sandbox-media-<i>") repeated, cut to the size', () => {
		const bytes = generatedMediaBytes(200_000);
		expect(bytes.length).toBe(200_000);
		expect(bytes.subarray(0, 32)).toEqual(createHash('sha256').update('sandbox-media-0').digest());
		expect(bytes.subarray(32, 64)).toEqual(createHash('sha256').update('sandbox-media-1').digest());
		expect(bytes.subarray(65_536, 65_536 + 32)).toEqual(bytes.subarray(0, 32));
		expect(generatedMediaBytes(1000)).toEqual(bytes.subarray(0, 1000));
		expect(sha256(generatedMediaBytes(200_000))).toBe(sha256(bytes));
	});

	it.each([0, -1, 1.5, MAX_GENERATED_MEDIA_BYTES + 1])('refuses size %p', (size) => {
		expect(() => generatedMediaBytes(size)).toThrow(RangeError);
	});
});

describe('POST /_sandbox/inbound with media.size_bytes', () => {
	it('hosts a file larger than the control body limit, served whole through the signed URL', async () => {
		const size = MAX_BODY_BYTES + 5 * 1024 * 1024 + 7;
		const result = await inbound(sb, sb.numbers[0].phone_number_id, {
			text: '',
			media: { mime: 'video/mp4', size_bytes: size, filename: 'big.mp4' },
		});
		expect(result.body.record).toMatchObject({
			type: 'video',
			media_mime: 'video/mp4',
			media_id: expect.any(String),
		});
		expect(sb.state().media).toEqual([
			expect.objectContaining({ size, filename: 'big.mp4', hosted: true }),
		]);

		const pointer = await api(sb, 'GET', `/v1/media/${result.body.record.media_id}`, sb.keys.all);
		expect(pointer.status).toBe(302);
		const file = await request(pointer.headers.location as string);
		expect(file.statusCode).toBe(200);
		expect(file.headers['content-length']).toBe(String(size));
		const hash = createHash('sha256');
		let received = 0;
		for await (const chunk of file.body) {
			hash.update(chunk as Buffer);
			received += (chunk as Buffer).length;
		}
		expect(received).toBe(size);
		expect(hash.digest('hex')).toBe(sha256(generatedMediaBytes(size)));
	});

	it.each([
		[{ mime: 'image/png' }, 'neither'],
		[{ mime: 'image/png', data_base64: 'AA==', size_bytes: 10 }, 'both'],
		[{ mime: 'image/png', size_bytes: 0 }, 'zero'],
		[{ mime: 'image/png', size_bytes: MAX_GENERATED_MEDIA_BYTES + 1 }, 'over the maximum'],
	])(
		'refuses media %j (%s) with 400 naming media',
		async (media: Record<string, unknown>, _case: string) => {
			const result = await control(sb, 'POST', '/inbound', {
				from: CONTACT,
				contact_name: 'Ada',
				number: sb.numbers[0].phone_number_id,
				media,
			});
			expect(result.status).toBe(400);
			expect(result.body.error.message).toMatch(/media(\.size_bytes)?:/);
		},
	);
});
