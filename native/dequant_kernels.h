// The kernels written once in plain C++ and compiled twice: by dequant_portable.cc for any CPU, and
// by dequant_avx2.cc under its AVX2 target, where the compiler vectorizes the inner loops. The
// formulas are ggml's scalar reference (ggml-quants.c) in float32 with no contraction
// (-ffp-contract=off), so both builds give ggml's bits. Internal linkage on purpose: each includer
// gets its own copies, compiled for its own instruction set.
#pragma once

#include "dequant_common.h"

namespace gguf_mmap {
namespace {

// Legacy 32-element blocks: element j from the low nibble of byte j, element j+16 from the high.

// q*d + m with ggml's NaN: where both the product and m are NaN, the product's (what x86 gives
// for ggml's C, the first operand's). Compilers order a commutative sum's operands as they like,
// so the choice is made explicit; it matters only where m is NaN, so other blocks take the plain
// sum (which vectorizes).
inline float ProductPlus(float product, float m) { return product != product ? product : product + m; }

// out[j] = q[j] * d + m for the 32 values of a legacy block (q: bytes or floats).
template <typename Value>
inline void StoreProductPlus(float* __restrict out, const Value* __restrict q, float d, float m) {
  if (m != m) {
    for (int j = 0; j < 32; j++) out[j] = ProductPlus(static_cast<float>(q[j]) * d, m);
  } else {
    for (int j = 0; j < 32; j++) out[j] = static_cast<float>(q[j]) * d + m;
  }
}

// A legacy block's 32 4-bit values in element order (low nibbles, then high), each OR-ed with
// high[j] (Q5's fifth bit as 16, or 0): byte loops first, so the float loop is plain.
inline void LegacyValues(const uint8_t* __restrict q, const uint8_t* __restrict high, uint8_t* __restrict values) {
  for (int j = 0; j < 16; j++) values[j] = (q[j] & 0xf) | high[j];
  for (int j = 0; j < 16; j++) values[j + 16] = (q[j] >> 4) | high[j + 16];
}

constexpr uint8_t kNoHighBits[32] = {};

void KernelQ4_1(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 20, out += 32) {
    const float d = HalfToFloat(LoadU16(src));
    const float m = HalfToFloat(LoadU16(src + 2));
    uint8_t values[32];
    LegacyValues(src + 4, kNoHighBits, values);
    StoreProductPlus(out, values, d, m);
  }
}

// Row b: for the 8 elements whose fifth bits are the bits of byte b of qh, `base` where the bit
// is clear and `base` + 16 where it is set, as floats. Adding it to a nibble converted to float
// gives the 5-bit value less any bias, exactly (small integers), with no per-lane shifts: the
// loops below vectorize.
struct FifthBitFloats {
  float v[256][8];
  constexpr explicit FifthBitFloats(float base) : v() {
    for (int b = 0; b < 256; b++) {
      for (int k = 0; k < 8; k++) v[b][k] = base + (((b >> k) & 1) ? 16.0f : 0.0f);
    }
  }
};
constexpr FifthBitFloats kQ5_0Offsets(-16.0f);  // Q5_0 is signed: value - 16
constexpr FifthBitFloats kQ5_1Offsets(0.0f);

// The 32 values of a Q5 block as floats, in element order (low nibbles with qh bits 0-15, then
// high nibbles with bits 16-31), each plus its row of `offsets`: whole-array byte, copy and float
// loops (short or strided ones are built from scalars by the vectorizer, which is slower).
inline void Q5Values(const uint8_t* __restrict q, uint32_t qh, const FifthBitFloats& offsets, float* __restrict values) {
  uint8_t nibbles[32];
  LegacyValues(q, kNoHighBits, nibbles);
  float offset[32];
  for (int k = 0; k < 4; k++) std::memcpy(offset + 8 * k, offsets.v[(qh >> (8 * k)) & 255], 32);
  for (int j = 0; j < 32; j++) values[j] = static_cast<float>(nibbles[j]) + offset[j];
}

// Q5: the fifth bit of element j is bit j of the little-endian uint32 qh.
void KernelQ5_0(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 22, out += 32) {
    const float d = HalfToFloat(LoadU16(src));
    float values[32];
    Q5Values(src + 6, LoadU32(src + 2), kQ5_0Offsets, values);
    for (int j = 0; j < 32; j++) out[j] = values[j] * d;
  }
}

