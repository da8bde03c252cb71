// XXH64 (xxHash, 64-bit, seed 0 by default), streaming: the hash llama.cpp's llama-gguf-hash uses
// by default for tensor data. A hot loop over gigabytes, so native. Pure C++: no Node-API here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gguf_mmap {

class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0);
  void Update(const uint8_t* data, size_t length);
  uint64_t Digest() const;

 private:
  uint64_t acc_[4];
  uint64_t seed_;
  uint64_t total_ = 0;
  uint8_t buffer_[32];
  size_t buffered_ = 0;
};

}  // namespace gguf_mmap
