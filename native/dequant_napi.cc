// JS entry points for the native kernels. Checks every argument before touching memory: the
// TypeScript layer validates too, but the addon must not trust its caller with raw pointers.
//
//   dequantize(typeId, src: Uint8Array, nblocks, out: Float32Array, outIndex): boolean
//       false when there is no native kernel for typeId.
//   dequantizeAsync(typeId, src, nblocks, out, outIndex): Promise<void>
//       the same on a libuv pool thread; a mapped source is pinned so close() cannot unmap it
//       under the worker.
//   dequantInfo(): { isa, typeIds }
//   forcePortableDequant(bool), setIq4nlValues(Int8Array(16))
#include "dequant_napi.h"

#include <string>

#include "dequant.h"
#include "region.h"

namespace gguf_mmap {
namespace {

struct Job {
  DequantKernel kernel;
  const uint8_t* src;
  size_t nblocks;
  float* out;
};

// Validates the arguments; returns false (and no job) when there is no kernel for the type.
bool ParseJob(const Napi::CallbackInfo& info, Job* job) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsNumber() || !info[1].IsTypedArray() || !info[2].IsNumber() ||
      !info[3].IsTypedArray() || !info[4].IsNumber()) {
    throw Napi::TypeError::New(env, "dequantize(typeId, src: Uint8Array, nblocks, out: Float32Array, outIndex)");
  }
  Napi::TypedArray src = info[1].As<Napi::TypedArray>();
  Napi::TypedArray out = info[3].As<Napi::TypedArray>();
  if (src.TypedArrayType() != napi_uint8_array || out.TypedArrayType() != napi_float32_array) {
    throw Napi::TypeError::New(env, "dequantize: src must be a Uint8Array and out a Float32Array");
  }
  if (!FindDequantKernel(info[0].As<Napi::Number>().Int32Value(), &job->kernel)) return false;
  const double nblocks = info[2].As<Napi::Number>().DoubleValue();
  const double out_index = info[4].As<Napi::Number>().DoubleValue();
  const double src_bytes = static_cast<double>(src.ByteLength());
  const double out_len = static_cast<double>(out.ElementLength());
  if (!(nblocks >= 0 && nblocks == static_cast<double>(static_cast<size_t>(nblocks))) ||
      !(out_index >= 0 && out_index == static_cast<double>(static_cast<size_t>(out_index))) ||
      nblocks * job->kernel.type_size > src_bytes || out_index + nblocks * job->kernel.block_size > out_len) {
    throw Napi::RangeError::New(env, "dequantize: blocks out of range of src or out");
  }
  // A detached buffer has length 0, so it only gets here with nblocks 0.
  job->src = static_cast<const uint8_t*>(src.ArrayBuffer().Data()) + src.ByteOffset();
  job->out = reinterpret_cast<float*>(static_cast<uint8_t*>(out.ArrayBuffer().Data()) + out.ByteOffset()) +
             static_cast<size_t>(out_index);
  job->nblocks = static_cast<size_t>(nblocks);
  return true;
}

Napi::Value Dequantize(const Napi::CallbackInfo& info) {
  Job job;
  if (!ParseJob(info, &job)) return Napi::Boolean::New(info.Env(), false);
  if (job.nblocks > 0) job.kernel.fn(job.src, job.nblocks, job.out);
  return Napi::Boolean::New(info.Env(), true);
}

class DequantWorker : public Napi::AsyncWorker {
 public:
  DequantWorker(Napi::Env env, const Job& job, Region* pinned, Napi::Value src, Napi::Value out)
      : Napi::AsyncWorker(env, "gguf-mmap:dequantize"), job_(job), pinned_(pinned), deferred_(env) {
    // The typed arrays stay reachable until the work is done; a mapped source is also pinned.
    src_ = Napi::Persistent(src.As<Napi::Object>());
    out_ = Napi::Persistent(out.As<Napi::Object>());
  }

  ~DequantWorker() override {
    if (pinned_ != nullptr) pinned_->Unpin();
  }

  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    if (job_.nblocks > 0) job_.kernel.fn(job_.src, job_.nblocks, job_.out);
  }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Job job_;
  Region* pinned_;
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference src_;
  Napi::ObjectReference out_;
};

Napi::Value DequantizeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Job job;
  if (!ParseJob(info, &job)) throw Napi::Error::New(env, "dequantizeAsync: no native kernel for this type");
  Region* pinned = Region::PinContaining(job.src, job.nblocks * job.kernel.type_size);
  auto* worker = new DequantWorker(env, job, pinned, info[1], info[3]);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value DequantInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  result.Set("isa", DequantIsa());
  Napi::Array ids = Napi::Array::New(env);
  uint32_t n = 0;
  for (int id : DequantTypeIds()) ids.Set(n++, id);
  result.Set("typeIds", ids);
  return result;
}

Napi::Value ForcePortable(const Napi::CallbackInfo& info) {
  ForcePortableDequant(info.Length() > 0 && info[0].ToBoolean().Value());
  return info.Env().Undefined();
}

Napi::Value SetIq4nl(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int8_array ||
      info[0].As<Napi::TypedArray>().ElementLength() != 16) {
    throw Napi::TypeError::New(env, "setIq4nlValues(values: Int8Array of 16)");
  }
  Napi::TypedArray values = info[0].As<Napi::TypedArray>();
  SetIq4nlValues(reinterpret_cast<const int8_t*>(static_cast<uint8_t*>(values.ArrayBuffer().Data()) + values.ByteOffset()));
  return env.Undefined();
}

}  // namespace

void RegisterDequant(Napi::Env env, Napi::Object exports) {
  exports.Set("dequantize", Napi::Function::New<Dequantize>(env, "dequantize"));
  exports.Set("dequantizeAsync", Napi::Function::New<DequantizeAsync>(env, "dequantizeAsync"));
  exports.Set("dequantInfo", Napi::Function::New<DequantInfo>(env, "dequantInfo"));
  exports.Set("forcePortableDequant", Napi::Function::New<ForcePortable>(env, "forcePortableDequant"));
  exports.Set("setIq4nlValues", Napi::Function::New<SetIq4nl>(env, "setIq4nlValues"));
}

}  // namespace gguf_mmap
