import { f16ValueTable } from '../format/f16.js';
import { i8, u16, u32, type BlockKernel } from './kernel.js';
import { tableInt8 } from './tables.js';

// 32-element blocks with one f16 scale (and for _1 types an f16 min): element j comes from the low
// nibble of byte j, element j+16 from the high nibble.

export const dequantQ4_0: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 18, y += 32) {
    const d = F16[u16(src, o)]!;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 2 + j]!;
      out[y + j] = ((q & 15) - 8) * d;
      out[y + j + 16] = ((q >> 4) - 8) * d;
    }
  }
};

/**
 * q*d + m as ggml's C computes it on x86: when both are NaN, the sum is the first operand's NaN
 * (the product's). JavaScript may evaluate a commutative sum with its operands swapped.
 */
function plusMin(product: number, m: number): number {
  return product !== product ? product : product + m;
}

export const dequantQ4_1: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 20, y += 32) {
    const d = F16[u16(src, o)]!;
    const m = F16[u16(src, o + 2)]!;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 4 + j]!;
      out[y + j] = plusMin((q & 15) * d, m);
      out[y + j + 16] = plusMin((q >> 4) * d, m);
    }
  }
};

// Q5: the fifth bit of element j is bit j of the little-endian uint32 qh.
export const dequantQ5_0: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 22, y += 32) {
    const d = F16[u16(src, o)]!;
    const qh = u32(src, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 6 + j]!;
      out[y + j] = (((q & 15) | (((qh >>> j) & 1) << 4)) - 16) * d;
      out[y + j + 16] = (((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16) * d;
    }
  }
};

export const dequantQ5_1: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 24, y += 32) {
    const d = F16[u16(src, o)]!;
    const m = F16[u16(src, o + 2)]!;
    const qh = u32(src, o + 4);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 8 + j]!;
      out[y + j] = plusMin(((q & 15) | (((qh >>> j) & 1) << 4)) * d, m);
      out[y + j + 16] = plusMin(((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) * d, m);
    }
  }
};

export const dequantQ8_0: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 34, y += 32) {
    const d = F16[u16(src, o)]!;
    for (let j = 0; j < 32; j++) out[y + j] = i8(src[o + 2 + j]!) * d;
  }
};

// Q1_0: 128 elements, one bit each (LSB first): set gives +d, clear gives -d.
// The two values sit in a table indexed by the bit: the bits are as good as random, so a branch
// would mispredict, and -d (not -1 * d) keeps ggml's sign flip of a NaN scale.
export const dequantQ1_0: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const pair = new Float32Array(2);
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 18, y += 128) {
    pair[1] = F16[u16(src, o)]!;
    pair[0] = -pair[1]!;
    for (let j = 0; j < 128; j++) out[y + j] = pair[(src[o + 2 + (j >> 3)]! >> (j & 7)) & 1]!;
  }
};

// Q2_0: 64 elements, two bits each (LSB first), value (q - 1) * d.
export const dequantQ2_0: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 18, y += 64) {
    const d = F16[u16(src, o)]!;
    for (let j = 0; j < 64; j++) out[y + j] = (((src[o + 2 + (j >> 2)]! >> ((j & 3) * 2)) & 3) - 1) * d;
  }
};

/** E8M0 exponent byte e to 2^(e-128): half the E8M0 value, as ggml's MXFP4 uses it. */
const E8M0_HALF = Float64Array.from({ length: 256 }, (_, e) => 2 ** (e - 128));

/** UE4M3 byte to its value times 0.5, as ggml decodes NVFP4 scales (0x00 and 0x7F give 0; bit 7 is ignored otherwise). */
function ue4m3Half(x: number): number {
  if (x === 0 || x === 0x7f) return 0;
  const exponent = (x >> 3) & 15;
  const mantissa = x & 7;
  const raw = exponent === 0 ? mantissa * 2 ** -9 : (1 + mantissa / 8) * 2 ** (exponent - 7);
  return raw * 0.5;
}

const UE4M3_HALF = Float64Array.from({ length: 256 }, (_, x) => ue4m3Half(x));

// MXFP4: 32 E2M1 values (table holds them doubled) with one shared E8M0 exponent.
export const dequantMXFP4: BlockKernel = (src, nblocks, out, at) => {
  const values = tableInt8('kvalues_fp4');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 17, y += 32) {
    const d = E8M0_HALF[src[o]!]!;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 1 + j]!;
      out[y + j] = values[q & 15]! * d;
      out[y + j + 16] = values[q >> 4]! * d;
    }
  }
};

// NVFP4: 64 elements in four 16-element sub-blocks, each with a UE4M3 scale.
export const dequantNVFP4: BlockKernel = (src, nblocks, out, at) => {
  const values = tableInt8('kvalues_fp4');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 36, y += 64) {
    for (let s = 0; s < 4; s++) {
      const d = UE4M3_HALF[src[o + s]!]!;
      const qs = o + 4 + 8 * s;
      const ys = y + 16 * s;
      for (let j = 0; j < 8; j++) {
        const q = src[qs + j]!;
        out[ys + j] = values[q & 15]! * d;
        out[ys + j + 8] = values[q >> 4]! * d;
      }
    }
  }
};
