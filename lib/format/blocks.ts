import { GgufError } from '../errors.js';
import { f16ToF32 } from './f16.js';

/**
 * Views of single quantized blocks, laid out as ggml's block structs. The byte fields are
 * subarrays of the tensor's bytes (no copy); the f16 scales are decoded to numbers, in the file's
 * byte order (a big-endian file holds them swapped: the type table's wideFields).
 */
export interface Q4KBlock {
  readonly type: 'Q4_K';
  /** Super-block scale for the quantized scales. */
  readonly d: number;
  /** Super-block scale for the quantized mins. */
  readonly dmin: number;
  /** 8 six-bit scales and 8 six-bit mins, packed into 12 bytes. */
  readonly scales: Uint8Array;
  /** 256 four-bit quants, two per byte. */
  readonly qs: Uint8Array;
}

export interface Q6KBlock {
  readonly type: 'Q6_K';
  /** Low 4 bits of the 256 quants. */
  readonly ql: Uint8Array;
  /** High 2 bits of the 256 quants. */
  readonly qh: Uint8Array;
  /** 16 signed 8-bit scales, one per 16 elements. */
  readonly scales: Int8Array;
  /** Super-block scale. */
  readonly d: number;
}

export type GgufBlock = Q4KBlock | Q6KBlock;

/** Bytes per block of the types that have block views. */
export const BLOCK_BYTES = { Q4_K: 144, Q6_K: 210 } as const;

function f16At(bytes: Uint8Array, at: number, littleEndian: boolean): number {
  return f16ToF32(littleEndian ? bytes[at]! | (bytes[at + 1]! << 8) : (bytes[at]! << 8) | bytes[at + 1]!);
}

/** Block `index` of a Q4_K or Q6_K tensor's bytes. `fileOffset` places errors in the file. */
export function blockAt(type: string, bytes: Uint8Array, index: number, fileOffset: number, littleEndian = true): GgufBlock {
  if (type !== 'Q4_K' && type !== 'Q6_K') {
    throw new GgufError('UNSUPPORTED_BLOCK_TYPE', `block views exist for Q4_K and Q6_K, not ${type}`, fileOffset);
  }
  const size = BLOCK_BYTES[type];
  const count = Math.floor(bytes.byteLength / size);
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new GgufError('BLOCK_OUT_OF_RANGE', `block ${index} of ${count}`, fileOffset);
  }
  const b = bytes.subarray(index * size, (index + 1) * size);
  if (type === 'Q4_K') {
    return { type, d: f16At(b, 0, littleEndian), dmin: f16At(b, 2, littleEndian), scales: b.subarray(4, 16), qs: b.subarray(16, 144) };
  }
  return {
    type,
    ql: b.subarray(0, 128),
    qh: b.subarray(128, 192),
    scales: new Int8Array(b.buffer, b.byteOffset + 192, 16),
    d: f16At(b, 208, littleEndian),
  };
}
