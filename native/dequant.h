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
  const char* isa;  // the instruction set of fn: "avx512", "avx2" or "portable"
};

// The fastest kernel this CPU can run for `type_id`; false when there is none.
bool FindDequantKernel(int type_id, DequantKernel* kernel);

// Type ids that have a native kernel now (those that need a lookup table once it is set).
std::vector<int> DequantTypeIds();

// The instruction set the kernels are chosen for now: "avx512", "avx2" or "portable" (a type
// without a kernel for it uses the next narrower set's).
const char* DequantIsa();

// The instruction sets this CPU can run, narrowest first.
std::vector<const char*> DequantIsas();

// Uses kernels up to instruction set `name` only ("portable", "avx2", "avx512": no limit), for
// tests that compare the sets and for benchmarks; false for an unknown name.
bool LimitDequantIsa(const char* name);

// One of ggml's lookup tables (`name` as in the package's data/tables: "kvalues_iq4nl",
// "iq2xxs_grid", ...), handed over from the package's data files once; a kernel that needs a table
// is offered only once it is set. False for an unknown name or a wrong length.
bool SetDequantTable(const char* name, const uint8_t* bytes, size_t length);

}  // namespace gguf_mmap
