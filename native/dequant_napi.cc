// JS entry points for the native kernels. Checks every argument before touching memory: the
// TypeScript layer validates too, but the addon must not trust its caller with raw pointers.
//
//   dequantize(typeId, src: Uint8Array, nblocks, out: Float32Array, outIndex): boolean
//       on the JS thread; false when there is no native kernel for typeId.
//   new DequantJob(typeId, src: Uint8Array, nblocks)
//       work off the JS thread, on memory the job owns: JavaScript can transfer, detach or free
//       its own buffers at any time, so a pool thread never touches them. A mapped source is
//       pinned (close() waits for the job); any other source is copied. The output is the job's.
//     job.run(firstBlock, count): Promise<void>   decodes those blocks on a libuv pool thread
//     job.take(): Float32Array                     hands the output over, without a copy
//     job.copyTo(out: Float32Array, outIndex)      or copies it into a caller's array
//   dequantizeNew(typeId, src, nblocks): Float32Array | false
//       the output in addon-mapped memory (huge pages when large), handed over without a copy.
//   gatherRows(src, typeId, rowBytes, rows: number | Int32Array | Uint32Array, count, out): boolean
//       rows of a tensor, consecutive from a first row or by id (every id checked first), with
//       the bytes of rows a few ahead prefetched.
//   dequantInfo(): { isa, isas, typeIds, kernelIsas }  (kernelIsas[i]: the set typeIds[i]'s kernel is from)
//   limitDequantIsa(isa), useHelperThread(use: boolean), setDequantTable(name, Uint8Array | Int8Array)
//
// Nothing here throws from a callback Node runs without JavaScript (a worker's teardown): the
// pool work uses the plain C API and ignores what can no longer be done.
#include "dequant_napi.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <new>
#include <string>
#include <vector>

#include "dequant.h"
#include "helper_thread.h"
#include "os/memory.h"
#include "os/region.h"

namespace gguf_mmap {
namespace {

// A typed array's element type, length and first byte, for any backing store (SharedArrayBuffer too).
struct TypedSpan {
  napi_typedarray_type type;
  size_t length;
  uint8_t* data;
};

TypedSpan GetTypedSpan(Napi::Env env, Napi::Value value, const char* what) {
  TypedSpan span{};
  void* data = nullptr;
  if (!value.IsTypedArray() ||
      napi_get_typedarray_info(env, value, &span.type, &span.length, &data, nullptr, nullptr) != napi_ok) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a typed array");
  }
  span.data = static_cast<uint8_t*>(data);
  return span;
}

bool IsWholeNumber(double v) { return v >= 0 && v <= 9007199254740991.0 && v == static_cast<double>(static_cast<size_t>(v)); }

// Float output memory owned by native code until handed to JS. Large outputs ask for huge
// pages, so the first write faults once per 2 MiB instead of once per 4 KiB. The last large one
// freed is kept for the next (MADV_FREE: the kernel may still take its pages back under memory
// pressure): a service dequantizing the same tensors again then writes into pages it already has.
class FloatBuffer {
 public:
  static constexpr size_t kHugeAt = 8u << 20;
  static constexpr size_t kKeepAtMost = 1u << 30;

  explicit FloatBuffer(size_t count) : bytes_(count * sizeof(float)), capacity_(bytes_) {
    if (bytes_ == 0) return;
    if (bytes_ >= kHugeAt && TakeKept()) return;
    void* p = AllocatePages(bytes_, bytes_ >= kHugeAt);
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<float*>(p);
  }
  ~FloatBuffer() { Free(data_, capacity_); }
  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;

  float* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // The mapping's length, which Free needs (at least bytes()).
  size_t capacity() const { return capacity_; }
  // Gives up ownership: the caller frees with Free(data, capacity()).
  float* Release() {
    float* p = data_;
    data_ = nullptr;
    return p;
  }
  static void Free(float* data, size_t capacity) {
    if (data == nullptr) return;
    if (capacity >= kHugeAt && capacity <= kKeepAtMost) {
      DiscardPages(data, capacity);
      std::lock_guard<std::mutex> lock(kept_mutex_);
      std::swap(data, kept_);
      std::swap(capacity, kept_capacity_);
      if (data == nullptr) return;
    }
    FreePages(data, capacity);
  }

