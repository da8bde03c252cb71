// Copying a byte range from one open file to another inside the kernel (copy_file_range), so that
// a filesystem that shares blocks (a reflink on XFS, Btrfs) or keeps holes does so, and nothing
// passes through user memory. Pure OS code: no Node-API here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gguf_mmap {

// Copies `length` bytes from `in_fd` at `in_offset` to `out_fd` at `out_offset`; holes of the input
// are skipped, not written (the caller sets the output's length, which leaves them as holes).
// Returns the bytes copied or skipped (fewer when the input ends before `in_offset + length`, 0
// at or past its end), or -errno when nothing was: -ENOSYS where the system has no such call (the caller then copies through memory).
int64_t CopyFileRange(int in_fd, uint64_t in_offset, int out_fd, uint64_t out_offset, uint64_t length);

}  // namespace gguf_mmap
