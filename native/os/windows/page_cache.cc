// Windows: the page cache calls of page_cache.h from what Win32 has. What is resident means in
// this process's working set (QueryWorkingSetEx), a narrower thing than Linux's page cache.
#include "os/page_cache.h"
#include "os/page_span.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "os/windows/address_space.h"
#include "os/windows/win32.h"

// psapi.h's PSAPI_WORKING_SET_EX_INFORMATION, declared here with kernel32's K32QueryWorkingSetEx
// (Windows 7+) so that no psapi import is needed.
namespace {
struct WorkingSetExInformation {
  void* virtual_address;
  ULONG_PTR attributes;  // bit 0: Valid (the page is in the working set)
};
}  // namespace
extern "C" __declspec(dllimport) BOOL WINAPI K32QueryWorkingSetEx(HANDLE process, void* info, DWORD size);

namespace gguf_mmap {
namespace {

PageSpan Pages(const uint8_t* begin, size_t length) { return PagesOf(begin, length, PageSize()); }

int Prefetch(const PageSpan& span) {
  WIN32_MEMORY_RANGE_ENTRY range{span.start, span.length};
  return PrefetchVirtualMemory(GetCurrentProcess(), 1, &range, 0) ? 0 : -ErrnoFromWin32(GetLastError());
}

}  // namespace

int64_t ResidentBytes(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const size_t page = PageSize();
  const PageSpan span = Pages(begin, length);
  const size_t slice_pages = 16384;
  std::vector<WorkingSetExInformation> pages(slice_pages);
  int64_t resident_pages = 0;
  for (size_t at = 0; at < span.length; at += slice_pages * page) {
    const size_t count = (span.length - at < slice_pages * page ? span.length - at : slice_pages * page) / page;
    for (size_t i = 0; i < count; i++) pages[i] = {span.start + at + i * page, 0};
    if (!K32QueryWorkingSetEx(GetCurrentProcess(), pages.data(), static_cast<DWORD>(count * sizeof(WorkingSetExInformation)))) {
      return -ErrnoFromWin32(GetLastError());
    }
    for (size_t i = 0; i < count; i++) resident_pages += pages[i].attributes & 1;
  }
  const int64_t resident = resident_pages * static_cast<int64_t>(page);
  return resident < static_cast<int64_t>(length) ? resident : static_cast<int64_t>(length);
}

int Advise(const uint8_t* begin, size_t length, const char* advice) {
  const bool normal = std::strcmp(advice, "normal") == 0, willneed = std::strcmp(advice, "willneed") == 0,
             dontneed = std::strcmp(advice, "dontneed") == 0;
  if (!normal && !willneed && !dontneed) {
    // Windows has no per-range access-pattern hint for a mapped view.
    return std::strcmp(advice, "random") == 0 || std::strcmp(advice, "sequential") == 0 || std::strcmp(advice, "hugepage") == 0 ? -ENOTSUP : -EINVAL;
  }
  if (length == 0 || normal) return 0;
  const PageSpan span = Pages(begin, length);
  if (willneed) return Prefetch(span);
  // VirtualUnlock on pages that are not locked takes them out of the working set (and fails
  // with ERROR_NOT_LOCKED, which is what is wanted here).
  if (!VirtualUnlock(span.start, span.length) && GetLastError() != ERROR_NOT_LOCKED) return -ErrnoFromWin32(GetLastError());
  return 0;
}

int Lock(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const PageSpan span = Pages(begin, length);
  return VirtualLock(span.start, span.length) ? 0 : -ErrnoFromWin32(GetLastError());
}

int Unlock(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const PageSpan span = Pages(begin, length);
  // Not locked is unlocked, as munlock has it.
  if (!VirtualUnlock(span.start, span.length) && GetLastError() != ERROR_NOT_LOCKED) return -ErrnoFromWin32(GetLastError());
  return 0;
}

const char* LockLimitHint() { return "VirtualLock: locked memory is limited by the process's working-set quota"; }

int Populate(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const PageSpan span = Pages(begin, length);
  Prefetch(span);  // asynchronous read-ahead; then one byte per page faults each in
  const size_t page = PageSize();
  volatile uint8_t sink = 0;
  for (size_t at = 0; at < span.length; at += page) sink = sink + span.start[at];
  return 0;
}

int EvictFile(const char*) {
  // Windows has no call that drops one file's clean pages from the system cache.
  return -ENOTSUP;
}

}  // namespace gguf_mmap
