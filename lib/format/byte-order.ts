// Tensor data from one byte order to the other: every block's fields wider than a byte (the type
// table's wideFields) reversed in place; byte arrays stay. Swapping twice gives the bytes back.
import type { GgmlType } from './ggml-types.js';

/** Reverses, in place, the wide fields of each whole block of `type` in `bytes`. */
export function swapBlockFields(type: GgmlType, bytes: Uint8Array): void {
  const { typeSize, wideFields } = type;
  const nblocks = Math.floor(bytes.length / typeSize);
  if (wideFields.length === 1 && wideFields[0]![0] === 0 && wideFields[0]![1] === typeSize) {
    swapAll(bytes.subarray(0, nblocks * typeSize), typeSize as 2 | 4 | 8);
    return;
  }
  for (const [offset, width, count] of wideFields) {
    for (let b = 0; b < nblocks; b++) {
      for (let f = 0, o = b * typeSize + offset; f < count; f++, o += width) reverseBytes(bytes, o, width);
    }
  }
}

/** Reverses the `width` bytes at `o`, in place (one number to the other byte order). */
export function reverseBytes(bytes: Uint8Array, o: number, width: number): void {
  for (let i = 0, j = o + width - 1, k = o; i < width >> 1; i++, j--, k++) {
    const t = bytes[k]!;
    bytes[k] = bytes[j]!;
    bytes[j] = t;
  }
}

/** Every element of a plain type: through a typed array where the bytes are aligned for it. */
function swapAll(bytes: Uint8Array, width: 2 | 4 | 8): void {
  if (width === 2 && bytes.byteOffset % 2 === 0) {
    const u = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
    for (let i = 0; i < u.length; i++) u[i] = (u[i]! >>> 8) | ((u[i]! & 0xff) << 8);
    return;
  }
  if (width !== 2 && bytes.byteOffset % 4 === 0) {
    const u = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    for (let i = 0; i < u.length; i++) {
      const x = u[i]!;
      u[i] = (x >>> 24) | ((x >>> 8) & 0xff00) | ((x & 0xff00) << 8) | (x << 24);
    }
    // An 8-byte element is two swapped halves, exchanged.
    if (width === 8) {
      for (let i = 0; i < u.length; i += 2) {
        const t = u[i]!;
        u[i] = u[i + 1]!;
        u[i + 1] = t;
      }
    }
    return;
  }
  for (let o = 0; o < bytes.length; o += width) reverseBytes(bytes, o, width);
}
