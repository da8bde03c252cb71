// Node-API binding: a Mapping object over a Region, handing out external ArrayBuffers (windows)
// over parts of it. Windows are never detached: after close() they read zeros (region.h), so
// nothing that still holds one, or a raw pointer into one, can touch unmapped memory.
#include <napi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "dequant_napi.h"
#include "hash_napi.h"
#include "os/cpus.h"
#include "os/fault_guard.h"
#include "os/file_copy.h"
#include "os/file_lock.h"
#include "os/host_symbol.h"
#include "os/memory.h"
#include "os/page_cache.h"
#include "os/region.h"
#include "string_walk.h"
#include "tensor_info_walk.h"

namespace gguf_mmap {

std::atomic<bool> g_external_buffers_refused{false};

bool ExternalBuffersAllowed() { return !g_external_buffers_refused.load(); }

namespace {

Napi::Error MapFailure(Napi::Env env, const MapError& e, const std::string& path) {
  const char* code = ErrnoName(e.errnum);
  std::string message = std::string(code) + ": " + (e.detail ? e.detail : std::strerror(e.errnum)) +
                        ", " + e.syscall + " '" + path + "'";
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", code);
  error.Set("errno", static_cast<double>(-e.errnum));  // negative, as node's fs errors report it
  error.Set("syscall", e.syscall);
  error.Set("path", path);
  return error;
}

void FinalizeWindow(napi_env /*env*/, void* /*data*/, void* hint) {
  static_cast<Region*>(hint)->Release();
}

// node_api_create_external_sharedarraybuffer (experimental Node-API: Node 22.23, 24.22, 26.12),
// found at load time. V8 does not count a SharedArrayBuffer's memory as the isolate's external
// memory, so a window of any size costs no garbage collection; and a view over one posted to a
// worker shares the pages instead of copying them. Its finalizer has no environment: it runs on
// whichever thread drops the last reference, which Region::Release() allows.
using CreateExternalSharedArrayBuffer = napi_status(NAPI_CDECL*)(napi_env, void*, size_t, void(NAPI_CDECL*)(void*, void*),
                                                                 void*, napi_value*);
CreateExternalSharedArrayBuffer ExternalSharedArrayBuffers() {
  static const auto create = reinterpret_cast<CreateExternalSharedArrayBuffer>(HostSymbol("node_api_create_external_sharedarraybuffer"));
  return create;
}

void NAPI_CDECL FinalizeSharedWindow(void* /*data*/, void* hint) { static_cast<Region*>(hint)->Release(); }

// An external ArrayBuffer (a SharedArrayBuffer when `shared` and the runtime can make one) over
// `length` bytes at `data` that holds the Region until it is collected. Node runs the
// ArrayBuffer's finalizer itself when creation fails, so the hold is not leaked then.
Napi::Value HoldingBuffer(Napi::Env env, Region* region, void* data, size_t length, bool shared) {
  if (!ExternalBuffersAllowed()) {
    throw Napi::Error::New(env, "this runtime does not allow ArrayBuffers over external memory; open the file with { mode: 'read' }");
  }
  region->Retain();
  napi_value buffer;
  if (shared && ExternalSharedArrayBuffers() != nullptr) {
    // Whether a failed call ran the finalizer is not specified: the hold is kept then (the range
    // stays mapped until exit) rather than risk releasing it twice.
    if (ExternalSharedArrayBuffers()(env, data, length, FinalizeSharedWindow, region, &buffer) != napi_ok) {
      throw Napi::Error::New(env, "cannot create a SharedArrayBuffer over the mapping");
    }
    return Napi::Value(env, buffer);
  }
  napi_status status = napi_create_external_arraybuffer(env, data, length, FinalizeWindow, region, &buffer);
  if (status != napi_ok) throw Napi::Error::New(env, "cannot create an ArrayBuffer over the mapping");
  return Napi::Value(env, buffer);
}

// One JS environment (the main thread, or one worker): its id, which its Regions carry (their
// owner), and the holds of its Mapping objects and row readers. Its teardown closes every file
// mapped in it and gives back those holds, even in a runtime that does not finalize the objects
// still alive then (Deno runs no wrap finalizers at a worker's exit; neither Deno nor Bun runs the
// finalizers of row-reader functions). Views (windows) keep their own holds: an ArrayBuffer may
// outlive the environment, and every runtime here finalizes them. Shared with the holders'
// finalizers, which Node runs after the cleanup hook.
struct EnvState {
  uint64_t id;
  std::mutex mutex;
  std::unordered_set<Region**> holds;  // each a JS object's Region*, nulled once given back
};
using EnvStatePtr = std::shared_ptr<EnvState>;
std::atomic<uint64_t> g_next_env_id{1};

EnvStatePtr& EnvOf(napi_env env) {
  void* data = nullptr;
  napi_get_instance_data(env, &data);
  return *static_cast<EnvStatePtr*>(data);
}

void AddHold(EnvState& state, Region** hold) {
  std::lock_guard<std::mutex> lock(state.mutex);
  state.holds.insert(hold);
}

// A JS object's finalizer: its hold, unless the environment's teardown already gave it back.
void DropHold(EnvState& state, Region** hold) {
  Region* region;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    region = *hold;
    *hold = nullptr;
    state.holds.erase(hold);
  }
  if (region != nullptr) region->Release();
}

void CleanUpEnv(void* arg) {
  std::unique_ptr<EnvStatePtr> box(static_cast<EnvStatePtr*>(arg));  // the hook's own reference
  EnvState& state = **box;
  std::vector<Region*> regions;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    for (Region** hold : state.holds) {
      regions.push_back(*hold);
      *hold = nullptr;
    }
    state.holds.clear();
  }
  // Closed first, so that the file is let go even if a view or a pin still holds the range.
  Region::CloseOwnedBy(state.id);
  for (Region* region : regions) region->Release();
}

