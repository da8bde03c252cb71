#include "xxh64.h"

#include <cstring>

namespace gguf_mmap {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian reads at any alignment: one load on little-endian hosts (all those built for).
#if defined(_WIN32) || (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
inline uint64_t Read64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint32_t Read32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
#else
inline uint64_t Read64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
inline uint32_t Read32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
#endif

inline uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kPrime2;
  acc = Rotl(acc, 31);
  return acc * kPrime1;
}

inline uint64_t Merge(uint64_t hash, uint64_t acc) {
  hash ^= Round(0, acc);
  return hash * kPrime1 + kPrime4;
}

// One 32-byte stripe into the four lanes.
inline void Stripe(uint64_t* acc, const uint8_t* p) {
  acc[0] = Round(acc[0], Read64(p));
  acc[1] = Round(acc[1], Read64(p + 8));
  acc[2] = Round(acc[2], Read64(p + 16));
  acc[3] = Round(acc[3], Read64(p + 24));
}

}  // namespace

Xxh64::Xxh64(uint64_t seed) : seed_(seed) {
  acc_[0] = seed + kPrime1 + kPrime2;
  acc_[1] = seed + kPrime2;
  acc_[2] = seed;
  acc_[3] = seed - kPrime1;
}

void Xxh64::Update(const uint8_t* data, size_t length) {
  total_ += length;
  if (buffered_ > 0) {
    const size_t take = length < 32 - buffered_ ? length : 32 - buffered_;
    std::memcpy(buffer_ + buffered_, data, take);
    buffered_ += take;
    data += take;
    length -= take;
    if (buffered_ < 32) return;
    Stripe(acc_, buffer_);
    buffered_ = 0;
  }
  uint64_t acc[4] = {acc_[0], acc_[1], acc_[2], acc_[3]};  // in registers through the loop
  for (; length >= 32; data += 32, length -= 32) Stripe(acc, data);
  std::memcpy(acc_, acc, sizeof acc);
  std::memcpy(buffer_, data, length);
  buffered_ = length;
}

uint64_t Xxh64::Digest() const {
  uint64_t hash;
  if (total_ >= 32) {
    hash = Rotl(acc_[0], 1) + Rotl(acc_[1], 7) + Rotl(acc_[2], 12) + Rotl(acc_[3], 18);
    for (uint64_t lane : acc_) hash = Merge(hash, lane);
  } else {
    hash = seed_ + kPrime5;
  }
  hash += total_;
  const uint8_t* p = buffer_;
  size_t left = buffered_;
  for (; left >= 8; p += 8, left -= 8) {
    hash ^= Round(0, Read64(p));
    hash = Rotl(hash, 27) * kPrime1 + kPrime4;
  }
  if (left >= 4) {
    hash ^= static_cast<uint64_t>(Read32(p)) * kPrime1;
    hash = Rotl(hash, 23) * kPrime2 + kPrime3;
    p += 4;
    left -= 4;
  }
  for (; left > 0; p++, left--) {
    hash ^= *p * kPrime5;
    hash = Rotl(hash, 11) * kPrime1;
  }
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

}  // namespace gguf_mmap
