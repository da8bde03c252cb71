import { f16ValueTable } from '../format/f16.js';
import { i8, u16, type BlockKernel } from './kernel.js';

// K-quants: 256-element super-blocks whose sub-block scales are themselves quantized.

// Q2_K: 16 sub-blocks of 16; scales byte = scale (low nibble) | min (high nibble).
export const dequantQ2_K: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0; b < nblocks; b++, o += 84) {
    const d = F16[u16(src, o + 80)]!;
    const dmin = F16[u16(src, o + 82)]!;
    let y = at + b * 256;
    let is = 0;
    for (let half = 0; half < 2; half++) {
      const q = o + 16 + 32 * half;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let part = 0; part < 2; part++, is++, y += 16) {
          const sc = src[o + is]!;
          const dl = Math.fround(d * (sc & 15));
          const ml = Math.fround(dmin * (sc >> 4));
          const qp = q + 16 * part;
          for (let l = 0; l < 16; l++) out[y + l] = dl * ((src[qp + l]! >> shift) & 3) - ml;
        }
      }
    }
  }
};

// Q3_K: 16 signed 6-bit scales (bias 32); a 2-bit quant loses 4 when its hmask bit is clear.
export const dequantQ3_K: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const scales = new Int32Array(16);
  for (let b = 0, o = 0; b < nblocks; b++, o += 110) {
    const dAll = F16[u16(src, o + 108)]!;
    const s = o + 96;
    for (let j = 0; j < 16; j++) {
      const low = j < 8 ? src[s + j]! & 15 : src[s + j - 8]! >> 4;
      const high = (src[s + 8 + (j & 3)]! >> (2 * (j >> 2))) & 3;
      scales[j] = (low | (high << 4)) - 32;
    }
    let y = at + b * 256;
    let is = 0;
    for (let half = 0; half < 2; half++) {
      const q = o + 32 + 32 * half;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let part = 0; part < 2; part++, is++, y += 16) {
          const dl = Math.fround(dAll * scales[is]!);
          const qp = q + 16 * part;
          const hp = o + 16 * part;
          // Branch-free: the hmask bits are as good as random, so a branch would mispredict.
          const bit = shift >> 1;
          for (let l = 0; l < 16; l++) {
            out[y + l] = dl * (((src[qp + l]! >> shift) & 3) - 4 + (((src[hp + l]! >> (bit + 4 * half)) & 1) << 2));
          }
        }
      }
    }
  }
};

/** Sub-block j's 6-bit scale (what 0) or min (what 1) from the 12 packed bytes at `s` (ggml's get_scale_min_k4). */
function scaleMinK4(src: Uint8Array, s: number, j: number, what: 0 | 1): number {
  if (j < 4) return src[s + j + 4 * what]! & 63;
  return what === 0 ? (src[s + j + 4]! & 15) | ((src[s + j - 4]! >> 6) << 4) : (src[s + j + 4]! >> 4) | ((src[s + j]! >> 6) << 4);
}

/**
 * Q4_K/Q5_K group g (64 values) of the block at `o`: [d1, m1, d2, m2], the scale and min of its
 * low-nibble half (sub-block 2g) and high-nibble half (2g+1) times d and dmin, as float32.
 */
function groupScales(src: Uint8Array, o: number, g: number, d: number, dmin: number, into: Float64Array): void {
  into[0] = Math.fround(d * scaleMinK4(src, o + 4, 2 * g, 0));
  into[1] = Math.fround(dmin * scaleMinK4(src, o + 4, 2 * g, 1));
  into[2] = Math.fround(d * scaleMinK4(src, o + 4, 2 * g + 1, 0));
  into[3] = Math.fround(dmin * scaleMinK4(src, o + 4, 2 * g + 1, 1));
}

// Q4_K: 8 sub-blocks of 32; y = (d*sc)*q - dmin*m.
export const dequantQ4_K: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const k = new Float64Array(4);
  for (let b = 0, o = 0; b < nblocks; b++, o += 144) {
    const d = F16[u16(src, o)]!;
    const dmin = F16[u16(src, o + 2)]!;
    let y = at + b * 256;
    for (let g = 0; g < 4; g++, y += 64) {
      groupScales(src, o, g, d, dmin, k);
      const d1 = k[0]!, m1 = k[1]!, d2 = k[2]!, m2 = k[3]!;
      const q = o + 16 + 32 * g;
      for (let l = 0; l < 32; l++) {
        const v = src[q + l]!;
        out[y + l] = d1 * (v & 15) - m1;
        out[y + l + 32] = d2 * (v >> 4) - m2;
      }
    }
  }
};

// Q5_K: Q4_K plus a fifth bit per element from qh (bit 2g for the low half, 2g+1 for the high).
export const dequantQ5_K: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const k = new Float64Array(4);
  for (let b = 0, o = 0; b < nblocks; b++, o += 176) {
    const d = F16[u16(src, o)]!;
    const dmin = F16[u16(src, o + 2)]!;
    let y = at + b * 256;
    for (let g = 0; g < 4; g++, y += 64) {
      groupScales(src, o, g, d, dmin, k);
      const d1 = k[0]!, m1 = k[1]!, d2 = k[2]!, m2 = k[3]!;
      const q = o + 48 + 32 * g;
      const lowShift = 2 * g;
      for (let l = 0; l < 32; l++) {
        const v = src[q + l]!;
        const h = src[o + 16 + l]!;
        out[y + l] = d1 * ((v & 15) + (((h >> lowShift) & 1) << 4)) - m1;
        out[y + l + 32] = d2 * ((v >> 4) + (((h >> (lowShift + 1)) & 1) << 4)) - m2;
      }
    }
  }
};

// Q6_K: 6-bit quants (4 low bits in ql, 2 high in qh) minus 32, one int8 scale per 16 elements.
export const dequantQ6_K: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0; b < nblocks; b++, o += 210) {
    const d = F16[u16(src, o + 208)]!;
    for (let half = 0; half < 2; half++) {
      const ql = o + 64 * half;
      const qh = o + 128 + 32 * half;
      const sc = o + 192 + 8 * half;
      const y = at + b * 256 + 128 * half;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const a = src[ql + l]!;
        const c = src[ql + l + 32]!;
        const h = src[qh + l]!;
        out[y + l] = Math.fround(d * i8(src[sc + is]!)) * (((a & 15) | ((h & 3) << 4)) - 32);
        out[y + l + 32] = Math.fround(d * i8(src[sc + is + 2]!)) * (((c & 15) | (((h >> 2) & 3) << 4)) - 32);
        out[y + l + 64] = Math.fround(d * i8(src[sc + is + 4]!)) * (((a >> 4) | (((h >> 4) & 3) << 4)) - 32);
        out[y + l + 96] = Math.fround(d * i8(src[sc + is + 6]!)) * (((c >> 4) | (((h >> 6) & 3) << 4)) - 32);
      }
    }
  }
};

// Q8_K: an f32 scale and 256 int8 quants (the block sums are not needed to decode).
export const dequantQ8_K: BlockKernel = (src, nblocks, out, at) => {
  const scale = new DataView(src.buffer, src.byteOffset, src.byteLength);
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 292, y += 256) {
    const d = scale.getFloat32(o, true);
    for (let j = 0; j < 256; j++) out[y + j] = d * i8(src[o + 4 + j]!);
  }
};
