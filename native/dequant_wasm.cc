// The WebAssembly build of the portable kernels (scripts/build-wasm.sh: dequant.cc,
// dequant_portable.cc and this file, compiled for wasm32 with SIMD128), for where the addon cannot
// load: no prebuilt binary for the platform and no compiler to build one.
// The same C++ as the native portable set, so the same bits; JavaScript copies blocks into this
// module's memory and the floats out (lib/dequant/wasm.ts), a chunk at a time.
//
//   buffer(bytes): pointer      a scratch area of at least `bytes` (the same one each time; grows)
//   set_table(name, bytes, n)   one of ggml's lookup tables by name (as SetDequantTable)
//   has_kernel(typeId): 0 | 1   a kernel for the type (once its tables are set)
//   dequantize(typeId, src, nblocks, out): 0 | 1
#include <cstdlib>

#include "dequant.h"

namespace {

void* g_buffer = nullptr;
size_t g_buffer_bytes = 0;

}  // namespace

extern "C" {

__attribute__((export_name("buffer"))) void* Buffer(size_t bytes) {
  if (bytes > g_buffer_bytes) {
    std::free(g_buffer);
    g_buffer = std::malloc(bytes);
    g_buffer_bytes = g_buffer != nullptr ? bytes : 0;
  }
  return g_buffer;
}

__attribute__((export_name("set_table"))) int SetTable(const char* name, const uint8_t* bytes, size_t length) {
  return gguf_mmap::SetDequantTable(name, bytes, length) ? 1 : 0;
}

__attribute__((export_name("has_kernel"))) int HasKernel(int type_id) {
  gguf_mmap::DequantKernel kernel;
  return gguf_mmap::FindDequantKernel(type_id, &kernel) ? 1 : 0;
}

__attribute__((export_name("dequantize"))) int Dequantize(int type_id, const uint8_t* src, size_t nblocks, float* out) {
  gguf_mmap::DequantKernel kernel;
  if (!gguf_mmap::FindDequantKernel(type_id, &kernel)) return 0;
  kernel.fn(src, nblocks, out);
  return 1;
}

}  // extern "C"
