/** Small statistics for the benchmarks: medians, percentiles, spread. */

export function sorted(values: readonly number[]): number[] {
	return [...values].sort((a, b) => a - b);
}

/** Linear-interpolated quantile, q in [0, 1]. NaN for no values. */
export function quantile(values: readonly number[], q: number): number {
	if (values.length === 0) return Number.NaN;
	const s = sorted(values);
	const position = (s.length - 1) * q;
	const low = Math.floor(position);
	const high = Math.ceil(position);
	return s[low] + (s[high] - s[low]) * (position - low);
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

export interface Spread {
	median: number;
	min: number;
	max: number;
	n: number;
}

export function spread(values: readonly number[]): Spread {
	return {
		median: median(values),
		min: values.length ? Math.min(...values) : Number.NaN,
		max: values.length ? Math.max(...values) : Number.NaN,
		n: values.length,
	};
}

/** A number with `digits` significant decimals for tables, e.g. 1.234 -> "1.23". */
export function fixed(value: number, digits = 2): string {
	return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** "1.02x (0.98–1.07)" */
export function ratioText(s: Spread, digits = 2): string {
	return `${fixed(s.median, digits)}x (${fixed(s.min, digits)}–${fixed(s.max, digits)})`;
}
