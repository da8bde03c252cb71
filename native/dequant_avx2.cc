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
#include "dequant_x86.h"

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
// which operand's NaN an add returns would otherwise be the compiler's choice). Only a NaN min
// makes the choice matter, so blocks with an ordinary min take the plain add.
template <bool kMinIsNaN>
inline __m256 ProductPlus(__m256 product, __m256 min) {
  if (!kMinIsNaN) return _mm256_add_ps(product, min);
  return _mm256_blendv_ps(_mm256_add_ps(product, min), product, _mm256_cmp_ps(product, product, _CMP_UNORD_Q));
}

template <bool kMinIsNaN>
inline void StoreMulAddUint8x32Of(float* out, __m256i q, __m256 scale, __m256 min) {
  __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(out, ProductPlus<kMinIsNaN>(_mm256_mul_ps(Uint8x8ToFloat(lo), scale), min));
  _mm256_storeu_ps(out + 8, ProductPlus<kMinIsNaN>(_mm256_mul_ps(Uint8x8ToFloat(_mm_srli_si128(lo, 8)), scale), min));
  _mm256_storeu_ps(out + 16, ProductPlus<kMinIsNaN>(_mm256_mul_ps(Uint8x8ToFloat(hi), scale), min));
  _mm256_storeu_ps(out + 24, ProductPlus<kMinIsNaN>(_mm256_mul_ps(Uint8x8ToFloat(_mm_srli_si128(hi, 8)), scale), min));
}

// out[0..31] = (uint8 lanes of q) * scale + m, ggml's q*d + m.
inline void StoreMulAddUint8x32(float* out, __m256i q, __m256 scale, float m) {
  if (m != m) {
    StoreMulAddUint8x32Of<true>(out, q, scale, _mm256_set1_ps(m));
  } else {
    StoreMulAddUint8x32Of<false>(out, q, scale, _mm256_set1_ps(m));
  }
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
    alignas(32) float scales[8], mins[8];
    KScalesMins(src, d, dmin, scales, mins);
    const uint8_t* q = src + 16;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
      StoreAffineUint8x32(out, _mm256_and_si256(v, nibble), _mm256_broadcast_ss(scales + 2 * g), _mm256_broadcast_ss(mins + 2 * g));
      StoreAffineUint8x32(out + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), _mm256_broadcast_ss(scales + 2 * g + 1),
                          _mm256_broadcast_ss(mins + 2 * g + 1));
    }
  }
}

void Q5_K(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 176) {
    const float d = HalfToFloat(LoadU16(src));
    const float dmin = HalfToFloat(LoadU16(src + 2));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16));
    const uint8_t* q = src + 48;
    alignas(32) float scales[8], mins[8];
    KScalesMins(src, d, dmin, scales, mins);
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      __m256i low, high;
      Q5KGroupValues(qh, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)), g, &low, &high);
      StoreAffineUint8x32(out, low, _mm256_broadcast_ss(scales + 2 * g), _mm256_broadcast_ss(mins + 2 * g));
      StoreAffineUint8x32(out + 32, high, _mm256_broadcast_ss(scales + 2 * g + 1), _mm256_broadcast_ss(mins + 2 * g + 1));
    }
  }
}

void Q6_K(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 210) {
    const float d = HalfToFloat(LoadU16(src + 208));
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    for (int half = 0; half < 2; half++, out += 128) {
      __m256i runs[4];
      Q6KRuns(src, half, runs);
      // Each 16-element run r of this half uses scale r, in output order.
      for (int r = 0; r < 4; r++) {
        const float s0 = d * sc[8 * half + 2 * r], s1 = d * sc[8 * half + 2 * r + 1];
        StoreScaledInt8x16(out + 32 * r, _mm256_castsi256_si128(runs[r]), _mm256_set1_ps(s0));
        StoreScaledInt8x16(out + 32 * r + 16, _mm256_extracti128_si256(runs[r], 1), _mm256_set1_ps(s1));
      }
    }
  }
}

