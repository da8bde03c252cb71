import { f16ValueTable } from '../format/f16.js';
import { u16, type BlockKernel } from './kernel.js';

const POW3 = [1, 3, 9, 27, 81];

/** The n-th base-3 digit of a TQ1_0 byte, as ggml extracts it: (byte * 3^n mod 256) * 3 >> 8. */
function trit(byte: number, n: number): number {
  return (((byte * POW3[n]!) & 255) * 3) >> 8;
}

// TQ1_0: ternary weights, five per byte in qs (32 then 16 bytes), four per byte in qh.
export const dequantTQ1_0: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 54) {
    const d = F16[u16(src, o + 52)]!;
    for (const [start, width] of [[0, 32], [32, 16]] as const) {
      for (let n = 0; n < 5; n++) {
        for (let m = 0; m < width; m++) out[y++] = (trit(src[o + start + m]!, n) - 1) * d;
      }
    }
    for (let n = 0; n < 4; n++) {
      for (let j = 0; j < 4; j++) out[y++] = (trit(src[o + 48 + j]!, n) - 1) * d;
    }
  }
};

// TQ2_0: ternary weights stored as 2-bit values 0..2 (minus 1), four per byte.
export const dequantTQ2_0: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 66) {
    const d = F16[u16(src, o + 64)]!;
    for (let j = 0; j < 64; j += 32) {
      for (let l = 0; l < 4; l++) {
        for (let m = 0; m < 32; m++) out[y++] = (((src[o + j + m]! >> (2 * l)) & 3) - 1) * d;
      }
    }
  }
};
