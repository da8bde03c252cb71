import { canDequantize } from '../dequant/dequantize.js';
import { GgufError } from '../errors.js';
import type { GgufTensor } from '../file/tensor.js';

/** Past this many values a tensor's statistics come from a deterministic sample of its rows. */
export const DEFAULT_SAMPLE_LIMIT = 16 * 1024 * 1024;
/** Histogram bins over [min, max] of the finite values. */
export const HISTOGRAM_BINS = 64;
// A sample is this many runs of consecutive rows, spread evenly from the first row to the last:
// few enough that a remote model needs few range requests, enough to see every part of the tensor.
const SAMPLE_RUNS = 64;

/** Statistics of a tensor's values (all of them, or the sample that `sampled` describes). */
export interface TensorStats {
  /** Values looked at (the tensor's elements, or the sample's). */
  count: number;
  /**
   * False when every value was counted; else which rows were: rows of `rowLength` values, the
   * tensor's own, or, where a row is longer than the sample, pieces of its rows.
   */
  sampled: false | { rows: number; runs: number; rowsPerRun: number; of: number; rowLength: number };
  /** Values neither NaN nor ±Inf: the histogram's counts sum to this (count - nan - inf). */
  finite: number;
  /** Of the finite values; null when there is none. */
  min: number | null;
  max: number | null;
  mean: number | null;
  /** Population standard deviation of the finite values. */
  std: number | null;
  nan: number;
  /** +Inf and -Inf together, and each. */
  inf: number;
  posInf: number;
  negInf: number;
  /** Values equal to zero (+0 and -0). */
  zeros: number;
  /** `edges` has one more entry than `counts`; bin i holds edges[i] <= v < edges[i+1] (the last bin includes max). */
  histogram: { edges: number[]; counts: number[] };
}

/**
 * The rows to read for a tensor of `rows` rows of `rowLength` values: every row when the tensor
 * has at most `limit` values; else `runs` runs of `rowsPerRun` consecutive rows, the first run at
 * row 0, the last ending at the last row, the others evenly between (run r starts at
 * floor(r * (rows - rowsPerRun) / (runs - 1))). Same tensor, same rows: the figures do not move.
 */
export function sampleRows(rows: number, rowLength: number, limit: number): { runStarts: number[]; rowsPerRun: number } | undefined {
  if (rows * rowLength <= limit || rows <= 1) return undefined;
  const wanted = Math.max(1, Math.floor(limit / Math.max(1, rowLength)));
  const runs = Math.min(SAMPLE_RUNS, wanted);
  const rowsPerRun = Math.floor(wanted / runs);
  const runStarts: number[] = [];
  for (let r = 0; r < runs; r++) runStarts.push(runs === 1 ? 0 : Math.floor((r * (rows - rowsPerRun)) / (runs - 1)));
  return { runStarts, rowsPerRun };
}

/**
 * The rows a sample is made of: the tensor's rows when one is at most `limit` values; else
 * pieces of them, the longest multiple of `blockSize` that divides a row and is at most
 * limit / 64 (at least one block), so that a one-row tensor, or rows longer than the sample, are
 * sampled as any other and not read whole.
 */
export function sampleRowLength(rowLength: number, blockSize: number, limit: number): number {
  if (rowLength <= limit) return rowLength;
  const blocks = rowLength / blockSize;
  for (let d = Math.max(1, Math.min(blocks, Math.floor(limit / SAMPLE_RUNS / blockSize))); d > 1; d--) if (blocks % d === 0) return d * blockSize;
  return blockSize;
}

/** What a tensor's statistics read: every value, or the rows (of rowLength values) of `sample`. */
export function samplePlan(t: { nelements: number; rowLength: number; ggmlType: { blockSize: number } }, limit: number): { rowLength: number; rows: number; sample: { runStarts: number[]; rowsPerRun: number } } | undefined {
  if (t.nelements <= limit) return undefined;
  const rowLength = sampleRowLength(t.rowLength, t.ggmlType.blockSize, limit);
  const rows = t.nelements / rowLength;
  const sample = sampleRows(rows, rowLength, limit);
  return sample === undefined ? undefined : { rowLength, rows, sample };
}

