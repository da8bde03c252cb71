#include "../cpus.h"

#include <windows.h>

#include <thread>

namespace gguf_mmap {

size_t UsableCpus() {
  size_t count = std::thread::hardware_concurrency();
  // The process's affinity mask (its processor group's CPUs it may run on).
  DWORD_PTR process = 0, system = 0;
  if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) && process != 0) {
    size_t bits = 0;
    for (DWORD_PTR mask = process; mask != 0; mask &= mask - 1) bits++;
    if (bits < count || count == 0) count = bits;
  }
  return count > 0 ? count : 1;
}

}  // namespace gguf_mmap