void DeleteEnvState(napi_env /*env*/, void* data, void* /*hint*/) {
  delete static_cast<EnvStatePtr*>(data);
}

// A row reader's tensor and its hold on the mapping (given back at the environment's teardown).
struct RowReaderState {
  Region* region;
  RowSpan span;
  EnvStatePtr env;
};

napi_value ReadRows(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  void* data = nullptr;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, &data) != napi_ok) return nullptr;
  if (argc < 3) {
    napi_throw_type_error(env, nullptr, "readRows(rows, count, out)");
    return nullptr;
  }
  auto* state = static_cast<RowReaderState*>(data);
  // The environment's teardown gave the mapping back (a runtime that runs JS after it): no range.
  if (state->region == nullptr) {
    napi_throw_error(env, nullptr, "readRows: the environment is shutting down; the mapping is gone");
    return nullptr;
  }
  return ReadRowsInto(env, state->span, argv[0], argv[1], argv[2]);
}

void FinalizeRowReader(napi_env /*env*/, void* data, void* /*hint*/) {
  auto* state = static_cast<RowReaderState*>(data);
  DropHold(*state->env, &state->region);
  delete state;
}

Napi::Object IdentityObject(Napi::Env env, const Region::Identity& id) {
  Napi::Object result = Napi::Object::New(env);
  // Decimal strings: they may not fit a double.
  result.Set("dev", std::to_string(id.dev));
  result.Set("ino", std::to_string(id.ino));
  result.Set("size", std::to_string(id.size));
  result.Set("mtimeNs", std::to_string(id.mtime_ns));
  return result;
}

// An OS call's failure as a Node-style error: code ("EPERM"...), errno, syscall.
// Argument 0 as a file path; `usage` names the call for a TypeError. A C path ends at its first
// NUL ("model.gguf\0.txt" would open model.gguf): one is refused (the library refuses it first).
std::string PathArgument(const Napi::CallbackInfo& info, const char* usage) {
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), usage);
  std::string path = info[0].As<Napi::String>();
  if (path.find('\0') != std::string::npos) throw Napi::TypeError::New(info.Env(), std::string(usage) + ": the path contains a NUL byte");
  return path;
}

Napi::Error SystemError(Napi::Env env, int errnum, const char* syscall, const std::string& hint = "") {
  const char* code = ErrnoName(errnum);
  // ENOTSUP from the OS layer means this system has no such call (strerror may not know it).
  const char* text = errnum == ENOTSUP ? "not supported on this system" : std::strerror(errnum);
  Napi::Error error = Napi::Error::New(env, std::string(code) + ": " + text + ", " + syscall + hint);
  error.Set("code", code);
  error.Set("errno", static_cast<double>(-errnum));
  error.Set("syscall", syscall);
  return error;
}

// One prefetch() in flight: the range, its promise, and a pin on the Region.
struct Prefetch {
  Region* pinned;
  const uint8_t* begin;
  size_t length;
  int result = 0;
  napi_deferred deferred;
  napi_async_work work;
};

void ExecutePrefetch(napi_env /*env*/, void* data) {
  Prefetch* job = static_cast<Prefetch*>(data);
  job->result = Populate(job->begin, job->length);
  // EFAULT: pages past the file's end (it was truncated). Marked as a read that faulted would be,
  // so that this and every later access is FILE_CHANGED.
  if (job->result == -EFAULT && job->pinned != nullptr) job->pinned->status()->fetch_or(kStatusPagesLost);
}

// Never throws (it may run during a worker's teardown): every status is checked instead.
void CompletePrefetch(napi_env env, napi_status status, void* data) {
  std::unique_ptr<Prefetch> job(static_cast<Prefetch*>(data));
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) == napi_ok) {
    napi_value value = nullptr;
    if (status == napi_ok && job->result == 0) {
      if (napi_get_undefined(env, &value) == napi_ok) napi_resolve_deferred(env, job->deferred, value);
    } else {
      napi_value message = nullptr;
      const char* text = status != napi_ok ? "prefetch was cancelled" : std::strerror(-job->result);
      if (napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &message) == napi_ok &&
          napi_create_error(env, nullptr, message, &value) == napi_ok) {
        napi_reject_deferred(env, job->deferred, value);
      }
    }
    napi_close_handle_scope(env, scope);
  }
  if (job->pinned != nullptr) job->pinned->Unpin();
  napi_delete_async_work(env, job->work);
}

