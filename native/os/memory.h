// Anonymous pages for native code's own outputs (dequantized floats handed to JS). Pure OS code.
#pragma once

#include <cstddef>

namespace gguf_mmap {

// Zero-filled, readable and writable pages, asking for huge pages when `huge` (the first write
// then faults once per 2 MiB); nullptr on failure.
void* AllocatePages(size_t bytes, bool huge);
// Gives the pages back.
void FreePages(void* p, size_t bytes);
// The contents are no longer needed; the system may take the pages back lazily (the range stays
// usable and reads zeros or the old bytes).
void DiscardPages(void* p, size_t bytes);

// Asks for huge pages in the whole 2 MiB pages inside [p, p + bytes) of memory allocated
// elsewhere (a large ArrayBuffer's, freshly mapped and not yet written): its first writes then
// fault once per 2 MiB. Contents are unchanged; pages already there stay as they are; where the
// system has no such advice, nothing.
void AdviseHugePages(void* p, size_t bytes);

}  // namespace gguf_mmap
