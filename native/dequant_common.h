// Helpers shared by the dequantization kernels.
#pragma once

#include <cstdint>
#include <cstring>

#include "dequant.h"

namespace gguf_mmap {

// float32 bits of an IEEE half, as ggml converts it: exact; a NaN keeps sign and payload and is
// made quiet (the same result as x86 F16C).
inline uint32_t HalfToFloatBits(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0);
  if (exponent == 0) {
    if (mantissa == 0) return sign;
    uint32_t e = 113;  // normalise the subnormal: value = mantissa * 2^-24
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      e--;
    }
    return sign | (e << 23) | ((mantissa & 0x3ff) << 13);
  }
  return sign | ((exponent + 112) << 23) | (mantissa << 13);
}

// All 65,536 conversions, built once (thread-safe static init).
const float* HalfTable();

inline float HalfToFloat(uint16_t h) { return HalfTable()[h]; }

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);  // little-endian hosts only (checked at build time in dequant.cc)
  return v;
}

inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Q4_K/Q5_K sub-block j's 6-bit scale and min from the 12 packed scale bytes (ggml's
// get_scale_min_k4).
inline void ScaleMinK4(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K/Q5_K group g (64 values): scale and min of its low-nibble half (sub-block 2g) and of its
// high-nibble half (2g+1), already multiplied by the block's d and dmin (exact in float32).
struct GroupScales {
  float d1, m1, d2, m2;
};

inline GroupScales KGroupScales(const uint8_t* block, int g, float d, float dmin) {
  int sc1, m1, sc2, m2;
  ScaleMinK4(block + 4, 2 * g, &sc1, &m1);
  ScaleMinK4(block + 4, 2 * g + 1, &sc2, &m2);
  return {d * sc1, dmin * m1, d * sc2, dmin * m2};
}

extern int8_t g_iq4nl_values[16];

// Kernel sets, one per instruction set; each lists the same types (nullptr where it has none).
struct KernelSet {
  DequantFn f16;
  DequantFn bf16;
  DequantFn q4_0;
  DequantFn q8_0;
  DequantFn q4_k;
  DequantFn q5_k;
  DequantFn q6_k;
  DequantFn iq4_nl;
};

extern const KernelSet kPortableKernels;
#if defined(__x86_64__) || defined(_M_X64)
extern const KernelSet kAvx2Kernels;
#endif

}  // namespace gguf_mmap
