/**
 * A TypeScript dequantizer: decodes `nblocks` blocks from `src` (which starts at the first block)
 * into `out` from index `at`. Formulas follow ggml's scalar reference (`dequantize_row_*` in
 * ggml-quants.c); every product there is exact in float32, so evaluating in doubles and storing
 * into a Float32Array gives ggml's bits. Quantized kernels read little-endian blocks (a big-endian
 * file's are swapped into a copy first, in dequantize.ts); `littleEndian` (default true) is the
 * byte order of plain element types (F16, F32, I16, ...).
 */
export type BlockKernel = (src: Uint8Array, nblocks: number, out: Float32Array, at: number, littleEndian?: boolean) => void;

/** Little-endian uint16 at `o`. */
export function u16(src: Uint8Array, o: number): number {
  return src[o]! | (src[o + 1]! << 8);
}

/** Little-endian uint32 at `o`, as an unsigned number. */
export function u32(src: Uint8Array, o: number): number {
  return (src[o]! | (src[o + 1]! << 8) | (src[o + 2]! << 16) | (src[o + 3]! << 24)) >>> 0;
}

/** Byte `b` as int8. */
export function i8(b: number): number {
  return (b << 24) >> 24;
}
