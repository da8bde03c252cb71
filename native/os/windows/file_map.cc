#include "os/file_map.h"

#include <cerrno>

#include "os/windows/address_space.h"
#include "os/windows/win32.h"

namespace gguf_mmap {
namespace {

Region::Identity IdentityOf(const BY_HANDLE_FILE_INFORMATION& info) {
  // FILETIME counts 100 ns from 1601; the identity counts nanoseconds from 1970.
  const uint64_t ticks = (static_cast<uint64_t>(info.ftLastWriteTime.dwHighDateTime) << 32) | info.ftLastWriteTime.dwLowDateTime;
  const uint64_t since_1970 = ticks >= 116444736000000000ull ? ticks - 116444736000000000ull : 0;
  return {info.dwVolumeSerialNumber, (static_cast<uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow,
          (static_cast<uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow, since_1970 * 100};
}

bool Fail(MapError* error, DWORD win32_error, const char* syscall, HANDLE file, const char* detail = nullptr) {
  *error = {ErrnoFromWin32(win32_error), syscall, detail};
  if (file != INVALID_HANDLE_VALUE) CloseHandle(file);
  return false;
}

}  // namespace

bool MapWholeFile(const char* path, MappedFile* out, MapError* error) {
  DWORD path_error = 0;
  const std::wstring wide = LongPath(path, &path_error);
  if (wide.empty()) return Fail(error, path_error, "open", INVALID_HANDLE_VALUE);
  // A directory opens only with FILE_FLAG_BACKUP_SEMANTICS, and fails as ACCESS_DENIED otherwise.
  const DWORD attributes = GetFileAttributesW(wide.c_str());
  if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) != 0) {
    *error = {EISDIR, "open", nullptr};
    return false;
  }
  // Shared for reading, writing and deleting, as a POSIX open is: other processes may read the
  // file, write it, rename it or replace it meanwhile (Windows itself refuses to shrink it while
  // it is mapped).
  HANDLE file = CreateFileW(wide.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                            OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) return Fail(error, GetLastError(), "open", INVALID_HANDLE_VALUE);
  if (GetFileType(file) != FILE_TYPE_DISK) {
    *error = {ENODEV, "mmap", "not a regular file"};
    CloseHandle(file);
    return false;
  }
  BY_HANDLE_FILE_INFORMATION info;
  if (!GetFileInformationByHandle(file, &info)) return Fail(error, GetLastError(), "fstat", file);
  out->file = reinterpret_cast<intptr_t>(file);
  out->identity = IdentityOf(info);
  out->size = static_cast<size_t>(out->identity.size);
  if (out->size == 0) return true;  // a mapping of length 0 is refused
  // Copy-on-write (FILE_MAP_COPY), as MAP_PRIVATE: a write into a view copies that page for this
  // process and never reaches the file. Windows charges such a view against the commit limit in
  // full; when that refuses it, the file is mapped read-only.
  out->copy_on_write = true;
  HANDLE section = CreateFileMappingW(file, nullptr, PAGE_WRITECOPY, 0, 0, nullptr);
  DWORD map_error = section == nullptr ? GetLastError() : 0;
  void* view = section != nullptr ? MapFileView(section, out->size, true, &map_error) : nullptr;
  if (view == nullptr && (map_error == ERROR_COMMITMENT_LIMIT || map_error == ERROR_NOT_ENOUGH_MEMORY)) {
    if (section != nullptr) CloseHandle(section);
    out->copy_on_write = false;
    section = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    map_error = section == nullptr ? GetLastError() : 0;
    view = section != nullptr ? MapFileView(section, out->size, false, &map_error) : nullptr;
  }
  // The view keeps the section alive.
  if (section != nullptr) CloseHandle(section);
  if (view == nullptr) return Fail(error, map_error, "mmap", file);
  out->addr = view;
  return true;
}

bool FileIdentity(intptr_t file, Region::Identity* now) {
  BY_HANDLE_FILE_INFORMATION info;
  if (!GetFileInformationByHandle(reinterpret_cast<HANDLE>(file), &info)) return false;
  *now = IdentityOf(info);
  return true;
}

void CloseFile(intptr_t file) { CloseHandle(reinterpret_cast<HANDLE>(file)); }

void UnmapRange(void* addr, size_t) { ReleaseRange(addr); }

}  // namespace gguf_mmap
