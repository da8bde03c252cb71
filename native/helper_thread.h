// One helper thread for synchronous calls that split their work in chunks (gatherRows' larger
// batches): the calling thread takes chunks from the front, the helper from the back, and the call
// returns only when both are done with them, so the helper never touches memory after the call
// that lent it the work. It starts at first use; between calls it spins a little while (no longer
// than it worked) for the next one, then sleeps. A call made while
// another thread's call has it (worker threads), or where the process may use one CPU only (its
// affinity, its cgroup's CPU limit: os/cpus.h), does every chunk itself.
#pragma once

#include <cstddef>

namespace gguf_mmap {

// Runs run(context, 0) .. run(context, chunks - 1), each once, on this thread and (when free) the
// helper, in any order; returns when all have run. `run` must not throw. (A plain function and its
// context: nothing allocated, so nothing to fail in callbacks that must not throw.)
using ChunkFn = void (*)(void* context, size_t chunk);
void RunChunks(size_t chunks, ChunkFn run, void* context);

// Whether RunChunks lends work to the helper (default true); off, every call does all its chunks
// (for benchmarks that compare, and tests).
void UseHelperThread(bool use);

}  // namespace gguf_mmap
