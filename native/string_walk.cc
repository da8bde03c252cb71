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

#include "tensor_info_walk.h"

#include <vector>

namespace gguf_mmap {
namespace {

inline uint32_t Rotl32(uint32_t x, int b) { return (x << b) | (x >> (32 - b)); }

// Must equal fastHash in lib/tokenizer/byte-index.ts.
uint32_t SeededHash(const uint8_t* p, size_t length, uint32_t seed) {
  uint32_t h = seed ^ static_cast<uint32_t>(length);
  size_t i = 0;
  for (; i + 4 <= length; i += 4) {
    uint32_t k = uint32_t{p[i]} | (uint32_t{p[i + 1]} << 8) | (uint32_t{p[i + 2]} << 16) | (uint32_t{p[i + 3]} << 24);
    k *= 0xcc9e2d51u;
    k = Rotl32(k, 15);
    h ^= k * 0x1b873593u;
    h = Rotl32(h, 13);
    h = h * 5 + 0xe6546b64u;
  }
  const size_t tail = length - i;
  if (tail > 0) {
    uint32_t k = p[i];
    if (tail > 1) k |= uint32_t{p[i + 1]} << 8;
    if (tail > 2) k |= uint32_t{p[i + 2]} << 16;
    k *= 0xcc9e2d51u;
    k = Rotl32(k, 15);
    h ^= k * 0x1b873593u;
  }
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

}  // namespace

int IndexStrings(const uint8_t* base, size_t limit, uint64_t count, int width, bool little_endian,
                 uint32_t seed, uint32_t key0, uint32_t key1, int mode, bool keep_last, int probe_limit,
                 uint32_t* starts, uint32_t* ends, int32_t* slots, size_t slot_count) {
  const bool swap = little_endian != HostIsLittleEndian();
  const size_t mask = slot_count - 1;
  // First the walk and the hashes, then the inserts: knowing the hashes ahead, each insert
  // prefetches the slot of one several strings on (the table is megabytes: a miss per insert).
  std::vector<uint32_t> hashes(static_cast<size_t>(count));
  size_t pos = 0;
  for (uint64_t id = 0; id < count; id++) {
    if (pos > limit || limit - pos < static_cast<size_t>(width)) return -1;
    uint64_t length = width == 8 ? LoadNumber<uint64_t>(base + pos, swap) : LoadNumber<uint32_t>(base + pos, swap);
    if (length > limit - pos - width) return -1;
    const size_t start = pos + width;
    pos = start + length;
    starts[id] = static_cast<uint32_t>(start);
    ends[id] = static_cast<uint32_t>(pos);
    hashes[id] = mode == 0 ? SeededHash(base + start, length, seed) : KeyedHash(base + start, length, key0, key1);
  }
  constexpr uint64_t kAhead = 16;
  for (uint64_t id = 0; id < count; id++) {
    if (id + kAhead < count) __builtin_prefetch(&slots[hashes[id + kAhead] & mask]);
    const uint32_t start = starts[id];
    const size_t length = ends[id] - start;
    const uint8_t* s = base + start;
    int probes = 0;
    for (size_t slot = hashes[id] & mask;; slot = (slot + 1) & mask) {
      const int32_t other = slots[slot] - 1;
      if (other < 0) {
        slots[slot] = static_cast<int32_t>(id + 1);
        break;
      }
      if (hashes[other] == hashes[id] && ends[other] - starts[other] == length && std::memcmp(base + starts[other], s, length) == 0) {
        if (keep_last) slots[slot] = static_cast<int32_t>(id + 1);
        break;
      }
      if (++probes > probe_limit && mode == 0) return -2;
    }
  }
  return 0;
}

}  // namespace gguf_mmap
