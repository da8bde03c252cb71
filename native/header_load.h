// Reading the numbers of a GGUF header in the addon's header walks: unaligned, in the file's byte
// order (a big-endian file's numbers are swapped on a little-endian host, and the other way).
#pragma once

#include <cstdint>
#include <cstring>

namespace gguf_mmap {

inline bool HostIsLittleEndian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

// A 4- or 8-byte unsigned number at `p`, swapped when `swap`.
template <typename T>
T LoadNumber(const uint8_t* p, bool swap) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte numbers");
  T value;
  std::memcpy(&value, p, sizeof value);  // unaligned-safe; compiles to one load
  if (swap) {
    if constexpr (sizeof(T) == 8) value = __builtin_bswap64(value);
    else value = __builtin_bswap32(value);
  }
  return value;
}

}  // namespace gguf_mmap
