// WebAssembly SIMD128 kernels for the types where the compiler's code for the portable ones is
// slow (measured at or over 2.5x the native kernels in cache: F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q1_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, TQ1_0, TQ2_0, IQ4_NL, IQ4_XS, MXFP4, NVFP4). What slows clang's
// code under V8 on x64, found in V8's own listing (node --print-wasm-code): loops left scalar; int
// to float through unsigned lanes (StoreAffineUint8x16); byte multiplies (TimesThree) and byte shifts by a
// variable (the unrolled loops), each emulated in many instructions; constants moved into a branch
// (F16), which V8 builds again on every pass, and on V8 12 and later (Node 22+) every constant
// inside a loop built again at each use (Kept). Only in the WebAssembly build
// (scripts/build-wasm.sh); ggml's formulas and order of operations, as every other set (the AVX2
// kernels are the model).
#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <cstring>

#include "dequant_common.h"

namespace gguf_mmap {

// Always 0. Kept in a global so that neither clang nor V8 can fold it (see Kept).
uint32_t g_opaque_zero = 0;

namespace {

// A kernel's constants, made once at its start. V8 12 and later (Node 22+) build a v128.const
// again at every use inside a loop (three instructions each on x64), even where clang keeps it in
// a local; a splat of a value read from memory stays in a register. So constants are splats of
// value | g_opaque_zero, read when the kernel starts (measured: F16 1.25x faster on Node 24/26).
struct Kept {
  const uint32_t zero = g_opaque_zero;
  v128_t i8(int v) const { return wasm_i8x16_splat(static_cast<int8_t>(v | static_cast<int>(zero))); }
  v128_t i16(int v) const { return wasm_i16x8_splat(static_cast<int16_t>(v | static_cast<int>(zero))); }
  v128_t i32(uint32_t v) const { return wasm_i32x4_splat(static_cast<int32_t>(v | zero)); }
};

// The 16 byte lanes of q (int8) as floats in element order, exactly: q + 128 (the top bit
// flipped) made the low byte of the float 2^23 + q + 128 by interleaving with zero bytes, then
// with 0x4b00 halves (unpack instructions on x64), less 2^23 + 128: by our count of x64's
// instructions, 11 where the extends and f32x4.convert_i32x4_s take 13, besides the constants
// (measured: 3-9% faster in every kernel that uses it).
// Its constants are Kept ones, as the kernels' (clang keeps them out of the kernels' loops).
inline void Int8ToFloats(v128_t q, v128_t floats[4]) {
  const Kept k;
  const v128_t zero = k.i32(0), high = k.i16(0x4b00), bias = k.i32(0x4b000080);
  const v128_t u = wasm_v128_xor(q, k.i8(0x80));
  const v128_t w0 = wasm_i8x16_shuffle(u, zero, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const v128_t w1 = wasm_i8x16_shuffle(u, zero, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  floats[0] = wasm_f32x4_sub(wasm_i16x8_shuffle(w0, high, 0, 8, 1, 9, 2, 10, 3, 11), bias);
  floats[1] = wasm_f32x4_sub(wasm_i16x8_shuffle(w0, high, 4, 12, 5, 13, 6, 14, 7, 15), bias);
  floats[2] = wasm_f32x4_sub(wasm_i16x8_shuffle(w1, high, 0, 8, 1, 9, 2, 10, 3, 11), bias);
  floats[3] = wasm_f32x4_sub(wasm_i16x8_shuffle(w1, high, 4, 12, 5, 13, 6, 14, 7, 15), bias);
}

// The high nibble of each byte: a 16-bit shift, then the caller's mask, which stays in a register
// (V8 builds i8x16.shr_u's own mask again at every use: three more instructions).
inline v128_t HighNibbles(v128_t q, v128_t nibble) { return wasm_v128_and(wasm_u16x8_shr(q, 4), nibble); }

// out[0..15] = (uint8 lanes of q) * scale - min: ggml's d * q - m, two roundings as there.
// The kernels' unsigned lanes (nibbles, 5 and 2 bits) are all below 128, the same values as
// int8, so they take Int8ToFloats too. (Clang made the zero-extended lanes' conversion
// f32x4.convert_i32x4_u, which V8 emulates on x64 in eight instructions.)
inline void StoreAffineUint8x16(float* out, v128_t q, v128_t scale, v128_t min) {
  v128_t floats[4];
  Int8ToFloats(q, floats);
  for (int k = 0; k < 4; k++) wasm_v128_store(out + 4 * k, wasm_f32x4_sub(wasm_f32x4_mul(floats[k], scale), min));
}

// out[0..15] = (int8 lanes of q) * scale.
inline void StoreScaledInt8x16(float* out, v128_t q, v128_t scale) {
  v128_t floats[4];
  Int8ToFloats(q, floats);
  for (int k = 0; k < 4; k++) wasm_v128_store(out + 4 * k, wasm_f32x4_mul(floats[k], scale));
}

// product + m, keeping the product's NaN where it is one (ggml's C on x86, as ProductPlus in
// dequant_kernels.h): only a NaN m makes it matter, so ordinary blocks take the plain add.
inline v128_t ProductPlus(v128_t product, v128_t m, bool m_is_nan) {
  const v128_t sum = wasm_f32x4_add(product, m);
  return m_is_nan ? wasm_v128_bitselect(product, sum, wasm_f32x4_ne(product, product)) : sum;
}

// out[0..15] = (uint8 lanes of q, below 128) * d + m: ggml's q*d + m of the legacy affine types.
inline void StoreMulAddUint8x16(float* out, v128_t q, v128_t d, v128_t m, bool m_is_nan) {
  v128_t floats[4];
  Int8ToFloats(q, floats);
  for (int k = 0; k < 4; k++) wasm_v128_store(out + 4 * k, ProductPlus(wasm_f32x4_mul(floats[k], d), m, m_is_nan));
}

// Entry b: byte j is 0x10 where bit j of b is set (a Q5 block's fifth bits, 8 at a time): two
// table loads give 16 lanes, where spreading the bits with vector operations took five.
struct FifthBitTable {
  uint64_t v[256];
  constexpr FifthBitTable() : v() {
    for (int b = 0; b < 256; b++)
      for (int j = 0; j < 8; j++)
        if ((b >> j) & 1) v[b] |= uint64_t{0x10} << (8 * j);
  }
};
constexpr FifthBitTable kFifthBitTable;

// Bytes 0x10 where bit j (lanes 0-15: bits 0-15; `high`: bits 16-31) of qh is set.
inline v128_t FifthBitsOf(uint32_t qh, bool high) {
  const uint32_t bits = high ? qh >> 16 : qh;
  const v128_t low = wasm_v128_load64_zero(&kFifthBitTable.v[bits & 0xff]);
  return wasm_v128_load64_lane(&kFifthBitTable.v[(bits >> 8) & 0xff], low, 1);
}

// Four halves (in 32-bit lanes) as floats, without branches: the exponent moved to float32's bias; an
// infinity or NaN (exponent 31) moved once more to 255, a NaN made quiet (as ggml and F16C do);
// a zero or subnormal (exponent 0) is m * 2^-24, made exactly as 2^-14 * (1 + m / 1024) - 2^-14.
inline v128_t HalvesToFloats(v128_t h) {
  const v128_t o = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
  const v128_t e = wasm_v128_and(o, wasm_i32x4_splat(0x0f800000));
  const v128_t rebias = wasm_i32x4_splat(112 << 23);
  v128_t f = wasm_i32x4_add(o, rebias);
  f = wasm_i32x4_add(f, wasm_v128_and(wasm_i32x4_eq(e, wasm_i32x4_splat(0x0f800000)), rebias));
  const v128_t tiny = wasm_f32x4_sub(wasm_i32x4_add(f, wasm_i32x4_splat(1 << 23)), wasm_f32x4_splat(0x1p-14f));
  f = wasm_v128_bitselect(tiny, f, wasm_i32x4_eq(e, wasm_i32x4_splat(0)));
  f = wasm_v128_or(f, wasm_v128_and(wasm_i32x4_gt(f, wasm_i32x4_splat(0x7f800000)), wasm_i32x4_splat(0x00400000)));
  return wasm_v128_or(f, wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16));
}

// Eight normal halves' floats, stored at out, in 16-bit lanes: the float of s|e|m has the high
// half s | ((x & 0x7fff) >> 3) + (112 << 7) and the low half x << 13.
inline void StoreNormalHalves(float* out, v128_t x, v128_t sign, v128_t bias) {
  const v128_t high = wasm_v128_or(wasm_v128_and(x, sign), wasm_i16x8_add(wasm_u16x8_shr(wasm_v128_andnot(x, sign), 3), bias));
  const v128_t low = wasm_i16x8_shl(x, 13);
  wasm_v128_store(out, wasm_i16x8_shuffle(low, high, 0, 8, 1, 9, 2, 10, 3, 11));
  wasm_v128_store(out + 4, wasm_i16x8_shuffle(low, high, 4, 12, 5, 13, 6, 14, 7, 15));
}

// Zero in the lanes of a zero or subnormal (exponent 0), infinity or NaN (exponent 31): the
// exponent plus 1, less its lowest bit, is 0 for exactly those two. Two operations per eight
// halves where comparing with both took four, and one unsigned min tests sixteen (measured: F16
// 5-9% faster).
inline v128_t NonzeroIfNormal(v128_t x, v128_t exponent_one, v128_t exponent_high) {
  return wasm_v128_and(wasm_i16x8_add(x, exponent_one), exponent_high);
}

// Sixteen halves of any kind, out of line: inlined into F16's loop, its constants and temporaries
// made V8 spill two vectors and load five constants again on every pass (its x64 listing).
__attribute__((noinline)) void StoreAnyHalves16(float* out, v128_t x0, v128_t x1) {
  wasm_v128_store(out, HalvesToFloats(wasm_u32x4_extend_low_u16x8(x0)));
  wasm_v128_store(out + 4, HalvesToFloats(wasm_u32x4_extend_high_u16x8(x0)));
  wasm_v128_store(out + 8, HalvesToFloats(wasm_u32x4_extend_low_u16x8(x1)));
  wasm_v128_store(out + 12, HalvesToFloats(wasm_u32x4_extend_high_u16x8(x1)));
}

// F16: where all halves are normal (as in trained weights, but for the rare zero or subnormal),
// StoreNormalHalves; the others then written again, one by one from the half table where there
// are a few of the sixteen, else all sixteen by HalvesToFloats. Measured: weights with 1 half in
// 400 subnormal 2.56x native -> 2.3x, against all sixteen again for any; a branch-free float
// path through 2^-112 was slower (x64 multiplies subnormals through a microcode assist).
void F16(const uint8_t* src, size_t n, float* out) {
  const Kept k;
  const v128_t sign = k.i16(0x8000), bias = k.i16(112 << 7), zero = k.i16(0), exponent_one = k.i16(0x0400), exponent_high = k.i16(0x7800);
  size_t i = 0;
  // Sixteen at a time, one test for both eights. Written over where needed, rather than on one
  // side of a branch: clang would then move the constants into the branch, and V8 builds each
  // again on every pass.
  for (; i + 16 <= n; i += 16) {
    const v128_t x0 = wasm_v128_load(src + 2 * i), x1 = wasm_v128_load(src + 2 * i + 16);
    StoreNormalHalves(out + i, x0, sign, bias);
    StoreNormalHalves(out + i + 8, x1, sign, bias);
    const v128_t normal0 = NonzeroIfNormal(x0, exponent_one, exponent_high), normal1 = NonzeroIfNormal(x1, exponent_one, exponent_high);
    if (!wasm_i16x8_all_true(wasm_u16x8_min(normal0, normal1))) {
      uint32_t lanes = wasm_i16x8_bitmask(wasm_i16x8_eq(normal0, zero)) | (wasm_i16x8_bitmask(wasm_i16x8_eq(normal1, zero)) << 8);
      if (__builtin_popcount(lanes) > 4) {
        StoreAnyHalves16(out + i, x0, x1);
        continue;
      }
      for (; lanes != 0; lanes &= lanes - 1) {
        const size_t j = i + static_cast<size_t>(__builtin_ctz(lanes));
        out[j] = HalfToFloat(LoadU16(src + 2 * j));
      }
    }
  }
  for (; i < n; i++) out[i] = HalfToFloat(LoadU16(src + 2 * i));
}

// BF16: the 16 bits become the float's high half, 8 at a time.
void BF16(const uint8_t* src, size_t n, float* out) {
  const v128_t zero = Kept().i16(0);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v128_t x = wasm_v128_load(src + 2 * i);
    wasm_v128_store(out + i, wasm_i16x8_shuffle(zero, x, 0, 8, 1, 9, 2, 10, 3, 11));
    wasm_v128_store(out + i + 4, wasm_i16x8_shuffle(zero, x, 4, 12, 5, 13, 6, 14, 7, 15));
  }
  for (; i < n; i++) {
    const uint32_t bits = static_cast<uint32_t>(LoadU16(src + 2 * i)) << 16;
    std::memcpy(out + i, &bits, 4);
  }
}

// out[0..31] = values[low nibbles of q], then values[high nibbles], each times d: the 16-entry
// int8 tables (IQ4_NL's, FP4's) looked up 16 nibbles at once.
inline void StoreTableNibbles32(float* out, v128_t q, v128_t values, v128_t nibble, v128_t d) {
  StoreScaledInt8x16(out, wasm_i8x16_swizzle(values, wasm_v128_and(q, nibble)), d);
  StoreScaledInt8x16(out + 16, wasm_i8x16_swizzle(values, HighNibbles(q, nibble)), d);
}

void IQ4_NL(const uint8_t* src, size_t nblocks, float* out) {
  const v128_t values = wasm_v128_load(g_tables.iq4nl), nibble = Kept().i8(0x0f);
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 32) {
    StoreTableNibbles32(out, wasm_v128_load(src + 2), values, nibble, wasm_f32x4_splat(HalfToFloat(LoadU16(src))));
  }
}

// IQ4_XS: IQ4_NL's values looked up 16 nibbles at once, 8 sub-blocks of 32 with 6-bit scales
// (bias 32), each d * scale rounded once as ggml does.
void IQ4_XS(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t values = wasm_v128_load(g_tables.iq4nl), nibble = k.i8(0x0f), low4 = k.i16(0xf), thirty_two = k.i16(32);
  // Lane ib times 2^(14 - 2 ib): bit pair ib of the high bits moved to the top of the lane.
  const int16_t z = static_cast<int16_t>(k.zero);
  const v128_t pair_up = wasm_i16x8_make(1 << 14 | z, 1 << 12 | z, 1 << 10 | z, 1 << 8 | z, 1 << 6 | z, 1 << 4 | z, 1 << 2 | z, 1 | z);
  for (size_t b = 0; b < nblocks; b++, src += 136) {
    // The 8 scales at once, in 16-bit lanes: nibble ib % 2 of byte 4 + ib / 2 (lanes of bytes
    // 4-7, each twice), bits 4-5 from bit pair ib of the 16 bits at 2; less 32, times d.
    float dl[8];
    {
      const v128_t bytes = wasm_u16x8_extend_low_u8x16(wasm_v128_load32_zero(src + 4));
      const v128_t twice = wasm_i16x8_shuffle(bytes, bytes, 0, 0, 1, 1, 2, 2, 3, 3);
      const v128_t low = wasm_i16x8_shuffle(wasm_v128_and(twice, low4), wasm_v128_and(wasm_u16x8_shr(twice, 4), low4), 0, 9, 2, 11, 4, 13, 6, 15);
      const v128_t high = wasm_u16x8_shr(wasm_i16x8_mul(wasm_v128_load16_splat(src + 2), pair_up), 14);
      const v128_t ls = wasm_i16x8_sub(wasm_v128_or(low, wasm_i16x8_shl(high, 4)), thirty_two);
      const v128_t d = wasm_f32x4_splat(HalfToFloat(LoadU16(src)));
      wasm_v128_store(dl, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(ls)), d));
      wasm_v128_store(dl + 4, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(ls)), d));
    }
    for (int ib = 0; ib < 8; ib++, out += 32) StoreTableNibbles32(out, wasm_v128_load(src + 8 + 16 * ib), values, nibble, wasm_f32x4_splat(dl[ib]));
  }
}

