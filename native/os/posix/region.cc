#include "os/region.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os/fault_guard.h"

namespace gguf_mmap {

std::atomic<int64_t> Region::live_count_{0};
std::mutex Region::registry_mutex_;
std::vector<Region*> Region::open_regions_;

namespace {

// The status word of a Region with no pages (an empty file): never set.
std::atomic<uint32_t> no_status{0};

Region::Identity IdentityOf(const struct stat& st) {
#if defined(__APPLE__)
  const struct timespec& mtime = st.st_mtimespec;
#else
  const struct timespec& mtime = st.st_mtim;
#endif
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
          static_cast<uint64_t>(mtime.tv_sec) * 1000000000ull + static_cast<uint64_t>(mtime.tv_nsec)};
}

}  // namespace

Region* Region::MapFile(const char* path, MapError* error, uint64_t owner) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below anyway.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = {errno, "open", nullptr};
    return nullptr;
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
    return nullptr;
  }
  if (st.st_size == 0) {
    // Nothing to map (mmap refuses length 0): an empty Region, which the parser then reports as
    // a truncated file like any other short one.
    Region* empty = new Region(nullptr, 0, fd);
    empty->owner_ = owner;
    empty->identity_ = IdentityOf(st);
    empty->status_ = &no_status;
    std::lock_guard<std::mutex> lock(registry_mutex_);
    open_regions_.push_back(empty);  // for CloseOwnedBy (its fd); PinContaining skips it
    return empty;
  }
  size_t size = static_cast<size_t>(st.st_size);
  // Private and writable: JavaScript cannot make a typed array read-only, so a write into a view
  // must not fault; it copies that page for this process alone and never reaches the file.
  // Pages nobody writes stay the page cache's, shared with every other process reading the file.
  bool copy_on_write = true;
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  if (addr == MAP_FAILED && errno == ENOMEM) {
    // Strict overcommit charges a writable private mapping in full: fall back to read-only.
    copy_on_write = false;
    addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  if (addr == MAP_FAILED) {
    *error = {errno, "mmap", nullptr};
    close(fd);
    return nullptr;
  }
  const int slot = FaultGuard::Acquire(addr, size, copy_on_write);
  if (slot < 0) {
    munmap(addr, size);
    close(fd);
    *error = {EMFILE, "mmap", "too many mapped files in this process"};
    return nullptr;
  }
  live_count_.fetch_add(1);
  Region* region = new Region(addr, size, fd);
  region->identity_ = IdentityOf(st);
  region->copy_on_write_ = copy_on_write;
  region->slot_ = slot;
  region->owner_ = owner;
  region->status_ = FaultGuard::Status(slot);
  region->file_mapped_ = true;
  std::lock_guard<std::mutex> lock(registry_mutex_);
  open_regions_.push_back(region);
  return region;
}

bool Region::CurrentIdentity(Identity* now) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  struct stat st;
  if (fd_ < 0 || fstat(fd_, &st) != 0) return false;
  *now = IdentityOf(st);
  return true;
}

void Region::DropFileLocked() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (!file_mapped_) return;
  file_mapped_ = false;
  // Zero pages in place of the file's: a pointer still held into the range (a view, or Node's
  // own zlib/fs/crypto work on one) reads zeros instead of faulting. A read-only mapping gets
  // read-only zero pages (never charged against commit); if even that fails, the file pages stay
  // mapped until the last holder lets go, rather than leaving a hole under live views.
  // Replaced first, then no longer guarded: a fault on the range in between is still ours.
  if (ReplaceWithZeros(addr_, size_, copy_on_write_)) FaultGuard::Disarm(slot_);
  live_count_.fetch_sub(1);
}

void Region::CloseLocked() {
  if (closed_.exchange(true)) return;
  open_regions_.erase(std::remove(open_regions_.begin(), open_regions_.end(), this), open_regions_.end());
  if (pins_ == 0) DropFileLocked();
}

void Region::Close() {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  CloseLocked();
}

void Region::CloseOwnedBy(uint64_t owner) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  // Every Region in open_regions_ is alive: the last Release() closes (and so removes) it first,
  // under this mutex, before freeing it.
  std::vector<Region*> owned;
  for (Region* region : open_regions_) {
    if (region->owner_ == owner) owned.push_back(region);
  }
  for (Region* region : owned) region->CloseLocked();
}

Region* Region::PinContaining(const void* p, size_t len) {
  const uint8_t* start = static_cast<const uint8_t*>(p);
  std::lock_guard<std::mutex> lock(registry_mutex_);
  for (Region* region : open_regions_) {
    if (region->size_ == 0) continue;  // an empty file: nothing to pin
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
    if (--pins_ == 0 && closed_.load()) DropFileLocked();
  }
  Release();
}

void Region::Release() {
  if (holders_.fetch_sub(1) != 1) return;
  Close();
  // The slot first: once unmapped, the range may be handed to someone else.
  if (slot_ >= 0) FaultGuard::Free(slot_);
  if (addr_ != nullptr) munmap(addr_, size_);
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
    case ENOTSUP: return "ENOTSUP";
    default: return "EUNKNOWN";
  }
}

}  // namespace gguf_mmap
