/** The middle value (the upper one of an even count). */
export function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1]!;
}

/** The value at fraction q of the sorted values (q = 1: the largest). */
export function quantile(values: readonly number[], q: number): number {
  return [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
}

/** The median milliseconds of `rounds` calls of fn. */
export function medianTime(fn: () => void, rounds: number): number {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  return median(times);
}
