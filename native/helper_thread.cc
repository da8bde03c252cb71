#include "helper_thread.h"

#include "os/cpus.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace gguf_mmap {
namespace {

struct Helper {
  std::mutex mutex;
  std::condition_variable wake, done;
  // Work lent and not yet taken (null: none), under `mutex`.
  ChunkFn run = nullptr;
  void* context = nullptr;
  std::atomic<size_t>* next = nullptr;
  size_t chunks = 0;
  bool working = false;          // the helper took the work and is running chunks
  std::atomic<bool> lent{false};  // a call has the helper
};

void TakeChunks(std::atomic<size_t>& next, size_t chunks, ChunkFn run, void* context) {
  for (size_t chunk; (chunk = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) run(context, chunk);
}

void Serve(Helper* helper) {
  std::unique_lock<std::mutex> lock(helper->mutex);
  for (;;) {
    helper->wake.wait(lock, [helper] { return helper->run != nullptr; });
    const ChunkFn run = helper->run;
    void* const context = helper->context;
    std::atomic<size_t>* next = helper->next;
    const size_t chunks = helper->chunks;
    helper->run = nullptr;
    helper->working = true;
    lock.unlock();
    TakeChunks(*next, chunks, run, context);
    lock.lock();
    helper->working = false;
    helper->done.notify_all();
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
  std::atomic<size_t> next{0};
  Helper* helper = chunks > 1 && use_helper.load(std::memory_order_relaxed) ? TheHelper() : nullptr;
  bool free = false;
  if (helper == nullptr || !helper->lent.compare_exchange_strong(free, true)) {
    TakeChunks(next, chunks, run, context);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(helper->mutex);
    helper->run = run;
    helper->context = context;
    helper->next = &next;
    helper->chunks = chunks;
  }
  helper->wake.notify_one();
  TakeChunks(next, chunks, run, context);
  {
    // Withdrawn if the helper has not woken yet; else wait for the chunks it is running.
    std::unique_lock<std::mutex> lock(helper->mutex);
    helper->run = nullptr;
    helper->done.wait(lock, [helper] { return !helper->working; });
  }
  helper->lent.store(false);
}

void UseHelperThread(bool use) { use_helper.store(use); }

}  // namespace gguf_mmap
