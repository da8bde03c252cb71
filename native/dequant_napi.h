// Node-API functions for dequantization (see dequant_napi.cc).
#pragma once

#include <napi.h>

namespace gguf_mmap {

void RegisterDequant(Napi::Env env, Napi::Object exports);

// Rows of a tensor at [src, src + src_length) into a Float32Array; the arguments from info[first]:
// typeId, rowBytes, rows (first row, or Int32Array/Uint32Array ids), count, out, outIndex. False
// when there is no native kernel for the type. For Mapping.gatherRows too (addon.cc).
Napi::Value GatherRowsFrom(const Napi::CallbackInfo& info, size_t first, const uint8_t* src, size_t src_length);

// False in runtimes that refuse ArrayBuffers over external memory (addon.cc).
bool ExternalBuffersAllowed();

}  // namespace gguf_mmap