 private:
  // The kept buffer, if it holds bytes_ and is not more than twice that.
  bool TakeKept() {
    std::lock_guard<std::mutex> lock(kept_mutex_);
    if (kept_ == nullptr || kept_capacity_ < bytes_ || kept_capacity_ > 2 * bytes_) return false;
    data_ = kept_;
    capacity_ = kept_capacity_;
    kept_ = nullptr;
    kept_capacity_ = 0;
    return true;
  }

  size_t bytes_;
  size_t capacity_;
  float* data_ = nullptr;
  static std::mutex kept_mutex_;
  static float* kept_;
  static size_t kept_capacity_;
};

std::mutex FloatBuffer::kept_mutex_;
float* FloatBuffer::kept_ = nullptr;
size_t FloatBuffer::kept_capacity_ = 0;

// What pool threads read and write: owned by the job and by every part in flight, so it lives
// until the last of them lets go, whatever happens to the JS objects.
struct JobMemory {
  DequantKernel kernel{};
  size_t nblocks = 0;            // of the output
  std::vector<uint32_t> rows;    // rows mode: the row ids, each row_blocks blocks at row_bytes steps
  size_t row_bytes = 0, row_blocks = 0;
  const uint8_t* src = nullptr;
  Region* pinned = nullptr;              // a mapped source
  std::unique_ptr<uint8_t[]> src_copy;   // any other source
  std::unique_ptr<FloatBuffer> out;
  std::atomic<uint32_t> running{0};  // parts queued or in flight

  ~JobMemory() {
    if (pinned != nullptr) pinned->Unpin();
  }
};

bool ParseArgs(const Napi::CallbackInfo& info, DequantKernel* kernel, TypedSpan* src, size_t* nblocks) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[2].IsNumber()) {
    throw Napi::TypeError::New(env, "(typeId, src: Uint8Array, nblocks, ...)");
  }
  *src = GetTypedSpan(env, info[1], "src");
  if (src->type != napi_uint8_array) throw Napi::TypeError::New(env, "src must be a Uint8Array");
  if (!FindDequantKernel(info[0].As<Napi::Number>().Int32Value(), kernel)) return false;
  const double n = info[2].As<Napi::Number>().DoubleValue();
  // A detached buffer has length 0, so it only gets past this with nblocks 0.
  if (!IsWholeNumber(n) || n * kernel->type_size > static_cast<double>(src->length)) {
    throw Napi::RangeError::New(env, "dequantize: blocks out of range of src");
  }
  *nblocks = static_cast<size_t>(n);
  return true;
}

// The Float32Array at info[at] and a whole-number element index at info[at + 1] with room for
// `count` floats from there.
float* OutputAt(const Napi::CallbackInfo& info, size_t at, size_t count) {
  Napi::Env env = info.Env();
  TypedSpan out = GetTypedSpan(env, info[at], "out");
  if (out.type != napi_float32_array) throw Napi::TypeError::New(env, "out must be a Float32Array");
  const double index = info[at + 1].IsNumber() ? info[at + 1].As<Napi::Number>().DoubleValue() : -1;
  if (!IsWholeNumber(index) || index + static_cast<double>(count) > static_cast<double>(out.length)) {
    throw Napi::RangeError::New(env, "dequantize: out is too small");
  }
  return reinterpret_cast<float*>(out.data) + static_cast<size_t>(index);
}

Napi::Value Dequantize(const Napi::CallbackInfo& info) {
  DequantKernel kernel;
  TypedSpan src;
  size_t nblocks;
  if (!ParseArgs(info, &kernel, &src, &nblocks)) return Napi::Boolean::New(info.Env(), false);
  float* out = OutputAt(info, 3, nblocks * kernel.block_size);
  if (nblocks > 0) kernel.fn(src.data, nblocks, out);
  return Napi::Boolean::New(info.Env(), true);
}