class Mapping : public Napi::ObjectWrap<Mapping> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Mapping",
                       {InstanceAccessor<&Mapping::Size>("size"),
                        InstanceAccessor<&Mapping::Closed>("closed"),
                        InstanceAccessor<&Mapping::CopyOnWrite>("copyOnWrite"),
                        InstanceAccessor<&Mapping::Shared>("sharedArrayBuffers"),
                        InstanceAccessor<&Mapping::HugePages>("hugePages"),
                        InstanceAccessor<&Mapping::Identity>("identity"),
                        InstanceMethod<&Mapping::CurrentIdentity>("currentIdentity"),
                        InstanceMethod<&Mapping::Status>("status"),
                        InstanceMethod<&Mapping::Window>("window"),
                        InstanceMethod<&Mapping::Residency>("residency"),
                        InstanceMethod<&Mapping::AdviseRange>("advise"),
                        InstanceMethod<&Mapping::LockRange>("lock"),
                        InstanceMethod<&Mapping::UnlockRange>("unlock"),
                        InstanceMethod<&Mapping::PrefetchRange>("prefetch"),
                        InstanceMethod<&Mapping::RowReader>("rowReader"),
                        InstanceMethod<&Mapping::Close>("close")});
  }

  // new Mapping(path, maxWindowBytes, sharedArrayBuffers): windows are SharedArrayBuffers when
  // asked and the runtime can make them (externalSharedArrayBuffers() tells).
  explicit Mapping(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Mapping>(info) {
    Napi::Env env = info.Env();
    constexpr const char* kUsage = "Mapping(path: string, maxWindow: number, sharedArrayBuffers?: boolean, hugePages?: boolean)";
    if (info.Length() < 2 || !info[1].IsNumber()) throw Napi::TypeError::New(env, kUsage);
    const std::string path = PathArgument(info, kUsage);
    max_window_ = info[1].As<Napi::Number>().DoubleValue();
    shared_ = info.Length() > 2 && info[2].ToBoolean().Value() && ExternalSharedArrayBuffers() != nullptr;
    MapError error{};
    region_ = Region::MapFile(path.c_str(), &error, EnvOf(env)->id);
    if (region_ == nullptr) throw MapFailure(env, error, path);
    // Before anything reads the file through the mapping: the first fault's read-ahead already
    // decides the size of the page-cache folios (a touched page before the advice kept every
    // later read in 4 KiB pages, measured).
    if (info.Length() > 3 && info[3].ToBoolean().Value() && region_->size() > 0) {
      huge_pages_ = Advise(region_->data(), region_->size(), "hugepage") == 0;
    }
    env_ = EnvOf(env);
    hold_ = region_;
    AddHold(*env_, &hold_);
  }

  // GC of the Mapping object: drop its hold (unless the environment's teardown gave it back);
  // windows still reachable keep the range mapped.
  ~Mapping() override {
    if (env_) DropHold(*env_, &hold_);
  }

 private:
  // The mapping, while this object holds it: after the environment's teardown gave it back (only
  // a runtime that runs JS after its cleanup hooks can get here) the Region may be gone.
  Region* live() {
    if (hold_ == nullptr) throw Napi::Error::New(Env(), "the environment is shutting down; the mapping is gone");
    return region_;
  }

  Napi::Value HugePages(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), huge_pages_); }

  Napi::Value Size(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(live()->size()));
  }

  Napi::Value Closed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), live()->closed());
  }

  Napi::Value CopyOnWrite(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), live()->copy_on_write());
  }

  Napi::Value Shared(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), shared_); }

  // { dev, ino, size, mtimeNs } of the file when it was mapped.
  Napi::Value Identity(const Napi::CallbackInfo& info) {
    return IdentityObject(info.Env(), live()->identity());
  }

  // The same, read now from the mapped file itself; null after close.
  Napi::Value CurrentIdentity(const Napi::CallbackInfo& info) {
    Region::Identity now;
    if (!live()->CurrentIdentity(&now)) return info.Env().Null();
    return IdentityObject(info.Env(), now);
  }

  // status(): a 4-byte ArrayBuffer over the mapping's status word (fault_guard.h), which the SIGBUS
  // handler sets; JS reads it before each access without a call into the addon.
  Napi::Value Status(const Napi::CallbackInfo& info) {
    return HoldingBuffer(info.Env(), live(), live()->status(), sizeof(uint32_t), shared_);
  }

  // window(offset, length): an external ArrayBuffer over bytes [offset, offset + length).
  Napi::Value Window(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (live()->closed()) throw Napi::Error::New(env, "mapping is closed");
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
      throw Napi::TypeError::New(env, "window(offset: number, length: number)");
    }
    double offset = info[0].As<Napi::Number>().DoubleValue();
    double length = info[1].As<Napi::Number>().DoubleValue();
    double size = static_cast<double>(live()->size());
    // Checked here rather than left to Node: a failed napi_create_external_arraybuffer has
    // already run the finalizer.
    if (!(offset >= 0 && length >= 1 && offset + length <= size && length <= max_window_) ||
        offset != static_cast<double>(static_cast<size_t>(offset)) ||
        length != static_cast<double>(static_cast<size_t>(length))) {
      throw Napi::RangeError::New(env, "window out of range");
    }
    uint8_t* start = const_cast<uint8_t*>(live()->data()) + static_cast<size_t>(offset);
    return HoldingBuffer(env, live(), start, static_cast<size_t>(length), shared_);
  }

  // The bytes [offset, offset + length) named by info[0], info[1], checked against the mapping.
  const uint8_t* RangeAt(const Napi::CallbackInfo& info, size_t* length) {
    Napi::Env env = info.Env();
    if (live()->closed()) throw Napi::Error::New(env, "mapping is closed");
    const double offset = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
    const double bytes = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : -1;
    const double size = static_cast<double>(live()->size());
    if (!(offset >= 0 && bytes >= 0 && offset + bytes <= size) || offset != static_cast<double>(static_cast<size_t>(offset)) ||
        bytes != static_cast<double>(static_cast<size_t>(bytes))) {
      throw Napi::RangeError::New(env, "range out of the mapping");
    }
    *length = static_cast<size_t>(bytes);
    return live()->data() + static_cast<size_t>(offset);
  }

  // rowReader(offset, length, typeId, rowBytes): a function readRows(rows, count, out) bound to
  // the tensor at [offset, offset + length): each lookup then costs three arguments, not eight.
  // It holds the mapping's address range (as a window does) until it is collected.
  Napi::Value RowReader(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    size_t length;
    const uint8_t* begin = RangeAt(info, &length);
    const double type_id = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().DoubleValue() : -1;
    const double row_bytes = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().DoubleValue() : 0;
    if (!(type_id >= 0 && type_id < 256 && row_bytes >= 1 && row_bytes == static_cast<double>(static_cast<size_t>(row_bytes)) &&
          length % static_cast<size_t>(row_bytes) == 0)) {
      throw Napi::RangeError::New(env, "rowReader(offset, length, typeId, rowBytes): rows must tile the range");
    }
    auto* state = new RowReaderState{live(), {begin, length / static_cast<size_t>(row_bytes), static_cast<size_t>(row_bytes), static_cast<int>(type_id)}, env_};
    live()->Retain();
    AddHold(*env_, &state->region);
    napi_value fn;
    napi_status status = napi_create_function(env, "readRows", NAPI_AUTO_LENGTH, ReadRows, state, &fn);
    if (status == napi_ok) status = napi_add_finalizer(env, fn, state, FinalizeRowReader, nullptr, nullptr);
    if (status != napi_ok) {
      FinalizeRowReader(env, state, nullptr);
      NAPI_THROW_IF_FAILED(env, status, Napi::Value());
    }
    return Napi::Value(env, fn);
  }

  // residency(offset, length): bytes of the range in memory.
  Napi::Value Residency(const Napi::CallbackInfo& info) {
    size_t length;
    const uint8_t* begin = RangeAt(info, &length);
    const int64_t resident = ResidentBytes(begin, length);
    if (resident < 0) throw SystemError(info.Env(), static_cast<int>(-resident), "mincore");
    return Napi::Number::New(info.Env(), static_cast<double>(resident));
  }

  // advise(offset, length, advice)
  Napi::Value AdviseRange(const Napi::CallbackInfo& info) {
    size_t length;
    const uint8_t* begin = RangeAt(info, &length);
    if (info.Length() < 3 || !info[2].IsString()) throw Napi::TypeError::New(info.Env(), "advise(offset, length, advice)");
    const int result = Advise(begin, length, info[2].As<Napi::String>().Utf8Value().c_str());
    if (result != 0) throw SystemError(info.Env(), -result, "madvise");
    return info.Env().Undefined();
  }

  // lock(offset, length), unlock(offset, length)
  Napi::Value LockRange(const Napi::CallbackInfo& info) {
    size_t length;
    const uint8_t* begin = RangeAt(info, &length);
    const int result = Lock(begin, length);
    if (result != 0) {
      throw SystemError(info.Env(), -result, "mlock", std::string(" (") + LockLimitHint() + ")");
    }
    return info.Env().Undefined();
  }
  Napi::Value UnlockRange(const Napi::CallbackInfo& info) {
    size_t length;
    const uint8_t* begin = RangeAt(info, &length);
    const int result = Unlock(begin, length);
    if (result != 0) throw SystemError(info.Env(), -result, "munlock");
    return info.Env().Undefined();
  }

  // prefetch(offset, length): Promise<void>, the pages faulted in on a libuv pool thread; the
  // mapping is pinned meanwhile, so close() takes effect when it ends.
  Napi::Value PrefetchRange(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    size_t length;
    const uint8_t* begin = RangeAt(info, &length);
    auto job = std::make_unique<Prefetch>();
    job->begin = begin;
    job->length = length;
    napi_value promise, name;
    NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &job->deferred, &promise), Napi::Value());
    NAPI_THROW_IF_FAILED(env, napi_create_string_utf8(env, "gguf-mmap:prefetch", NAPI_AUTO_LENGTH, &name), Napi::Value());
    NAPI_THROW_IF_FAILED(env, napi_create_async_work(env, nullptr, name, ExecutePrefetch, CompletePrefetch, job.get(), &job->work),
                         Napi::Value());
    job->pinned = Region::PinContaining(begin, length);
    const napi_status status = napi_queue_async_work(env, job->work);
    if (status != napi_ok) {
      if (job->pinned != nullptr) job->pinned->Unpin();
      napi_delete_async_work(env, job->work);
      NAPI_THROW_IF_FAILED(env, status, Napi::Value());
    }
    job.release();  // CompletePrefetch owns it now
    return Napi::Value(env, promise);
  }

  // Lets go of the file; the windows stay valid and read zeros. Calling it again does nothing.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    live()->Close();
    return info.Env().Undefined();
  }

  Region* region_ = nullptr;
  Region* hold_ = nullptr;  // region_ while this object holds it (EnvState)
  double max_window_ = 0;
  bool shared_ = false;  // windows are SharedArrayBuffers
  bool huge_pages_ = false;  // MADV_HUGEPAGE taken
  EnvStatePtr env_;
};

