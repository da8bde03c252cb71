// AVX2 kernels (with F16C for halves). Compiled for these instructions by the pragma below and
// only called after a runtime CPU check, so the shipped build still runs on any x86-64.
#if defined(__x86_64__) || defined(_M_X64)

// Before the target pragma: these shared helpers stay compiled for any CPU (the AVX2 code inlines
// them), so no copy of theirs built for AVX2 can stand in for the portable one at link time.
#include "dequant_common.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#endif

#include <immintrin.h>

// The shared kernels that have a hand-written version below go unused in this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "dequant_kernels.h"
#pragma GCC diagnostic pop

namespace gguf_mmap {
namespace {

// Eight int8 values (the low 8 bytes of v) to float.
inline __m256 Int8x8ToFloat(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
inline __m256 Uint8x8ToFloat(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }

// out[0..31] = scale * (int8 lanes of q), in element order.
inline void StoreScaledInt8x32(float* out, __m256i q, __m256 scale) {
  __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(out, _mm256_mul_ps(Int8x8ToFloat(lo), scale));
  _mm256_storeu_ps(out + 8, _mm256_mul_ps(Int8x8ToFloat(_mm_srli_si128(lo, 8)), scale));
  _mm256_storeu_ps(out + 16, _mm256_mul_ps(Int8x8ToFloat(hi), scale));
  _mm256_storeu_ps(out + 24, _mm256_mul_ps(Int8x8ToFloat(_mm_srli_si128(hi, 8)), scale));
}

// out[0..15] = scale * (int8 lanes of q).
inline void StoreScaledInt8x16(float* out, __m128i q, __m256 scale) {
  _mm256_storeu_ps(out, _mm256_mul_ps(Int8x8ToFloat(q), scale));
  _mm256_storeu_ps(out + 8, _mm256_mul_ps(Int8x8ToFloat(_mm_srli_si128(q, 8)), scale));
}

// out[0..31] = scale * (uint8 lanes of q) - min: one rounding, as ggml's d*q - m (the product is exact).
inline void StoreAffineUint8x32(float* out, __m256i q, __m256 scale, __m256 min) {
  __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(out, _mm256_sub_ps(_mm256_mul_ps(Uint8x8ToFloat(lo), scale), min));
  _mm256_storeu_ps(out + 8, _mm256_sub_ps(_mm256_mul_ps(Uint8x8ToFloat(_mm_srli_si128(lo, 8)), scale), min));
  _mm256_storeu_ps(out + 16, _mm256_sub_ps(_mm256_mul_ps(Uint8x8ToFloat(hi), scale), min));
  _mm256_storeu_ps(out + 24, _mm256_sub_ps(_mm256_mul_ps(Uint8x8ToFloat(_mm_srli_si128(hi, 8)), scale), min));
}

// product + min, keeping the product's NaN where both are NaN (as ProductPlus in dequant_kernels.h:
// which operand's NaN an add returns would otherwise be the compiler's choice).
inline __m256 ProductPlus(__m256 product, __m256 min) {
  return _mm256_blendv_ps(_mm256_add_ps(product, min), product, _mm256_cmp_ps(product, product, _CMP_UNORD_Q));
}

// out[0..31] = (uint8 lanes of q) * scale + min, ggml's q*d + m.
inline void StoreMulAddUint8x32(float* out, __m256i q, __m256 scale, __m256 min) {
  __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(out, ProductPlus(_mm256_mul_ps(Uint8x8ToFloat(lo), scale), min));
  _mm256_storeu_ps(out + 8, ProductPlus(_mm256_mul_ps(Uint8x8ToFloat(_mm_srli_si128(lo, 8)), scale), min));
  _mm256_storeu_ps(out + 16, ProductPlus(_mm256_mul_ps(Uint8x8ToFloat(hi), scale), min));
  _mm256_storeu_ps(out + 24, ProductPlus(_mm256_mul_ps(Uint8x8ToFloat(_mm_srli_si128(hi, 8)), scale), min));
}

// A legacy block's 32 nibbles in element order: the 16 low nibbles, then the 16 high ones.
inline __m256i LegacyNibbles(const uint8_t* q) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0f));
}

// Q5's fifth bits: byte j is 0xff where bit j of `bits` is set.
inline __m256i BitsToBytes(uint32_t bits) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