// A Float32Array over `buffer`'s memory, which JS then owns (no copy), or a copy where the
// runtime refuses ArrayBuffers over external memory (Electron).
Napi::Value HandOver(Napi::Env env, FloatBuffer& out) {
  const size_t count = out.bytes() / sizeof(float);
  Napi::ArrayBuffer buffer;
  if (count == 0) {
    buffer = Napi::ArrayBuffer::New(env, 0);
  } else if (!ExternalBuffersAllowed()) {
    buffer = Napi::ArrayBuffer::New(env, out.bytes());  // throws Napi::Error on failure
    std::memcpy(buffer.Data(), out.data(), out.bytes());
  } else {
    // Node frees through the finalizer even when creation fails, so ownership passes first.
    const size_t bytes = out.bytes(), capacity = out.capacity();
    float* data = out.Release();
    napi_value value;
    napi_status status = napi_create_external_arraybuffer(
        env, data, bytes, [](napi_env, void* p, void* hint) { FloatBuffer::Free(static_cast<float*>(p), reinterpret_cast<size_t>(hint)); },
        reinterpret_cast<void*>(capacity), &value);
    NAPI_THROW_IF_FAILED(env, status, Napi::Value());
    buffer = Napi::ArrayBuffer(env, value);
  }
  return Napi::Float32Array::New(env, count, buffer, 0);
}

// dequantizeNew(typeId, src, nblocks): Float32Array | false. The output in memory the addon maps
// (huge pages when large), handed over: a new Float32Array of that size would first be zeroed a
// page fault at a time.
Napi::Value DequantizeNew(const Napi::CallbackInfo& info) {
  DequantKernel kernel;
  TypedSpan src;
  size_t nblocks;
  if (!ParseArgs(info, &kernel, &src, &nblocks)) return Napi::Boolean::New(info.Env(), false);
  std::unique_ptr<FloatBuffer> out;
  try {
    out.reset(new FloatBuffer(nblocks * kernel.block_size));
  } catch (const std::bad_alloc&) {
    throw Napi::RangeError::New(info.Env(), "dequantize: not enough memory for the output");
  }
  if (nblocks > 0) kernel.fn(src.data, nblocks, out->data());
  return HandOver(info.Env(), *out);
}

// Row ids copied out of the caller's typed array (Int32Array or Uint32Array) and checked: the
// caller's array may share memory with the output (decoding would rewrite the ids still to be
// read) or be a SharedArrayBuffer another thread writes, so each id is read once, here. False
// when one is negative or not below `total`.
bool CopyRowIds(const uint8_t* data, bool is_signed, size_t count, size_t total, std::vector<uint32_t>* ids) {
  ids->resize(count);
  for (size_t i = 0; i < count; i++) {
    uint32_t id;
    std::memcpy(&id, data + 4 * i, 4);
    if ((is_signed && static_cast<int32_t>(id) < 0) || id >= total) return false;
    (*ids)[i] = id;
  }
  return true;
}

// How many rows ahead to prefetch: a random row's bytes come from memory (~100 ns away) while
// the kernel decodes the rows before it.
constexpr size_t kPrefetchRows = 8;

void PrefetchRow(const uint8_t* row, size_t bytes) {
  for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(row + at);
}

// Rows `ids` (checked) of the tensor at `base`, one after another into `out`, the bytes of the
// rows a few ahead asked for while the current one decodes.
void DecodeRowRun(const DequantKernel& kernel, const uint8_t* base, size_t row_bytes, const uint32_t* ids, size_t count, float* out) {
  const size_t row_blocks = row_bytes / kernel.type_size, row_floats = row_blocks * kernel.block_size;
  for (size_t i = 0; i < count && i < kPrefetchRows; i++) PrefetchRow(base + static_cast<size_t>(ids[i]) * row_bytes, row_bytes);
  for (size_t i = 0; i < count; i++, out += row_floats) {
    if (i + kPrefetchRows < count) PrefetchRow(base + static_cast<size_t>(ids[i + kPrefetchRows]) * row_bytes, row_bytes);
    kernel.fn(base + static_cast<size_t>(ids[i]) * row_bytes, row_blocks, out);
  }
}

// A synchronous batch writing at least this much is shared with the helper thread
// (helper_thread.h), in chunks of about kChunkOutputBytes: a batch of random rows is bound by their
// bytes arriving from memory and by writing the output, and a second core does both at once
// (measured, 512 rows of a 2,048-wide Q4_K embedding on 2 cores: 0.8-1.0x the time of filling the
// output on Node 20-24, 1.4-1.7x on the calling thread alone). Smaller batches are over before a
// sleeping helper would wake. (The pool's parts, gatherRowsAsync, keep to their own thread: their
// callers choose the threads.)
constexpr size_t kSharedOutputBytes = 512 << 10;
constexpr size_t kChunkOutputBytes = 256 << 10;