// evictFile(path): drops the file's clean cached pages (for cold-start benchmarks and tests).
Napi::Value EvictFileJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = PathArgument(info, "evictFile(path)");
  const int result = EvictFile(path.c_str());
  if (result != 0) throw SystemError(env, -result, "posix_fadvise");
  return env.Undefined();
}

// tryLockFile(path): the descriptor holding the lock, or -1 when another holds it.
// copyFileRange(inFd, inOffset, outFd, outOffset, length): bytes copied inside the kernel (fewer
// at the input's end), or a Node-style error; ENOSYS where the system cannot (copy through memory).
Napi::Value CopyFileRangeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double args[5];
  for (int i = 0; i < 5; i++) {
    args[i] = info.Length() > static_cast<size_t>(i) && info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : -1;
    if (!(args[i] >= 0 && args[i] <= 9007199254740991.0 && args[i] == static_cast<double>(static_cast<uint64_t>(args[i])))) {
      throw Napi::TypeError::New(env, "copyFileRange(inFd, inOffset, outFd, outOffset, length): whole numbers >= 0");
    }
  }
  if (args[0] > 2147483647.0 || args[2] > 2147483647.0) throw Napi::TypeError::New(env, "copyFileRange: a descriptor out of range");
  const int64_t n = CopyFileRange(static_cast<int>(args[0]), static_cast<uint64_t>(args[1]), static_cast<int>(args[2]),
                                  static_cast<uint64_t>(args[3]), static_cast<uint64_t>(args[4]));
  if (n < 0) throw SystemError(env, static_cast<int>(-n), "copy_file_range");
  return Napi::Number::New(env, static_cast<double>(n));
}

