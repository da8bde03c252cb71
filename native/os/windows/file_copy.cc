#include "os/file_copy.h"

#include <cerrno>

namespace gguf_mmap {

// Windows has no copy of a range between two open files (CopyFileEx copies whole files; block
// cloning needs ReFS and FSCTL_DUPLICATE_EXTENTS_TO_FILE): the caller copies through memory.
int64_t CopyFileRange(int, uint64_t, int, uint64_t, uint64_t) { return -ENOSYS; }

}  // namespace gguf_mmap
