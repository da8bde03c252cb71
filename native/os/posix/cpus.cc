#include "../cpus.h"

#include <thread>

#if defined(__linux__)
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

namespace gguf_mmap {
namespace {

#if defined(__linux__)
// Reads at most size - 1 bytes of a small file into buf, NUL-terminated; false if it cannot.
bool ReadSmallFile(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0) return false;
  buf[n] = '\0';
  return true;
}

// The lowest cgroup v2 CPU limit on the way from this process's cgroup ("0::PATH" in
// /proc/self/cgroup) up to the root, in whole CPUs rounded down (at least 1); 0 where none is
// set or none can be read (cgroup v1, no /sys/fs/cgroup). A container with its own cgroup
// namespace sees its cgroup as "/", with its limit in /sys/fs/cgroup/cpu.max. Fixed buffers, no
// allocation: it runs inside an addon call that must not throw.
size_t CgroupCpuLimit() {
  char listing[4096];
  if (!ReadSmallFile("/proc/self/cgroup", listing, sizeof listing)) return 0;
  const char* line = listing;
  while (line != nullptr && std::strncmp(line, "0::", 3) != 0) {
    line = std::strchr(line, '\n');
    if (line != nullptr) line++;
  }
  if (line == nullptr) return 0;
  char path[4096] = "/sys/fs/cgroup";
  const size_t root = std::strlen(path);
  const char* own = line + 3;
  const size_t own_length = std::strcspn(own, "\n");
  if (root + own_length + sizeof "/cpu.max" > sizeof path) return 0;
  std::memcpy(path + root, own, own_length);
  size_t end = root + own_length;
  while (end > root && path[end - 1] == '/') end--;
  size_t limit = 0;
  for (;;) {
    std::memcpy(path + end, "/cpu.max", sizeof "/cpu.max");
    char text[128];
    // "QUOTA PERIOD" in microseconds, or "max PERIOD" for no limit.
    if (ReadSmallFile(path, text, sizeof text) && std::strncmp(text, "max", 3) != 0) {
      char* rest = nullptr;
      const unsigned long long quota = std::strtoull(text, &rest, 10);
      const unsigned long long period = std::strtoull(rest, nullptr, 10);
      if (quota > 0 && period > 0) {
        const size_t cpus = quota / period > 0 ? static_cast<size_t>(quota / period) : 1;
        if (limit == 0 || cpus < limit) limit = cpus;
      }
    }
    if (end == root) break;
    while (end > root && path[end - 1] != '/') end--;  // up to the parent
    while (end > root && path[end - 1] == '/') end--;
  }
  return limit;
}
#endif

}  // namespace

size_t UsableCpus() {
  size_t count = std::thread::hardware_concurrency();
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) count = static_cast<size_t>(CPU_COUNT(&set));
  const size_t limit = CgroupCpuLimit();
  if (limit > 0 && limit < count) count = limit;
#endif
  return count > 0 ? count : 1;
}

}  // namespace gguf_mmap
