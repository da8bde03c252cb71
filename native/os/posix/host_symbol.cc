#include "os/host_symbol.h"

#include <dlfcn.h>

namespace gguf_mmap {

void* HostSymbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

}  // namespace gguf_mmap