struct RowChunks {
  const DequantKernel* kernel;
  const uint8_t* base;
  size_t row_bytes, row_floats, chunk_rows, count;
  const uint32_t* ids;
  float* out;
};

void DecodeRowChunk(void* context, size_t chunk) {
  const RowChunks& c = *static_cast<const RowChunks*>(context);
  const size_t first = chunk * c.chunk_rows;
  DecodeRowRun(*c.kernel, c.base, c.row_bytes, c.ids + first, std::min(c.chunk_rows, c.count - first), c.out + first * c.row_floats);
}

void DecodeRowIds(const DequantKernel& kernel, const uint8_t* base, size_t row_bytes, const uint32_t* ids, size_t count, float* out, bool share) {
  const size_t row_floats = row_bytes / kernel.type_size * kernel.block_size;
  if (!share || count < 2 || count * row_floats * sizeof(float) < kSharedOutputBytes) {
    DecodeRowRun(kernel, base, row_bytes, ids, count, out);
    return;
  }
  const size_t chunk_rows = std::max<size_t>(1, kChunkOutputBytes / (row_floats * sizeof(float)));
  RowChunks chunks{&kernel, base, row_bytes, row_floats, chunk_rows, count, ids, out};
  RunChunks((count + chunk_rows - 1) / chunk_rows, DecodeRowChunk, &chunks);
}

}  // namespace

napi_value ReadRowsInto(napi_env env, const RowSpan& span, napi_value rows_value, napi_value count_value, napi_value out_value) {
  napi_value result;
  DequantKernel kernel;
  if (!FindDequantKernel(span.type_id, &kernel) || span.row_bytes % kernel.type_size != 0) {
    napi_get_boolean(env, false, &result);
    return result;
  }
  double count_arg;
  if (napi_get_value_double(env, count_value, &count_arg) != napi_ok || !IsWholeNumber(count_arg)) {
    napi_throw_range_error(env, nullptr, "readRows: count must be a whole number");
    return nullptr;
  }
  const size_t count = static_cast<size_t>(count_arg);
  const size_t row_blocks = span.row_bytes / kernel.type_size, row_floats = row_blocks * kernel.block_size;
  // out: a Float32Array with room for every row.
  napi_typedarray_type out_type;
  size_t out_length;
  void* out_data;
  bool is_typed = false;
  if (napi_is_typedarray(env, out_value, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, out_value, &out_type, &out_length, &out_data, nullptr, nullptr) != napi_ok ||
      out_type != napi_float32_array) {
    napi_throw_type_error(env, nullptr, "readRows: out must be a Float32Array");
    return nullptr;
  }
  if (static_cast<double>(out_length) < count_arg * static_cast<double>(row_floats)) {
    napi_throw_range_error(env, nullptr, "readRows: out is too small");
    return nullptr;
  }
  float* out = static_cast<float*>(out_data);
  double first;
  if (napi_get_value_double(env, rows_value, &first) == napi_ok) {
    // Consecutive rows from `first`.
    if (!IsWholeNumber(first) || first + count_arg > static_cast<double>(span.rows)) {
      napi_throw_range_error(env, nullptr, "readRows: rows out of range");
      return nullptr;
    }
    if (count > 0) {
      const uint8_t* begin = span.base + static_cast<size_t>(first) * span.row_bytes;
      // A lookup of a few rows: ask for all their cache lines at once, so they arrive in parallel
      // rather than one after another as the kernel reaches them.
      if (count <= kPrefetchRows) PrefetchRow(begin, count * span.row_bytes);
      kernel.fn(begin, count * row_blocks, out);
    }
  } else {
    napi_typedarray_type ids_type;
    size_t ids_length;
    void* ids_data;
    if (napi_get_typedarray_info(env, rows_value, &ids_type, &ids_length, &ids_data, nullptr, nullptr) != napi_ok ||
        (ids_type != napi_int32_array && ids_type != napi_uint32_array) || ids_length < count) {
      napi_throw_type_error(env, nullptr, "readRows: rows must be a number, or an Int32Array / Uint32Array of at least count ids");
      return nullptr;
    }
    // Every id first (a checked copy: see CopyRowIds): nothing is written when one is out of range.
    std::vector<uint32_t> ids;
    if (!CopyRowIds(static_cast<const uint8_t*>(ids_data), ids_type == napi_int32_array, count, span.rows, &ids)) {
      napi_throw_range_error(env, nullptr, "readRows: row id out of range");
      return nullptr;
    }
    DecodeRowIds(kernel, span.base, span.row_bytes, ids.data(), count, out, true);
  }
  napi_get_boolean(env, true, &result);
  return result;
}