// Q1_0: +d where the element's bit is set, -d (negation, so a NaN flips sign as in ggml) where not.
void Q1_0(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const int32_t z = static_cast<int32_t>(k.zero);
  const v128_t low_bits = wasm_i32x4_make(1 | z, 2 | z, 4 | z, 8 | z), high_bits = wasm_i32x4_make(16 | z, 32 | z, 64 | z, 128 | z);
  for (size_t b = 0; b < nblocks; b++, src += 18) {
    const float df = HalfToFloat(LoadU16(src));
    const v128_t d = wasm_f32x4_splat(df), nd = wasm_f32x4_splat(-df), zero = k.i32(0);
    for (int i = 0; i < 16; i++, out += 8) {
      const v128_t byte = wasm_i32x4_splat(src[2 + i]);
      // -d where the bit is clear: i32x4.eq is one instruction on x64, i32x4.ne two.
      wasm_v128_store(out, wasm_v128_bitselect(nd, d, wasm_i32x4_eq(wasm_v128_and(byte, low_bits), zero)));
      wasm_v128_store(out + 4, wasm_v128_bitselect(nd, d, wasm_i32x4_eq(wasm_v128_and(byte, high_bits), zero)));
    }
  }
}

// Q8_0: q * d, 32 int8 after an f16 scale; Q8_K: 256 int8 after a float32 scale (its block sums
// are not needed). Clang's code for the portable loops widened each lane in turn.
void Q8_0(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 34, out += 32) {
    const v128_t d = wasm_f32x4_splat(HalfToFloat(LoadU16(src)));
    StoreScaledInt8x16(out, wasm_v128_load(src + 2), d);
    StoreScaledInt8x16(out + 16, wasm_v128_load(src + 18), d);
  }
}

