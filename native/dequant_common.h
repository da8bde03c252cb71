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

// All 65,536 conversions (filled when the library loads, in dequant.cc).
extern float g_half_table[65536];
inline const float* HalfTable() { return g_half_table; }

// AArch64 converts halves in hardware (FCVT, which compilers also vectorize) with the same bits:
// exact, a NaN made quiet with its sign and payload kept (the tests check all 65,536 patterns).
inline float HalfToFloat(uint16_t h) {
#if defined(__aarch64__)
  __fp16 half;
  std::memcpy(&half, &h, 2);
  return half;
#else
  return g_half_table[h];
#endif
}

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

// The eight sub-block scales and mins of a Q4_K/Q5_K block (ggml's get_scale_min_k4 for j = 0..7)
// times d and dmin (exact in float32): the 12 packed bytes read as three 32-bit words and made
// into four words of 6-bit fields at once, as ggml's SIMD code does, rather than field by field
// with branches.
inline void KScalesMins(const uint8_t* block, float d, float dmin, float* scales, float* mins) {
  const uint32_t a = LoadU32(block + 4), b = LoadU32(block + 8), c = LoadU32(block + 12);
  const uint32_t words[4] = {a & 0x3f3f3f3fu, (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u),
                             b & 0x3f3f3f3fu, ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u)};
  uint8_t fields[16];  // scales 0-7, then mins 0-7
  std::memcpy(fields, words, 16);
  for (int j = 0; j < 8; j++) {
    scales[j] = d * static_cast<float>(fields[j]);
    mins[j] = dmin * static_cast<float>(fields[8 + j]);
  }
}

// ggml's lookup tables (the package's data/tables files), handed over from JavaScript once
// (SetDequantTable); a kernel that needs one is offered only once it is set.
struct DequantTables {
  alignas(64) int8_t iq4nl[16];
  alignas(64) int8_t fp4[16];
  alignas(64) uint8_t ksigns_iq2xs[128];
  alignas(64) uint64_t iq2xxs_grid[256];
  alignas(64) uint64_t iq2xs_grid[512];
  alignas(64) uint64_t iq2s_grid[1024];
  alignas(64) uint32_t iq3xxs_grid[256];
  alignas(64) uint32_t iq3s_grid[512];
  alignas(64) uint64_t iq1s_grid[2048];
  // The IQ1/IQ2/IQ3 grids and the sign table again with each value as a float (made from the
  // tables above when they are set): the portable kernels then multiply rows of floats, which compilers vectorize,
  // instead of taking bytes apart one at a time.
  alignas(64) float iq2xxs_grid_f[256][8];
  alignas(64) float iq2xs_grid_f[512][8];
  alignas(64) float iq2s_grid_f[1024][8];
  alignas(64) float iq3xxs_grid_f[256][4];
  alignas(64) float iq3s_grid_f[512][4];
  alignas(64) float iq1s_grid_f[2048][8];  // signed (-1, 0, 1)
  // ksigns_iq2xs[i]'s 8 sign bits as factors: -1.0f where bit j is set, else 1.0f.
  alignas(64) float ksigns_f[128][8];
};
extern DequantTables g_tables;

// An E8M0 exponent byte e as ggml's MXFP4 uses it: half its value, 2^(e - 128), built from bits
// (exact; e < 2 gives a subnormal).
inline float E8M0Half(uint8_t e) {
  const uint32_t bits = e >= 2 ? static_cast<uint32_t>(e - 1) << 23 : 0x00200000u << e;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A UE4M3 scale byte as ggml's NVFP4 decodes it, times 0.5 (0x00 and 0x7F give 0; bit 7 is ignored).
extern float g_ue4m3_half_table[256];
inline float UE4M3Half(uint8_t x) { return g_ue4m3_half_table[x]; }

// Kernel sets, one per instruction set; each lists the same types (nullptr where it has none).
struct KernelSet {
  DequantFn f16, bf16, q4_0, q8_0, q4_k, q5_k, q6_k, iq4_nl;
  DequantFn q4_1, q5_0, q5_1, q1_0, q2_0, mxfp4, nvfp4, q2_k, q3_k, q8_k, iq4_xs, tq1_0, tq2_0;
  DequantFn iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m;
};

extern const KernelSet kPortableKernels;
#if defined(__x86_64__) || defined(_M_X64)
extern const KernelSet kAvx2Kernels;
extern const KernelSet kAvx512Kernels;
#endif
#if defined(__wasm_simd128__)
extern const KernelSet kSimd128Kernels;  // the WebAssembly build's
#endif

}  // namespace gguf_mmap
