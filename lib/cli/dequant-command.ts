import type { DequantBackend } from '../dequant/dequantize.js';
import { commit, inputNamedBy, writeAll, writeTemporaryWith } from '../edit/output-file.js';
import type { GgufFile } from '../file/gguf-file.js';
import { HOST_LITTLE_ENDIAN } from '../format/elements.js';
import { printable } from './inspect.js';
import { progressBar } from './progress-bar.js';

/** What `gguf-mmap dequant` was asked for, already parsed. */
export interface DequantRequest {
  tensor: string;
  /** Half-open row range; undefined means every row. */
  rows?: { first: number; end?: number };
  outPath?: string;
  backend: DequantBackend;
  /** Where progress goes (a TTY), or undefined for none. */
  progress?: NodeJS.WriteStream;
}

export class DequantUsageError extends Error {}

/** Refuses an output path that names one of the files read (directly or through a link): a split model's every part. */
export function checkOutputIsNotInput(inputPaths: readonly string[], outPath: string): void {
  const inputPath = inputNamedBy(inputPaths, outPath);
  if (inputPath !== undefined) throw new Error(`--out ${outPath} is ${inputPath}, a file being read; writing it would destroy the model`);
}

/** Parses `A:B`, `A:` or `A` (row A alone). */
export function parseRows(text: string): { first: number; end?: number } {
  const m = /^(\d+)(?::(\d*))?$/.exec(text);
  if (m === null) throw new DequantUsageError(`--rows wants A:B, A: or A (row numbers), not '${text}'`);
  const first = Number(m[1]);
  if (m[2] === undefined) return { first, end: first + 1 };
  return m[2] === '' ? { first } : { first, end: Number(m[2]) };
}

// Work goes in slices of about this many elements: bounded memory, and a progress bar that moves.
const SLICE_ELEMENTS = 1 << 22;

interface Summary {
  min: number;
  max: number;
  sum: number;
  nan: number;
  infinite: number;
}

function accumulate(s: Summary, values: Float32Array): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v !== v) {
      s.nan++;
      continue;
    }
    if (v === Infinity || v === -Infinity) s.infinite++;
    if (v < s.min) s.min = v;
    if (v > s.max) s.max = v;
    s.sum += v;
  }
}

/**
 * Dequantizes the requested rows slice by slice: to a raw little-endian float32 file when
 * `outPath` is given (returns a one-line report), else into a summary (min, max, mean, NaN).
 */
export function runDequant(g: GgufFile, request: DequantRequest): string {
  const tensor = g.tensor(request.tensor);
  if (tensor === undefined) throw new DequantUsageError(`no tensor named '${request.tensor}'`);
  const first = request.rows?.first ?? 0;
  const end = request.rows?.end ?? tensor.rows;
  if (first > end || end > tensor.rows) {
    throw new DequantUsageError(`rows ${first}:${end} are outside 0:${tensor.rows} of '${tensor.name}'`);
  }
  const rowLength = tensor.rowLength;
  const total = (end - first) * rowLength;
  const sliceRows = Math.max(1, Math.floor(SLICE_ELEMENTS / Math.max(1, rowLength)));
  const buffer = new Float32Array(Math.min(end - first, sliceRows) * rowLength);
  const summary: Summary = { min: Infinity, max: -Infinity, sum: 0, nan: 0, infinite: 0 };
  const progress = progressBar(request.progress, { rate: false });
  const decode = (use: (values: Float32Array) => void) => {
    for (let row = first; row < end; row += sliceRows) {
      const count = Math.min(sliceRows, end - row);
      use(tensor.dequantizeRows(row, count, buffer.subarray(0, count * rowLength), { backend: request.backend }));
      progress.update((row + count - first) * rowLength, total);
    }
    // Pages lost while reading (the file truncated underneath) read as zeros: fail instead.
    g.verify();
  };
  try {
    if (request.outPath === undefined) {
      decode((values) => accumulate(summary, values));
    } else {
      if (!HOST_LITTLE_ENDIAN) throw new Error('--out writes little-endian floats; this host is big-endian');
      // Through a temporary file renamed at the end (output-file.ts): no half file, and the old
      // contents stay until then.
      // A device or FIFO (--out /dev/null, a pipe to another program) is written directly, in order.
      const temp = writeTemporaryWith(request.outPath, (fd) => decode((values) => writeAll(fd, new Uint8Array(values.buffer, values.byteOffset, values.byteLength))), { streamed: true });
      commit(temp, request.outPath);
    }
  } finally {
    progress.end();
  }
  const head = `${printable(tensor.name)}  ${tensor.type}  [${tensor.shape.join(', ')}]  rows ${first}:${end}  ${total} values`;
  if (request.outPath !== undefined) return `${head}\nwrote ${total * 4} bytes of little-endian float32 to ${printable(request.outPath)}\n`;
  const finite = total - summary.nan;
  const mean = finite === 0 ? NaN : summary.sum / finite;
  const fmt = (x: number) => (Number.isFinite(x) ? Number(x.toPrecision(7)).toString() : String(x));
  return `${head}\nmin ${finite ? fmt(summary.min) : 'NaN'}  max ${finite ? fmt(summary.max) : 'NaN'}  mean ${fmt(mean)}  NaN ${summary.nan}  Inf ${summary.infinite}\n`;
}
