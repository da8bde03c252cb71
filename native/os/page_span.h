// The whole pages covering a byte range, as the page-cache calls of every system take them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gguf_mmap {

struct PageSpan {
  uint8_t* start;
  size_t length;
};

// The page-aligned span that covers [begin, begin + length), for pages of `page` bytes.
inline PageSpan PagesOf(const uint8_t* begin, size_t length, size_t page) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(begin) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(begin) + length + page - 1) & ~(page - 1);
  return {reinterpret_cast<uint8_t*>(first), static_cast<size_t>(end - first)};
}

}  // namespace gguf_mmap