namespace {

// gatherRows(src: Uint8Array, typeId, rowBytes, rows, count, out): readRows over a tensor in
// memory JavaScript holds (a mapped file's rows go through Mapping.rowReader, with no window).
Napi::Value GatherRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6 || !info[1].IsNumber() || !info[2].IsNumber()) throw Napi::TypeError::New(env, "gatherRows(src, typeId, rowBytes, rows, count, out)");
  TypedSpan src = GetTypedSpan(env, info[0], "src");
  if (src.type != napi_uint8_array) throw Napi::TypeError::New(env, "src must be a Uint8Array");
  const double type_id = info[1].As<Napi::Number>().DoubleValue(), row_bytes = info[2].As<Napi::Number>().DoubleValue();
  if (!(type_id >= 0 && type_id < 256) || !IsWholeNumber(row_bytes) || row_bytes == 0) {
    throw Napi::RangeError::New(env, "gatherRows: typeId and rowBytes out of range");
  }
  const RowSpan span{src.data, src.length / static_cast<size_t>(row_bytes), static_cast<size_t>(row_bytes), static_cast<int>(type_id)};
  return Napi::Value(env, ReadRowsInto(env, span, info[3], info[4], info[5]));
}

// One run() in flight: its blocks, its promise, and a hold on the job's memory.
struct Part {
  std::shared_ptr<JobMemory> memory;
  size_t first;
  size_t count;
  napi_deferred deferred;
  napi_async_work work;
  napi_ref job;  // keeps the JS job object alive until the part ends
};

void ExecutePart(napi_env /*env*/, void* data) {
  Part* part = static_cast<Part*>(data);
  const JobMemory& m = *part->memory;
  if (m.rows.empty()) {
    m.kernel.fn(m.src + part->first * m.kernel.type_size, part->count, m.out->data() + part->first * m.kernel.block_size);
    return;
  }
  DecodeRowIds(m.kernel, m.src, m.row_bytes, m.rows.data() + part->first, part->count,
               m.out->data() + part->first * m.row_blocks * m.kernel.block_size, false);
}

// Runs on the JS thread, or during a worker's teardown when JavaScript can no longer run: every
// status is checked and nothing throws.
void CompletePart(napi_env env, napi_status status, void* data) {
  std::unique_ptr<Part> part(static_cast<Part*>(data));
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) == napi_ok) {
    napi_value value = nullptr;
    if (status == napi_ok) {
      if (napi_get_undefined(env, &value) == napi_ok) napi_resolve_deferred(env, part->deferred, value);
    } else {
      napi_value message = nullptr;
      if (napi_create_string_utf8(env, "dequantization was cancelled", NAPI_AUTO_LENGTH, &message) == napi_ok &&
          napi_create_error(env, nullptr, message, &value) == napi_ok) {
        napi_reject_deferred(env, part->deferred, value);
      }
    }
    napi_close_handle_scope(env, scope);
  }
  part->memory->running.fetch_sub(1);
  napi_delete_reference(env, part->job);
  napi_delete_async_work(env, part->work);
}

