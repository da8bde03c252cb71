import { f16ValueTable } from '../format/f16.js';
import { u16, u32, type BlockKernel } from './kernel.js';
import { tableBytes, tableInt8 } from './tables.js';

// The IQ types index ggml's lattice grids: each grid entry holds the magnitudes of 8 (or 4)
// elements; signs come from ksigns_iq2xs (7 stored bits -> 8 sign bits) or are stored whole.

/**
 * Writes 8 grid values times `scale`, negating those whose bit is set in `signs`. Signs multiply
 * by 1 - 2*bit rather than branch: sign bits are as good as random, so a branch mispredicts.
 */
function putSigned8(out: Float32Array, y: number, grid: Uint8Array, entry: number, scale: number, signs: number): void {
  const g = entry * 8;
  for (let j = 0; j < 8; j++) out[y + j] = scale * grid[g + j]! * (1 - 2 * ((signs >> j) & 1));
}

export const dequantIQ2_XXS: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const grid = tableBytes('iq2xxs_grid');
  const ksigns = tableBytes('ksigns_iq2xs');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 66) {
    const d = F16[u16(src, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const q = o + 2 + 8 * ib;
      const aux = u32(src, q + 4);
      const db = Math.fround(Math.fround(d * (0.5 + (aux >>> 28))) * 0.25);
      for (let l = 0; l < 4; l++, y += 8) putSigned8(out, y, grid, src[q + l]!, db, ksigns[(aux >>> (7 * l)) & 127]!);
    }
  }
};

export const dequantIQ2_XS: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const grid = tableBytes('iq2xs_grid');
  const ksigns = tableBytes('ksigns_iq2xs');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 74) {
    const d = F16[u16(src, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 66 + ib]!;
      const db0 = Math.fround(Math.fround(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = Math.fround(Math.fround(d * (0.5 + (sc >> 4))) * 0.25);
      for (let l = 0; l < 4; l++, y += 8) {
        const q = u16(src, o + 2 + 2 * (4 * ib + l));
        putSigned8(out, y, grid, q & 511, l < 2 ? db0 : db1, ksigns[q >> 9]!);
      }
    }
  }
};

export const dequantIQ2_S: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const grid = tableBytes('iq2s_grid');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 82) {
    const d = F16[u16(src, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 74 + ib]!;
      const qh = src[o + 66 + ib]!;
      const db0 = Math.fround(Math.fround(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = Math.fround(Math.fround(d * (0.5 + (sc >> 4))) * 0.25);
      for (let l = 0; l < 4; l++, y += 8) {
        const entry = src[o + 2 + 4 * ib + l]! | ((qh << (8 - 2 * l)) & 0x300);
        putSigned8(out, y, grid, entry, l < 2 ? db0 : db1, src[o + 34 + 4 * ib + l]!);
      }
    }
  }
};

export const dequantIQ3_XXS: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const grid = tableBytes('iq3xxs_grid');
  const ksigns = tableBytes('ksigns_iq2xs');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 98) {
    const d = F16[u16(src, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const aux = u32(src, o + 66 + 4 * ib);
      const db = Math.fround(Math.fround(d * (0.5 + (aux >>> 28))) * 0.5);
      const q = o + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, y += 8) {
        const signs = ksigns[(aux >>> (7 * l)) & 127]!;
        const g1 = src[q + 2 * l]! * 4;
        const g2 = src[q + 2 * l + 1]! * 4;
        for (let j = 0; j < 4; j++) {
          out[y + j] = db * grid[g1 + j]! * (1 - 2 * ((signs >> j) & 1));
          out[y + j + 4] = db * grid[g2 + j]! * (1 - 2 * ((signs >> (j + 4)) & 1));
        }
      }
    }
  }
};

