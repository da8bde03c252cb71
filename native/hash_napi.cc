// Xxh64: new Xxh64(), update(bytes: Uint8Array), digest(): string (16 hex digits, most significant
// byte first, as llama-gguf-hash prints it). Synchronous: each update reads the bytes during the
// call only, so no pointer into JS memory outlives it.
#include "hash_napi.h"

#include <cstdio>

#include "xxh64.h"

namespace gguf_mmap {
namespace {

class Xxh64Js : public Napi::ObjectWrap<Xxh64Js> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Xxh64", {InstanceMethod<&Xxh64Js::Update>("update"), InstanceMethod<&Xxh64Js::Digest>("digest")});
  }

  explicit Xxh64Js(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Xxh64Js>(info) {}

 private:
  Napi::Value Update(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      throw Napi::TypeError::New(info.Env(), "update(bytes: Uint8Array)");
    }
    const Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
    state_.Update(bytes.Data(), bytes.ByteLength());
    return info.This();
  }

  Napi::Value Digest(const Napi::CallbackInfo& info) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(state_.Digest()));
    return Napi::String::New(info.Env(), hex);
  }

  Xxh64 state_;
};

}  // namespace

void RegisterHash(Napi::Env env, Napi::Object exports) { exports.Set("Xxh64", Xxh64Js::Define(env)); }

}  // namespace gguf_mmap
