import { parseArgs } from '../cli';
import { DEFAULT_WEBHOOK_TIMEOUT_MS } from '..';

describe('cli arguments', () => {
	it('defaults to port 4010 with the media host on 4011', () => {
		expect(parseArgs([])).toEqual({ port: 4010, mediaPort: 4011 });
	});

	it('--port moves both; --media-port, --host and --webhook-timeout-ms are taken as given', () => {
		expect(parseArgs(['--port', '5000'])).toEqual({ port: 5000, mediaPort: 5001 });
		expect(
			parseArgs([
				'--port',
				'5000',
				'--media-port',
				'6000',
				'--host',
				'0.0.0.0',
				'--webhook-timeout-ms',
				'2000',
			]),
		).toEqual({
			port: 5000,
			mediaPort: 6000,
			host: '0.0.0.0',
			webhookTimeoutMs: 2000,
		});
	});

	it('refuses unknown flags and bad numbers', () => {
		expect(() => parseArgs(['--prot', '1'])).toThrow(/Unknown argument --prot/);
		expect(() => parseArgs(['--port', 'x'])).toThrow(/whole number/);
	});
});

describe('webhook timeout default', () => {
	it('is 8000 ms ("about 8 seconds")', () => {
		expect(DEFAULT_WEBHOOK_TIMEOUT_MS).toBe(8000);
	});
});
