// Native dequantization kernels for the common ggml types. Each decodes whole blocks into float32
// with ggml's scalar reference formulas (ggml-quants.c); every product there is exact in float32,
// so the SIMD versions give the same bits. Pure C++: no Node-API here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gguf_mmap {

using DequantFn = void (*)(const uint8_t* src, size_t nblocks, float* out);

struct DequantKernel {
  int type_id;     // ggml type id
  int block_size;  // elements per block
  int type_size;   // bytes per block
  DequantFn fn;
};

// The fastest kernel this CPU can run for `type_id`; false when there is none.
bool FindDequantKernel(int type_id, DequantKernel* kernel);

// Type ids that have a native kernel now (IQ4_NL once its table is set).
std::vector<int> DequantTypeIds();

// The instruction set the kernels were chosen for: "avx2" or "portable".
const char* DequantIsa();

// Forces the portable kernels (for tests that compare them with the SIMD ones).
void ForcePortableDequant(bool portable);

// ggml's IQ4_NL value table (16 int8), handed over from the package's data files once; until it
// is set there is no IQ4_NL kernel.
void SetIq4nlValues(const int8_t values[16]);

}  // namespace gguf_mmap