void KernelQ5_1(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 24, out += 32) {
    const float d = HalfToFloat(LoadU16(src));
    const float m = HalfToFloat(LoadU16(src + 2));
    float values[32];
    Q5Values(src + 8, LoadU32(src + 4), kQ5_1Offsets, values);
    StoreProductPlus(out, values, d, m);
  }
}

// Q1_0: 128 elements, one bit each (LSB first): +d when set, -d when clear (negation, not -1 * d,
// so a NaN scale flips sign as in ggml). A select per bit of a byte: no per-lane shifts.
void KernelQ1_0(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 128) {
    const float d = HalfToFloat(LoadU16(src));
    const float nd = -d;
    for (int i = 0; i < 16; i++) {
      const uint32_t bits = src[2 + i];
      for (int k = 0; k < 8; k++) out[8 * i + k] = (bits & (1u << k)) ? d : nd;
    }
  }
}

// Q2_0: 64 elements, two bits each (LSB first), value (q - 1) * d. Row b of the table holds the
// four levels (q - 1) of byte b as floats; each is multiplied by d as ggml does (a level of -1 is
// not folded into -d, which would flip a NaN's sign), four at a time, which vectorizes.
struct Q2Levels {
  float v[256][4];
  constexpr Q2Levels() : v() {
    for (int b = 0; b < 256; b++) {
      for (int k = 0; k < 4; k++) v[b][k] = static_cast<float>(((b >> (2 * k)) & 3) - 1);
    }
  }
};
constexpr Q2Levels kQ2Levels;

void KernelQ2_0(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 18) {
    const float d = HalfToFloat(LoadU16(src));
    for (int i = 0; i < 16; i++, out += 4) {
      const float* levels = kQ2Levels.v[src[2 + i]];
      for (int k = 0; k < 4; k++) out[k] = levels[k] * d;
    }
  }
}

// The 2n values of n bytes of 4-bit indices into a 16-entry table (low nibbles first, then high),
// looked up one at a time into floats: the product loop after it then vectorizes (compilers build
// the looked-up values into vectors one scalar at a time, which costs more).
inline void NibbleValues(const uint8_t* __restrict q, int n, const float* __restrict table, float* __restrict values) {
  for (int j = 0; j < n; j++) {
    values[j] = table[q[j] & 0xf];
    values[j + n] = table[q[j] >> 4];
  }
}

// The FP4 (E2M1) values, doubled as in ggml's table, as floats.
inline void Fp4Table(float* table) {
  for (int i = 0; i < 16; i++) table[i] = static_cast<float>(g_tables.fp4[i]);
}

// MXFP4: 32 E2M1 values (the table holds them doubled) times one E8M0 scale, taken as half its value.
void KernelMXFP4(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  float table[16];
  Fp4Table(table);
  for (size_t b = 0; b < nblocks; b++, src += 17, out += 32) {
    const float d = E8M0Half(src[0]);
    float values[32];
    NibbleValues(src + 1, 16, table, values);
    for (int j = 0; j < 32; j++) out[j] = values[j] * d;
  }
}

// NVFP4: 64 elements in four sub-blocks of 16, each with a UE4M3 scale (taken as half its value).
void KernelNVFP4(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  float table[16];
  Fp4Table(table);
  for (size_t b = 0; b < nblocks; b++, src += 36) {
    for (int s = 0; s < 4; s++, out += 16) {
      const float d = UE4M3Half(src[s]);
      float values[16];
      NibbleValues(src + 4 + 8 * s, 8, table, values);
      for (int j = 0; j < 16; j++) out[j] = values[j] * d;
    }
  }
}