export const dequantIQ3_S: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const grid = tableBytes('iq3s_grid');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 110) {
    const d = F16[u16(src, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 106 + (ib >> 1)]!;
      const db = Math.fround(d * (1 + 2 * (ib & 1 ? sc >> 4 : sc & 15)));
      const qh = src[o + 66 + ib]!;
      const q = o + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, y += 8) {
        const signs = src[o + 74 + 4 * ib + l]!;
        const g1 = (src[q + 2 * l]! | ((qh << (8 - 2 * l)) & 256)) * 4;
        const g2 = (src[q + 2 * l + 1]! | ((qh << (7 - 2 * l)) & 256)) * 4;
        for (let j = 0; j < 4; j++) {
          out[y + j] = db * grid[g1 + j]! * (1 - 2 * ((signs >> j) & 1));
          out[y + j + 4] = db * grid[g2 + j]! * (1 - 2 * ((signs >> (j + 4)) & 1));
        }
      }
    }
  }
};

const IQ1_DELTA = 0.125;

export const dequantIQ1_S: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const grid = tableInt8('iq1s_grid');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 50) {
    const d = F16[u16(src, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const qh = u16(src, o + 34 + 2 * ib);
      const dl = Math.fround(d * (2 * ((qh >> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
      for (let l = 0; l < 4; l++, y += 8) {
        const g = (src[o + 2 + 4 * ib + l]! | (((qh >> (3 * l)) & 7) << 8)) * 8;
        for (let j = 0; j < 8; j++) out[y + j] = dl * (grid[g + j]! + delta);
      }
    }
  }
};

export const dequantIQ1_M: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const grid = tableInt8('iq1s_grid');
  const sc = new Int32Array(4);
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 56) {
    for (let w = 0; w < 4; w++) sc[w] = u16(src, o + 48 + 2 * w);
    // The f16 block scale is spread over the top nibbles of the four scale words.
    const d = F16[(sc[0]! >> 12) | ((sc[1]! >> 8) & 0xf0) | ((sc[2]! >> 4) & 0xf00) | (sc[3]! & 0xf000)]!;
    for (let ib = 0; ib < 8; ib++) {
      const word = sc[ib >> 1]!;
      const shift = 6 * (ib & 1);
      const dl1 = Math.fround(d * (2 * ((word >> shift) & 7) + 1));
      const dl2 = Math.fround(d * (2 * ((word >> (shift + 3)) & 7) + 1));
      const q = o + 4 * ib;
      const h0 = src[o + 32 + 2 * ib]!;
      const h1 = src[o + 33 + 2 * ib]!;
      for (let l = 0; l < 4; l++, y += 8) {
        // Grid index high bits and delta sign: low nibble of qh byte for even l, high for odd.
        const h = l < 2 ? h0 : h1;
        const hbits = l & 1 ? h >> 4 : h & 15;
        const g = (src[q + l]! | ((hbits & 7) << 8)) * 8;
        const delta = hbits & 8 ? -IQ1_DELTA : IQ1_DELTA;
        const dl = l < 2 ? dl1 : dl2;
        for (let j = 0; j < 8; j++) out[y + j] = dl * (grid[g + j]! + delta);
      }
    }
  }
};

export const dequantIQ4_NL: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const values = tableInt8('kvalues_iq4nl');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 18, y += 32) {
    const d = F16[u16(src, o)]!;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 2 + j]!;
      out[y + j] = d * values[q & 15]!;
      out[y + j + 16] = d * values[q >> 4]!;
    }
  }
};

export const dequantIQ4_XS: BlockKernel = (src, nblocks, out, at) => {
  const F16 = f16ValueTable();
  const values = tableInt8('kvalues_iq4nl');
  for (let b = 0, o = 0, y = at; b < nblocks; b++, o += 136) {
    const d = F16[u16(src, o)]!;
    const scalesHigh = u16(src, o + 2);
    for (let ib = 0; ib < 8; ib++, y += 32) {
      const ls = ((src[o + 4 + (ib >> 1)]! >> (4 * (ib & 1))) & 15) | (((scalesHigh >> (2 * ib)) & 3) << 4);
      const dl = Math.fround(d * (ls - 32));
      const q = o + 8 + 16 * ib;
      for (let j = 0; j < 16; j++) {
        const v = src[q + j]!;
        out[y + j] = dl * values[v & 15]!;
        out[y + j + 16] = dl * values[v >> 4]!;
      }
    }
  }
};
