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

namespace gguf_mmap {

// The tokenizer's index of a STRING array (lib/tokenizer/byte-index.ts): walks `count` strings at
// the start of `base[0, limit)` as SkipStrings does, records each one's bytes as [starts[i],
// ends[i]) and puts id + 1 in `slots` (open addressing, linear probing, `slot_count` a power of
// two), keeping the last id of equal strings (`keep_last`) or the first. `mode` 0 hashes with the
// seeded murmur3 mixing of byte-index.ts, 1 with KeyedHash. Returns 0, -1 when a string does not
// fit (the header parse has checked it: not expected), -2 in mode 0 when a probe ran past
// `probe_limit` slots (the caller rebuilds in mode 1).
int IndexStrings(const uint8_t* base, size_t limit, uint64_t count, int width, bool little_endian,
                 uint32_t seed, uint32_t key0, uint32_t key1, int mode, bool keep_last, int probe_limit,
                 uint32_t* starts, uint32_t* ends, int32_t* slots, size_t slot_count);

}  // namespace gguf_mmap
