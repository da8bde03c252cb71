// The hot loop of opening a model: stepping over the strings of a GGUF STRING array (token and
// merge lists hold ~100k of them), where each length field says where the next one starts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gguf_mmap {

// Steps over `count` strings starting at `pos` in `base[0, limit)`. Each string is a `width`-byte
// (4 or 8) length in the given byte order followed by that many bytes. Returns true with `*end`
// just past the last string; returns false with `*end` at the first length field that is cut
// short or runs past `limit`, for the caller's checked reader to report.
bool SkipStrings(const uint8_t* base, size_t limit, size_t pos, uint64_t count, int width,
                 bool little_endian, size_t* end);

}  // namespace gguf_mmap