void Q8_K(const uint8_t* src, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; b++, src += 292, out += 256) {
    float df;
    std::memcpy(&df, src, 4);
    const v128_t d = wasm_f32x4_splat(df);
    for (int j = 0; j < 256; j += 16) StoreScaledInt8x16(out + j, wasm_v128_load(src + 4 + j), d);
  }
}

// Q4_0: (nibble - 8) * d.
void Q4_0(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t nibble = k.i8(0x0f), eight = k.i8(8);
  for (size_t b = 0; b < nblocks; b++, src += 18, out += 32) {
    const v128_t d = wasm_f32x4_splat(HalfToFloat(LoadU16(src)));
    const v128_t q = wasm_v128_load(src + 2);
    StoreScaledInt8x16(out, wasm_i8x16_sub(wasm_v128_and(q, nibble), eight), d);
    StoreScaledInt8x16(out + 16, wasm_i8x16_sub(HighNibbles(q, nibble), eight), d);
  }
}

// The affine legacy types, q * d + m: Q4_1 (4-bit q at byte 4) and Q5_1 (the fifth bits in the
// uint32 at 4, q at 8). One loop; kFifthBits picks the layout.
template <bool kFifthBits>
void AffineLegacy(const uint8_t* src, size_t nblocks, float* out) {
  constexpr size_t kBlockBytes = kFifthBits ? 24 : 20, kQuants = kFifthBits ? 8 : 4;
  const Kept k;
  const v128_t nibble = k.i8(0x0f);
  for (size_t b = 0; b < nblocks; b++, src += kBlockBytes, out += 32) {
    const float mf = HalfToFloat(LoadU16(src + 2));
    const v128_t d = wasm_f32x4_splat(HalfToFloat(LoadU16(src))), m = wasm_f32x4_splat(mf);
    const uint32_t qh = kFifthBits ? LoadU32(src + 4) : 0;
    const v128_t q = wasm_v128_load(src + kQuants);
    const v128_t low = wasm_v128_and(q, nibble), high = HighNibbles(q, nibble);
    StoreMulAddUint8x16(out, kFifthBits ? wasm_v128_or(low, FifthBitsOf(qh, false)) : low, d, m, mf != mf);
    StoreMulAddUint8x16(out + 16, kFifthBits ? wasm_v128_or(high, FifthBitsOf(qh, true)) : high, d, m, mf != mf);
  }
}