void Q4_1(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 20, out += 32) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src)));
    StoreMulAddUint8x32(out, LegacyNibbles(src + 4), d, HalfToFloat(LoadU16(src + 2)));
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
    const __m256 d = _mm256_set1_ps(HalfToFloat(LoadU16(src)));
    __m256i q = _mm256_or_si256(LegacyNibbles(src + 8), _mm256_and_si256(BitsToBytes(LoadU32(src + 4)), sixteen));
    StoreMulAddUint8x32(out, q, d, HalfToFloat(LoadU16(src + 2)));
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

// IQ types: per 8 outputs, 8 magnitudes from a grid entry (or two 4-byte ones) and 8 signs. Each
// output is (scale * magnitude) * sign in the plain kernels' order, the sign a +-1.0f multiply (never
// an XOR: x86 keeps a NaN's sign through * -1, so ggml's NaNs keep theirs). What made them fast:
// - grid indices with high bits in qh, and sub-block scales, are computed a block at a time in
//   vectors and read back from the stack: scalar bit-twiddling per entry was the bottleneck;
// - small lookup footprints: on a large output the store stream evicts L1, and a 16 KB table
//   (iq1s_grid, or a 256-entry sign table beside iq2s_grid) cost ~15% there. Hence +-1 rows only
//   for the 128 ksigns indexes (g_tables.ksigns_f, 4 KB: no dependent ksigns load per 8 outputs),
//   the IQ1 code table below, built on a kernel's first call (a kernel runs only once its source
//   table is set, and a set table never changes), and stored sign bytes turned into +-1 in
//   registers.

// +-1.0f lanes for group l (0..3) of 4 stored sign bytes, broadcast in `bits`: sllv moves bit 8l+j
// to lane j's sign bit, which blendv reads.
inline __m256 StoredSigns(__m256i bits, int l) {
  const __m256i shift = _mm256_sub_epi32(_mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24), _mm256_set1_epi32(8 * l));  // folded
  const __m256i m = _mm256_sllv_epi32(bits, shift);
  return _mm256_blendv_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(-1.0f), _mm256_castsi256_ps(m));
}

// out[0..7] = (scale * mags[j]) * sign[j]; mags are the 8 low uint8 lanes.
inline void StoreSigned8(float* out, __m128i mags, __m256 scale, __m256 sign) {
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_mul_ps(scale, Uint8x8ToFloat(mags)), sign));
}

inline uint64_t LoadU64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline __m128i Grid8(const uint64_t* grid, uint32_t i) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(grid + i)); }
// Two 4-byte grid entries as 8 bytes.
inline __m128i Grid4x2(const uint32_t* grid, uint32_t i1, uint32_t i2) {
  return _mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(grid[i1])), static_cast<int>(grid[i2]), 1);
}

// idx[0..15] = q[j] | ((high * mul) & mask), 16-bit lanes, where high is the qh byte that the pshufb
// control `spread` picks for lane j: mul is a per-lane left shift that brings its bits to 8 and up.
inline void GridIndex16(uint16_t* idx, const uint8_t* q, __m128i qh, __m128i spread, __m256i mul, __m256i mask) {
  const __m256i high = _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm_shuffle_epi8(qh, spread)), mul);
  const __m256i low = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(idx), _mm256_or_si256(low, _mm256_and_si256(high, mask)));
}

// IQ2_XS/IQ2_S scales from their 8 scale bytes: d * (0.5 + nibble) * 0.25, left to right as the
// plain kernel; lo[ib] (low nibble) for the first 16 outputs of sub-block ib, hi[ib] for the rest.
inline void Iq2Scales(float d, const uint8_t* s, float* lo, float* hi) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s)));
  const __m256 dv = _mm256_set1_ps(d), half = _mm256_set1_ps(0.5f), quarter = _mm256_set1_ps(0.25f);
  const __m256 nlo = _mm256_cvtepi32_ps(_mm256_and_si256(v, _mm256_set1_epi32(15)));
  const __m256 nhi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
  _mm256_store_ps(lo, _mm256_mul_ps(_mm256_mul_ps(dv, _mm256_add_ps(half, nlo)), quarter));
  _mm256_store_ps(hi, _mm256_mul_ps(_mm256_mul_ps(dv, _mm256_add_ps(half, nhi)), quarter));
}

