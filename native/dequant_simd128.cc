// WebAssembly SIMD128 kernels for the types most models are made of (Q4_K, Q6_K), where the
// compiler's code for the portable ones is slow: clang leaves Q6_K's loops scalar and converts
// Q4_K's nibbles to float through unsigned lanes, which engines emulate on x64. Only in the
// WebAssembly build (scripts/build-wasm.sh); ggml's formulas and order of operations, as every
// other set.
#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include "dequant_common.h"

namespace gguf_mmap {
namespace {

// The 16 byte lanes of q (zero- or sign-extended) as floats, in element order; the int-to-float
// conversion is the signed one (exact for these small values, and one instruction on every engine).
template <bool kSigned>
inline void BytesToFloats(v128_t q, v128_t floats[4]) {
  const v128_t low = kSigned ? wasm_i16x8_extend_low_i8x16(q) : wasm_u16x8_extend_low_u8x16(q);
  const v128_t high = kSigned ? wasm_i16x8_extend_high_i8x16(q) : wasm_u16x8_extend_high_u8x16(q);
  floats[0] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(low));
  floats[1] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(low));
  floats[2] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(high));
  floats[3] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(high));
}

// out[0..15] = (uint8 lanes of q) * scale - min: ggml's d * q - m, two roundings as there.
inline void StoreAffineUint8x16(float* out, v128_t q, v128_t scale, v128_t min) {
  v128_t floats[4];
  BytesToFloats<false>(q, floats);
  for (int k = 0; k < 4; k++) wasm_v128_store(out + 4 * k, wasm_f32x4_sub(wasm_f32x4_mul(floats[k], scale), min));
}

// out[0..15] = (int8 lanes of q) * scale.
inline void StoreScaledInt8x16(float* out, v128_t q, v128_t scale) {
  v128_t floats[4];
  BytesToFloats<true>(q, floats);
  for (int k = 0; k < 4; k++) wasm_v128_store(out + 4 * k, wasm_f32x4_mul(floats[k], scale));
}

void Q4_K(const uint8_t* src, size_t nblocks, float* out) {
  const v128_t nibble = wasm_i8x16_splat(0x0f);
  for (size_t b = 0; b < nblocks; b++, src += 144) {
    float scales[8], mins[8];
    KScalesMins(src, HalfToFloat(LoadU16(src)), HalfToFloat(LoadU16(src + 2)), scales, mins);
    const uint8_t* q = src + 16;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      const v128_t v0 = wasm_v128_load(q), v1 = wasm_v128_load(q + 16);
      const v128_t d1 = wasm_f32x4_splat(scales[2 * g]), m1 = wasm_f32x4_splat(mins[2 * g]);
      const v128_t d2 = wasm_f32x4_splat(scales[2 * g + 1]), m2 = wasm_f32x4_splat(mins[2 * g + 1]);
      StoreAffineUint8x16(out, wasm_v128_and(v0, nibble), d1, m1);
      StoreAffineUint8x16(out + 16, wasm_v128_and(v1, nibble), d1, m1);
      StoreAffineUint8x16(out + 32, wasm_u8x16_shr(v0, 4), d2, m2);
      StoreAffineUint8x16(out + 48, wasm_u8x16_shr(v1, 4), d2, m2);
    }
  }
}

void Q6_K(const uint8_t* src, size_t nblocks, float* out) {
  const v128_t nibble = wasm_i8x16_splat(0x0f), two_bits = wasm_i8x16_splat(3), bias = wasm_i8x16_splat(32);
  for (size_t b = 0; b < nblocks; b++, src += 210) {
    const float d = HalfToFloat(LoadU16(src + 208));
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    for (int half = 0; half < 2; half++, out += 128) {
      const uint8_t* ql = src + 64 * half;
      const uint8_t* qh = src + 128 + 32 * half;
      // 16 lanes at a time (k = 0: elements l = 0..15 of each run, k = 1: l = 16..31). Run r takes
      // a nibble of ql[l + 32 * (r % 2)] (low for r < 2) and bit pair r of qh[l], minus 32.
      for (int k = 0; k < 2; k++) {
        const v128_t l0 = wasm_v128_load(ql + 16 * k), l1 = wasm_v128_load(ql + 32 + 16 * k);
        const v128_t h = wasm_v128_load(qh + 16 * k);
        const v128_t runs[4] = {
            wasm_v128_or(wasm_v128_and(l0, nibble), wasm_i8x16_shl(wasm_v128_and(h, two_bits), 4)),
            wasm_v128_or(wasm_v128_and(l1, nibble), wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(h, 2), two_bits), 4)),
            wasm_v128_or(wasm_u8x16_shr(l0, 4), wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(h, 4), two_bits), 4)),
            wasm_v128_or(wasm_u8x16_shr(l1, 4), wasm_i8x16_shl(wasm_u8x16_shr(h, 6), 4)),
        };
        // Elements 32 r + 16 k .. + 15 of this half use scale 2 r + k.
        for (int r = 0; r < 4; r++) {
          const v128_t scale = wasm_f32x4_splat(d * sc[8 * half + 2 * r + k]);
          StoreScaledInt8x16(out + 32 * r + 16 * k, wasm_i8x16_sub(runs[r], bias), scale);
        }
      }
    }
  }
}

}  // namespace

// The types with a SIMD128 kernel; the others use the portable set (compiled with -msimd128).
const KernelSet kSimd128Kernels = {
    nullptr, nullptr, nullptr, nullptr, Q4_K, nullptr, Q6_K, nullptr,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    nullptr, nullptr, nullptr,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace gguf_mmap

#endif  // __wasm_simd128__
