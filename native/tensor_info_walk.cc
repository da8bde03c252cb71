#include "tensor_info_walk.h"

#include "header_load.h"

#include <cstring>

namespace gguf_mmap {
namespace {

constexpr uint64_t kMaxSafe = (uint64_t{1} << 53) - 1;  // Number.MAX_SAFE_INTEGER
constexpr uint64_t kMaxNameBytes = 63;
constexpr uint32_t kMaxDims = 4;

inline uint32_t Rotl(uint32_t x, int b) { return (x << b) | (x >> (32 - b)); }

}  // namespace

uint32_t KeyedHash(const uint8_t* p, size_t length, uint32_t key0, uint32_t key1) {
  uint32_t v0 = key0, v1 = key1, v2 = 0x6c796765u ^ key0, v3 = 0x74656462u ^ key1;
  const size_t words = length >> 2;
  for (size_t step = 0; step < words + 4; step++) {
    uint32_t m = 0;
    if (step < words) {
      const uint8_t* w = p + step * 4;
      m = uint32_t{w[0]} | (uint32_t{w[1]} << 8) | (uint32_t{w[2]} << 16) | (uint32_t{w[3]} << 24);
    } else if (step == words) {
      const uint8_t* w = p + words * 4;
      const size_t tail = length & 3;
      m = static_cast<uint32_t>(length & 0xff) << 24;
      if (tail >= 3) m |= uint32_t{w[2]} << 16;
      if (tail >= 2) m |= uint32_t{w[1]} << 8;
      if (tail >= 1) m |= uint32_t{w[0]};
    } else if (step == words + 1) {
      v2 ^= 0xff;
    }
    if (step <= words) v3 ^= m;
    v0 += v1; v1 = Rotl(v1, 5); v1 ^= v0; v0 = Rotl(v0, 16);
    v2 += v3; v3 = Rotl(v3, 8); v3 ^= v2;
    v0 += v3; v3 = Rotl(v3, 7); v3 ^= v0;
    v2 += v1; v1 = Rotl(v1, 13); v1 ^= v2; v2 = Rotl(v2, 16);
    if (step <= words) v0 ^= m;
  }
  return v1 ^ v3;
}

TensorInfoWalk WalkTensorInfos(const uint8_t* base, size_t limit, size_t pos, uint64_t first, uint64_t count,
                               bool wide_counts, bool little_endian, uint64_t alignment, size_t name_at,
                               const TensorInfoTargets& out) {
  const bool swap = little_endian != HostIsLittleEndian();
  const size_t count_size = wide_counts ? 8 : 4;
  uint64_t walked = 0;
  for (; walked < count; walked++) {
    const uint64_t i = first + walked;
    const size_t start = pos;
    // Name: length, bytes (ASCII: anything else goes to the checked reader, which validates UTF-8).
    if (limit - pos < count_size) break;
    const uint64_t name_length = wide_counts ? LoadNumber<uint64_t>(base + pos, swap) : LoadNumber<uint32_t>(base + pos, swap);
    if (name_length == 0 || name_length > kMaxNameBytes || limit - pos - count_size < name_length) break;
    const uint8_t* name = base + pos + count_size;
    uint8_t high = 0;
    for (uint64_t k = 0; k < name_length; k++) high |= name[k];
    if (high >= 0x80 || out.name_capacity - name_at < name_length) break;
    size_t at = pos + count_size + name_length;
    // n_dims, dimensions.
    if (limit - at < 4) break;
    const uint32_t n_dims = LoadNumber<uint32_t>(base + at, swap);
    if (n_dims > kMaxDims || limit - at - 4 < size_t{n_dims} * count_size + 4 + 8) break;
    at += 4;
    uint64_t product = 1;
    uint64_t ne0 = 1;
    double ne[kMaxDims] = {0, 0, 0, 0};
    bool plain = true;
    for (uint32_t d = 0; d < n_dims; d++, at += count_size) {
      const uint64_t dim = wide_counts ? LoadNumber<uint64_t>(base + at, swap) : LoadNumber<uint32_t>(base + at, swap);
      // Negative (as int64), or past 2^53: the checked reader's exact path.
      if (dim > kMaxSafe || (dim != 0 && product > kMaxSafe / dim)) {
        plain = false;
        break;
      }
      product *= dim;
      if (d == 0) ne0 = dim;
      ne[d] = static_cast<double>(dim);
    }
    if (!plain) break;
    const uint32_t type_id = LoadNumber<uint32_t>(base + at, swap);
    if (type_id >= out.type_count || out.block_sizes[type_id] == 0) break;
    const uint64_t block = out.block_sizes[type_id];
    if (ne0 % block != 0) break;
    const uint64_t blocks = product / block;
    if (out.type_sizes[type_id] == 0 || blocks > kMaxSafe / out.type_sizes[type_id]) break;
    const uint64_t bytes = blocks * out.type_sizes[type_id];
    const uint64_t offset = LoadNumber<uint64_t>(base + at + 4, swap);
    if (offset % alignment != 0 || offset > kMaxSafe) break;
    // Accepted (unless its name was seen before: indexed below): into the table.
    // The hash of the copy: the file's bytes may change under the mapping meanwhile.
    std::memcpy(out.name_bytes + name_at, name, name_length);
    out.starts[i] = static_cast<uint32_t>(name_at);
    out.ends[i] = static_cast<uint32_t>(name_at + name_length);
    out.hashes[i] = KeyedHash(out.name_bytes + name_at, name_length, out.key0, out.key1);
    name_at += name_length;
    out.type_ids[i] = static_cast<uint8_t>(type_id);
    out.dims[i] = static_cast<uint8_t>(n_dims);
    std::memcpy(out.ne + i * 4, ne, sizeof ne);
    out.offsets[i] = static_cast<double>(offset);
    out.nbytes[i] = static_cast<double>(bytes);
    out.info_offsets[i] = static_cast<double>(start);
    pos = at + 4 + 8;
  }
  // The names into the index, apart from the walk: this loop's slot reads are random (cache
  // misses), and on its own the processor overlaps them (with a prefetch ahead); inside the walk
  // they made it 3x slower. A name seen before ends the accepted records at its own: the checked
  // reader reports it.
  const size_t mask = out.slot_count - 1;
  uint32_t max_probe = 0;
  constexpr size_t kAhead = 16;
  for (uint64_t k = 0; k < walked; k++) {
    const uint64_t i = first + k;
    if (k + kAhead < walked) __builtin_prefetch(&out.slots[out.hashes[i + kAhead] & mask]);
    const uint8_t* name = out.name_bytes + out.starts[i];
    const uint32_t name_length = out.ends[i] - out.starts[i];
    const uint32_t hash = out.hashes[i];
    size_t slot = hash & mask;
    uint32_t probes = 1;
    // The name seen before ends the walk; so does what no reader's index holds (the arrays come
    // from JavaScript): a full table, a slot naming a later tensor, a name outside the store.
    bool stop = false;
    for (;; slot = (slot + 1) & mask, probes++) {
      const int32_t entry = out.slots[slot] - 1;
      if (entry < 0) break;
      if (probes > out.slot_count || static_cast<uint64_t>(entry) >= i) {
        stop = true;
        break;
      }
      const uint32_t entry_start = out.starts[entry], entry_end = out.ends[entry];
      if (entry_start > entry_end || entry_end > out.name_capacity ||
          (out.hashes[entry] == hash && entry_end - entry_start == name_length && std::memcmp(out.name_bytes + entry_start, name, name_length) == 0)) {
        stop = true;
        break;
      }
    }
    if (stop) {
      // Records from this one on are not accepted: the walk ends where its info starts.
      return {k, static_cast<size_t>(out.info_offsets[i]), out.starts[i], max_probe};
    }
    if (probes > max_probe) max_probe = probes;
    out.slots[slot] = static_cast<int32_t>(i + 1);
  }
  return {walked, pos, name_at, max_probe};
}

}  // namespace gguf_mmap
