#include "os/memory.h"

#include "os/windows/win32.h"

namespace gguf_mmap {

// Large pages need a privilege services rarely have: ordinary pages, committed at once.
void* AllocatePages(size_t bytes, bool) { return VirtualAlloc(nullptr, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE); }

void FreePages(void* p, size_t) { VirtualFree(p, 0, MEM_RELEASE); }

// MEM_RESET: the contents may be dropped instead of written to the page file; the pages stay
// committed and usable.
void DiscardPages(void* p, size_t bytes) { VirtualAlloc(p, bytes, MEM_RESET, PAGE_READWRITE); }

// Large pages need that privilege too, and cannot be asked for over memory already allocated.
void AdviseHugePages(void*, size_t) {}

}  // namespace gguf_mmap
