/**
 * Benchmark 1: what the trigger costs per event inside the process, against the floor.
 *
 *   ours  = acceptEvent (verifySignature, parseEnvelope, options, replay window, filters)
 *           + eventItem + workflowDataFor: exactly what receiveEvent runs for an accepted event
 *           once n8n has handed it the raw body, header, secret and parameters.
 *   floor = createHmac('sha256').update(body).digest() + hex-decode of the header +
 *           timingSafeEqual + JSON.parse(body.toString()): the least any verifying receiver does.
 *
 * Both run in this process on the same bytes, in interleaved rounds (the order alternates each
 * round), each round timing `iterations` calls of one side in CPU time. Per round: ratio = ours / floor.
 *
 *   ts-node --transpile-only bench/inprocess.ts [--rounds 40] [--round-ms 25] [--json]
 *
 * With --json it prints one JSON object (used by bench/run.ts, which runs this file under the
 * system Node and under the Node that runs n8n 2.x).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

import {
	acceptEvent,
	type EventParameters,
} from '../nodes/BusinessMessagingTrigger/receiving/accept';
import { eventItem, workflowDataFor } from '../nodes/BusinessMessagingTrigger/routing/route';
import { CONTACT, inboundEnvelope } from '../test/support/fixtures';
import { signBody } from '../test/support/signature';
import { spread, median, type Spread } from './lib/stats';

export const BODY_SIZES = [
	{ label: '1 KB', bytes: 1024 },
	{ label: '64 KB', bytes: 64 * 1024 },
	{ label: '1 MB', bytes: 1024 * 1024 },
] as const;

const SECRET = 'whsec_bench_0123456789abcdef0123456789abcdef';
const TIMESTAMP = '2026-11-22T10:15:30.123456+00:00';
const NOW_MS = Date.parse('2026-11-22T10:15:31Z');
const PARAMETERS: EventParameters = {
	events: ['message.inbound'],
	options: {},
	separateOutputs: false,
};
const readParameters = (): EventParameters => PARAMETERS;

/**
 * A message.inbound envelope in the service's shape whose data.text is padded (ASCII words,
 * some accents, quotes and newlines, so JSON escapes occur) until the body is exactly `bytes`.
 */
export function inboundBody(bytes: number): Buffer {
	const envelope = (text: string) =>
		JSON.stringify(
			inboundEnvelope(
				{
					from: CONTACT,
					contact_name: 'Ada Lovelace',
					number: '100000000000001',
					wa_message_id: 'wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQzQUVCNTM0QzE4',
					text,
				},
				TIMESTAMP,
			),
		);
	// JSON-encoded length of a string without its quotes; the encoding of a concatenation is the
	// concatenation of the encodings, so the text can be sized exactly without re-encoding it.
	const encoded = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;
	const words = 'Bonjour, où est ma commande ? "Merci" beaucoup.\nHello, where is my order? ';
	const need = bytes - Buffer.byteLength(envelope(''));
	if (need < 0) throw new Error(`${bytes} bytes is smaller than an empty envelope`);
	const repeats = Math.floor(need / encoded(words));
	const text = words.repeat(repeats) + 'x'.repeat(need - repeats * encoded(words));
	const body = Buffer.from(envelope(text));
	if (body.length !== bytes) throw new Error(`built ${body.length} bytes instead of ${bytes}`);
	return body;
}

let sink = 0;

/** The trigger's path for one accepted event. */
function ours(body: Buffer, header: string): void {
	const accepted = acceptEvent(body, header, SECRET, NOW_MS, readParameters);
	if (accepted.kind !== 'emit')
		throw new Error(`the benchmark event was not accepted: ${JSON.stringify(accepted)}`);
	const output = workflowDataFor(
		eventItem(accepted.envelope),
		accepted.envelope.event,
		accepted.layout,
	);
	sink += (output[0][0].json.timestamp as string).length;
}

