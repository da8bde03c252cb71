// Windows: a vectored exception handler in place of the SIGBUS handler. See fault_guard.h.
#include "os/fault_guard.h"

#include <mutex>

#include "os/windows/address_space.h"
#include "os/windows/win32.h"

namespace gguf_mmap {
namespace {

// A slot's range holds the file's pages (a fault there means lost pages), is being replaced, or
// is reserved memory whose pages are committed as zeros when touched.
enum Mode : int { kUnused = 0, kFilePages = 1, kReplacing = 2, kZeros = 3 };

struct Slot {
  std::atomic<bool> used{false};
  std::atomic<int> mode{kUnused};
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> writable{false};
  std::atomic<uint32_t> status{0};
  std::atomic<bool> lost{false};  // the range was taken by something else (Zeroed::kRangeLost)
};

Slot slots[FaultGuard::kSlots];
std::atomic<int> next_hint{0};
std::once_flag install_once;
bool installed = false;

// The range becomes zeros: exactly one caller (a close, or a fault handler) unmaps the view, the
// others wait for it. False if it could not be replaced (the file pages then stay).
FaultGuard::Zeroed ToZeros(Slot& slot) {
  using Zeroed = FaultGuard::Zeroed;
  for (;;) {
    int mode = slot.mode.load(std::memory_order_acquire);
    if (mode == kZeros || mode == kUnused) return slot.lost.load(std::memory_order_acquire) ? Zeroed::kRangeLost : Zeroed::kYes;
    if (mode == kReplacing) {
      SwitchToThread();
      continue;
    }
    if (!slot.mode.compare_exchange_strong(mode, kReplacing, std::memory_order_acq_rel)) continue;
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    const Replaced replaced = ViewToReservation(reinterpret_cast<void*>(begin), slot.end.load(std::memory_order_acquire) - begin,
                                               slot.writable.load(std::memory_order_acquire));
    if (replaced == Replaced::kLost) {
      // Someone else's memory now: no longer ours to guard or to free (a view still held reads it).
      slot.lost.store(true, std::memory_order_release);
      slot.begin.store(0, std::memory_order_release);
      slot.end.store(0, std::memory_order_release);
    }
    slot.mode.store(replaced == Replaced::kViewKept ? kFilePages : kZeros, std::memory_order_release);
    return replaced == Replaced::kViewKept ? Zeroed::kNo : replaced == Replaced::kLost ? Zeroed::kRangeLost : Zeroed::kYes;
  }
}

// A touched page of a closed (or lost) range: committed as a zero page with the slot's protection.
// True when the access can be retried: committed now, or already by the time the handler looks
// (the close committed the whole range meanwhile).
bool CommitZeroPage(const Slot& slot, uintptr_t addr, bool write) {
  const uintptr_t page = addr & ~(static_cast<uintptr_t>(PageSize()) - 1);
  MEMORY_BASIC_INFORMATION info;
  if (VirtualQuery(reinterpret_cast<void*>(page), &info, sizeof info) == 0) return false;
  if (info.State == MEM_COMMIT) {
    // A write to a read-only zero page is the program's own fault; anything else was a fault from
    // before the page was committed.
    return !(write && info.Protect == PAGE_READONLY);
  }
  if (info.State != MEM_RESERVE) return false;
  const DWORD protection = slot.writable.load(std::memory_order_acquire) ? PAGE_READWRITE : PAGE_READONLY;
  return VirtualAlloc(reinterpret_cast<void*>(page), PageSize(), MEM_COMMIT, protection) != nullptr;
}

LONG CALLBACK OnException(EXCEPTION_POINTERS* pointers) {
  const EXCEPTION_RECORD* record = pointers->ExceptionRecord;
  // IN_PAGE_ERROR: the file's pages could not be read (a failing network or removable drive).
  // Wine reports a read past a truncated file as ACCESS_VIOLATION instead.
  if ((record->ExceptionCode != EXCEPTION_IN_PAGE_ERROR && record->ExceptionCode != EXCEPTION_ACCESS_VIOLATION) ||
      record->NumberParameters < 2) {
    return EXCEPTION_CONTINUE_SEARCH;
  }
  const ULONG_PTR access = record->ExceptionInformation[0];  // 0 read, 1 write, 8 execute
  const uintptr_t addr = record->ExceptionInformation[1];
  for (Slot& slot : slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin || addr >= slot.end.load(std::memory_order_acquire)) continue;
    // Freed and taken again meanwhile (begin and end of two mappings): not this slot's fault.
    if (slot.begin.load(std::memory_order_acquire) != begin) continue;
    const int mode = slot.mode.load(std::memory_order_acquire);
    if (mode == kFilePages) {
      // A write to a read-only mapping, or an execution: the program's own fault.
      if (record->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && access != 0 && !(access == 1 && slot.writable.load())) {
        return EXCEPTION_CONTINUE_SEARCH;
      }
      // Lost pages: the whole view becomes zeros (a view cannot be replaced in part), flagged.
      if (ToZeros(slot) != FaultGuard::Zeroed::kYes) return EXCEPTION_CONTINUE_SEARCH;
      slot.status.fetch_or(kStatusPagesLost, std::memory_order_release);
      return EXCEPTION_CONTINUE_EXECUTION;  // faults again, now on reserved memory: below
    }
    if (mode == kReplacing) {
      ToZeros(slot);  // waits for whoever is replacing it
      return EXCEPTION_CONTINUE_EXECUTION;
    }
    // An execution, or an I/O error on a page of ours that is committed already: not a zero page.
    if (mode == kZeros && access != 8 && record->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && CommitZeroPage(slot, addr, access == 1)) {
      return EXCEPTION_CONTINUE_EXECUTION;
    }
    return EXCEPTION_CONTINUE_SEARCH;
  }
  return EXCEPTION_CONTINUE_SEARCH;
}

}  // namespace

bool FaultGuard::Install() {
  std::call_once(install_once, [] {
    // Pinned: the module is never unloaded while the process lives, so the handler's code stays.
    HMODULE self = nullptr;
    GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
                       reinterpret_cast<LPCWSTR>(reinterpret_cast<void*>(&OnException)), &self);
    // The handler must not be the first to run a function-local static's initialization.
    WarmUpAddressSpace();
    installed = AddVectoredExceptionHandler(1, OnException) != nullptr;
  });
  return installed;
}

// Signal listeners change nothing on Windows (no SIGBUS there): nothing to put back.
bool FaultGuard::Rearm() { return Install(); }

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
    slot.mode.store(kFilePages, std::memory_order_relaxed);
    slot.lost.store(false, std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(begin) + length, std::memory_order_release);
    slot.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return index;
  }
  return -1;
}

FaultGuard::Zeroed FaultGuard::ReplaceWithZeros(int slot) { return ToZeros(slots[slot]); }

void FaultGuard::Free(int index) {
  Slot& slot = slots[index];
  slot.begin.store(0, std::memory_order_release);
  slot.end.store(0, std::memory_order_release);
  slot.mode.store(kUnused, std::memory_order_release);
  slot.used.store(false, std::memory_order_release);
}

std::atomic<uint32_t>* FaultGuard::Status(int slot) { return &slots[slot].status; }

}  // namespace gguf_mmap
