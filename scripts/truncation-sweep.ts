// The truncation sweep: a file cut at byte L opens (and then every value and tensor reads) or
// fails with a GgufError; nothing else. Shared by test/truncation.test.ts (sampled cuts) and
// `npm run sweep` (every cut of every file).
import { GGML_TYPES, GgufError, parseGguf, type GgufWriteSpec } from '../lib/index.js';
import { exercise } from './exercise.js';

export interface SweepResult {
  cuts: number;
  opened: number;
  /** GgufError codes and how many cuts gave each. */
  failed: Record<string, number>;
}

/** Cuts `bytes` at each length; throws (naming the cut) on anything but success or GgufError. */
export function sweep(bytes: Uint8Array, lengths: Iterable<number>): SweepResult {
  const result: SweepResult = { cuts: 0, opened: 0, failed: {} };
  for (const length of lengths) {
    result.cuts++;
    try {
      exercise(parseGguf(bytes.subarray(0, length)));
      result.opened++;
    } catch (error) {
      if (!(error instanceof GgufError)) throw new Error(`cut at ${length}: ${String(error)}`, { cause: error });
      result.failed[error.code] = (result.failed[error.code] ?? 0) + 1;
    }
  }
  return result;
}

/** Every length from 0 to `size`. */
export function* everyCut(size: number): Iterable<number> {
  for (let l = 0; l <= size; l++) yield l;
}

/** Every length in the first `head` bytes and the last 4 KiB, and every `stride`-th between. */
export function* sampledCuts(size: number, head = 64 << 10, stride = 16): Iterable<number> {
  for (let l = 0; l <= size; l++) if (l < head || l > size - 4096 || l % stride === 0) yield l;
}

/** A small file with every value type (arrays of each, nested arrays) and every tensor type. */
export function everyTypeSpec(): GgufWriteSpec {
  const tensors = GGML_TYPES.filter((t) => !t.removed).map((t, i) => {
    const shape = [t.blockSize * 2, 2];
    const data = new Uint8Array(2 * 2 * t.typeSize).map((_, j) => (j * 37 + i) & 255);
    return { name: `t.${t.name}`, type: t.name, shape, data };
  });
  return {
    metadata: {
      u8: { type: 'UINT8', value: 200 },
      i8: { type: 'INT8', value: -5 },
      u16: { type: 'UINT16', value: 60000 },
      i16: { type: 'INT16', value: -300 },
      u32: { type: 'UINT32', value: 4e9 },
      i32: { type: 'INT32', value: -7 },
      f32: { type: 'FLOAT32', value: 1.5 },
      b: { type: 'BOOL', value: true },
      s: { type: 'STRING', value: 'héllo' },
      u64: { type: 'UINT64', value: 2n ** 63n },
      i64: { type: 'INT64', value: -(2n ** 40n) },
      f64: { type: 'FLOAT64', value: Math.PI },
      strings: { type: 'ARRAY', arrayType: 'STRING', value: ['a', 'bb', '', 'dddd'] },
      floats: { type: 'ARRAY', arrayType: 'FLOAT32', value: [1, 2, 3] },
      bools: { type: 'ARRAY', arrayType: 'BOOL', value: [true, false] },
      nested: {
        type: 'ARRAY',
        arrayType: 'ARRAY',
        value: [
          { arrayType: 'INT16', value: [1, -2] },
          { arrayType: 'STRING', value: ['x'] },
        ],
      },
    },
    tensors,
  };
}
