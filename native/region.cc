#include "region.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gguf_mmap {

std::atomic<int64_t> Region::live_count_{0};

Region* Region::MapFile(const char* path, MapError* error) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below anyway.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = {errno, "open", nullptr};
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = {errno, "fstat", nullptr};
    close(fd);
    return nullptr;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = {EISDIR, "open", nullptr};
    close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = {ENODEV, "mmap", "not a regular file"};
    close(fd);
    return nullptr;
  }
  if (st.st_size == 0) {
    *error = {EINVAL, "mmap", "file is empty"};
    close(fd);
    return nullptr;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* addr = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int mmap_errno = errno;
  close(fd);  // the mapping keeps its own reference to the file
  if (addr == MAP_FAILED) {
    *error = {mmap_errno, "mmap", nullptr};
    return nullptr;
  }
  live_count_.fetch_add(1);
  return new Region(addr, size);
}

void Region::Unmap() {
  if (unmapped_.exchange(true)) return;
  munmap(addr_, size_);
  live_count_.fetch_sub(1);
}

void Region::Release() {
  if (holders_.fetch_sub(1) != 1) return;
  Unmap();
  delete this;
}

const char* ErrnoName(int errnum) {
  switch (errnum) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EISDIR: return "EISDIR";
    case ENOTDIR: return "ENOTDIR";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EOVERFLOW: return "EOVERFLOW";
    case EIO: return "EIO";
    case ENXIO: return "ENXIO";
    default: return "EUNKNOWN";
  }
}

}  // namespace gguf_mmap