Napi::Value TryLockFileJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = PathArgument(info, "tryLockFile(path)");
  const int result = TryLockFile(path.c_str());
  if (result == -EWOULDBLOCK) return Napi::Number::New(env, -1);
  if (result < 0) throw SystemError(env, -result, "open");
  return Napi::Number::New(env, result);
}

// unlockFile(fd): lets go of a lock tryLockFile took.
Napi::Value UnlockFileJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "unlockFile(fd)");
  const int result = UnlockFile(info[0].As<Napi::Number>().Int32Value());
  if (result != 0) throw SystemError(env, -result, "flock");
  return env.Undefined();
}

// mapsFile(dev, ino): whether a file this process has open (any thread) is that file; dev and
// ino as decimal strings (64-bit, as fs.statSync(path, { bigint: true }) gives them).
Napi::Value MapsFileJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString()) throw Napi::TypeError::New(env, "mapsFile(dev, ino): decimal strings");
  const auto parse = [&](const std::string& text) {
    uint64_t value = 0;
    for (char c : text) {
      const uint64_t digit = static_cast<uint64_t>(c - '0');
      if (c < '0' || c > '9' || value > (UINT64_MAX - digit) / 10) throw Napi::TypeError::New(env, "mapsFile: dev and ino are 64-bit decimal strings");
      value = value * 10 + digit;
    }
    if (text.empty()) throw Napi::TypeError::New(env, "mapsFile: dev and ino are 64-bit decimal strings");
    return value;
  };
  return Napi::Boolean::New(env, Region::MapsFile(parse(info[0].As<Napi::String>()), parse(info[1].As<Napi::String>())));
}

