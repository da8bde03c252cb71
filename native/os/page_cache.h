// The page cache under the caller's control, for ranges of one mapping: how much is resident
// (mincore), access-pattern advice (madvise), keeping pages resident (mlock), bringing them in
// (MADV_POPULATE_READ, else a read of one byte per page), and evicting a file's clean pages
// (posix_fadvise; -ENOTSUP on macOS, which has no such call), for cold-start measurements. Pure OS code: no Node-API here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gguf_mmap {

// Bytes of [begin, begin + length) whose pages are in memory, counted by page; -errno on failure.
int64_t ResidentBytes(const uint8_t* begin, size_t length);

// madvise over the pages of the range. `advice` is "normal", "random", "sequential", "willneed"
// or "dontneed"; returns 0, -EINVAL for another name, or -errno.
int Advise(const uint8_t* begin, size_t length, const char* advice);

// mlock / munlock over the pages of the range; 0 or -errno.
int Lock(const uint8_t* begin, size_t length);
int Unlock(const uint8_t* begin, size_t length);
// What bounds Lock(), for its error message.
const char* LockLimitHint();

// Faults the pages of the range in (readable), from a pool thread; 0 or -errno.
int Populate(const uint8_t* begin, size_t length);

// Writes back and drops the clean cached pages of the file at `path` (pages mapped by a process
// stay); 0 or -errno.
int EvictFile(const char* path);

}  // namespace gguf_mmap
