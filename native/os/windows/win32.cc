#include "os/windows/win32.h"

#include <cerrno>

namespace gguf_mmap {

int ErrnoFromWin32(DWORD error) {
  switch (error) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE:
    case ERROR_INVALID_NAME:
    case ERROR_BAD_NETPATH:
    case ERROR_BAD_PATHNAME:
      return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_NETWORK_ACCESS_DENIED:
      return EACCES;
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
    case ERROR_USER_MAPPED_FILE:
      return EBUSY;
    case ERROR_DIRECTORY:
      return ENOTDIR;
    case ERROR_FILENAME_EXCED_RANGE:
      return ENAMETOOLONG;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
    case ERROR_COMMITMENT_LIMIT:
      return ENOMEM;
    case ERROR_TOO_MANY_OPEN_FILES:
      return EMFILE;
    case ERROR_INVALID_PARAMETER:
      return EINVAL;
    case ERROR_NOT_SUPPORTED:
    case ERROR_CALL_NOT_IMPLEMENTED:
      return ENOTSUP;
    case ERROR_WORKING_SET_QUOTA:
      return ENOMEM;
    default:
      return EIO;
  }
}

std::wstring LongPath(const char* utf8, DWORD* error) {
  const int length = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, nullptr, 0);
  if (length <= 0) {
    *error = ERROR_INVALID_NAME;
    return {};
  }
  std::wstring wide(static_cast<size_t>(length), L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, &wide[0], length);
  // Already in the \\?\ or \\.\ namespace: taken as given.
  if (wide.compare(0, 4, L"\\\\?\\") == 0 || wide.compare(0, 4, L"\\\\.\\") == 0) {
    wide.resize(static_cast<size_t>(length) - 1);
    return wide;
  }
  // Relative paths and forward slashes resolved first: the \\?\ form takes neither.
  const DWORD full_length = GetFullPathNameW(wide.c_str(), 0, nullptr, nullptr);
  if (full_length == 0) {
    *error = GetLastError();
    return {};
  }
  std::wstring full(full_length, L'\0');
  const DWORD written = GetFullPathNameW(wide.c_str(), full_length, &full[0], nullptr);
  if (written == 0 || written >= full_length) {
    *error = written == 0 ? GetLastError() : ERROR_FILENAME_EXCED_RANGE;
    return {};
  }
  full.resize(written);
  if (full.compare(0, 2, L"\\\\") == 0) return L"\\\\?\\UNC\\" + full.substr(2);
  return L"\\\\?\\" + full;
}

}  // namespace gguf_mmap
