#include "os/page_cache.h"
#include "os/page_span.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace gguf_mmap {
namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

PageSpan Pages(const uint8_t* begin, size_t length) { return PagesOf(begin, length, PageSize()); }

}  // namespace

int64_t ResidentBytes(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const size_t page = PageSize();
  const PageSpan span = Pages(begin, length);
  // In slices, so the vector stays small whatever the range (64 MiB of pages per call).
  const size_t slice_pages = 16384;
  std::vector<unsigned char> flags(slice_pages);
  int64_t resident_pages = 0;
  for (size_t at = 0; at < span.length; at += slice_pages * page) {
    const size_t bytes = span.length - at < slice_pages * page ? span.length - at : slice_pages * page;
#if defined(__APPLE__)
    char* vec = reinterpret_cast<char*>(flags.data());  // macOS declares the vector as char*
#else
    unsigned char* vec = flags.data();
#endif
    if (mincore(span.start + at, bytes, vec) != 0) return -errno;
    for (size_t i = 0; i < bytes / page; i++) resident_pages += flags[i] & 1;
  }
  // Whole pages: the first and last may hold bytes outside the range; count at most its length.
  const int64_t resident = resident_pages * static_cast<int64_t>(page);
  return resident < static_cast<int64_t>(length) ? resident : static_cast<int64_t>(length);
}

int Advise(const uint8_t* begin, size_t length, const char* advice) {
  int flag;
  if (std::strcmp(advice, "normal") == 0) flag = MADV_NORMAL;
  else if (std::strcmp(advice, "random") == 0) flag = MADV_RANDOM;
  else if (std::strcmp(advice, "sequential") == 0) flag = MADV_SEQUENTIAL;
  else if (std::strcmp(advice, "willneed") == 0) flag = MADV_WILLNEED;
  else if (std::strcmp(advice, "dontneed") == 0) flag = MADV_DONTNEED;
#ifdef MADV_HUGEPAGE
  // File pages read after this come in 2 MiB folios where the filesystem makes them, and are
  // mapped by one page-table entry each (the mapping is 2 MiB-aligned, file_map.cc): fewer TLB misses.
  else if (std::strcmp(advice, "hugepage") == 0) flag = MADV_HUGEPAGE;
#else
  else if (std::strcmp(advice, "hugepage") == 0) return -ENOTSUP;
#endif
  else return -EINVAL;
  if (length == 0) return 0;
  const PageSpan span = Pages(begin, length);
  return madvise(span.start, span.length, flag) == 0 ? 0 : -errno;
}

int Lock(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const PageSpan span = Pages(begin, length);
  return mlock(span.start, span.length) == 0 ? 0 : -errno;
}

int Unlock(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const PageSpan span = Pages(begin, length);
  return munlock(span.start, span.length) == 0 ? 0 : -errno;
}

const char* LockLimitHint() { return "locked memory is limited by RLIMIT_MEMLOCK: see `ulimit -l`, or grant CAP_IPC_LOCK"; }

int Populate(const uint8_t* begin, size_t length) {
  if (length == 0) return 0;
  const PageSpan span = Pages(begin, length);
#ifdef MADV_POPULATE_READ
  if (madvise(span.start, span.length, MADV_POPULATE_READ) == 0) return 0;
  if (errno != EINVAL) return -errno;  // EINVAL: a kernel before 5.14
#endif
  // Read-ahead first, then one byte per page, which faults each page in.
  madvise(span.start, span.length, MADV_WILLNEED);
  const size_t page = PageSize();
  volatile uint8_t sink = 0;
  for (size_t at = 0; at < span.length; at += page) sink = sink + span.start[at];
  return 0;
}

int EvictFile(const char* path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are evicted.
  const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -errno;
  struct stat st;
  int error = 0;
  if (fstat(fd, &st) != 0) error = errno;
  else if (!S_ISREG(st.st_mode)) error = S_ISDIR(st.st_mode) ? EISDIR : ENODEV;
  if (error != 0) {
    close(fd);
    return -error;
  }
#if defined(__APPLE__)
  // macOS has no call that drops a file's clean cached pages (F_NOCACHE only stops caching new
  // reads through this descriptor): say so rather than pretend.
  close(fd);
  return -ENOTSUP;
#else
  // Dirty pages cannot be dropped: write them back first.
  fdatasync(fd);
  const int result = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return -result;
#endif
}

}  // namespace gguf_mmap