void Q4_1(const uint8_t* src, size_t nblocks, float* out) { AffineLegacy<false>(src, nblocks, out); }
void Q5_1(const uint8_t* src, size_t nblocks, float* out) { AffineLegacy<true>(src, nblocks, out); }

void Q5_0(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t nibble = k.i8(0x0f), sixteen = k.i8(16);
  for (size_t b = 0; b < nblocks; b++, src += 22, out += 32) {
    const v128_t d = wasm_f32x4_splat(HalfToFloat(LoadU16(src)));
    const uint32_t qh = LoadU32(src + 2);
    const v128_t q = wasm_v128_load(src + 6);
    // (nibble | fifth bit) - 16 as int8.
    StoreScaledInt8x16(out, wasm_i8x16_sub(wasm_v128_or(wasm_v128_and(q, nibble), FifthBitsOf(qh, false)), sixteen), d);
    StoreScaledInt8x16(out + 16, wasm_i8x16_sub(wasm_v128_or(HighNibbles(q, nibble), FifthBitsOf(qh, true)), sixteen), d);
  }
}

void Q5_K(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t nibble = k.i8(0x0f), sixteen = k.i8(16);
  const v128_t low_bits[4] = {k.i8(1), k.i8(4), k.i8(16), k.i8(64)}, high_bits[4] = {k.i8(2), k.i8(8), k.i8(32), k.i8(128)};
  for (size_t b = 0; b < nblocks; b++, src += 176) {
    float scales[8], mins[8];
    KScalesMins(src, HalfToFloat(LoadU16(src)), HalfToFloat(LoadU16(src + 2)), scales, mins);
    const v128_t h0 = wasm_v128_load(src + 16), h1 = wasm_v128_load(src + 32);
    const uint8_t* q = src + 48;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
      const v128_t low_bit = low_bits[g], high_bit = high_bits[g];
      // Sixteen where the group's bit of qh[l] is set.
      const auto fifth = [&](v128_t h, v128_t bit) { return wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(h, bit), bit), sixteen); };
      const v128_t v0 = wasm_v128_load(q), v1 = wasm_v128_load(q + 16);
      const v128_t d1 = wasm_f32x4_splat(scales[2 * g]), m1 = wasm_f32x4_splat(mins[2 * g]);
      const v128_t d2 = wasm_f32x4_splat(scales[2 * g + 1]), m2 = wasm_f32x4_splat(mins[2 * g + 1]);
      StoreAffineUint8x16(out, wasm_v128_or(wasm_v128_and(v0, nibble), fifth(h0, low_bit)), d1, m1);
      StoreAffineUint8x16(out + 16, wasm_v128_or(wasm_v128_and(v1, nibble), fifth(h1, low_bit)), d1, m1);
      StoreAffineUint8x16(out + 32, wasm_v128_or(HighNibbles(v0, nibble), fifth(h0, high_bit)), d2, m2);
      StoreAffineUint8x16(out + 48, wasm_v128_or(HighNibbles(v1, nibble), fifth(h1, high_bit)), d2, m2);
    }
  }
}