// IQ2_XXS/IQ3_XXS sub-block scale: d * (0.5 + s) * k, left to right as the plain kernels.
inline __m256 HalfStepScale(float d, uint32_t s, float k) { return _mm256_set1_ps(d * (0.5f + static_cast<float>(s)) * k); }

void IQ2_XXS(const uint8_t* src, size_t nblocks, float* out) {
  const uint64_t* grid = g_tables.iq2xxs_grid;
  const auto& ksigns = g_tables.ksigns_f;
  for (size_t b = 0; b < nblocks; b++, src += 66) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t* q = src + 2 + 8 * ib;
      const uint32_t aux = LoadU32(q + 4);
      const uint32_t q4 = LoadU32(q);
      const __m256 db = HalfStepScale(d, aux >> 28, 0.25f);
      for (int l = 0; l < 4; l++, out += 8) {
        StoreSigned8(out, Grid8(grid, (q4 >> (8 * l)) & 0xff), db, _mm256_load_ps(ksigns[(aux >> (7 * l)) & 127]));
      }
    }
  }
}

void IQ2_XS(const uint8_t* src, size_t nblocks, float* out) {
  const uint64_t* grid = g_tables.iq2xs_grid;
  const auto& ksigns = g_tables.ksigns_f;
  alignas(32) float dlo[8], dhi[8];
  for (size_t b = 0; b < nblocks; b++, src += 74) {
    Iq2Scales(HalfToFloat(LoadU16(src)), src + 66, dlo, dhi);
    for (int ib = 0; ib < 8; ib++) {
      const __m256 db[2] = {_mm256_broadcast_ss(dlo + ib), _mm256_broadcast_ss(dhi + ib)};
      const uint64_t q4 = LoadU64(src + 2 + 8 * ib);
      for (int l = 0; l < 4; l++, out += 8) {
        const uint32_t q = static_cast<uint32_t>(q4 >> (16 * l));
        StoreSigned8(out, Grid8(grid, q & 511), db[l >> 1], _mm256_load_ps(ksigns[(q >> 9) & 127]));
      }
    }
  }
}

void IQ2_S(const uint8_t* src, size_t nblocks, float* out) {
  const uint64_t* grid = g_tables.iq2s_grid;
  // Index 4*ib + l takes bits 2l, 2l+1 of qh[ib] as its bits 8, 9.
  const __m256i mul = _mm256_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4);
  const __m256i mask = _mm256_set1_epi16(0x300);
  const __m128i spread = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  alignas(32) uint16_t idx[32];
  alignas(32) float dlo[8], dhi[8];
  for (size_t b = 0; b < nblocks; b++, src += 82) {
    Iq2Scales(HalfToFloat(LoadU16(src)), src + 74, dlo, dhi);
    const __m128i qh = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 66));
    GridIndex16(idx, src + 2, qh, spread, mul, mask);
    GridIndex16(idx + 16, src + 18, qh, _mm_add_epi8(spread, _mm_set1_epi8(4)), mul, mask);
    for (int ib = 0; ib < 8; ib++) {
      const __m256 db[2] = {_mm256_broadcast_ss(dlo + ib), _mm256_broadcast_ss(dhi + ib)};
      const uint64_t g4 = LoadU64(idx + 4 * ib);
      const __m256i signs = _mm256_set1_epi32(static_cast<int>(LoadU32(src + 34 + 4 * ib)));
      for (int l = 0; l < 4; l++, out += 8) {
        StoreSigned8(out, Grid8(grid, (g4 >> (16 * l)) & 0xffff), db[l >> 1], StoredSigns(signs, l));
      }
    }
  }
}

