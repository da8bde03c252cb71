// A file view whose address range can become zero-filled memory in place, so that close() leaves
// no hole anyone could fault on or have reused under a live view: Windows 10 1803+ maps the view
// into a placeholder and swaps it for a reservation atomically; elsewhere (wine, older Windows) the
// view is unmapped and the same range reserved at once. The range is then committed as zero pages
// (commit charge only: no page is touched) so that the kernel too can read it, for a WriteFile or
// send() of a view still in flight; where the commit limit refuses that, pages stay reserved and the
// fault handler (fault_guard.cc) commits each one when user code first touches it (the kernel's own
// reads of them then fail with an error instead).
#pragma once

#include <cstddef>

#include "os/windows/win32.h"

namespace gguf_mmap {

// A view of the whole section (`size` bytes), copy-on-write or read-only; nullptr with `*error`.
void* MapFileView(HANDLE section, size_t size, bool copy_on_write, DWORD* error);

// What ViewToReservation did.
enum class Replaced {
  kReserved,  // the range is reserved memory now
  kViewKept,  // the view could not be unmapped: the file pages stay
  kLost,      // unmapped, but something else took the range before it could be reserved again
};

// The view at `addr` becomes reserved, uncommitted memory of the same range. Every view and
// reservation of this file is made and given back under one lock, so no other file's view can
// take the range in between; other allocations in the process still can (kLost) where there are
// no placeholders.
Replaced ViewToReservation(void* addr, size_t size, bool writable);

// Gives the range back, whether it is still a view or a reservation; nothing once it was lost.
void ReleaseRange(void* addr);

// The system's page size (what commit and QueryWorkingSetEx count in).
size_t PageSize();

// Runs the one-time initializations (page size, the placeholder probe, the range list) now, so
// that the fault handler never runs them first.
void WarmUpAddressSpace();

}  // namespace gguf_mmap