// The FP4 table (int8, doubled as ggml's) looked up by 16 nibbles at once.
void MXFP4(const uint8_t* src, size_t nblocks, float* out) {
  const v128_t values = wasm_v128_load(g_tables.fp4), nibble = Kept().i8(0x0f);
  for (size_t b = 0; b < nblocks; b++, src += 17, out += 32) {
    StoreTableNibbles32(out, wasm_v128_load(src + 1), values, nibble, wasm_f32x4_splat(E8M0Half(src[0])));
  }
}

void NVFP4(const uint8_t* src, size_t nblocks, float* out) {
  const v128_t values = wasm_v128_load(g_tables.fp4), nibble = Kept().i8(0x0f);
  for (size_t b = 0; b < nblocks; b++, src += 36) {
    for (int s = 0; s < 4; s += 2, out += 32) {
      // Sub-blocks s and s + 1 (8 bytes each): each one's low nibbles, then its high ones.
      const v128_t q = wasm_v128_load(src + 4 + 8 * s);
      const v128_t lo = wasm_i8x16_swizzle(values, wasm_v128_and(q, nibble));
      const v128_t hi = wasm_i8x16_swizzle(values, HighNibbles(q, nibble));
      StoreScaledInt8x16(out, wasm_i64x2_shuffle(lo, hi, 0, 2), wasm_f32x4_splat(UE4M3Half(src[s])));
      StoreScaledInt8x16(out + 16, wasm_i64x2_shuffle(lo, hi, 1, 3), wasm_f32x4_splat(UE4M3Half(src[s + 1])));
    }
  }
}