void F16(const uint8_t* src, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
  }
  for (; i < n; i++) out[i] = HalfToFloat(LoadU16(src + 2 * i));
}

void BF16(const uint8_t* src, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(wide, 16));
  }
  for (; i < n; i++) {
    uint32_t bits = static_cast<uint32_t>(LoadU16(src + 2 * i)) << 16;
    std::memcpy(out + i, &bits, 4);
  }
}

void Q4_0(const uint8_t* src, size_t nblocks, float* out) {
  const __m128i nibble = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 32) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src)));
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2));
    StoreScaledInt8x16(out, _mm_sub_epi8(_mm_and_si128(q, nibble), eight), d);
    StoreScaledInt8x16(out + 16, _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), nibble), eight), d);
  }
}

void IQ4_NL(const uint8_t* src, size_t nblocks, float* out) {
  const __m128i nibble = _mm_set1_epi8(0x0f);
  const __m128i values = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g_tables.iq4nl));
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 32) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src)));
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2));
    StoreScaledInt8x16(out, _mm_shuffle_epi8(values, _mm_and_si128(q, nibble)), d);
    StoreScaledInt8x16(out + 16, _mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(q, 4), nibble)), d);
  }
}

void Q8_0(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 34, out += 32) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src)));
    StoreScaledInt8x32(out, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2)), d);
  }
}

void Q4_K(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  for (size_t b = 0; b < nblocks; b++, src += 144) {
    const float d = HalfToFloat(LoadU16(src));
    const float dmin = HalfToFloat(LoadU16(src + 2));
    const uint8_t* q = src + 16;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      const GroupScales k = KGroupScales(src, g, d, dmin);
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
      StoreAffineUint8x32(out, _mm256_and_si256(v, nibble), _mm256_set1_ps(k.d1), _mm256_set1_ps(k.m1));
      StoreAffineUint8x32(out + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), _mm256_set1_ps(k.d2), _mm256_set1_ps(k.m2));
    }
  }
}

void Q5_K(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i nibble = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(16);
  for (size_t b = 0; b < nblocks; b++, src += 176) {
    const float d = HalfToFloat(LoadU16(src));
    const float dmin = HalfToFloat(LoadU16(src + 2));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16));
    const uint8_t* q = src + 48;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      const GroupScales k = KGroupScales(src, g, d, dmin);
      const __m256i low_bit = _mm256_set1_epi8(static_cast<char>(1 << (2 * g)));
      const __m256i high_bit = _mm256_set1_epi8(static_cast<char>(2 << (2 * g)));
      __m256i low_add = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, low_bit), low_bit), sixteen);
      __m256i high_add = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, high_bit), high_bit), sixteen);
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
      StoreAffineUint8x32(out, _mm256_or_si256(_mm256_and_si256(v, nibble), low_add), _mm256_set1_ps(k.d1), _mm256_set1_ps(k.m1));
      StoreAffineUint8x32(out + 32, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), high_add),
                          _mm256_set1_ps(k.d2), _mm256_set1_ps(k.m2));
    }
  }
}

void Q6_K(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i nibble = _mm256_set1_epi8(0x0f), two_bits = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  for (size_t b = 0; b < nblocks; b++, src += 210) {
    const float d = HalfToFloat(LoadU16(src + 208));
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    for (int half = 0; half < 2; half++, out += 128) {
      const uint8_t* ql = src + 64 * half;
      __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 128 + 32 * half));
      // Four 32-element runs; the 2 high bits come from successive bit pairs of qh.
      __m256i runs[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, nibble), _mm256_slli_epi16(_mm256_and_si256(h, two_bits), 4)),
          _mm256_or_si256(_mm256_and_si256(l1, nibble), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two_bits), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), nibble),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two_bits), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), nibble),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two_bits), 4)),
      };
      // Each 16-element run r of this half uses scale r, in output order.
      for (int r = 0; r < 4; r++) {
        __m256i q = _mm256_sub_epi8(runs[r], bias);
        const float s0 = d * sc[8 * half + 2 * r], s1 = d * sc[8 * half + 2 * r + 1];
        StoreScaledInt8x16(out + 32 * r, _mm256_castsi256_si128(q), _mm256_set1_ps(s0));
        StoreScaledInt8x16(out + 32 * r + 16, _mm256_extracti128_si256(q, 1), _mm256_set1_ps(s1));
      }
    }
  }
}

