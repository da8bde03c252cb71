#include "os/fault_guard.h"

#include <csignal>
#include <cstring>
#include <mutex>
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

struct sigaction previous_action;
std::once_flag install_once;
bool installed = false;

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
}

// Hands a SIGBUS that is not ours to whoever had it before; with no handler before, the default
// action is restored and the faulting instruction runs again, so the process dies of the signal.
void OnSigbus(int signo, siginfo_t* info, void* context);

void Chain(int signo, siginfo_t* info, void* context) {
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
  Chain(signo, info, context);
}

}  // namespace

bool FaultGuard::Install() {
  std::call_once(install_once, [] {
    page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    installed = sigaction(SIGBUS, &action, &previous_action) == 0;
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
