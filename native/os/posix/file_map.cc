#include "os/file_map.h"

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gguf_mmap {
namespace {

Region::Identity IdentityOf(const struct stat& st) {
#if defined(__APPLE__)
  const struct timespec& mtime = st.st_mtimespec;
#else
  const struct timespec& mtime = st.st_mtim;
#endif
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
          static_cast<uint64_t>(mtime.tv_sec) * 1000000000ull + static_cast<uint64_t>(mtime.tv_nsec)};
}

// Linux maps file pages by 2 MiB page-table entries only where the address and the file offset
// agree modulo 2 MiB: files of 2 MiB and more are mapped at a 2 MiB-aligned address where one is
// free, so that { hugePages: true } can take effect. The address is found by reserving room to
// spare and giving it all back; the file is then mapped there with MAP_FIXED_NOREPLACE, which
// fails rather than replace a mapping another thread made meanwhile (and MAP_FIXED is never
// used: a failed MAP_FIXED may already have unmapped what was there).
void* MapAligned(size_t size, int prot, int flags, int fd) {
#ifdef __linux__
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
  constexpr size_t kHuge = size_t{2} << 20;
  if (size >= kHuge && size <= SIZE_MAX - kHuge) {
    void* reserved = mmap(nullptr, size + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved != MAP_FAILED) {
      const uintptr_t aligned = (reinterpret_cast<uintptr_t>(reserved) + kHuge - 1) & ~(uintptr_t{kHuge} - 1);
      munmap(reserved, size + kHuge);
      // A kernel before 4.17 takes the flag as a hint only: the mapping may land elsewhere.
      void* addr = mmap(reinterpret_cast<void*>(aligned), size, prot, flags | MAP_FIXED_NOREPLACE, fd, 0);
      if (addr != MAP_FAILED || errno != EEXIST) return addr;
    }
  }
#endif
  return mmap(nullptr, size, prot, flags, fd, 0);
}

}  // namespace

bool MapWholeFile(const char* path, MappedFile* out, MapError* error) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below anyway.
  const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = {errno, "open", nullptr};
    return false;
  }
  struct stat st;
  int failure = 0;
  const char* syscall = "fstat";
  const char* detail = nullptr;
  if (fstat(fd, &st) != 0) {
    failure = errno;
  } else if (S_ISDIR(st.st_mode)) {
    failure = EISDIR, syscall = "open";
  } else if (!S_ISREG(st.st_mode)) {
    failure = ENODEV, syscall = "mmap", detail = "not a regular file";
  }
  if (failure != 0) {
    *error = {failure, syscall, detail};
    close(fd);
    return false;
  }
  out->file = fd;
  out->identity = IdentityOf(st);
  out->size = static_cast<size_t>(st.st_size);
  if (out->size == 0) return true;  // mmap refuses length 0
  // Private and writable: JavaScript cannot make a typed array read-only, so a write into a view
  // must not fault; it copies that page for this process alone and never reaches the file.
  // Pages nobody writes stay the page cache's, shared with every other process reading the file.
  out->copy_on_write = true;
  void* addr = MapAligned(out->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd);
  if (addr == MAP_FAILED && errno == ENOMEM) {
    // Strict overcommit charges a writable private mapping in full: fall back to read-only.
    out->copy_on_write = false;
    addr = MapAligned(out->size, PROT_READ, MAP_PRIVATE, fd);
  }
  if (addr == MAP_FAILED) {
    *error = {errno, "mmap", nullptr};
    close(fd);
    return false;
  }
  out->addr = addr;
  return true;
}

bool FileIdentity(intptr_t file, Region::Identity* now) {
  struct stat st;
  if (fstat(static_cast<int>(file), &st) != 0) return false;
  *now = IdentityOf(st);
  return true;
}

void CloseFile(intptr_t file) { close(static_cast<int>(file)); }

void UnmapRange(void* addr, size_t size) { munmap(addr, size); }

}  // namespace gguf_mmap