// Q2_K: 16 sub-blocks of 16, each with its scale (low nibble) and min (high nibble) in one byte.
void Q2_K(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t two_bits = k.i8(3);
  for (size_t b = 0; b < nblocks; b++, src += 84) {
    const float d = HalfToFloat(LoadU16(src + 80)), dmin = HalfToFloat(LoadU16(src + 82));
    const uint8_t* scales = src;
    for (int half = 0; half < 2; half++) {
      const v128_t v[2] = {wasm_v128_load(src + 16 + 32 * half), wasm_v128_load(src + 32 + 32 * half)};
      // Unrolled, so that each shift is a constant (V8 shifts bytes by a variable in five instructions).
#pragma clang loop unroll(full)
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; part++, scales++, out += 16) {
          const v128_t dl = wasm_f32x4_splat(d * static_cast<float>(*scales & 0xf));
          const v128_t ml = wasm_f32x4_splat(dmin * static_cast<float>(*scales >> 4));
          StoreAffineUint8x16(out, wasm_v128_and(wasm_u16x8_shr(v[part], shift), two_bits), dl, ml);
        }
      }
    }
  }
}

void Q3_K(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t two_bits = k.i8(3), four = k.i8(4), nibble = k.i8(0x0f), thirty_two = k.i8(32);
  for (size_t b = 0; b < nblocks; b++, src += 110) {
    const float d = HalfToFloat(LoadU16(src + 108));
    // The 16 scales, 6 bits less 32, all at once: low nibbles of bytes 96-103, then their high
    // nibbles; bits 4-5 from bit pair j / 4 of byte 104 + j % 4. Each d * scale, rounded once as
    // ggml does. (Scalar, this was a fifth of the kernel's time.)
    float dl[16];
    {
      const v128_t s = wasm_v128_load64_zero(src + 96);
      const v128_t low = wasm_i64x2_shuffle(wasm_v128_and(s, nibble), HighNibbles(s, nibble), 0, 2);
      const v128_t h = wasm_v128_load32_splat(src + 104);  // byte j: byte 104 + j % 4
      const v128_t pairs = wasm_i32x4_shuffle(wasm_i32x4_shuffle(h, wasm_u16x8_shr(h, 2), 0, 5, 2, 3),
                                              wasm_i32x4_shuffle(wasm_u16x8_shr(h, 4), wasm_u16x8_shr(h, 6), 0, 1, 2, 7), 0, 1, 6, 7);
      const v128_t six_bits = wasm_v128_or(low, wasm_i16x8_shl(wasm_v128_and(pairs, two_bits), 4));
      v128_t scales[4];
      Int8ToFloats(wasm_i8x16_sub(six_bits, thirty_two), scales);
      const v128_t dv = wasm_f32x4_splat(d);
      for (int j = 0; j < 4; j++) wasm_v128_store(dl + 4 * j, wasm_f32x4_mul(scales[j], dv));
    }
    // The hmask bits inverted: bit p of an element's byte moved to bit 2 is the 4 to take away.
    const v128_t clear[2] = {wasm_v128_not(wasm_v128_load(src)), wasm_v128_not(wasm_v128_load(src + 16))};
    const float* scale = dl;
#pragma clang loop unroll(full)  // constant shifts, as in Q2_K
    for (int half = 0; half < 2; half++) {
      const v128_t v[2] = {wasm_v128_load(src + 32 + 32 * half), wasm_v128_load(src + 48 + 32 * half)};
#pragma clang loop unroll(full)
      for (int shift = 0; shift < 8; shift += 2, out += 32, scale += 2) {
        const int bit = (shift >> 1) + 4 * half;
        // Two bits of qs, less 4 where the element's hmask bit is clear; 16 elements per scale.
        for (int k = 0; k < 2; k++) {
          const v128_t moved = bit < 2 ? wasm_i16x8_shl(clear[k], 2 - bit) : wasm_u16x8_shr(clear[k], bit - 2);
          const v128_t q = wasm_i8x16_sub(wasm_v128_and(wasm_u16x8_shr(v[k], shift), two_bits), wasm_v128_and(moved, four));
          StoreScaledInt8x16(out + 16 * k, q, wasm_f32x4_splat(scale[k]));
        }
      }
    }
  }
}