void IQ3_XXS(const uint8_t* src, size_t nblocks, float* out) {
  const uint32_t* grid = g_tables.iq3xxs_grid;
  const auto& ksigns = g_tables.ksigns_f;
  for (size_t b = 0; b < nblocks; b++, src += 98) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint32_t aux = LoadU32(src + 66 + 4 * ib);
      const __m256 db = HalfStepScale(d, aux >> 28, 0.5f);
      const uint8_t* q = src + 2 + 8 * ib;
      for (int l = 0; l < 4; l++, out += 8) {
        StoreSigned8(out, Grid4x2(grid, q[2 * l], q[2 * l + 1]), db, _mm256_load_ps(ksigns[(aux >> (7 * l)) & 127]));
      }
    }
  }
}

void IQ3_S(const uint8_t* src, size_t nblocks, float* out) {
  const uint32_t* grid = g_tables.iq3s_grid;
  // Index 8*ib + k takes bit k of qh[ib] as its bit 8.
  const __m256i mul = _mm256_setr_epi16(256, 128, 64, 32, 16, 8, 4, 2, 256, 128, 64, 32, 16, 8, 4, 2);
  const __m256i mask = _mm256_set1_epi16(0x100);
  const __m128i spread = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), two = _mm_set1_epi8(2);
  alignas(32) uint16_t idx[64];
  alignas(32) float dl[8];
  for (size_t b = 0; b < nblocks; b++, src += 110) {
    // Scale of sub-block ib: d * (1 + 2 * nibble ib of the 4 scale bytes), low nibble first.
    const __m256i sc = _mm256_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(LoadU32(src + 106))));
    const __m256i byte = _mm256_permutevar8x32_epi32(sc, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    const __m256i shift = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(byte, shift), _mm256_set1_epi32(15));
    const __m256i odd = _mm256_or_si256(_mm256_slli_epi32(nib, 1), _mm256_set1_epi32(1));
    _mm256_store_ps(dl, _mm256_mul_ps(_mm256_set1_ps(HalfToFloat(LoadU16(src))), _mm256_cvtepi32_ps(odd)));
    const __m128i qh = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 66));
    __m128i s = spread;
    for (int v = 0; v < 4; v++, s = _mm_add_epi8(s, two)) GridIndex16(idx + 16 * v, src + 2 + 16 * v, qh, s, mul, mask);
    for (int ib = 0; ib < 8; ib++) {
      const __m256 db = _mm256_broadcast_ss(dl + ib);
      const __m256i signs = _mm256_set1_epi32(static_cast<int>(LoadU32(src + 74 + 4 * ib)));
      for (int l = 0; l < 4; l++, out += 8) {
        const uint32_t pair = LoadU32(reinterpret_cast<const uint8_t*>(idx + 8 * ib + 2 * l));
        StoreSigned8(out, Grid4x2(grid, pair & 0xffff, pair >> 16), db, StoredSigns(signs, l));
      }
    }
  }
}

// iq1s_grid's values (-1, 0, 1) at 2 bits each (value + 1 at bits 2j): 4 KB instead of 16 KB. A
// spare entry keeps the 4-byte load of the last one inside.
struct Iq1Packed {
  uint16_t code[2048 + 1];
};
const uint16_t* Iq1sPacked() {
  static const Iq1Packed table = [] {
    Iq1Packed t{};
    for (int i = 0; i < 2048; i++) {
      for (int j = 0; j < 8; j++) {
        t.code[i] |= static_cast<uint16_t>((static_cast<int8_t>(g_tables.iq1s_grid[i] >> (8 * j)) + 1) << (2 * j));
      }
    }
    return t;
  }();
  return table.code;
}

