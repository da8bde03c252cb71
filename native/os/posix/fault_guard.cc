#include "os/fault_guard.h"

#include <csignal>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <dlfcn.h>
#endif

namespace gguf_mmap {
namespace {

struct Slot {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> begin{0};  // 0: not guarded
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> writable{false};  // the protection zero pages replacing lost ones get
  std::atomic<uint32_t> status{0};
};

Slot slots[FaultGuard::kSlots];
std::atomic<int> next_hint{0};
static_assert(std::atomic<uintptr_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

// What had SIGBUS before us. Rearm() may replace it while a handler runs on another thread, so
// there are two copies and an atomic index: the handler reads a copy that is never written while
// it is the current one.
struct sigaction previous_actions[2];
std::atomic<int> previous_index{0};
std::once_flag install_once;
bool installed = false;
struct sigaction our_action;

// Counts slots disarmed (closed or freed). A fault whose address no slot holds may have raced a
// close(): see OnSigbus.
std::atomic<uint64_t> disarmed{0};

// The last faults on addresses no slot held, each as (thread, address, disarmed count then): a
// fault met a second time by the same thread with nothing disarmed in between is not a race with
// close(), and is handed on. (The thread is in the key: two threads reading the same view may
// both meet the race at one address.)
// A ring rather than one entry, so that two threads faulting at once cannot hand each other
// retries for ever.
constexpr int kRecentForeign = 16;
std::atomic<uint64_t> recent_foreign[kRecentForeign];
std::atomic<uint32_t> recent_next{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the signal handler needs lock-free atomics");

uint64_t ForeignKey(uintptr_t addr, uint64_t generation) {
  // pthread_self() reads the thread pointer: no call into anything that is not signal-safe.
  const uint64_t thread = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pthread_self()));
  return static_cast<uint64_t>(addr) ^ (generation * 0x9E3779B97F4A7C15ull) ^ (thread * 0xC2B2AE3D27D4EB4Full);
}

// True the first time a fault at `addr` finds no slot since the last disarm: the instruction is
// worth running again.
bool FirstForeignFault(uintptr_t addr) {
  const uint64_t key = ForeignKey(addr, disarmed.load(std::memory_order_acquire));
  for (auto& seen : recent_foreign) {
    if (seen.load(std::memory_order_relaxed) == key) return false;
  }
  recent_foreign[recent_next.fetch_add(1, std::memory_order_relaxed) % kRecentForeign].store(key, std::memory_order_relaxed);
  return true;
}

// Read once in Install(): the handler must not run a function-local static's guarded init.
uintptr_t page_size = 4096;

// Private zero pages over [begin, begin + length), in place (MAP_FIXED): one mmap call, so
// async-signal-safe. Read-only zero pages are never charged against commit: a read-only mapping
// (strict overcommit) is replaced by a read-only one, which cannot fail for want of memory.
bool MapZeros(void* begin, size_t length, bool writable) {
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* at = mmap(begin, length, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return at != MAP_FAILED;
}

void Disarm(Slot& slot) {
  slot.begin.store(0, std::memory_order_release);
  slot.end.store(0, std::memory_order_release);
  disarmed.fetch_add(1, std::memory_order_acq_rel);
}

// Hands a SIGBUS that is not ours to whoever had it before; with no handler before, the default
// action is restored and the faulting instruction runs again, so the process dies of the signal.
void OnSigbus(int signo, siginfo_t* info, void* context);

void Chain(int signo, siginfo_t* info, void* context) {
  const struct sigaction& previous_action = previous_actions[previous_index.load(std::memory_order_acquire)];
  // Never ourselves (a second copy of this library would find the first's handler installed).
  if ((previous_action.sa_flags & SA_SIGINFO) != 0 && previous_action.sa_sigaction != nullptr &&
      previous_action.sa_sigaction != OnSigbus) {
    previous_action.sa_sigaction(signo, info, context);
    return;
  }
  if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(signo);
    return;
  }
  signal(signo, SIG_DFL);  // SIG_IGN would loop forever on the faulting instruction
  // A signal sent by kill() has no faulting instruction to run again: send it once more, to be
  // delivered with the default action when this handler returns.
  if (info->si_code <= 0) raise(signo);
}

void OnSigbus(int signo, siginfo_t* info, void* context) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  // Only a fault (si_code > 0) has an address; kill() and sigqueue() fill that field otherwise.
  for (Slot& slot : slots) {
    if (info->si_code <= 0) break;
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin) continue;
    const uintptr_t end = slot.end.load(std::memory_order_acquire);
    // Freed and taken again meanwhile (begin and end of two mappings): not this slot's fault.
    if (addr >= end || slot.begin.load(std::memory_order_acquire) != begin) continue;
    // A truncation loses the file's tail: zero everything from this page on, so later reads of
    // the lost range do not fault one page at a time.
    const uintptr_t page = addr & ~(page_size - 1);
    if (!MapZeros(reinterpret_cast<void*>(page), end - page, slot.writable.load(std::memory_order_acquire))) break;
    slot.status.fetch_or(kStatusPagesLost, std::memory_order_release);
    return;
  }
  // No slot holds the address, but one may have a moment ago: close() replaces a mapping with
  // zero pages and then disarms its slot, and that can fall between the fault and the look
  // above. Running the instruction once more settles it: it reads zeros now, or, not being ours,
  // faults again at the same address with nothing disarmed meanwhile, and only then is handed on
  // (handing it on with no handler before us restores the default action for the process).
  if (info->si_code > 0 && FirstForeignFault(addr)) return;
  Chain(signo, info, context);
}

}  // namespace

