// The lifecycle of a Region, the same on every system; the system's half is in file_map.h.
#include "os/region.h"

#include <algorithm>
#include <cerrno>

#include "os/fault_guard.h"
#include "os/file_map.h"

namespace gguf_mmap {

std::atomic<int64_t> Region::live_count_{0};
std::mutex Region::registry_mutex_;
std::vector<Region*> Region::open_regions_;

namespace {

// The status word of a Region with no pages (an empty file): never set.
std::atomic<uint32_t> no_status{0};

}  // namespace

Region* Region::MapFile(const char* path, MapError* error, uint64_t owner) {
  MappedFile file;
  if (!MapWholeFile(path, &file, error)) return nullptr;
  if (file.size == 0) {
    // Nothing to map: an empty Region, which the parser then reports as a truncated file like
    // any other short one.
    Region* empty = new Region(nullptr, 0, file.file);
    empty->owner_ = owner;
    empty->identity_ = file.identity;
    empty->status_ = &no_status;
    std::lock_guard<std::mutex> lock(registry_mutex_);
    open_regions_.push_back(empty);  // for CloseOwnedBy (its file); PinContaining skips it
    return empty;
  }
  FaultGuard::Rearm();  // in front again if native code elsewhere replaced it since
  const int slot = FaultGuard::Acquire(file.addr, file.size, file.copy_on_write);
  if (slot < 0) {
    UnmapRange(file.addr, file.size);
    CloseFile(file.file);
    *error = {EMFILE, "mmap", "too many mapped files in this process"};
    return nullptr;
  }
  live_count_.fetch_add(1);
  Region* region = new Region(file.addr, file.size, file.file);
  region->identity_ = file.identity;
  region->copy_on_write_ = file.copy_on_write;
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
  return file_ != -1 && FileIdentity(file_, now);
}

void Region::DropFileLocked(bool zero_pages) {
  if (file_ != -1) {
    CloseFile(file_);
    file_ = -1;
  }
  if (!file_mapped_) return;
  file_mapped_ = false;
  live_count_.fetch_sub(1);
  // At the last holder's release nobody can point into the range any more: it is unmapped as it is.
  if (!zero_pages) return;
  // Zero pages in place of the file's: a pointer still held into the range (a view, or Node's
  // own zlib/fs/crypto work on one) reads zeros instead of faulting. A read-only mapping gets
  // read-only zero pages (never charged against commit); if even that fails, the file pages stay
  // mapped until the last holder lets go, rather than leaving a hole under live views.
  if (FaultGuard::ReplaceWithZeros(slot_) == FaultGuard::Zeroed::kRangeLost) range_lost_ = true;
}

void Region::CloseLocked(bool zero_pages) {
  if (closed_.exchange(true)) return;
  open_regions_.erase(std::remove(open_regions_.begin(), open_regions_.end(), this), open_regions_.end());
  if (pins_ == 0) DropFileLocked(zero_pages);
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

bool Region::MapsFile(uint64_t dev, uint64_t ino) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  for (const Region* region : open_regions_) {
    if (region->identity_.dev == dev && region->identity_.ino == ino) return true;
  }
  return false;
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
    if (--pins_ == 0 && closed_.load()) DropFileLocked(/*zero_pages=*/true);
  }
  Release();
}

void Region::Release() {
  if (holders_.fetch_sub(1) != 1) return;
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    CloseLocked(/*zero_pages=*/false);
  }
  // The slot first: once unmapped, the range may be handed to someone else.
  if (slot_ >= 0) FaultGuard::Free(slot_);
  // A range lost to another allocation (see FaultGuard::Zeroed) is not ours to give back.
  if (addr_ != nullptr && !range_lost_) UnmapRange(addr_, size_);
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
    case ENOSYS: return "ENOSYS";
    case EXDEV: return "EXDEV";
    case EBADF: return "EBADF";
    case ENOSPC: return "ENOSPC";
    case EFBIG: return "EFBIG";
    case EBUSY: return "EBUSY";
    default: return "EUNKNOWN";
  }
}

}  // namespace gguf_mmap
