// Lost pages of a mapped file, turned from a fatal fault into zeros and a flag.
//
// A file truncated while mapped makes every read of a page past its new end fault (SIGBUS on
// Linux and macOS; on Windows, which refuses to shrink a mapped file, an IN_PAGE_ERROR from a
// failing network or removable drive, or under wine an ACCESS_VIOLATION). The handler here takes
// such faults for addresses inside this addon's mappings only: it maps zero pages over the rest
// of the mapping, so the read that faulted resumes and sees zeros, and it sets the mapping's
// status word, which the JS layer checks before every access (FILE_CHANGED). Any other fault goes
// to the handler that was installed before, or kills the process as usual. The addon is never
// unloaded (-z nodelete, RTLD_NODELETE, a pinned module): a worker that loaded it and exits must
// not leave the process's handler pointing at unmapped code.
//
// The POSIX handler takes no locks and allocates nothing: mappings live in a fixed table of
// atomic slots.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gguf_mmap {

// Bits of a mapping's status word.
constexpr uint32_t kStatusPagesLost = 1;  // a read hit a page the file no longer has

// One table slot per Region, from mapping to the last holder's release.
class FaultGuard {
 public:
  // Installs the SIGBUS handler once per process (later calls do nothing). False if sigaction
  // failed; mappings then still work, but a truncated file kills the process as it always did.
  static bool Install();
  // Puts the handler back in front if something replaced it since (Node installs its own for a
  // process.on('SIGBUS') listener and restores the default when the listener goes), keeping the
  // replacement as the handler that signals not ours are handed to. False if it could not.
  static bool Rearm();

  // Takes a free slot for the mapping [begin, begin + length) (`writable`: its protection);
  // -1 when the table is full.
  static int Acquire(void* begin, size_t length, bool writable);
  // What ReplaceWithZeros did.
  enum class Zeroed {
    kYes,        // the range reads zeros now
    kNo,         // the system refused: the file pages stay mapped
    kRangeLost,  // Windows without placeholders only: the view was unmapped, and something else
                 // took the range before it could be reserved again; it is no longer ours to free
  };
  // Replaces the slot's range with zero pages in place, readable (and writable if the slot is):
  // the address range stays valid for whoever still holds a pointer into it, and faults there no
  // longer mean lost pages.
  static Zeroed ReplaceWithZeros(int slot);
  // The slot is free for another mapping.
  static void Free(int slot);
  // The slot's status word; stays valid for the life of the process.
  static std::atomic<uint32_t>* Status(int slot);

  static constexpr int kSlots = 65536;  // vm.max_map_count's default: no process maps more files
};

}  // namespace gguf_mmap
