#include "helper_thread.h"

#include "os/cpus.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(_MSC_VER)
#include <intrin.h>
#endif

namespace gguf_mmap {
namespace {

// The chunks not yet taken, [front, back) packed in one word: the caller takes them from the
// front, the helper from the back. A caller that reuses its output (a service gathering into one
// array) so writes the same part of it with the same core every call; lines that move between
// two cores' caches each call cost more than the writing (measured: two threads writing halves of
// 4 MiB, 160-170 GB/s in all when each keeps its half, 47-61 GB/s when they trade halves).
class ChunkRange {
 public:
  explicit ChunkRange(size_t chunks) : range_(static_cast<uint64_t>(chunks)) {}  // chunks < 2^32
  // The next chunk from the front (from_back: the back), or false when none is left.
  bool Take(bool from_back, size_t* chunk) {
    uint64_t range = range_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = range >> 32, back = range & 0xffffffffu;
      if (front >= back) return false;
      const uint64_t taken = from_back ? (front << 32) | (back - 1) : ((front + 1) << 32) | back;
      if (range_.compare_exchange_weak(range, taken, std::memory_order_relaxed)) {
        *chunk = static_cast<size_t>(from_back ? back - 1 : front);
        return true;
      }
    }
  }

 private:
  std::atomic<uint64_t> range_;
};

struct Helper {
  std::mutex mutex;
  std::condition_variable wake, done;
  // Work lent and not yet taken (null: none), set and taken under `mutex`; `run` is atomic so
  // that the helper, spinning for the next call, can poll it without the lock.
  std::atomic<ChunkFn> run{nullptr};
  void* context = nullptr;
  ChunkRange* chunks = nullptr;
  std::atomic<bool> working{false};  // the helper took the work and is running chunks (set under `mutex`)
  std::atomic<bool> lent{false};     // a call has the helper
};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(_M_X64) || defined(_M_IX86)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#elif defined(_M_ARM64)
  __yield();
#endif
}

// Spins (politely) until done() or `micros` have passed; whether done() came true.
template <typename Done>
bool SpinUntil(Done done, long micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (unsigned i = 1; !done(); i++) {
    CpuRelax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return done();
  }
  return true;
}

// How long a caller spins for the helper's last chunk before it sleeps: about four chunks of
// 256 KiB of random rows with the SIMD kernels (9-13 us each). Longer chunks (the portable
// kernels), or a helper kept off its CPU, end in the sleep.
constexpr long kCallerSpinMicros = 50;

// How long the helper, done with a call's chunks, spins for the next call before it sleeps: as
// long as it worked, at most this. A helper put to sleep wakes 45-60 us late from this VM's idle
// CPU, most of a 512-row batch (70-100 us), so back-to-back batches found it joining for their
// last third; awake, it takes half (measured, 512 random rows on 2 cores, the lookup benchmark's
// interleaved rounds: 0.82-1.01x the time of filling the output on Node 20-24, against 1.03-1.20x
// without the spin). An isolated call so costs the helper at most twice its share of the work.
constexpr long kHelperSpinMicros = 100;

void TakeChunks(ChunkRange& chunks, bool from_back, ChunkFn run, void* context) {
  for (size_t chunk; chunks.Take(from_back, &chunk);) run(context, chunk);
}

void Serve(Helper* helper) {
  std::unique_lock<std::mutex> lock(helper->mutex);
  for (;;) {
    helper->wake.wait(lock, [helper] { return helper->run != nullptr; });
    const ChunkFn run = helper->run.exchange(nullptr);
    void* const context = helper->context;
    ChunkRange* chunks = helper->chunks;
    helper->working = true;
    lock.unlock();
    const auto began = std::chrono::steady_clock::now();
    TakeChunks(*chunks, true, run, context);
    const long worked = static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - began).count());
    lock.lock();
    helper->working = false;
    helper->done.notify_all();
    lock.unlock();
    SpinUntil([helper] { return helper->run.load(std::memory_order_relaxed) != nullptr; }, std::min(kHelperSpinMicros, worked));
    lock.lock();
  }
}

std::atomic<bool> use_helper{true};

Helper* TheHelper() {
  // Never freed: at exit the helper may still sleep on it (no destructor runs under it).
  static Helper* const helper = []() -> Helper* {
    // Two CPUs this process may use at once, or the helper would only take turns with the caller.
    if (UsableCpus() < 2) return nullptr;
    Helper* created = new Helper;
    try {
      std::thread(Serve, created).detach();
    } catch (...) {  // no thread to be had (a process limit): every call does its own chunks
      delete created;
      return nullptr;
    }
    return created;
  }();
  return helper;
}

}  // namespace

void RunChunks(size_t chunks, ChunkFn run, void* context) {
  // (ChunkRange counts to 2^32 - 1: more chunks than that, which no output in memory makes, run here.)
  Helper* helper = chunks > 1 && chunks <= UINT32_MAX && use_helper.load(std::memory_order_relaxed) ? TheHelper() : nullptr;
  bool free = false;
  if (helper == nullptr || !helper->lent.compare_exchange_strong(free, true)) {
    for (size_t chunk = 0; chunk < chunks; chunk++) run(context, chunk);
    return;
  }
  ChunkRange range(chunks);
  {
    std::lock_guard<std::mutex> lock(helper->mutex);
    helper->context = context;
    helper->chunks = &range;
    helper->run = run;
  }
  helper->wake.notify_one();
  TakeChunks(range, false, run, context);
  {
    // Withdrawn if the helper has not taken it yet.
    std::lock_guard<std::mutex> lock(helper->mutex);
    helper->run = nullptr;
  }
  // Else wait for the one chunk it is running, spinning first: sleeping here until the helper's
  // wake-up cost more than the wait (measured on 2 cores, 512 random rows: 1.22-1.38x the time of
  // filling the output without the spin, 1.13-1.18x with it).
  if (!SpinUntil([helper] { return !helper->working.load(std::memory_order_acquire); }, kCallerSpinMicros)) {
    std::unique_lock<std::mutex> lock(helper->mutex);
    helper->done.wait(lock, [helper] { return !helper->working.load(); });
  }
  helper->lent.store(false);
}

void UseHelperThread(bool use) { use_helper.store(use); }

}  // namespace gguf_mmap