// TQ1_0: digit n of byte x is (x * 3^n mod 256) * 3 >> 8, which is 0 below 86, 1 below 171, else
// 2. So 16 bytes at once: q = x * 3^n mod 256 by wrapping byte adds (q, then 3q), the digit less 1
// from two compares. The bytes are kept as x + 128 (top bit flipped), which times 3 is 3x + 128
// again (3 * 128 = 384 = 128 mod 256), so the compares are signed ones, one instruction each on
// x64 (the unsigned ones are two).
// Byte lanes times 3 as x + 2x: 2x is a 16-bit shift with each byte's carried-in bit cleared.
// WebAssembly has no i8x16.mul; clang turns x + x + x (or x + byte shift) into one, which V8 then
// runs lane by lane (measured 3-4x slower for the whole kernel), unless the mask is opaque (Kept).
struct Ternary {
  v128_t clear_bit0, top_bit, at86, at171, minus_one;  // bytes 0xfe, 0x80, 86 - 129, 171 - 129, -1
};

inline v128_t TimesThree(v128_t q, const Ternary& t) {
  return wasm_i8x16_add(q, wasm_v128_and(wasm_i16x8_shl(q, 1), t.clear_bit0));
}

// The digit less 1 of flipped bytes x + 128: -1 - (x >= 86 ? -1 : 0) - (x >= 171 ? -1 : 0).
inline v128_t TernaryDigitLessOne(v128_t flipped, const Ternary& t) {
  const v128_t one = wasm_i8x16_gt(flipped, t.at86), two = wasm_i8x16_gt(flipped, t.at171);
  return wasm_i8x16_sub(wasm_i8x16_sub(t.minus_one, one), two);
}