class DequantJob : public Napi::ObjectWrap<DequantJob> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "DequantJob",
                       {InstanceMethod<&DequantJob::Run>("run"), InstanceMethod<&DequantJob::Take>("take"),
                        InstanceMethod<&DequantJob::CopyTo>("copyTo")});
  }

  // new DequantJob(typeId, src, nblocks): blocks [0, nblocks) of src; run() counts blocks.
  // new DequantJob(typeId, src, nblocks, rowBytes, ids: Int32Array | Uint32Array): rows mode, the
  // rows `ids` of the tensor src (nblocks: all of its blocks), each id checked; run() counts rows.
  explicit DequantJob(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DequantJob>(info) {
    Napi::Env env = info.Env();
    memory_ = std::make_shared<JobMemory>();
    TypedSpan src;
    if (!ParseArgs(info, &memory_->kernel, &src, &memory_->nblocks)) {
      throw Napi::Error::New(env, "DequantJob: no native kernel for this type");
    }
    const size_t src_bytes = memory_->nblocks * memory_->kernel.type_size;
    if (info.Length() > 4) ParseRowsMode(env, info[3], info[4], src_bytes);
    // Out of memory is an exception for JS, never std::terminate: node-addon-api only turns
    // Napi::Error into a JS exception.
    try {
      memory_->pinned = Region::PinContaining(src.data, src_bytes);
      if (memory_->pinned != nullptr) {
        memory_->src = src.data;
      } else if (src_bytes > 0) {
        memory_->src_copy.reset(new uint8_t[src_bytes]);
        std::memcpy(memory_->src_copy.get(), src.data, src_bytes);
        memory_->src = memory_->src_copy.get();
      }
      const size_t out_blocks = memory_->row_bytes != 0 ? memory_->rows.size() * memory_->row_blocks : memory_->nblocks;
      memory_->out.reset(new FloatBuffer(out_blocks * memory_->kernel.block_size));
    } catch (const std::bad_alloc&) {
      memory_.reset();
      throw Napi::RangeError::New(env, "DequantJob: not enough memory for the output");
    }
  }

 private:
  void ParseRowsMode(Napi::Env env, Napi::Value row_bytes_arg, Napi::Value ids_arg, size_t src_bytes) {
    JobMemory& m = *memory_;
    const double row_bytes = row_bytes_arg.IsNumber() ? row_bytes_arg.As<Napi::Number>().DoubleValue() : -1;
    if (!IsWholeNumber(row_bytes) || row_bytes == 0 || static_cast<size_t>(row_bytes) % m.kernel.type_size != 0) {
      throw Napi::RangeError::New(env, "DequantJob: rowBytes must be a whole number of blocks");
    }
    m.row_bytes = static_cast<size_t>(row_bytes);
    m.row_blocks = m.row_bytes / m.kernel.type_size;
    TypedSpan ids = GetTypedSpan(env, ids_arg, "ids");
    if (ids.type != napi_int32_array && ids.type != napi_uint32_array) throw Napi::TypeError::New(env, "DequantJob: ids must be an Int32Array or Uint32Array");
    if (!CopyRowIds(ids.data, ids.type == napi_int32_array, ids.length, src_bytes / m.row_bytes, &m.rows)) {
      throw Napi::RangeError::New(env, "DequantJob: row id out of range");
    }
  }

  // Units run() counts: rows in rows mode, else blocks.
  size_t Units() const { return memory_->row_bytes != 0 ? memory_->rows.size() : memory_->nblocks; }

  // run(first, count): Promise<void>, blocks (or rows) [first, first + count)
  Napi::Value Run(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const double first = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
    const double count = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : -1;
    if (!memory_) throw Napi::Error::New(env, "DequantJob: the output was already taken");
    if (!IsWholeNumber(first) || !IsWholeNumber(count) || first + count > static_cast<double>(Units())) {
      throw Napi::RangeError::New(env, "run: blocks out of range");
    }
    auto part = std::make_unique<Part>();
    part->memory = memory_;
    part->first = static_cast<size_t>(first);
    part->count = static_cast<size_t>(count);
    napi_value promise, name;
    NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &part->deferred, &promise), Napi::Value());
    NAPI_THROW_IF_FAILED(env, napi_create_string_utf8(env, "gguf-mmap:dequantize", NAPI_AUTO_LENGTH, &name), Napi::Value());
    NAPI_THROW_IF_FAILED(env, napi_create_async_work(env, nullptr, name, ExecutePart, CompletePart, part.get(), &part->work),
                         Napi::Value());
    napi_status status = napi_create_reference(env, Value(), 1, &part->job);
    if (status == napi_ok) {
      status = napi_queue_async_work(env, part->work);
      if (status != napi_ok) napi_delete_reference(env, part->job);
    }
    if (status != napi_ok) {
      napi_delete_async_work(env, part->work);
      NAPI_THROW_IF_FAILED(env, status, Napi::Value());
    }
    memory_->running.fetch_add(1);
    part.release();  // CompletePart owns it now
    return Napi::Value(env, promise);
  }

  void CheckIdle(Napi::Env env) {
    if (!memory_) throw Napi::Error::New(env, "DequantJob: the output was already taken");
    if (memory_->running.load() != 0) throw Napi::Error::New(env, "DequantJob: parts still running");
  }

  // take(): the output as a Float32Array over the job's memory, which JS then owns.
  Napi::Value Take(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CheckIdle(env);
    Napi::Value result = HandOver(env, *memory_->out);
    memory_.reset();  // lets go of the source too: a pinned mapping can close now
    return result;
  }

  // copyTo(out: Float32Array, outIndex): copies the output into a caller's array, checked at this
  // moment (it may have been transferred while the job ran).
  Napi::Value CopyTo(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CheckIdle(env);
    const size_t count = memory_->out->bytes() / sizeof(float);
    float* out = OutputAt(info, 0, count);
    if (count > 0) std::memcpy(out, memory_->out->data(), count * sizeof(float));
    memory_.reset();
    return env.Undefined();
  }

  std::shared_ptr<JobMemory> memory_;
};

