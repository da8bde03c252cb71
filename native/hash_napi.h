// Node-API binding of the native hashes (see hash_napi.cc).
#pragma once

#include <napi.h>

namespace gguf_mmap {

void RegisterHash(Napi::Env env, Napi::Object exports);

}  // namespace gguf_mmap
