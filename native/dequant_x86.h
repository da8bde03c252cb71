// Unpacking helpers shared by the AVX2 and AVX-512 kernels: 256-bit integer code that each of
// them includes after its own target pragma (so each gets copies compiled for its instruction
// set, with internal linkage, as dequant_kernels.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace gguf_mmap {
namespace {

// Q5_K group g (64 values): the 32 low-nibble values (fifth bit: bit 2g of qh[l]) and the 32
// high-nibble ones (bit 2g + 1) as bytes 0..31 of a 256-bit vector each.
inline void Q5KGroupValues(__m256i qh, __m256i v, int g, __m256i* low, __m256i* high) {
  const __m256i nibble = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(16);
  const __m256i low_bit = _mm256_set1_epi8(static_cast<char>(1 << (2 * g)));
  const __m256i high_bit = _mm256_set1_epi8(static_cast<char>(2 << (2 * g)));
  const __m256i low_add = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, low_bit), low_bit), sixteen);
  const __m256i high_add = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, high_bit), high_bit), sixteen);
  *low = _mm256_or_si256(_mm256_and_si256(v, nibble), low_add);
  *high = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), high_add);
}

// Half `half` (128 values) of a Q6_K block as four runs of 32 signed values (q - 32): low 4 bits
// from a nibble of ql, high 2 from successive bit pairs of qh.
inline void Q6KRuns(const uint8_t* block, int half, __m256i runs[4]) {
  const __m256i nibble = _mm256_set1_epi8(0x0f), two_bits = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  const uint8_t* ql = block + 64 * half;
  const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
  const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * half));
  const __m256i unbiased[4] = {
      _mm256_or_si256(_mm256_and_si256(l0, nibble), _mm256_slli_epi16(_mm256_and_si256(h, two_bits), 4)),
      _mm256_or_si256(_mm256_and_si256(l1, nibble), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two_bits), 4)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), nibble),
                      _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two_bits), 4)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), nibble),
                      _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two_bits), 4)),
  };
  for (int r = 0; r < 4; r++) runs[r] = _mm256_sub_epi8(unbiased[r], bias);
}

}  // namespace
}  // namespace gguf_mmap
