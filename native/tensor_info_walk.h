// The other hot loop of opening a model: the tensor infos (a mixture-of-experts model has tens of
// thousands; a hostile header claims a million). Walks the records that are plainly valid and
// stops at the first that is not, which the TypeScript reader (lib/format/parse.ts, the one
// reader) then reads with its checks, to report it or to go on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gguf_mmap {

struct TensorInfoTargets {
  // ggml's type table: 0 block size for a removed or unknown id.
  const uint32_t* block_sizes;
  const uint32_t* type_sizes;
  uint32_t type_count;
  // HalfSipHash-1-3 key of lib/format/name-index.ts.
  uint32_t key0, key1;
  // Names copied here from name_at on; each record's [start, end) in starts/ends.
  uint8_t* name_bytes;
  size_t name_capacity;
  uint32_t* starts;
  uint32_t* ends;
  // Each record's name hash (KeyedHash below), kept by the index to compare before the bytes.
  uint32_t* hashes;
  // lib/format/name-index.ts's open-addressing table: entry + 1 per slot, 0 empty; a power of two
  // slots. Entry i is tensor i.
  int32_t* slots;
  size_t slot_count;
  // lib/format/tensor-table.ts's columns, indexed by tensor.
  uint8_t* type_ids;
  uint8_t* dims;
  double* ne;  // 4 per tensor
  double* offsets;
  double* nbytes;
  double* info_offsets;
};

struct TensorInfoWalk {
  uint64_t walked;     // records accepted, from the first asked
  size_t pos;          // where the next record starts
  size_t name_at;      // bytes of name_bytes used
  uint32_t max_probe;  // the longest run of slots one insertion walked
};

// Walks up to `count` records of tensors first, first + 1, ... from `pos` in `base[0, limit)`.
// A record is accepted when: its name is 1 to 63 ASCII bytes, n_dims <= 4, every dimension is at
// most 2^53 (v1: uint32; later int64 >= 0) with a product and byte size at most 2^53, ne[0] is a
// multiple of the type's block size, the type is in the table, the offset is a multiple of
// `alignment` at most 2^53, and the name is not one seen before (then it is indexed). Anything
// else (or bytes past `limit`) stops the walk there.
TensorInfoWalk WalkTensorInfos(const uint8_t* base, size_t limit, size_t pos, uint64_t first, uint64_t count,
                               bool wide_counts, bool little_endian, uint64_t alignment, size_t name_at,
                               const TensorInfoTargets& out);

// HalfSipHash-1-3 of bytes [p, p + length), as keyedHash in lib/format/name-index.ts.
uint32_t KeyedHash(const uint8_t* p, size_t length, uint32_t key0, uint32_t key1);

}  // namespace gguf_mmap