// IQ1: dl * (grid + delta); the int + delta sum is exact, so one rounding as in the plain kernel.
inline void StoreIq1(float* out, const uint16_t* code, __m256 dl, __m256 delta) {
  uint32_t c;
  std::memcpy(&c, code, 4);
  const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  const __m256i v = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(c)), shifts), _mm256_set1_epi32(3));
  const __m256 g = _mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_set1_epi32(1)));
  _mm256_storeu_ps(out, _mm256_mul_ps(dl, _mm256_add_ps(g, delta)));
}

// Indexed by the delta's sign bit: a branch on a random bit would mispredict half the time.
constexpr float kIq1Deltas[2] = {kIq1Delta, -kIq1Delta};

void IQ1_S(const uint8_t* src, size_t nblocks, float* out) {
  const uint16_t* grid = Iq1sPacked();
  for (size_t b = 0; b < nblocks; b++, src += 50) {
    const float d = HalfToFloat(LoadU16(src));
    for (int ib = 0; ib < 8; ib++) {
      const uint32_t qh = LoadU16(src + 34 + 2 * ib);
      const __m256 dl = _mm256_set1_ps(d * static_cast<float>(2 * ((qh >> 12) & 7) + 1));
      const __m256 delta = _mm256_broadcast_ss(kIq1Deltas + (qh >> 15));
      for (int l = 0; l < 4; l++, out += 8) StoreIq1(out, grid + (src[2 + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)), dl, delta);
    }
  }
}

void IQ1_M(const uint8_t* src, size_t nblocks, float* out) {
  const uint16_t* grid = Iq1sPacked();
  // Entry i takes nibble i of the 16 qh bytes (low nibble first): bits 0-2 as index bits 8-10, bit 3
  // (kept at bit 11) as the delta's sign.
  const __m256i mul = _mm256_setr_epi16(256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16);
  const __m256i mask = _mm256_set1_epi16(0xf00);
  const __m128i spread = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  alignas(32) uint16_t idx[32];
  alignas(32) float dl[16];
  for (size_t b = 0; b < nblocks; b++, src += 56) {
    const __m128i words = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 48));
    const uint64_t w = static_cast<uint64_t>(_mm_cvtsi128_si64(words));
    // The f16 block scale is spread over the top nibbles of the four scale words.
    const float d = HalfToFloat(static_cast<uint16_t>(((w >> 12) & 0xf) | ((w >> 24) & 0xf0) | ((w >> 36) & 0xf00) | ((w >> 48) & 0xf000)));
    // Scale j (2 per sub-block): d * (1 + 2 * bits 3*(j%4).. of word j/4).
    const __m256i wide = _mm256_cvtepu16_epi32(words), shifts = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9);
    const __m256 dv = _mm256_set1_ps(d);
    for (int h = 0; h < 2; h++) {
      const __m256i sel = _mm256_setr_epi32(2 * h, 2 * h, 2 * h, 2 * h, 2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1);
      const __m256i s = _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(wide, sel), shifts), _mm256_set1_epi32(7));
      const __m256i odd = _mm256_or_si256(_mm256_slli_epi32(s, 1), _mm256_set1_epi32(1));
      _mm256_store_ps(dl + 8 * h, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(odd)));
    }
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    GridIndex16(idx, src, qh, spread, mul, mask);
    GridIndex16(idx + 16, src + 16, qh, _mm_add_epi8(spread, _mm_set1_epi8(8)), mul, mask);
    for (int ib = 0; ib < 8; ib++) {
      const __m256 db[2] = {_mm256_broadcast_ss(dl + 2 * ib), _mm256_broadcast_ss(dl + 2 * ib + 1)};
      const uint64_t e4 = LoadU64(idx + 4 * ib);
      for (int l = 0; l < 4; l++, out += 8) {
        const uint32_t e = (e4 >> (16 * l)) & 0xffff;
        StoreIq1(out, grid + (e & 0x7ff), db[l >> 1], _mm256_broadcast_ss(kIq1Deltas + (e >> 11)));
      }
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
    IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M,
};

}  // namespace gguf_mmap

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#endif  // x86-64
