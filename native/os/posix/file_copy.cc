#include "os/file_copy.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gguf_mmap {

#if defined(__linux__)
namespace {

// [in, in + length) of in_fd to out_fd at out, all of it (copy_file_range stops at will).
int64_t CopyAll(int in_fd, off64_t in, int out_fd, off64_t out, uint64_t length) {
  uint64_t done = 0;
  while (done < length) {
    // At most 1 GiB per call: the kernel caps a call near 2 GiB anyway.
    const size_t chunk = length - done < (1u << 30) ? static_cast<size_t>(length - done) : (1u << 30);
    const ssize_t n = copy_file_range(in_fd, &in, out_fd, &out, chunk, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;  // the input ended
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
}

}  // namespace
#endif

int64_t CopyFileRange(int in_fd, uint64_t in_offset, int out_fd, uint64_t out_offset, uint64_t length) {
#if defined(__linux__)
  // Extent by extent (SEEK_DATA / SEEK_HOLE): holes in the input stay holes in the output, as cp
  // keeps them, where the filesystem says where they are. Never past the input's end: SEEK_DATA
  // says ENXIO both for a trailing hole and past the end, so the end is the file's size.
  struct stat st;
  if (fstat(in_fd, &st) != 0) return -errno;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (in_offset >= size) return 0;
  const uint64_t end = in_offset + length < size ? in_offset + length : size;
  uint64_t pos = in_offset;
  while (pos < end) {
    off64_t data = lseek64(in_fd, static_cast<off64_t>(pos), SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // no data past pos: the rest is a hole
      data = static_cast<off64_t>(pos);  // no hole information: all of it is data
    }
    if (static_cast<uint64_t>(data) >= end) break;
    off64_t hole = lseek64(in_fd, data, SEEK_HOLE);
    if (hole < 0 || static_cast<uint64_t>(hole) > end) hole = static_cast<off64_t>(end);
    const uint64_t extent = static_cast<uint64_t>(hole - data);
    const int64_t n = CopyAll(in_fd, data, out_fd, static_cast<off64_t>(out_offset + (static_cast<uint64_t>(data) - in_offset)), extent);
    if (n < 0) return pos == in_offset ? n : static_cast<int64_t>(pos - in_offset);
    if (static_cast<uint64_t>(n) < extent) return static_cast<int64_t>(static_cast<uint64_t>(data) + n - in_offset);
    pos = static_cast<uint64_t>(hole);
  }
  // Holes count as copied: the caller sets the output's length, which makes them.
  return static_cast<int64_t>(end - in_offset);
#else
  (void)in_fd, (void)in_offset, (void)out_fd, (void)out_offset, (void)length;
  return -ENOSYS;  // macOS has no range copy between two files (fcopyfile copies whole files)
#endif
}

}  // namespace gguf_mmap
