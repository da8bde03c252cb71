#include "os/file_lock.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace gguf_mmap {

int TryLockFile(const char* path) {
  // O_NONBLOCK: a FIFO planted at the lock's path must not make the open wait.
  const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0644);
  if (fd < 0) return -errno;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno == EWOULDBLOCK ? EWOULDBLOCK : errno;
    close(fd);
    return -error;
  }
  return fd;
}

int UnlockFile(int fd) {
  const int unlocked = flock(fd, LOCK_UN) == 0 ? 0 : -errno;
  return close(fd) == 0 ? unlocked : -errno;
}

}  // namespace gguf_mmap
