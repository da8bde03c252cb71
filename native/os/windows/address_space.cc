#include "os/windows/address_space.h"

#include <vector>

namespace gguf_mmap {
namespace {

// The placeholder calls (kernelbase.dll, Windows 10 1803+), found at run time: the binary must
// load where they are missing, and wine 8 exports them but refuses them (ERROR_INVALID_PARAMETER).
constexpr ULONG kReservePlaceholder = 0x00040000;  // MEM_RESERVE_PLACEHOLDER
constexpr ULONG kReplacePlaceholder = 0x00004000;  // MEM_REPLACE_PLACEHOLDER
constexpr ULONG kPreservePlaceholder = 0x00000002;  // MEM_PRESERVE_PLACEHOLDER
using VirtualAlloc2Fn = PVOID(WINAPI*)(HANDLE, PVOID, SIZE_T, ULONG, ULONG, void*, ULONG);
using MapViewOfFile3Fn = PVOID(WINAPI*)(HANDLE, HANDLE, PVOID, ULONG64, SIZE_T, ULONG, ULONG, void*, ULONG);
using UnmapViewOfFile2Fn = BOOL(WINAPI*)(HANDLE, PVOID, ULONG);

struct Placeholders {
  VirtualAlloc2Fn virtual_alloc2 = nullptr;
  MapViewOfFile3Fn map_view3 = nullptr;
  UnmapViewOfFile2Fn unmap_view2 = nullptr;
  bool usable = false;
};

// Probed once: a placeholder reserved and freed. Every view is then mapped the same way, so the
// close path never has to tell which kind a view is.
const Placeholders& Probe() {
  static const Placeholders found = [] {
    Placeholders p;
    HMODULE kernelbase = GetModuleHandleW(L"kernelbase.dll");
    if (kernelbase == nullptr) return p;
    p.virtual_alloc2 = reinterpret_cast<VirtualAlloc2Fn>(reinterpret_cast<void*>(GetProcAddress(kernelbase, "VirtualAlloc2")));
    p.map_view3 = reinterpret_cast<MapViewOfFile3Fn>(reinterpret_cast<void*>(GetProcAddress(kernelbase, "MapViewOfFile3")));
    p.unmap_view2 = reinterpret_cast<UnmapViewOfFile2Fn>(reinterpret_cast<void*>(GetProcAddress(kernelbase, "UnmapViewOfFile2")));
    if (p.virtual_alloc2 == nullptr || p.map_view3 == nullptr || p.unmap_view2 == nullptr) return p;
    void* probe = p.virtual_alloc2(GetCurrentProcess(), nullptr, 1 << 16, MEM_RESERVE | kReservePlaceholder, PAGE_NOACCESS, nullptr, 0);
    if (probe == nullptr) return p;
    VirtualFree(probe, 0, MEM_RELEASE);
    p.usable = true;
    return p;
  }();
  return found;
}

// The ranges this file made (views, then reservations), under one lock: a range is given back
// only if it is still ours. `placeholder`: the view was mapped into a placeholder.
struct Owned {
  void* addr;
  bool placeholder;
};
SRWLOCK ranges_lock = SRWLOCK_INIT;
std::vector<Owned>& OwnedRanges() {
  static std::vector<Owned>* ranges = new std::vector<Owned>();  // never destroyed: used at exit
  return *ranges;
}

Owned* Find(void* addr) {
  for (Owned& owned : OwnedRanges()) {
    if (owned.addr == addr) return &owned;
  }
  return nullptr;
}

struct Locked {
  Locked() { AcquireSRWLockExclusive(&ranges_lock); }
  ~Locked() { ReleaseSRWLockExclusive(&ranges_lock); }
};

bool Forget(void* addr) {
  std::vector<Owned>& ranges = OwnedRanges();
  Owned* at = Find(addr);
  if (at == nullptr) return false;
  *at = ranges.back();
  ranges.pop_back();
  return true;
}

size_t RoundToPages(size_t size) {
  const size_t page = PageSize();
  return (size + page - 1) / page * page;
}

}  // namespace

size_t PageSize() {
  static const size_t page = [] {
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    return static_cast<size_t>(info.dwPageSize);
  }();
  return page;
}

void* MapFileView(HANDLE section, size_t size, bool copy_on_write, DWORD* error) {
  const Placeholders& p = Probe();
  Locked locked;
  void* view = nullptr;
  bool placeholder = false;
  if (p.usable) {
    // A placeholder of whole pages, replaced by the view. Should the system refuse a view of
    // whole pages over a file that ends inside its last page, the plain call below maps it.
    const size_t span = RoundToPages(size);
    void* reserved = p.virtual_alloc2(GetCurrentProcess(), nullptr, span, MEM_RESERVE | kReservePlaceholder, PAGE_NOACCESS, nullptr, 0);
    if (reserved != nullptr) {
      view = p.map_view3(section, GetCurrentProcess(), reserved, 0, span, kReplacePlaceholder,
                         copy_on_write ? PAGE_WRITECOPY : PAGE_READONLY, nullptr, 0);
      if (view == nullptr) VirtualFree(reserved, 0, MEM_RELEASE);
      placeholder = view != nullptr;
    }
  }
  if (view == nullptr) {
    view = MapViewOfFile(section, copy_on_write ? FILE_MAP_COPY : FILE_MAP_READ, 0, 0, size);
    if (view == nullptr) *error = GetLastError();
  }
  if (view != nullptr) OwnedRanges().push_back({view, placeholder});
  return view;
}

namespace {

// The reserved range committed as zero pages, if the commit limit allows it (see the header).
Replaced CommitZeros(void* addr, size_t span, bool writable) {
  VirtualAlloc(addr, span, MEM_COMMIT, writable ? PAGE_READWRITE : PAGE_READONLY);
  return Replaced::kReserved;
}

}  // namespace

Replaced ViewToReservation(void* addr, size_t size, bool writable) {
  const Placeholders& p = Probe();
  const size_t span = RoundToPages(size);
  Locked locked;
  const Owned* owned = Find(addr);
  if (owned == nullptr) return Replaced::kViewKept;  // not a view of ours (released already)
  if (owned->placeholder) {
    // The view back to a placeholder, then the placeholder to a reservation: the range is ours
    // throughout.
    if (!p.unmap_view2(GetCurrentProcess(), addr, kPreservePlaceholder)) return Replaced::kViewKept;
    if (p.virtual_alloc2(GetCurrentProcess(), addr, span, MEM_RESERVE | kReplacePlaceholder, PAGE_NOACCESS, nullptr, 0) != nullptr) {
      return CommitZeros(addr, span, writable);
    }
    VirtualFree(addr, 0, MEM_RELEASE);  // the placeholder itself
    Forget(addr);
    return Replaced::kLost;
  }
  if (!UnmapViewOfFile(addr)) return Replaced::kViewKept;
  // Views start on the allocation granularity, so the same range can be reserved again.
  if (VirtualAlloc(addr, span, MEM_RESERVE, PAGE_NOACCESS) != nullptr) return CommitZeros(addr, span, writable);
  Forget(addr);
  return Replaced::kLost;
}

void WarmUpAddressSpace() {
  PageSize();
  Probe();
  OwnedRanges();
}

void ReleaseRange(void* addr) {
  Locked locked;
  if (!Forget(addr)) return;
  if (!UnmapViewOfFile(addr)) VirtualFree(addr, 0, MEM_RELEASE);
}

}  // namespace gguf_mmap
