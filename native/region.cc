#include "region.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gguf_mmap {

std::atomic<int64_t> Region::live_count_{0};
std::mutex Region::registry_mutex_;
std::vector<Region*> Region::open_regions_;

static Region::Identity IdentityOf(const struct stat& st) {
#if defined(__APPLE__)
  const struct timespec& mtime = st.st_mtimespec;
#else
  const struct timespec& mtime = st.st_mtim;
#endif
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<uint64_t>(mtime.tv_sec) * 1000000000ull + static_cast<uint64_t>(mtime.tv_nsec)};
}

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
    // Nothing to map (mmap refuses length 0): an empty Region, which the parser then reports as
    // a truncated file like any other short one.
    close(fd);
    Region* empty = new Region(nullptr, 0);
    empty->pages_mapped_ = false;
    empty->identity_ = IdentityOf(st);
    return empty;
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
  Region* region = new Region(addr, size);
  region->identity_ = IdentityOf(st);
  std::lock_guard<std::mutex> lock(registry_mutex_);
  open_regions_.push_back(region);
  return region;
}

void Region::MunmapLocked() {
  if (!pages_mapped_) return;
  pages_mapped_ = false;
  munmap(addr_, size_);
  live_count_.fetch_sub(1);
}

void Region::Unmap() {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  if (unmapped_.exchange(true)) return;
  open_regions_.erase(std::remove(open_regions_.begin(), open_regions_.end(), this), open_regions_.end());
  if (pins_ == 0) MunmapLocked();
}

Region* Region::PinContaining(const void* p, size_t len) {
  const uint8_t* start = static_cast<const uint8_t*>(p);
  std::lock_guard<std::mutex> lock(registry_mutex_);
  for (Region* region : open_regions_) {
    const uint8_t* base = region->data();
    if (start >= base && len <= region->size_ && static_cast<size_t>(start - base) <= region->size_ - len) {
      region->pins_++;
      region->Retain();
      return region;
    }
  }
  return nullptr;
}

void Region::Unpin() {
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    if (--pins_ == 0 && unmapped_.load()) MunmapLocked();
  }
  Release();
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