bool FaultGuard::Install() {
  std::call_once(install_once, [] {
    page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    std::memset(&our_action, 0, sizeof our_action);
    our_action.sa_sigaction = OnSigbus;
    our_action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&our_action.sa_mask);
    installed = sigaction(SIGBUS, &our_action, &previous_actions[0]) == 0;
#if defined(__APPLE__)
    // macOS links have no -z nodelete: the addon opens itself once more with RTLD_NODELETE (it
    // is already loaded: RTLD_NOLOAD), so the handler's code stays mapped after a worker exits.
    Dl_info self;
    if (installed && dladdr(reinterpret_cast<void*>(&OnSigbus), &self) != 0 && self.dli_fname != nullptr) {
      dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    }
#endif
  });
  return installed;
}

std::mutex rearm_mutex;  // Rearm runs on any thread that maps a file, and from JS

bool FaultGuard::Rearm() {
  if (!Install()) return false;
  std::lock_guard<std::mutex> lock(rearm_mutex);
  struct sigaction current;
  if (sigaction(SIGBUS, nullptr, &current) != 0) return false;
  if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == OnSigbus) return true;
  // Someone replaced the handler (Node's own, for a process.on('SIGBUS') listener, or SIG_DFL
  // once that listener is removed): theirs becomes the one signals not ours are handed to.
  const int next = 1 - previous_index.load(std::memory_order_relaxed);
  previous_actions[next] = current;
  previous_index.store(next, std::memory_order_release);
  return sigaction(SIGBUS, &our_action, nullptr) == 0;
}

int FaultGuard::Acquire(void* begin, size_t length, bool writable) {
  const int start = next_hint.load(std::memory_order_relaxed);
  for (int i = 0; i < kSlots; i++) {
    const int index = (start + i) % kSlots;
    bool expected = false;
    if (!slots[index].used.compare_exchange_strong(expected, true)) continue;
    next_hint.store((index + 1) % kSlots, std::memory_order_relaxed);
    Slot& slot = slots[index];
    slot.status.store(0, std::memory_order_relaxed);
    slot.writable.store(writable, std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(begin) + length, std::memory_order_release);
    slot.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return index;
  }
  return -1;
}

FaultGuard::Zeroed FaultGuard::ReplaceWithZeros(int index) {
  Slot& slot = slots[index];
  const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
  if (begin == 0) return Zeroed::kYes;  // replaced already
  if (!MapZeros(reinterpret_cast<void*>(begin), slot.end.load(std::memory_order_acquire) - begin,
                slot.writable.load(std::memory_order_acquire))) {
    return Zeroed::kNo;
  }
  // Replaced first, then no longer guarded: a fault on the range in between is still ours.
  Disarm(slot);
  return Zeroed::kYes;
}

void FaultGuard::Free(int slot) {
  Disarm(slots[slot]);
  slots[slot].used.store(false, std::memory_order_release);
}

std::atomic<uint32_t>* FaultGuard::Status(int slot) { return &slots[slot].status; }

}  // namespace gguf_mmap
