// Windows: the lock Python's filelock takes there (msvcrt.locking of the file's first byte, a
// LockFile range lock), on the file opened for reading and writing, created if missing.
#include "os/file_lock.h"

#include <cerrno>
#include <io.h>

#include "os/windows/win32.h"

namespace gguf_mmap {

int TryLockFile(const char* path) {
  DWORD path_error = 0;
  const std::wstring wide = LongPath(path, &path_error);
  if (wide.empty()) return -ErrnoFromWin32(path_error);
  HANDLE file = CreateFileW(wide.c_str(), GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                            nullptr, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) return -ErrnoFromWin32(GetLastError());
  OVERLAPPED at{};  // offset 0
  if (!LockFileEx(file, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at)) {
    const DWORD error = GetLastError();
    CloseHandle(file);
    return error == ERROR_LOCK_VIOLATION || error == ERROR_IO_PENDING ? -EWOULDBLOCK : -ErrnoFromWin32(error);
  }
  // A C runtime descriptor, as the POSIX side returns: it owns the handle from here.
  const int fd = _open_osfhandle(reinterpret_cast<intptr_t>(file), 0);
  if (fd < 0) {
    CloseHandle(file);
    return -EMFILE;
  }
  return fd;
}

int UnlockFile(int fd) {
  HANDLE file = reinterpret_cast<HANDLE>(_get_osfhandle(fd));
  if (file == INVALID_HANDLE_VALUE) return -EBADF;
  OVERLAPPED at{};
  const int unlocked = UnlockFileEx(file, 0, 1, 0, &at) ? 0 : -ErrnoFromWin32(GetLastError());
  return _close(fd) == 0 ? unlocked : -EIO;
}

}  // namespace gguf_mmap