void Q4_1(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 20, out += 32) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src))), m = _mm256_set1_ps(HalfToFloat(LoadU16(src + 2)));
    StoreMulAddUint8x32(out, LegacyNibbles(src + 4), d, m);
  }
}

void Q5_0(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i high_nibble = _mm256_set1_epi8(static_cast<char>(0xf0));
  for (size_t b = 0; b < nblocks; b++, src += 22, out += 32) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src)));
    // q5 - 16 as int8: a nibble whose fifth bit is clear gets 0xf0 (minus 16); a set bit adds 16 - 16.
    __m256i q = _mm256_or_si256(LegacyNibbles(src + 6), _mm256_andnot_si256(BitsToBytes(LoadU32(src + 2)), high_nibble));
    StoreScaledInt8x32(out, q, d);
  }
}

void Q5_1(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i sixteen = _mm256_set1_epi8(16);
  for (size_t b = 0; b < nblocks; b++, src += 24, out += 32) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src))), m = _mm256_set1_ps(HalfToFloat(LoadU16(src + 2)));
    __m256i q = _mm256_or_si256(LegacyNibbles(src + 8), _mm256_and_si256(BitsToBytes(LoadU32(src + 4)), sixteen));
    StoreMulAddUint8x32(out, q, d, m);
  }
}

void Q2_K(const uint8_t* src, size_t nblocks, float* out) {
  const __m128i nibble = _mm_set1_epi8(0x0f);
  const __m256 levels = _mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3);
  alignas(32) float dl[16], ml[16];
  for (size_t b = 0; b < nblocks; b++, src += 84) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src + 80))), dmin = _mm256_set1_ps(HalfToFloat(LoadU16(src + 82)));
    // The 16 sub-block scales d * sc and mins dmin * m, as the plain kernel rounds them.
    __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    __m128i lo = _mm_and_si128(sc, nibble), hi = _mm_and_si128(_mm_srli_epi16(sc, 4), nibble);
    _mm256_store_ps(dl, _mm256_mul_ps(d, Uint8x8ToFloat(lo)));
    _mm256_store_ps(dl + 8, _mm256_mul_ps(d, Uint8x8ToFloat(_mm_srli_si128(lo, 8))));
    _mm256_store_ps(ml, _mm256_mul_ps(dmin, Uint8x8ToFloat(hi)));
    _mm256_store_ps(ml + 8, _mm256_mul_ps(dmin, Uint8x8ToFloat(_mm_srli_si128(hi, 8))));
    for (int is = 0; is < 16; is++, out += 16) {
      // A sub-block has only 4 values, dl * q - ml for q = 0..3, each computed as the plain kernel
      // does; the quants pick them (permutevar reads 3 index bits, so the 4 repeat).
      const __m256 table = _mm256_sub_ps(_mm256_mul_ps(_mm256_broadcast_ss(dl + is), levels), _mm256_broadcast_ss(ml + is));
      const uint8_t* qp = src + 16 + 32 * (is >> 3) + 16 * (is & 1);
      const __m128i shift = _mm_cvtsi32_si128(2 * ((is >> 1) & 3));
      for (int k = 0; k < 16; k += 8) {
        __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qp + k)));
        _mm256_storeu_ps(out + k, _mm256_permutevar8x32_ps(table, _mm256_srl_epi32(q, shift)));
      }
    }
  }
}

void Q3_K(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i two_bits = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4), zero = _mm256_setzero_si256();
  alignas(32) float dl[16];
  for (size_t b = 0; b < nblocks; b++, src += 110) {
    const __m256 d_all = _mm256_set1_ps(HalfToFloat(LoadU16(src + 108)));
    // 16 scales: low nibbles of bytes 0-7, then their high nibbles; bits 4-5 from the 2-bit fields
    // of bytes 8-11 (scale j: byte 8 + j % 4, field j / 4).
    __m128i s = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 96));
    __m128i low = _mm_and_si128(_mm_unpacklo_epi64(s, _mm_srli_epi16(s, 4)), _mm_set1_epi8(0x0f));
    __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(LoadU32(src + 104))), _mm_setr_epi32(0, 2, 4, 6)),
                                 _mm_set1_epi8(3));
    __m128i sc = _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
    _mm256_store_ps(dl, _mm256_mul_ps(d_all, Int8x8ToFloat(sc)));
    _mm256_store_ps(dl + 8, _mm256_mul_ps(d_all, Int8x8ToFloat(_mm_srli_si128(sc, 8))));
    const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const float* scale = dl;
    for (int half = 0; half < 2; half++) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32 + 32 * half));
      for (int shift = 0; shift < 8; shift += 2, out += 32, scale += 2) {
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << ((shift >> 1) + 4 * half)));
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, shift), two_bits);
        q = _mm256_sub_epi8(q, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), zero), four));
        // Bytes 0-15 and 16-31 are two sub-blocks.
        StoreScaledInt8x16(out, _mm256_castsi256_si128(q), _mm256_set1_ps(scale[0]));
        StoreScaledInt8x16(out + 16, _mm256_extracti128_si256(q, 1), _mm256_set1_ps(scale[1]));
      }
    }
  }
}