/** The bare floor: HMAC-SHA256, constant-time compare, JSON.parse of the same bytes. */
function floor(body: Buffer, header: string): void {
	const expected = createHmac('sha256', SECRET).update(body).digest();
	const received = Buffer.from(header.slice('sha256='.length), 'hex');
	if (received.length !== expected.length || !timingSafeEqual(received, expected))
		throw new Error('floor: bad signature');
	const parsed = JSON.parse(body.toString('utf8')) as { timestamp: string };
	sink += parsed.timestamp.length;
}

/**
 * CPU time per call (user + system of this process, which runs nothing else), not wall time:
 * the machine is shared, and time spent descheduled must not count against either side.
 */
function timeCalls(
	fn: (body: Buffer, header: string) => void,
	body: Buffer,
	header: string,
	iterations: number,
): number {
	const started = process.cpuUsage();
	for (let i = 0; i < iterations; i++) fn(body, header);
	const used = process.cpuUsage(started);
	return ((used.user + used.system) * 1000) / iterations;
}

export interface SizeResult {
	label: string;
	bytes: number;
	iterations: number;
	rounds: number;
	/** Nanoseconds per event, median over rounds. */
	ours_ns: number;
	floor_ns: number;
	/** ours / floor per round. */
	ratio: Spread;
}

export interface InProcessResult {
	node: string;
	rounds: number;
	round_ms: number;
	sizes: SizeResult[];
}

export function runInProcess(options: { rounds?: number; roundMs?: number } = {}): InProcessResult {
	const rounds = options.rounds ?? 40;
	const roundMs = options.roundMs ?? 25;
	const sizes: SizeResult[] = [];
	for (const size of BODY_SIZES) {
		const body = inboundBody(size.bytes);
		const header = signBody(body, SECRET);
		ours(body, header);
		floor(body, header);
		// Warm up both, then size the rounds so one side takes about roundMs.
		const warmUntil = Date.now() + 300;
		let warmCalls = 0;
		while (Date.now() < warmUntil) {
			ours(body, header);
			floor(body, header);
			warmCalls++;
		}
		const perCallNs = (300 * 1e6) / Math.max(1, warmCalls) / 2;
		const iterations = Math.max(5, Math.round((roundMs * 1e6) / perCallNs));
		const oursNs: number[] = [];
		const floorNs: number[] = [];
		const ratios: number[] = [];
		for (let round = 0; round < rounds; round++) {
			let o: number;
			let f: number;
			if (round % 2 === 0) {
				o = timeCalls(ours, body, header, iterations);
				f = timeCalls(floor, body, header, iterations);
			} else {
				f = timeCalls(floor, body, header, iterations);
				o = timeCalls(ours, body, header, iterations);
			}
			oursNs.push(o);
			floorNs.push(f);
			ratios.push(o / f);
		}
		sizes.push({
			label: size.label,
			bytes: body.length,
			iterations,
			rounds,
			ours_ns: median(oursNs),
			floor_ns: median(floorNs),
			ratio: spread(ratios),
		});
	}
	if (sink === 42) process.stderr.write(''); // keep the results observable
	return { node: process.version, rounds, round_ms: roundMs, sizes };
}

if (require.main === module) {
	const args = process.argv.slice(2);
	const value = (flag: string): number | undefined => {
		const i = args.indexOf(flag);
		return i >= 0 ? Number(args[i + 1]) : undefined;
	};
	const result = runInProcess({ rounds: value('--rounds'), roundMs: value('--round-ms') });
	if (args.includes('--json')) process.stdout.write(`${JSON.stringify(result)}\n`);
	else {
		for (const s of result.sizes) {
			process.stdout.write(
				`${s.label.padEnd(6)} ours ${(s.ours_ns / 1000).toFixed(2)} µs  floor ${(s.floor_ns / 1000).toFixed(2)} µs  ratio ${s.ratio.median.toFixed(3)} (${s.ratio.min.toFixed(3)}–${s.ratio.max.toFixed(3)}), ${s.rounds} rounds × ${s.iterations}\n`,
			);
		}
	}
}
