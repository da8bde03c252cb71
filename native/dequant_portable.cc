// Portable (scalar) kernels: the reference the SIMD kernels must match, and the fallback on CPUs
// without AVX2.
#include "dequant_common.h"
#include "dequant_kernels.h"

namespace gguf_mmap {
namespace {

// A table lookup per value where halves convert in software; AArch64's conversion in hardware is
// vectorized by the compiler instead (see HalfToFloat).
void F16(const uint8_t* __restrict src, size_t n, float* __restrict out) {
#if defined(__aarch64__)
  for (size_t i = 0; i < n; i++) out[i] = HalfToFloat(LoadU16(src + 2 * i));
#else
  const float* table = HalfTable();
  for (size_t i = 0; i < n; i++) out[i] = table[LoadU16(src + 2 * i)];
#endif
}

void BF16(const uint8_t* __restrict src, size_t n, float* __restrict out) {
  for (size_t i = 0; i < n; i++) {
    uint32_t bits = static_cast<uint32_t>(LoadU16(src + 2 * i)) << 16;
    std::memcpy(out + i, &bits, 4);
  }
}

void Q4_0(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 32) {
    const float d = HalfToFloat(LoadU16(src));
    for (int j = 0; j < 16; j++) {
      out[j] = static_cast<float>((src[2 + j] & 0xf) - 8) * d;
      out[j + 16] = static_cast<float>((src[2 + j] >> 4) - 8) * d;
    }
  }
}

void Q8_0(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 34, out += 32) {
    const float d = HalfToFloat(LoadU16(src));
    for (int j = 0; j < 32; j++) out[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

void Q4_K(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 144) {
    const float d = HalfToFloat(LoadU16(src));
    const float dmin = HalfToFloat(LoadU16(src + 2));
    float scales[8], mins[8];
    KScalesMins(src, d, dmin, scales, mins);
    const uint8_t* q = src + 16;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      const float d1 = scales[2 * g], m1 = mins[2 * g], d2 = scales[2 * g + 1], m2 = mins[2 * g + 1];
      for (int l = 0; l < 32; l++) {
        out[l] = d1 * (q[l] & 0xf) - m1;
        out[l + 32] = d2 * (q[l] >> 4) - m2;
      }
    }
  }
}

void Q5_K(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 176) {
    const float d = HalfToFloat(LoadU16(src));
    const float dmin = HalfToFloat(LoadU16(src + 2));
    const uint8_t* qh = src + 16;
    const uint8_t* q = src + 48;
    float scales[8], mins[8];
    KScalesMins(src, d, dmin, scales, mins);
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      const float d1 = scales[2 * g], m1 = mins[2 * g], d2 = scales[2 * g + 1], m2 = mins[2 * g + 1];
      const uint8_t low = 1 << (2 * g), high = 2 << (2 * g);
      for (int l = 0; l < 32; l++) out[l] = d1 * ((q[l] & 0xf) + (qh[l] & low ? 16 : 0)) - m1;
      for (int l = 0; l < 32; l++) out[l + 32] = d2 * ((q[l] >> 4) + (qh[l] & high ? 16 : 0)) - m2;
    }
  }
}

// Per 16 outputs one scale and one constant shift of ql and qh: loops a compiler vectorizes.
void Q6_K(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  for (size_t b = 0; b < nblocks; b++, src += 210) {
    const float d = HalfToFloat(LoadU16(src + 208));
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, out += 128) {
      // Run r (32 outputs) takes nibble r / 2 of ql[l + 32 * (r % 2)] and bit pair r of qh[l];
      // its first 16 outputs use scale 2r, the next 16 scale 2r + 1.
      for (int r = 0; r < 4; r++) {
        const uint8_t* low = ql + 32 * (r & 1);
        const int nibble_shift = 4 * (r >> 1), pair_shift = 2 * r;
        for (int part = 0; part < 2; part++) {
          const float scale = d * static_cast<float>(sc[2 * r + part]);
          float* o = out + 32 * r + 16 * part;
          for (int l = 16 * part; l < 16 * part + 16; l++) {
            const int q = (((low[l] >> nibble_shift) & 0xf) | (((qh[l] >> pair_shift) & 3) << 4)) - 32;
            o[l - 16 * part] = scale * static_cast<float>(q);
          }
        }
      }
    }
  }
}

void IQ4_NL(const uint8_t* __restrict src, size_t nblocks, float* __restrict out) {
  float table[16];
  for (int i = 0; i < 16; i++) table[i] = static_cast<float>(g_tables.iq4nl[i]);
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 32) {
    const float d = HalfToFloat(LoadU16(src));
    float values[32];
    NibbleValues(src + 2, 16, table, values);
    for (int j = 0; j < 32; j++) out[j] = d * values[j];
  }
}

}  // namespace

const KernelSet kPortableKernels = {
    F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
    KernelQ4_1, KernelQ5_0, KernelQ5_1, KernelQ1_0, KernelQ2_0, KernelMXFP4, KernelNVFP4, KernelQ2_K, KernelQ3_K, KernelQ8_K,
    KernelIQ4_XS, KernelTQ1_0, KernelTQ2_0,
    KernelIQ2_XXS, KernelIQ2_XS, KernelIQ2_S, KernelIQ3_XXS, KernelIQ3_S, KernelIQ1_S, KernelIQ1_M,
};

}  // namespace gguf_mmap