void TQ1_0(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const Ternary t{k.i8(0xfe), k.i8(0x80), k.i8(86 - 129), k.i8(171 - 129), k.i8(-1)};
  for (size_t b = 0; b < nblocks; b++, src += 54) {
    const v128_t d = wasm_f32x4_splat(HalfToFloat(LoadU16(src + 52)));
    v128_t q0 = wasm_v128_xor(wasm_v128_load(src), t.top_bit), q1 = wasm_v128_xor(wasm_v128_load(src + 16), t.top_bit);
    v128_t q2 = wasm_v128_xor(wasm_v128_load(src + 32), t.top_bit);
    for (int n = 0; n < 5; n++, out += 32) {
      StoreScaledInt8x16(out, TernaryDigitLessOne(q0, t), d);
      StoreScaledInt8x16(out + 16, TernaryDigitLessOne(q1, t), d);
      q0 = TimesThree(q0, t);
      q1 = TimesThree(q1, t);
    }
    for (int n = 0; n < 5; n++, out += 16) {
      StoreScaledInt8x16(out, TernaryDigitLessOne(q2, t), d);
      q2 = TimesThree(q2, t);
    }
    // The last 16 values: digits 0-3 of the four qh bytes 48-51, digit by digit: the bytes four
    // times over, times 1, 3, 9, 27 by lane group.
    const v128_t x = wasm_v128_xor(wasm_u32x4_splat(LoadU32(src + 48)), t.top_bit);
    const v128_t x3 = TimesThree(x, t), x9 = TimesThree(x3, t), x27 = TimesThree(x9, t);
    const v128_t q = wasm_i32x4_shuffle(wasm_i32x4_shuffle(x, x3, 0, 4, 0, 0), wasm_i32x4_shuffle(x9, x27, 0, 4, 0, 0), 0, 1, 4, 5);
    StoreScaledInt8x16(out, TernaryDigitLessOne(q, t), d);
    out += 16;
  }
}

// TQ2_0: 2-bit values 0..2, less 1; each 32 bytes give four runs of 32 (bit pairs 0-3).
void TQ2_0(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t two_bits = k.i8(3), one = k.i8(1);
  for (size_t b = 0; b < nblocks; b++, src += 66) {
    const v128_t d = wasm_f32x4_splat(HalfToFloat(LoadU16(src + 64)));
    for (int j = 0; j < 64; j += 32) {
      const v128_t v[2] = {wasm_v128_load(src + j), wasm_v128_load(src + j + 16)};
#pragma clang loop unroll(full)  // constant shifts, as in Q2_K
      for (int shift = 0; shift < 8; shift += 2, out += 32) {
        StoreScaledInt8x16(out, wasm_i8x16_sub(wasm_v128_and(wasm_u16x8_shr(v[0], shift), two_bits), one), d);
        StoreScaledInt8x16(out + 16, wasm_i8x16_sub(wasm_v128_and(wasm_u16x8_shr(v[1], shift), two_bits), one), d);
      }
    }
  }
}

void Q4_K(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t nibble = k.i8(0x0f);
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
      StoreAffineUint8x16(out + 32, HighNibbles(v0, nibble), d2, m2);
      StoreAffineUint8x16(out + 48, HighNibbles(v1, nibble), d2, m2);
    }
  }
}

void Q6_K(const uint8_t* src, size_t nblocks, float* out) {
  const Kept k;
  const v128_t nibble = k.i8(0x0f), two_bits = k.i8(3), bias = k.i8(32);
  for (size_t b = 0; b < nblocks; b++, src += 210) {
    const float d = HalfToFloat(LoadU16(src + 208));
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    for (int half = 0; half < 2; half++, out += 128) {
      const uint8_t* ql = src + 64 * half;
      const uint8_t* qh = src + 128 + 32 * half;
      // 16 lanes at a time (k = 0: elements l = 0..15 of each run, k = 1: l = 16..31). Run r takes
      // a nibble of ql[l + 32 * (r % 2)] (low for r < 2) and bit pair r of qh[l], minus 32.
#pragma clang loop unroll(full)
      for (int k = 0; k < 2; k++) {
        const v128_t l0 = wasm_v128_load(ql + 16 * k), l1 = wasm_v128_load(ql + 32 + 16 * k);
        const v128_t h = wasm_v128_load(qh + 16 * k);
        const v128_t runs[4] = {
            wasm_v128_or(wasm_v128_and(l0, nibble), wasm_i16x8_shl(wasm_v128_and(h, two_bits), 4)),
            wasm_v128_or(wasm_v128_and(l1, nibble), wasm_i16x8_shl(wasm_v128_and(wasm_u16x8_shr(h, 2), two_bits), 4)),
            wasm_v128_or(HighNibbles(l0, nibble), wasm_i16x8_shl(wasm_v128_and(wasm_u16x8_shr(h, 4), two_bits), 4)),
            wasm_v128_or(HighNibbles(l1, nibble), wasm_i16x8_shl(wasm_v128_and(wasm_u16x8_shr(h, 6), two_bits), 4)),
        };
        // Elements 32 r + 16 k .. + 15 of this half use scale 2 r + k. (Unrolled: clang otherwise
        // keeps runs[] in memory.)
#pragma clang loop unroll(full)
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
    F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
    Q4_1, Q5_0, Q5_1, Q1_0, nullptr, MXFP4, NVFP4, Q2_K, Q3_K, Q8_K,
    IQ4_XS, TQ1_0, TQ2_0,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace gguf_mmap

#endif  // __wasm_simd128__
