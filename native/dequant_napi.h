// Node-API functions for dequantization (see dequant_napi.cc).
#pragma once

#include <napi.h>

namespace gguf_mmap {

void RegisterDequant(Napi::Env env, Napi::Object exports);

// The rows of one tensor: in a mapping for a bound row reader, or in memory JS holds for one call.
struct RowSpan {
  const uint8_t* base;
  size_t rows;
  size_t row_bytes;
  int type_id;
};

// readRows(rows: number | Int32Array | Uint32Array, count, out: Float32Array): boolean, in plain
// Node-API (the per-call cost of a lookup is mostly argument handling). Throws (returns nullptr
// with a pending exception) on bad arguments; false when there is no native kernel for the type.
napi_value ReadRowsInto(napi_env env, const RowSpan& span, napi_value rows, napi_value count, napi_value out);

// False in runtimes that refuse ArrayBuffers over external memory (addon.cc).
bool ExternalBuffersAllowed();

}  // namespace gguf_mmap
