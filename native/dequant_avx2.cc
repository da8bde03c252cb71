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

#include "dequant_kernels.h"

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

}  // namespace

// The types without hand-written AVX2 code: the shared kernels (dequant_kernels.h), vectorized by
// the compiler for AVX2.
const KernelSet kAvx2Kernels = {
    F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
    KernelQ4_1, KernelQ5_0, KernelQ5_1, KernelQ1_0, KernelQ2_0, KernelMXFP4, KernelNVFP4, KernelQ2_K, KernelQ3_K, KernelQ8_K,
    KernelIQ4_XS, KernelTQ1_0, KernelTQ2_0,
    KernelIQ2_XXS, KernelIQ2_XS, KernelIQ2_S, KernelIQ3_XXS, KernelIQ3_S, KernelIQ1_S, KernelIQ1_M,
};

}  // namespace gguf_mmap

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#endif  // x86-64
