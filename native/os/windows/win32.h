// What every Windows file of the OS layer needs: Win32 error codes as the errno values the rest
// of the addon reports (as libuv maps them for Node's own fs errors), and UTF-8 paths as UTF-16
// paths that may exceed MAX_PATH.
#pragma once

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <string>

namespace gguf_mmap {

// ENOENT for ERROR_FILE_NOT_FOUND, and so on; EIO for what has no nearer errno.
int ErrnoFromWin32(DWORD error);

// The absolute form of a UTF-8 path with the \\?\ prefix (\\?\UNC\ for a share), so that no
// MAX_PATH limit applies. Empty with `*error` set when it cannot be converted.
std::wstring LongPath(const char* utf8, DWORD* error);

}  // namespace gguf_mmap