/** The statistics of `values` (see TensorStats; `sampled` is left for the caller). */
export function statsOf(values: Float32Array, bins = HISTOGRAM_BINS): Omit<TensorStats, 'sampled'> {
  const n = values.length;
  // Almost every tensor holds only finite values: a pass with no test for NaN or ±Inf, whose sum
  // says whether there were any (a NaN or an infinity makes it non-finite; float32 values cannot
  // overflow a float64 sum); only then the careful pass.
  const quick = quickPass(values);
  const allFinite = Number.isFinite(quick.sum) && n > 0;
  const first = allFinite ? { ...quick, nan: 0, posInf: 0, negInf: 0 } : firstPass(values);
  const { nan, posInf, negInf, zeros, min, max } = first;
  const finite = n - nan - posInf - negInf;
  const base = { count: n, finite, nan, inf: posInf + negInf, posInf, negInf, zeros };
  if (finite === 0) return { ...base, min: null, max: null, mean: null, std: null, histogram: { edges: [], counts: [] } };
  const mean = first.sum / finite;
  const binCount = min === max ? 1 : bins;
  const width = (max - min) / binCount;
  const { counts, squares } = (allFinite ? secondPassFinite : secondPass)(values, mean, min, width === 0 ? 0 : 1 / width, binCount);
  const edges = Array.from({ length: binCount + 1 }, (_, i) => (i === binCount ? max : min + width * i));
  return { ...base, min, max, mean, std: Math.sqrt(squares / finite), histogram: { edges, counts: Array.from(counts) } };
}

function quickPass(values: Float32Array) {
  let zeros = 0;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  const n = values.length;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (v < min) min = v;
    if (v > max) max = v;
    if (v === 0) zeros++;
    sum += v;
  }
  return { zeros, min, max, sum };
}

/** secondPass for values known to be finite. */
function secondPassFinite(values: Float32Array, mean: number, min: number, scale: number, bins: number) {
  const counts = new Int32Array(bins);
  let squares = 0;
  const last = bins - 1;
  const n = values.length;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    const d = v - mean;
    squares += d * d;
    let bin = ((v - min) * scale) | 0;
    if (bin > last) bin = last;
    counts[bin] = (counts[bin]! + 1) | 0;
  }
  return { counts, squares };
}

// The passes are separate small functions with typed locals: V8 keeps them optimized
// (16M values each in tens of milliseconds).
function firstPass(values: Float32Array) {
  let nan = 0;
  let posInf = 0;
  let negInf = 0;
  let zeros = 0;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  const n = values.length;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (v - v === 0) {
      if (v < min) min = v;
      if (v > max) max = v;
      if (v === 0) zeros++;
      sum += v;
    } else if (v !== v) nan++;
    else if (v > 0) posInf++;
    else negInf++;
  }
  return { nan, posInf, negInf, zeros, min, max, sum };
}

/** Squared deviations from `mean` (two passes: no cancellation), and bin counts: bin = floor((v - min) * scale), the last bin holding max. */
function secondPass(values: Float32Array, mean: number, min: number, scale: number, bins: number) {
  const counts = new Int32Array(bins);
  let squares = 0;
  const last = bins - 1;
  const n = values.length;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (v - v !== 0) continue; // NaN and ±Inf
    const d = v - mean;
    squares += d * d;
    let bin = ((v - min) * scale) | 0; // in [0, bins]: an int32 index keeps the store on the fast path
    if (bin > last) bin = last;
    counts[bin] = (counts[bin]! + 1) | 0;
  }
  return { counts, squares };
}

/** The sampled rows as ids for gatherRows (run after run). */
export function sampleRowIds(sample: { runStarts: number[]; rowsPerRun: number }): Uint32Array {
  const ids = new Uint32Array(sample.runStarts.length * sample.rowsPerRun);
  let k = 0;
  for (const start of sample.runStarts) for (let j = 0; j < sample.rowsPerRun; j++) ids[k++] = start + j;
  return ids;
}

/**
 * A tensor's statistics, dequantized by the library's kernels off the event loop (native where the
 * addon has the type): every value up to `limit`, past it the rows sampleRows() picks. A remote
 * tensor's bytes (or the sampled rows') are fetched here, by range.
 */
export async function tensorStats(tensor: GgufTensor, limit = DEFAULT_SAMPLE_LIMIT): Promise<TensorStats> {
  if (!canDequantize(tensor.type)) {
    throw new GgufError('NO_DEQUANTIZER', `tensor '${tensor.name}' is ${tensor.type}, which has no float conversion`, tensor.fileOffset);
  }
  const plan = samplePlan(tensor, limit);
  if (plan === undefined) {
    return { ...statsOf(await tensor.dequantizeAsync()), sampled: false };
  }
  const { sample } = plan;
  const rowsOf = plan.rowLength === tensor.rowLength ? tensor : tensor.asRowsOf(plan.rowLength);
  const values = await rowsOf.gatherRowsAsync(sampleRowIds(sample));
  const rows = sample.runStarts.length * sample.rowsPerRun;
  return { ...statsOf(values), sampled: { rows, runs: sample.runStarts.length, rowsPerRun: sample.rowsPerRun, of: plan.rows, rowLength: plan.rowLength } };
}
