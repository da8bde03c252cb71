// One helper thread for synchronous calls that split their work in chunks (gatherRows' larger
// batches): the calling thread and the helper take chunks from a shared counter, and the call
// returns only when both are done with them, so the helper never touches memory after the call
// that lent it the work. It starts at first use and sleeps between calls. A call made while
// another thread's call has it (worker threads), or on one core, does every chunk itself.
#pragma once

#include <cstddef>
#include <functional>

namespace gguf_mmap {

// Runs run(0) .. run(chunks - 1), each once, on this thread and (when free) the helper, in any
// order; returns when all have run. `run` must not throw.
void RunChunks(size_t chunks, const std::function<void(size_t chunk)>& run);

// Whether RunChunks lends work to the helper (default true); off, every call does all its chunks
// (for benchmarks that compare, and tests).
void UseHelperThread(bool use);

}  // namespace gguf_mmap
