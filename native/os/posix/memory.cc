#include "os/memory.h"

#include <sys/mman.h>

namespace gguf_mmap {

void* AllocatePages(size_t bytes, bool huge) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
#else
  (void)huge;
#endif
  return p;
}

void FreePages(void* p, size_t bytes) { munmap(p, bytes); }

void DiscardPages(void* p, size_t bytes) {
#ifdef MADV_FREE
  madvise(p, bytes, MADV_FREE);
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace gguf_mmap
