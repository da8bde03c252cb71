// The per-system half of a Region (region.h): opening, identifying and mapping a whole file, and
// giving the address range back. Each system's folder implements it (posix/, windows/); the
// lifecycle around it (pins, close, release) is the same everywhere, in region.cc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "os/region.h"

namespace gguf_mmap {

// A file opened and mapped whole: private copy-on-write pages when the system commits them,
// else read-only. `file` is the open file (a descriptor or a handle), kept for FileIdentity.
struct MappedFile {
  void* addr = nullptr;  // nullptr for an empty file (nothing is mapped)
  size_t size = 0;
  bool copy_on_write = false;
  intptr_t file = -1;
  Region::Identity identity{};
};

// Opens `path` (UTF-8), refuses what is not a regular file and maps it whole. On failure returns
// false with `error` filled (errno values, whatever the system).
bool MapWholeFile(const char* path, MappedFile* out, MapError* error);

// What the open file is now; false if it cannot be read.
bool FileIdentity(intptr_t file, Region::Identity* now);

// Closes the open file (the mapping stays).
void CloseFile(intptr_t file);

// Gives the address range back, file pages or the zeros that replaced them (the last holder's
// release).
void UnmapRange(void* addr, size_t size);

}  // namespace gguf_mmap