// usableCpus(): the CPUs this process may use at once (os/cpus.h), as the helper thread decides.
Napi::Value UsableCpusJs(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), static_cast<double>(UsableCpus())); }

Napi::Value LiveMappings(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Region::LiveCount()));
}

// skipStrings(view: DataView, pos, count, width, littleEndian): the offset just past `count`
// strings at `pos`, or -1 - offset of the first length field that does not fit in the view.
Napi::Value SkipStringsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsDataView()) throw Napi::TypeError::New(env, "skipStrings(view, pos, count, width, littleEndian)");
  Napi::DataView view = info[0].As<Napi::DataView>();
  double pos = info[1].As<Napi::Number>().DoubleValue();
  double count = info[2].As<Napi::Number>().DoubleValue();
  int width = info[3].As<Napi::Number>().Int32Value();
  bool little_endian = info[4].As<Napi::Boolean>().Value();
  size_t limit = view.ByteLength();
  if (!(pos >= 0 && pos <= static_cast<double>(limit)) || !(count >= 0) || (width != 4 && width != 8)) {
    throw Napi::RangeError::New(env, "skipStrings: bad arguments");
  }
  const uint8_t* base = static_cast<const uint8_t*>(view.Data());
  size_t end = 0;
  bool ok = SkipStrings(base, limit, static_cast<size_t>(pos), static_cast<uint64_t>(count), width, little_endian, &end);
  return Napi::Number::New(env, ok ? static_cast<double>(end) : -1.0 - static_cast<double>(end));
}

// indexStrings(bytes, count, width, littleEndian, seed, key0, key1, mode, keepLast, probeLimit,
// starts, ends, slots): the tokenizer's string index (string_walk.h); 0, -1 or -2 as IndexStrings.
Napi::Value IndexStringsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 13 || !info[0].IsTypedArray() || !info[10].IsTypedArray() || !info[11].IsTypedArray() || !info[12].IsTypedArray()) {
    throw Napi::TypeError::New(env, "indexStrings(bytes, count, width, littleEndian, seed, key0, key1, mode, keepLast, probeLimit, starts, ends, slots)");
  }
  auto bytes = info[0].As<Napi::Uint8Array>();
  double count = info[1].As<Napi::Number>().DoubleValue();
  int width = info[2].As<Napi::Number>().Int32Value();
  bool little_endian = info[3].As<Napi::Boolean>().Value();
  uint32_t seed = info[4].As<Napi::Number>().Uint32Value();
  uint32_t key0 = info[5].As<Napi::Number>().Uint32Value();
  uint32_t key1 = info[6].As<Napi::Number>().Uint32Value();
  int mode = info[7].As<Napi::Number>().Int32Value();
  bool keep_last = info[8].As<Napi::Boolean>().Value();
  int probe_limit = info[9].As<Napi::Number>().Int32Value();
  auto starts = info[10].As<Napi::Uint32Array>();
  auto ends = info[11].As<Napi::Uint32Array>();
  auto slots = info[12].As<Napi::Int32Array>();
  size_t slot_count = slots.ElementLength();
  if (!(count >= 0) || count > static_cast<double>(starts.ElementLength()) || count > static_cast<double>(ends.ElementLength()) ||
      (width != 4 && width != 8) || slot_count == 0 || (slot_count & (slot_count - 1)) != 0 || static_cast<double>(slot_count) < count * 2 ||
      bytes.ByteLength() > 0xffffffffu) {
    throw Napi::RangeError::New(env, "indexStrings: bad arguments");
  }
  int result = IndexStrings(bytes.Data(), bytes.ByteLength(), static_cast<uint64_t>(count), width, little_endian, seed, key0, key1, mode,
                            keep_last, probe_limit, starts.Data(), ends.Data(), slots.Data(), slot_count);
  return Napi::Number::New(env, result);
}

// A typed array argument of the expected kind holding at least `need` elements, and its length
// (its data for the length of this call only: JavaScript owns it). One Node-API call each: this
// runs for every part of every open, and reading 14 named properties took 6-8 us a call.
template <typename T>
struct TypedArgSpan {
  T* data;
  size_t length;
};

template <typename T>
TypedArgSpan<T> TypedArg(const Napi::CallbackInfo& info, size_t index, const char* name, napi_typedarray_type type, size_t need = 0) {
  napi_typedarray_type actual;
  size_t length = 0;
  void* data = nullptr;
  if (napi_get_typedarray_info(info.Env(), info[index], &actual, &length, &data, nullptr, nullptr) != napi_ok || actual != type || length < need) {
    throw Napi::TypeError::New(info.Env(), std::string("walkTensorInfoRecords: ") + name + " is not a typed array of the right kind and length");
  }
  return {static_cast<T*>(data), length};
}

