#include "string_walk.h"

#include "header_load.h"

#include <cstring>

namespace gguf_mmap {
namespace {

// Each iteration's load depends on the previous length, so the loop body is kept to one load,
// one compare and one add: this runs at memory latency, not instruction count.
template <typename Length>
bool Walk(const uint8_t* base, size_t limit, size_t pos, uint64_t count, bool swap, size_t* end) {
  constexpr size_t width = sizeof(Length);
  for (uint64_t i = 0; i < count; i++) {
    if (pos > limit || limit - pos < width) break;
    uint64_t length = LoadNumber<Length>(base + pos, swap);
    if (length > limit - pos - width) break;
    pos += width + length;
    if (i + 1 == count) {
      *end = pos;
      return true;
    }
  }
  *end = pos;
  return count == 0;
}

}  // namespace

bool SkipStrings(const uint8_t* base, size_t limit, size_t pos, uint64_t count, int width,
                 bool little_endian, size_t* end) {
  bool swap = little_endian != HostIsLittleEndian();
  return width == 8 ? Walk<uint64_t>(base, limit, pos, count, swap, end)
                    : Walk<uint32_t>(base, limit, pos, count, swap, end);
}

}  // namespace gguf_mmap
