// Node-API functions for dequantization (see dequant_napi.cc).
#pragma once

#include <napi.h>

namespace gguf_mmap {

void RegisterDequant(Napi::Env env, Napi::Object exports);

// False in runtimes that refuse ArrayBuffers over external memory (addon.cc).
bool ExternalBuffersAllowed();

}  // namespace gguf_mmap