// K-quants: 256-element super-blocks whose sub-block scales are themselves quantized.

// Q2_K: 16 sub-blocks of 16; each scale byte holds a scale (low nibble) and a min (high nibble).
void KernelQ2_K(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 84) {
    const float d = HalfToFloat(LoadU16(src + 80));
    const float dmin = HalfToFloat(LoadU16(src + 82));
    int is = 0;
    for (int half = 0; half < 2; half++) {
      const uint8_t* q = src + 16 + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; part++, is++, out += 16) {
          const uint8_t sc = src[is];
          const float dl = d * static_cast<float>(sc & 0xf);
          const float ml = dmin * static_cast<float>(sc >> 4);
          const uint8_t* qp = q + 16 * part;
          for (int l = 0; l < 16; l++) out[l] = dl * static_cast<float>((qp[l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// Q3_K: 16 signed 6-bit scales (bias 32); a 2-bit quant loses 4 where its hmask bit is clear.
void KernelQ3_K(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 110) {
    const float d_all = HalfToFloat(LoadU16(src + 108));
    const uint8_t* s = src + 96;
    int scales[16];
    for (int j = 0; j < 16; j++) {
      const int low = j < 8 ? s[j] & 0xf : s[j - 8] >> 4;
      const int high = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
      scales[j] = (low | (high << 4)) - 32;
    }
    int is = 0;
    for (int half = 0; half < 2; half++) {
      const uint8_t* q = src + 32 + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        const int bit = (shift >> 1) + 4 * half;
        for (int part = 0; part < 2; part++, is++, out += 16) {
          const float dl = d_all * static_cast<float>(scales[is]);
          const uint8_t* qp = q + 16 * part;
          const uint8_t* hp = src + 16 * part;
          for (int l = 0; l < 16; l++) {
            out[l] = dl * static_cast<float>(((qp[l] >> shift) & 3) - 4 + (((hp[l] >> bit) & 1) << 2));
          }
        }
      }
    }
  }
}

// Q8_K: a float32 scale and 256 int8 quants (the block sums are not needed to decode).
void KernelQ8_K(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 292, out += 256) {
    float d;
    std::memcpy(&d, src, 4);
    const int8_t* q = reinterpret_cast<const int8_t*>(src + 4);
    for (int j = 0; j < 256; j++) out[j] = d * static_cast<float>(q[j]);
  }
}

// IQ4_XS: IQ4_NL's values, 8 sub-blocks of 32 with 6-bit scales (bias 32).
void KernelIQ4_XS(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  float table[16];
  for (int i = 0; i < 16; i++) table[i] = static_cast<float>(g_tables.iq4nl[i]);
  for (size_t b = 0; b < nblocks; b++, src += 136) {
    const float d = HalfToFloat(LoadU16(src));
    const uint16_t scales_high = LoadU16(src + 2);
    for (int ib = 0; ib < 8; ib++, out += 32) {
      const int ls = ((src[4 + (ib >> 1)] >> (4 * (ib & 1))) & 0xf) | (((scales_high >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      float values[32];
      NibbleValues(src + 8 + 16 * ib, 16, table, values);
      for (int j = 0; j < 32; j++) out[j] = dl * values[j];
    }
  }
}

// Ternary types.

// TQ1_0: five base-3 digits per byte of qs (32 bytes, then 16), four per byte of qh; digit n of a
// byte is (byte * 3^n mod 256) * 3 >> 8, as ggml extracts it.
void KernelTQ1_0(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  for (size_t b = 0; b < nblocks; b++, src += 54) {
    const float d = HalfToFloat(LoadU16(src + 52));
    for (int n = 0; n < 5; n++, out += 32) {
      for (int m = 0; m < 32; m++) out[m] = static_cast<float>(((static_cast<uint8_t>(src[m] * kPow3[n]) * 3) >> 8) - 1) * d;
    }
    for (int n = 0; n < 5; n++, out += 16) {
      for (int m = 0; m < 16; m++) out[m] = static_cast<float>(((static_cast<uint8_t>(src[32 + m] * kPow3[n]) * 3) >> 8) - 1) * d;
    }
    for (int n = 0; n < 4; n++, out += 4) {
      for (int j = 0; j < 4; j++) out[j] = static_cast<float>(((static_cast<uint8_t>(src[48 + j] * kPow3[n]) * 3) >> 8) - 1) * d;
    }
  }
}

// TQ2_0: 2-bit values 0..2 (minus 1), four per byte.
void KernelTQ2_0(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 66) {
    const float d = HalfToFloat(LoadU16(src + 64));
    for (int j = 0; j < 64; j += 32) {
      for (int l = 0; l < 4; l++, out += 32) {
        for (int m = 0; m < 32; m++) out[m] = static_cast<float>(static_cast<int>((src[j + m] >> (2 * l)) & 3) - 1) * d;
      }
    }
  }
}

// IQ types: grid entries hold the magnitudes of 8 (or 4) elements; signs come from
// ksigns_iq2xs (7 stored bits -> 8 sign bits) or are stored whole. A sign multiplies (+-1.0f) like
// ggml's (a NaN scale keeps its sign), and comes from a row of factors, as the magnitudes do (the
// grids as floats): each group of 8 is then two rows of floats multiplied, which vectorizes. Rows
// for a 7-bit ksigns index are g_tables.ksigns_f; for a stored sign byte, kSignFactors.

// Entry b: eight factors, -1.0f where bit j of b is set, else 1.0f.
struct SignFactors {
  float v[256][8];
  constexpr SignFactors() : v() {
    for (int b = 0; b < 256; b++) {
      for (int j = 0; j < 8; j++) v[b][j] = ((b >> j) & 1) ? -1.0f : 1.0f;
    }
  }
};
constexpr SignFactors kSignFactors;

// out[j] = scale * magnitude[j] * sign[j] for 8 elements, ggml's order of products.
inline void PutSigned8(float* __restrict out, const float* __restrict magnitude, float scale, const float* __restrict sign) {
  for (int j = 0; j < 8; j++) out[j] = scale * magnitude[j] * sign[j];
}

// Two 4-element grid rows (as floats) times `scale`, with 8 sign factors.
inline void PutSigned4x2(float* __restrict out, const float* __restrict m1, const float* __restrict m2, float scale, const float* __restrict sign) {
  for (int j = 0; j < 4; j++) out[j] = scale * m1[j] * sign[j];
  for (int j = 0; j < 4; j++) out[j + 4] = scale * m2[j] * sign[j + 4];
}

void KernelIQ2_XXS(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 66) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t* q = src + 2 + 8 * ib;
      const uint32_t aux = LoadU32(q + 4);
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
      for (int l = 0; l < 4; l++, out += 8) PutSigned8(out, g_tables.iq2xxs_grid_f[q[l]], db, g_tables.ksigns_f[(aux >> (7 * l)) & 127]);
    }
  }
}

void KernelIQ2_XS(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 74) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t sc = src[66 + ib];
      const float db[2] = {d * (0.5f + static_cast<float>(sc & 0xf)) * 0.25f, d * (0.5f + static_cast<float>(sc >> 4)) * 0.25f};
      for (int l = 0; l < 4; l++, out += 8) {
        const uint16_t q = LoadU16(src + 2 + 2 * (4 * ib + l));
        PutSigned8(out, g_tables.iq2xs_grid_f[q & 511], db[l >> 1], g_tables.ksigns_f[q >> 9]);
      }
    }
  }
}

