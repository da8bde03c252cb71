// AVX-512 kernels (F, BW, VL; with F16C), for the types whose decoding is bound by instructions
// rather than by memory: rows already in cache (embedding lookups) decode faster with 16 floats
// per instruction (bench/lookup.ts). A whole tensor is bound by memory writes, which wider vectors
// do not change. Chosen at run time like the AVX2 set; a type without a kernel here uses AVX2's.
#if defined(__x86_64__) || defined(_M_X64)

#include "dequant_common.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,f16c")
#endif

#include <immintrin.h>

// GCC 12 warns inside its own AVX-512 headers (the undefined vector a conversion starts from).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "dequant_x86.h"

namespace gguf_mmap {
namespace {

// out[0..15] = scale * (int8 lanes of q).
inline void StoreScaledInt8x16(float* out, __m128i q, __m512 scale) {
  _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), scale));
}

// out[0..15] = scale * (uint8 lanes of q) - min: ggml's d * q - m, two roundings as there.
inline void StoreAffineUint8x16(float* out, __m128i q, __m512 scale, __m512 min) {
  _mm512_storeu_ps(out, _mm512_sub_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)), scale), min));
}

// The 32 int8 (or uint8) lanes of q in two stores of 16.
inline void StoreScaledInt8x32(float* out, __m256i q, __m512 scale) {
  StoreScaledInt8x16(out, _mm256_castsi256_si128(q), scale);
  StoreScaledInt8x16(out + 16, _mm256_extracti128_si256(q, 1), scale);
}

inline void StoreAffineUint8x32(float* out, __m256i q, __m512 scale, __m512 min) {
  StoreAffineUint8x16(out, _mm256_castsi256_si128(q), scale, min);
  StoreAffineUint8x16(out + 16, _mm256_extracti128_si256(q, 1), scale, min);
}

inline float Half(const uint8_t* p) { return _cvtsh_ss(LoadU16(p)); }  // as HalfToFloat (F16C quiets NaN alike)

void F16(const uint8_t* src, size_t n, float* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i))));
  }
  for (; i < n; i++) out[i] = HalfToFloat(LoadU16(src + 2 * i));
}

void BF16(const uint8_t* src, size_t n, float* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
    _mm512_storeu_si512(out + i, _mm512_slli_epi32(wide, 16));
  }
  for (; i < n; i++) {
    const uint32_t bits = static_cast<uint32_t>(LoadU16(src + 2 * i)) << 16;
    std::memcpy(out + i, &bits, 4);
  }
}

void Q4_0(const uint8_t* src, size_t nblocks, float* out) {
  const __m128i nibble = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 32) {
    const __m512 d = _mm512_set1_ps(Half(src));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2));
    StoreScaledInt8x16(out, _mm_sub_epi8(_mm_and_si128(q, nibble), eight), d);
    StoreScaledInt8x16(out + 16, _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), nibble), eight), d);
  }
}

void Q8_0(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 34, out += 32) {
    StoreScaledInt8x32(out, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2)), _mm512_set1_ps(Half(src)));
  }
}

void Q4_K(const uint8_t* src, size_t nblocks, float* out) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  for (size_t b = 0; b < nblocks; b++, src += 144) {
    float scales[8], mins[8];
    KScalesMins(src, Half(src), Half(src + 2), scales, mins);
    const uint8_t* q = src + 16;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
      StoreAffineUint8x32(out, _mm256_and_si256(v, nibble), _mm512_set1_ps(scales[2 * g]), _mm512_set1_ps(mins[2 * g]));
      StoreAffineUint8x32(out + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), _mm512_set1_ps(scales[2 * g + 1]),
                          _mm512_set1_ps(mins[2 * g + 1]));
    }
  }
}

void Q5_K(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 176) {
    float scales[8], mins[8];
    KScalesMins(src, Half(src), Half(src + 2), scales, mins);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16));
    const uint8_t* q = src + 48;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      __m256i low, high;
      Q5KGroupValues(qh, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)), g, &low, &high);
      StoreAffineUint8x32(out, low, _mm512_set1_ps(scales[2 * g]), _mm512_set1_ps(mins[2 * g]));
      StoreAffineUint8x32(out + 32, high, _mm512_set1_ps(scales[2 * g + 1]), _mm512_set1_ps(mins[2 * g + 1]));
    }
  }
}

void Q6_K(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 210) {
    const float d = Half(src + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    for (int half = 0; half < 2; half++, out += 128) {
      __m256i runs[4];
      Q6KRuns(src, half, runs);
      for (int r = 0; r < 4; r++) {
        const float s0 = d * sc[8 * half + 2 * r], s1 = d * sc[8 * half + 2 * r + 1];
        StoreScaledInt8x16(out + 32 * r, _mm256_castsi256_si128(runs[r]), _mm512_set1_ps(s0));
        StoreScaledInt8x16(out + 32 * r + 16, _mm256_extracti128_si256(runs[r], 1), _mm512_set1_ps(s1));
      }
    }
  }
}

}  // namespace

// Only the types measured faster than their AVX2 kernels on rows in cache; nullptr: use AVX2's.
const KernelSet kAvx512Kernels = {
    F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, nullptr,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    nullptr, nullptr, nullptr,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace gguf_mmap

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#endif  // x86-64