// walkTensorInfoRecords(view, pos, first, count, wideCounts, littleEndian, alignment, nameAt, fileSize,
//   blockSizes, typeSizes, key, nameBytes, starts, ends, hashes, slots, typeIds, dims, ne, offsets,
//   nbytes, infoOffsets, result): see tensor_info_walk.h. The arguments after fileSize are
// lib/format/tensor-table.ts's type table, key and columns; result (a Float64Array of 4) gets
// [records accepted, offset after them, name bytes used, longest probe].
Napi::Value WalkTensorInfoRecordsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 24 || !info[0].IsDataView() || !info[8].IsNumber()) {
    throw Napi::TypeError::New(env, "walkTensorInfoRecords(view, pos, first, count, wideCounts, littleEndian, alignment, nameAt, fileSize, ...targets, result)");
  }
  Napi::DataView view = info[0].As<Napi::DataView>();
  const double pos = info[1].As<Napi::Number>().DoubleValue();
  const double first = info[2].As<Napi::Number>().DoubleValue();
  const double count = info[3].As<Napi::Number>().DoubleValue();
  const bool wide = info[4].As<Napi::Boolean>().Value();
  const bool little_endian = info[5].As<Napi::Boolean>().Value();
  const double alignment = info[6].As<Napi::Number>().DoubleValue();
  const double name_at = info[7].As<Napi::Number>().DoubleValue();
  // Nothing past the view, nor past the file (a view is never longer today; the reader checks both).
  const double file_size = info[8].As<Napi::Number>().DoubleValue();
  const size_t limit = file_size >= 0 && file_size < static_cast<double>(view.ByteLength()) ? static_cast<size_t>(file_size) : view.ByteLength();
  const auto natural = [](double x, double max) { return x >= 0 && x <= max && x == static_cast<double>(static_cast<uint64_t>(x)); };
  if (!natural(pos, static_cast<double>(limit)) || !natural(first, 4294967295.0) || !natural(count, 4294967295.0) || !natural(alignment, 4294967295.0) ||
      alignment < 1 || !natural(name_at, 4294967295.0)) {
    throw Napi::RangeError::New(env, "walkTensorInfoRecords: bad arguments");
  }
  const size_t end = static_cast<size_t>(first + count);
  TensorInfoTargets out{};
  const TypedArgSpan<uint32_t> block_sizes = TypedArg<uint32_t>(info, 9, "blockSizes", napi_uint32_array);
  out.type_count = static_cast<uint32_t>(block_sizes.length);
  out.block_sizes = block_sizes.data;
  out.type_sizes = TypedArg<uint32_t>(info, 10, "typeSizes", napi_uint32_array, out.type_count).data;
  const int32_t* key = TypedArg<int32_t>(info, 11, "key", napi_int32_array, 2).data;
  out.key0 = static_cast<uint32_t>(key[0]);
  out.key1 = static_cast<uint32_t>(key[1]);
  const TypedArgSpan<uint8_t> names = TypedArg<uint8_t>(info, 12, "nameBytes", napi_uint8_array);
  out.name_bytes = names.data;
  out.name_capacity = names.length;
  if (name_at > static_cast<double>(out.name_capacity)) throw Napi::RangeError::New(env, "walkTensorInfoRecords: nameAt past nameBytes");
  out.starts = TypedArg<uint32_t>(info, 13, "starts", napi_uint32_array, end).data;
  out.ends = TypedArg<uint32_t>(info, 14, "ends", napi_uint32_array, end).data;
  out.hashes = TypedArg<uint32_t>(info, 15, "hashes", napi_uint32_array, end).data;
  const TypedArgSpan<int32_t> slots = TypedArg<int32_t>(info, 16, "slots", napi_int32_array);
  out.slots = slots.data;
  out.slot_count = slots.length;
  // A power of two, over twice the tensors: every probe ends at an empty slot.
  if (out.slot_count < 2 * end || (out.slot_count & (out.slot_count - 1)) != 0) throw Napi::RangeError::New(env, "walkTensorInfoRecords: slots");
  out.type_ids = TypedArg<uint8_t>(info, 17, "typeIds", napi_uint8_array, end).data;
  out.dims = TypedArg<uint8_t>(info, 18, "dims", napi_uint8_array, end).data;
  out.ne = TypedArg<double>(info, 19, "ne", napi_float64_array, end * 4).data;
  out.offsets = TypedArg<double>(info, 20, "offsets", napi_float64_array, end).data;
  out.nbytes = TypedArg<double>(info, 21, "nbytes", napi_float64_array, end).data;
  out.info_offsets = TypedArg<double>(info, 22, "infoOffsets", napi_float64_array, end).data;
  double* result = TypedArg<double>(info, 23, "result", napi_float64_array, 4).data;
  const TensorInfoWalk walk = WalkTensorInfos(static_cast<const uint8_t*>(view.Data()), limit, static_cast<size_t>(pos), static_cast<uint64_t>(first),
                                              static_cast<uint64_t>(count), wide, little_endian, static_cast<uint64_t>(alignment),
                                              static_cast<size_t>(name_at), out);
  result[0] = static_cast<double>(walk.walked);
  result[1] = static_cast<double>(walk.pos);
  result[2] = static_cast<double>(walk.name_at);
  result[3] = static_cast<double>(walk.max_probe);
  return env.Undefined();
}

