// A private, copy-on-write memory mapping of one whole file, shared by the JS objects that point
// into it. Pure OS code: no Node-API here, so the lifecycle rules can be read in one place.
//
// Lifecycle, in two steps, so that no pointer anyone holds into the range can ever fault:
//   1. Close(): the file's pages are replaced by zero pages in place (or at the last Unpin() while
//      native work reads them). The file is let go; the address range stays valid.
//   2. The last holder's Release(): the address range is unmapped and the Region freed.
// Holders are the JS Mapping object, every external ArrayBuffer over the range and every pin.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gguf_mmap {

struct MapError {
  int errnum;           // errno value of the failure (a system's own codes are translated)
  const char* syscall;  // "open", "fstat" or "mmap" (the POSIX names, on every system)
  const char* detail;   // optional message replacing strerror(errnum)
};

class Region {
 public:
  // Maps `path` whole, for the JS environment `owner` (see CloseOwnedBy). On failure returns
  // nullptr and fills `error`.
  static Region* MapFile(const char* path, MapError* error, uint64_t owner = 0);

  // What the file is: device, inode, size and modification time (nanoseconds since the epoch).
  struct Identity {
    uint64_t dev;
    uint64_t ino;
    uint64_t size;
    uint64_t mtime_ns;
  };
  // As it was when mapped.
  const Identity& identity() const { return identity_; }
  // As it is now, read from the mapped file itself (not its path); false after close.
  bool CurrentIdentity(Identity* now);

  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }
  bool closed() const { return closed_.load(); }
  // Writable private pages: a write into a view changes this process's copy only. False when the
  // kernel refused to commit that much memory (strict overcommit) and the mapping is read-only.
  bool copy_on_write() const { return copy_on_write_; }
  // Bit flags (fault_guard.h), set from the SIGBUS handler; valid while the Region lives.
  std::atomic<uint32_t>* status() { return status_; }

  void Retain() { holders_.fetch_add(1); }
  // Drops one hold; the last one closes (if still open), unmaps and frees the Region.
  void Release();
  // Lets go of the file: its pages become zeros now, or at the last Unpin() if native code is
  // reading them. Idempotent.
  void Close();
  // Close() of every open Region mapped for `owner`, whoever still holds it: an environment's
  // teardown lets go of its files even where the runtime never runs the finalizers of the JS
  // objects holding them (Deno, Bun). The address ranges stay until their last holder's Release().
  static void CloseOwnedBy(uint64_t owner);

  // For native work off the JS thread: finds the open Region holding [p, p + len) and pins it, so
  // a close() meanwhile takes effect only at the matching Unpin(). Returns nullptr when no open
  // Region holds those bytes (ordinary memory).
  static Region* PinContaining(const void* p, size_t len);
  void Unpin();

  // Regions whose file is still mapped, across every thread of the process.
  static int64_t LiveCount() { return live_count_.load(); }
  // Whether an open Region (any thread's) maps the file with this device and inode: the tools
  // that rewrite a file refuse one this process still reads.
  static bool MapsFile(uint64_t dev, uint64_t ino);

 private:
  Region(void* addr, size_t size, intptr_t file) : addr_(addr), size_(size), file_(file) {}
  ~Region() = default;

  // `zero_pages`: replace the file's pages with zeros (false only at the last holder's release).
  void DropFileLocked(bool zero_pages);
  void CloseLocked(bool zero_pages = true);

  void* addr_;
  size_t size_;
  intptr_t file_;  // descriptor or handle (file_map.h), kept for CurrentIdentity(); closed with the file pages
  int slot_ = -1;
  uint64_t owner_ = 0;
  bool copy_on_write_ = false;
  Identity identity_{};
  std::atomic<uint32_t>* status_;
  std::atomic<uint32_t> holders_{1};
  std::atomic<bool> closed_{false};  // no new JS or native access
  uint32_t pins_ = 0;                // guarded by registry_mutex_
  bool file_mapped_ = false;         // guarded by registry_mutex_
  bool range_lost_ = false;          // guarded by registry_mutex_; see FaultGuard::Zeroed
  static std::atomic<int64_t> live_count_;
  static std::mutex registry_mutex_;
  static std::vector<Region*> open_regions_;  // guarded by registry_mutex_
};

// "ENOENT" for ENOENT, and so on for the errors a file open can give.
const char* ErrnoName(int errnum);

}  // namespace gguf_mmap