void IQ4_XS(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g_tables.iq4nl)));
  alignas(32) float dl[8];
  for (size_t b = 0; b < nblocks; b++, src += 136) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src)));
    // Sub-block ib's 6-bit scale: nibble ib of the uint32 at 4, bits 4-5 from bit pair ib of the uint16 at 2.
    __m256i low = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(LoadU32(src + 4))), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    __m256i high = _mm256_srlv_epi32(_mm256_set1_epi32(LoadU16(src + 2)), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    __m256i ls = _mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi32(0xf)), _mm256_slli_epi32(_mm256_and_si256(high, _mm256_set1_epi32(3)), 4));
    _mm256_store_ps(dl, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)))));
    for (int ib = 0; ib < 8; ib += 2, out += 64) {
      // Two sub-blocks of 16 bytes, one per 128-bit lane.
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 8 + 16 * ib));
      __m256i lo = _mm256_shuffle_epi8(values, _mm256_and_si256(v, nibble));
      __m256i hi = _mm256_shuffle_epi8(values, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
      StoreScaledInt8x16(out, _mm256_castsi256_si128(lo), _mm256_set1_ps(dl[ib]));
      StoreScaledInt8x16(out + 16, _mm256_castsi256_si128(hi), _mm256_set1_ps(dl[ib]));
      StoreScaledInt8x16(out + 32, _mm256_extracti128_si256(lo, 1), _mm256_set1_ps(dl[ib + 1]));
      StoreScaledInt8x16(out + 48, _mm256_extracti128_si256(hi, 1), _mm256_set1_ps(dl[ib + 1]));
    }
  }
}

void MXFP4(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g_tables.fp4)));
  for (size_t b = 0; b < nblocks; b++, src += 17, out += 32) {
    StoreScaledInt8x32(out, _mm256_shuffle_epi8(values, LegacyNibbles(src + 1)), _mm256_set1_ps(E8M0Half(src[0])));
  }
}

void NVFP4(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g_tables.fp4)));
  for (size_t b = 0; b < nblocks; b++, src += 36, out += 64) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 4));
    __m256i lo = _mm256_shuffle_epi8(values, _mm256_and_si256(v, nibble));
    __m256i hi = _mm256_shuffle_epi8(values, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
    // Sub-block s (8 bytes): its low nibbles then its high ones; lanes hold sub-blocks 0-1 and 2-3.
    __m256i even = _mm256_unpacklo_epi64(lo, hi), odd = _mm256_unpackhi_epi64(lo, hi);
    StoreScaledInt8x16(out, _mm256_castsi256_si128(even), _mm256_set1_ps(UE4M3Half(src[0])));
    StoreScaledInt8x16(out + 16, _mm256_castsi256_si128(odd), _mm256_set1_ps(UE4M3Half(src[1])));
    StoreScaledInt8x16(out + 32, _mm256_extracti128_si256(even, 1), _mm256_set1_ps(UE4M3Half(src[2])));
    StoreScaledInt8x16(out + 48, _mm256_extracti128_si256(odd, 1), _mm256_set1_ps(UE4M3Half(src[3])));
  }
}

// TQ1_0 digits without 16-bit products: with s = m ^ 0x80 (m the byte times 3^n, mod 256), s times
// 3 mod 256 is the next digit's s, and the digit (3m >> 8) is [m >= 86] + [m >= 171], i.e.
// [s > -43] + [s > 42] as signed bytes.
inline __m256i Times3(__m256i s) { return _mm256_add_epi8(s, _mm256_add_epi8(s, s)); }

