// A function the host process exports, looked up at run time: Node-API functions newer than the
// version the addon is built for are used where the runtime has them, and the one binary still
// loads where it has not. Pure OS code.
#pragma once

namespace gguf_mmap {

// The address of the exported function `name` of the process (the runtime's executable and the
// libraries it loaded), or nullptr.
void* HostSymbol(const char* name);

}  // namespace gguf_mmap