void KernelIQ2_S(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 82) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t sc = src[74 + ib];
      const uint32_t qh = src[66 + ib];
      const float db[2] = {d * (0.5f + static_cast<float>(sc & 0xf)) * 0.25f, d * (0.5f + static_cast<float>(sc >> 4)) * 0.25f};
      for (int l = 0; l < 4; l++, out += 8) {
        const uint32_t entry = src[2 + 4 * ib + l] | ((qh << (8 - 2 * l)) & 0x300);
        PutSigned8(out, g_tables.iq2s_grid_f[entry], db[l >> 1], kSignFactors.v[src[34 + 4 * ib + l]]);
      }
    }
  }
}

void KernelIQ3_XXS(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 98) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint32_t aux = LoadU32(src + 66 + 4 * ib);
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
      const uint8_t* q = src + 2 + 8 * ib;
      for (int l = 0; l < 4; l++, out += 8) {
        PutSigned4x2(out, g_tables.iq3xxs_grid_f[q[2 * l]], g_tables.iq3xxs_grid_f[q[2 * l + 1]], db, g_tables.ksigns_f[(aux >> (7 * l)) & 127]);
      }
    }
  }
}

void KernelIQ3_S(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 110) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t sc = src[106 + (ib >> 1)];
      const float db = d * static_cast<float>(1 + 2 * ((ib & 1) ? sc >> 4 : sc & 0xf));
      const uint32_t qh = src[66 + ib];
      const uint8_t* q = src + 2 + 8 * ib;
      for (int l = 0; l < 4; l++, out += 8) {
        const uint32_t g1 = q[2 * l] | ((qh << (8 - 2 * l)) & 256);
        const uint32_t g2 = q[2 * l + 1] | ((qh << (7 - 2 * l)) & 256);
        PutSigned4x2(out, g_tables.iq3s_grid_f[g1], g_tables.iq3s_grid_f[g2], db, kSignFactors.v[src[74 + 4 * ib + l]]);
      }
    }
  }
}