inline __m256i TernaryDigit(__m256i s) {  // the digit minus 1, as int8
  __m256i r = _mm256_sub_epi8(_mm256_set1_epi8(-1), _mm256_cmpgt_epi8(s, _mm256_set1_epi8(-43)));
  return _mm256_sub_epi8(r, _mm256_cmpgt_epi8(s, _mm256_set1_epi8(42)));
}

void TQ1_0(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (size_t b = 0; b < nblocks; b++, src += 54, out += 256) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src + 52)));
    __m256i s = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)), flip);
    for (int n = 0; n < 5; n++, s = Times3(s)) StoreScaledInt8x32(out + 32 * n, TernaryDigit(s), d);
    // Low lane: bytes 32-47 (5 digits); high lane: the 4 qh bytes at 3^0..3^3 (their 16 values).
    __m128i h = _mm_set1_epi32(static_cast<int>(LoadU32(src + 48) ^ 0x80808080u));
    __m128i h3 = _mm_add_epi8(h, _mm_add_epi8(h, h));
    __m128i h9 = _mm_add_epi8(h3, _mm_add_epi8(h3, h3));
    __m128i h27 = _mm_add_epi8(h9, _mm_add_epi8(h9, h9));
    h = _mm_blend_epi32(_mm_blend_epi32(_mm_blend_epi32(h, h3, 2), h9, 4), h27, 8);
    __m128i t = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32)), _mm256_castsi256_si128(flip));
    s = _mm256_set_m128i(h, t);
    StoreScaledInt8x16(out + 240, _mm256_extracti128_si256(TernaryDigit(s), 1), d);
    for (int n = 0; n < 5; n++, s = Times3(s)) StoreScaledInt8x16(out + 160 + 16 * n, _mm256_castsi256_si128(TernaryDigit(s)), d);
  }
}

void Q1_0(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i top = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
  for (size_t b = 0; b < nblocks; b++, src += 18) {
    const float d = HalfToFloat(LoadU16(src));
    const __m256 neg = _mm256_set1_ps(-d), pos = _mm256_set1_ps(d);
    for (int w = 0; w < 4; w++) {
      // 32 elements from a uint32; each lane moves its element's bit to the sign bit, which blendv reads.
      const __m256i bits = _mm256_set1_epi32(static_cast<int>(LoadU32(src + 2 + 4 * w)));
      for (int g = 0; g < 4; g++, out += 8) {
        __m256i sign = _mm256_sllv_epi32(bits, _mm256_sub_epi32(top, _mm256_set1_epi32(8 * g)));
        _mm256_storeu_ps(out, _mm256_blendv_ps(neg, pos, _mm256_castsi256_ps(sign)));
      }
    }
  }
}

void Q2_0(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  const __m256 levels = _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2);
  for (size_t b = 0; b < nblocks; b++, src += 18) {
    // The 4 values (q - 1) * d, each computed as the plain kernel does, picked by the 2-bit quants
    // (permutevar reads 3 index bits, so they repeat).
    const __m256 table = _mm256_mul_ps(levels, _mm256_set1_ps(HalfToFloat(LoadU16(src))));
    for (int w = 0; w < 4; w++) {
      const __m256i bits = _mm256_set1_epi32(static_cast<int>(LoadU32(src + 2 + 4 * w)));
      _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(bits, shifts)));
      _mm256_storeu_ps(out + 8, _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(bits, _mm256_add_epi32(shifts, _mm256_set1_epi32(16)))));
      out += 16;
    }
  }
}

}  // namespace

// The types without hand-written AVX2 code: the shared kernels (dequant_kernels.h), vectorized by
// the compiler for AVX2.
const KernelSet kAvx2Kernels = {
    F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
    Q4_1, Q5_0, Q5_1, Q1_0, Q2_0, MXFP4, NVFP4, Q2_K, Q3_K, KernelQ8_K,
    IQ4_XS, TQ1_0, KernelTQ2_0,
    KernelIQ2_XXS, KernelIQ2_XS, KernelIQ2_S, KernelIQ3_XXS, KernelIQ3_S, KernelIQ1_S, KernelIQ1_M,
};

}  // namespace gguf_mmap

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#endif  // x86-64