// adviseHugePages(buffer: ArrayBuffer): the first writes into a large new buffer (a million tensor
// infos' table) fault once per 2 MiB, not once per 4 KiB (os/memory.h).
Napi::Value AdviseHugePagesJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsArrayBuffer()) throw Napi::TypeError::New(info.Env(), "adviseHugePages(buffer: ArrayBuffer)");
  Napi::ArrayBuffer buffer = info[0].As<Napi::ArrayBuffer>();
  AdviseHugePages(buffer.Data(), buffer.ByteLength());
  return info.Env().Undefined();
}

// Whether this runtime lets ArrayBuffers point at memory it did not allocate (Electron does not:
// napi_no_external_buffers_allowed). Tried once on a static byte whose finalizer does nothing.
bool ProbeExternalBuffers(Napi::Env env) {
  static uint8_t probe_byte = 0;
  napi_value value;
  return napi_create_external_arraybuffer(env, &probe_byte, 1, [](napi_env, void*, void*) {}, nullptr, &value) == napi_ok;
}

// externalBuffers(): false where ArrayBuffers over the mapping cannot be made.
// refuseExternalBuffers(true): behave as such a runtime does (tests of the read-mode fallback).
Napi::Value ExternalBuffers(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), ExternalBuffersAllowed());
}
// externalSharedArrayBuffers(): whether windows can be SharedArrayBuffers in this runtime.
Napi::Value ExternalSharedArrayBuffersJs(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), ExternalSharedArrayBuffers() != nullptr);
}
Napi::Value RefuseExternalBuffers(const Napi::CallbackInfo& info) {
  g_external_buffers_refused.store(info.Length() > 0 && info[0].ToBoolean().Value());
  return info.Env().Undefined();
}

// rearmFaultGuard(): puts the lost-pages handler back in front after something replaced it (a
// process.on('SIGBUS') listener added or removed); false if it could not.
Napi::Value RearmFaultGuard(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), FaultGuard::Rearm());
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  FaultGuard::Install();
  auto* state = new EnvStatePtr(std::make_shared<EnvState>());
  (*state)->id = g_next_env_id.fetch_add(1);
  napi_set_instance_data(env, state, DeleteEnvState, nullptr);
  napi_add_env_cleanup_hook(env, CleanUpEnv, new EnvStatePtr(*state));
  if (!ProbeExternalBuffers(env)) g_external_buffers_refused.store(true);
  exports.Set("externalBuffers", Napi::Function::New<ExternalBuffers>(env, "externalBuffers"));
  exports.Set("externalSharedArrayBuffers", Napi::Function::New<ExternalSharedArrayBuffersJs>(env, "externalSharedArrayBuffers"));
  exports.Set("refuseExternalBuffers", Napi::Function::New<RefuseExternalBuffers>(env, "refuseExternalBuffers"));
  exports.Set("skipStrings", Napi::Function::New<SkipStringsJs>(env, "skipStrings"));
  exports.Set("indexStrings", Napi::Function::New<IndexStringsJs>(env, "indexStrings"));
  exports.Set("mapsFile", Napi::Function::New<MapsFileJs>(env, "mapsFile"));
  exports.Set("walkTensorInfoRecords", Napi::Function::New<WalkTensorInfoRecordsJs>(env, "walkTensorInfoRecords"));
  exports.Set("adviseHugePages", Napi::Function::New<AdviseHugePagesJs>(env, "adviseHugePages"));
  exports.Set("Mapping", Mapping::Define(env));
  exports.Set("rearmFaultGuard", Napi::Function::New<RearmFaultGuard>(env, "rearmFaultGuard"));
  exports.Set("liveMappings", Napi::Function::New<LiveMappings>(env, "liveMappings"));
  exports.Set("usableCpus", Napi::Function::New<UsableCpusJs>(env, "usableCpus"));
  exports.Set("evictFile", Napi::Function::New<EvictFileJs>(env, "evictFile"));
  exports.Set("copyFileRange", Napi::Function::New<CopyFileRangeJs>(env, "copyFileRange"));
  exports.Set("tryLockFile", Napi::Function::New<TryLockFileJs>(env, "tryLockFile"));
  exports.Set("unlockFile", Napi::Function::New<UnlockFileJs>(env, "unlockFile"));
  RegisterDequant(env, exports);
  RegisterHash(env, exports);
  return exports;
}

}  // namespace
}  // namespace gguf_mmap

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) {
  return gguf_mmap::Init(env, exports);
}

NODE_API_MODULE(gguf_mmap, InitAddon)
