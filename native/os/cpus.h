// How many CPUs this process can run on at once, for sizing the addon's own threads. Pure OS code.
#pragma once

#include <cstddef>

namespace gguf_mmap {

// The CPUs this process may run on (its affinity mask), capped on Linux by its cgroup v2 CPU limit
// (cpu.max of its cgroup and every parent, in whole CPUs, at least 1); the online CPUs where the
// system tells neither. At least 1.
size_t UsableCpus();

}  // namespace gguf_mmap
