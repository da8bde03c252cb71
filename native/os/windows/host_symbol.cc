#include "os/host_symbol.h"

#include "os/windows/win32.h"

namespace gguf_mmap {

// Node-API functions are exported by the executable (node.exe) itself.
void* HostSymbol(const char* name) {
  return reinterpret_cast<void*>(GetProcAddress(GetModuleHandleW(nullptr), name));
}

}  // namespace gguf_mmap
