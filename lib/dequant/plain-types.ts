import { canView } from '../format/elements.js';
import { f16Table } from '../format/f16.js';
import type { BlockKernel } from './kernel.js';

// Plain element types: a block is one element. F16 and BF16 convert as ggml does, bit for bit
// (written as bits, so NaN payloads survive); the others convert as values.

/** The output's float32 bits, to write NaNs exactly. */
function bitsOf(out: Float32Array): Uint32Array {
  return new Uint32Array(out.buffer, out.byteOffset, out.length);
}

/** Reads element `i` of width 2 as uint16 in the given byte order, from any alignment. */
function u16At(src: Uint8Array, i: number, littleEndian: boolean): number {
  const o = 2 * i;
  return littleEndian ? src[o]! | (src[o + 1]! << 8) : (src[o]! << 8) | src[o + 1]!;
}

/** The elements in place when byte order and alignment allow, else undefined. */
function direct16(src: Uint8Array, n: number, littleEndian: boolean): Uint16Array | undefined {
  return canView(2, src.byteOffset, littleEndian) ? new Uint16Array(src.buffer, src.byteOffset, n) : undefined;
}

export const convertF16: BlockKernel = (src, n, out, at, littleEndian = true) => {
  const table = f16Table();
  const bits = bitsOf(out);
  const halves = direct16(src, n, littleEndian);
  if (halves !== undefined) {
    for (let i = 0; i < n; i++) bits[at + i] = table[halves[i]!]!;
  } else {
    for (let i = 0; i < n; i++) bits[at + i] = table[u16At(src, i, littleEndian)]!;
  }
};

// BF16 is the top half of a float32: ggml shifts the bits left by 16, NaNs included.
export const convertBF16: BlockKernel = (src, n, out, at, littleEndian = true) => {
  const bits = bitsOf(out);
  const halves = direct16(src, n, littleEndian);
  if (halves !== undefined) {
    for (let i = 0; i < n; i++) bits[at + i] = halves[i]! << 16;
  } else {
    for (let i = 0; i < n; i++) bits[at + i] = u16At(src, i, littleEndian) << 16;
  }
};

type Getter = (view: DataView, offset: number, littleEndian: boolean) => number;
type NumberArray = Int16Array | Int32Array | Float64Array;

/** Converts elements as values: through a typed view in place when order and alignment allow. */
function valueConverter(View: { new (b: ArrayBufferLike, o: number, n: number): NumberArray; BYTES_PER_ELEMENT: number }, get: Getter): BlockKernel {
  const width = View.BYTES_PER_ELEMENT;
  return (src, n, out, at, littleEndian = true) => {
    if (canView(width, src.byteOffset, littleEndian)) {
      const values = new View(src.buffer, src.byteOffset, n);
      for (let i = 0; i < n; i++) out[at + i] = values[i]!;
      return;
    }
    const view = new DataView(src.buffer, src.byteOffset, n * width);
    for (let i = 0; i < n; i++) out[at + i] = get(view, i * width, littleEndian);
  };
}

// F32 is copied as bits, so NaN payloads survive.
export const convertF32: BlockKernel = (src, n, out, at, littleEndian = true) => {
  const bits = bitsOf(out);
  if (canView(4, src.byteOffset, littleEndian)) {
    bits.set(new Uint32Array(src.buffer, src.byteOffset, n), at);
    return;
  }
  const view = new DataView(src.buffer, src.byteOffset, n * 4);
  for (let i = 0; i < n; i++) bits[at + i] = view.getUint32(i * 4, littleEndian);
};

export const convertF64 = valueConverter(Float64Array, (v, o, le) => v.getFloat64(o, le));
export const convertI8: BlockKernel = (src, n, out, at) => {
  for (let i = 0; i < n; i++) out[at + i] = (src[i]! << 24) >> 24;
};
export const convertI16 = valueConverter(Int16Array, (v, o, le) => v.getInt16(o, le));
export const convertI32 = valueConverter(Int32Array, (v, o, le) => v.getInt32(o, le));