// IQ1: grid values -1, 0, 1 (int8) plus a delta of +-1/8, times a 3-bit odd scale.
constexpr float kIq1Delta = 0.125f;

inline void PutIq1(float* __restrict out, const float* __restrict values, float dl, float delta) {
  for (int j = 0; j < 8; j++) out[j] = dl * (values[j] + delta);
}

void KernelIQ1_S(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 50) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint32_t qh = LoadU16(src + 34 + 2 * ib);
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; l++, out += 8) {
        PutIq1(out, g_tables.iq1s_grid_f[src[2 + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], dl, delta);
      }
    }
  }
}

void KernelIQ1_M(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 56) {
    uint32_t sc[4];
    for (int w = 0; w < 4; w++) sc[w] = LoadU16(src + 48 + 2 * w);
    // The f16 block scale is spread over the top nibbles of the four scale words.
    const float d = HalfToFloat(static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0xf0) | ((sc[2] >> 4) & 0xf00) | (sc[3] & 0xf000)));
    for (int ib = 0; ib < 8; ib++) {
      const uint32_t word = sc[ib >> 1];
      const int shift = 6 * (ib & 1);
      const float dl[2] = {d * static_cast<float>(2 * ((word >> shift) & 7) + 1), d * static_cast<float>(2 * ((word >> (shift + 3)) & 7) + 1)};
      const uint8_t* q = src + 4 * ib;
      const uint8_t h[2] = {src[32 + 2 * ib], src[33 + 2 * ib]};
      for (int l = 0; l < 4; l++, out += 8) {
        // Grid index high bits and delta sign: the low nibble of the qh byte for even l, the high for odd.
        const uint32_t hbits = (l & 1) ? h[l >> 1] >> 4 : h[l >> 1] & 0xf;
        PutIq1(out, g_tables.iq1s_grid_f[q[l] | ((hbits & 7) << 8)], dl[l >> 1], (hbits & 8) ? -kIq1Delta : kIq1Delta);
      }
    }
  }
}

}  // namespace
}  // namespace gguf_mmap
