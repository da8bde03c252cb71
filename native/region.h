// A read-only memory mapping of one whole file, shared by the JS objects that point into it.
// Pure OS code: no Node-API here, so the lifecycle rules can be read in one place.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gguf_mmap {

struct MapError {
  int errnum;           // errno value from the failing call
  const char* syscall;  // "open", "fstat" or "mmap"
  const char* detail;   // optional message replacing strerror(errnum)
};

// A Region is unmapped exactly once: by Unmap() (explicit close) or when its last holder releases
// it, whichever comes first. Holders are the JS Mapping object and every external ArrayBuffer.
class Region {
 public:
  // Maps `path` whole, read-only. On failure returns nullptr and fills `error`.
  static Region* MapFile(const char* path, MapError* error);

  // What the file was when it was mapped, for GgufFile.verify(): device, inode, size and
  // modification time (nanoseconds since the epoch).
  struct Identity {
    uint64_t dev;
    uint64_t ino;
    uint64_t mtime_ns;
  };
  const Identity& identity() const { return identity_; }

  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }
  bool unmapped() const { return unmapped_.load(); }

  void Retain() { holders_.fetch_add(1); }
  // Drops one hold; the last one unmaps (if still mapped) and frees the Region.
  void Release();
  // Unmaps now, or at the last Unpin() if native code is reading it. Callers must first make
  // every JS view unreachable or detached.
  void Unmap();

  // For native work off the JS thread: finds the open Region holding [p, p + len) and pins it, so
  // a close() meanwhile marks it closed at once but unmaps only at the matching Unpin(). Returns
  // nullptr when no open Region holds those bytes (ordinary memory).
  static Region* PinContaining(const void* p, size_t len);
  void Unpin();

  // Regions mapped and not yet unmapped, across every thread of the process.
  static int64_t LiveCount() { return live_count_.load(); }

 private:
  Region(void* addr, size_t size) : addr_(addr), size_(size) {}
  ~Region() = default;

  void MunmapLocked();

  void* addr_;
  size_t size_;
  Identity identity_{};
  std::atomic<uint32_t> holders_{1};
  std::atomic<bool> unmapped_{false};  // closed: no new JS or native access
  uint32_t pins_ = 0;                  // guarded by registry_mutex_
  bool pages_mapped_ = true;           // guarded by registry_mutex_
  static std::atomic<int64_t> live_count_;
  static std::mutex registry_mutex_;
  static std::vector<Region*> open_regions_;  // guarded by registry_mutex_
};

// "ENOENT" for ENOENT, and so on for the errors a file open can give.
const char* ErrnoName(int errnum);

}  // namespace gguf_mmap