Napi::Value DequantInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  result.Set("isa", DequantIsa());
  Napi::Array isas = Napi::Array::New(env);
  uint32_t i = 0;
  for (const char* name : DequantIsas()) isas.Set(i++, name);
  result.Set("isas", isas);
  Napi::Array ids = Napi::Array::New(env);
  Napi::Array kernel_isas = Napi::Array::New(env);
  uint32_t n = 0;
  for (int id : DequantTypeIds()) {
    DequantKernel kernel;
    FindDequantKernel(id, &kernel);
    kernel_isas.Set(n, kernel.isa);
    ids.Set(n++, id);
  }
  result.Set("typeIds", ids);
  result.Set("kernelIsas", kernel_isas);
  return result;
}

Napi::Value LimitIsa(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString() || !LimitDequantIsa(info[0].As<Napi::String>().Utf8Value().c_str())) {
    throw Napi::TypeError::New(env, "limitDequantIsa(isa: 'portable' | 'avx2' | 'avx512')");
  }
  return env.Undefined();
}

Napi::Value SetHelperThread(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBoolean()) throw Napi::TypeError::New(env, "useHelperThread(use: boolean)");
  UseHelperThread(info[0].As<Napi::Boolean>().Value());
  return env.Undefined();
}

Napi::Value SetTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString()) throw Napi::TypeError::New(env, "setDequantTable(name: string, bytes: typed array)");
  const std::string name = info[0].As<Napi::String>().Utf8Value();
  TypedSpan bytes = GetTypedSpan(env, info[1], "bytes");
  size_t element = bytes.type == napi_int8_array || bytes.type == napi_uint8_array ? 1 : 0;
  if (element == 0 || !SetDequantTable(name.c_str(), bytes.data, bytes.length)) {
    throw Napi::RangeError::New(env, "setDequantTable: unknown table '" + name + "' or wrong length");
  }
  return env.Undefined();
}

}  // namespace

void RegisterDequant(Napi::Env env, Napi::Object exports) {
  exports.Set("dequantize", Napi::Function::New<Dequantize>(env, "dequantize"));
  exports.Set("dequantizeNew", Napi::Function::New<DequantizeNew>(env, "dequantizeNew"));
  exports.Set("gatherRows", Napi::Function::New<GatherRows>(env, "gatherRows"));
  exports.Set("DequantJob", DequantJob::Define(env));
  exports.Set("dequantInfo", Napi::Function::New<DequantInfo>(env, "dequantInfo"));
  exports.Set("limitDequantIsa", Napi::Function::New<LimitIsa>(env, "limitDequantIsa"));
  exports.Set("useHelperThread", Napi::Function::New<SetHelperThread>(env, "useHelperThread"));
  exports.Set("setDequantTable", Napi::Function::New<SetTable>(env, "setDequantTable"));
}

}  // namespace gguf_mmap
