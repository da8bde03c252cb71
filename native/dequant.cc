// Kernel selection: the widest instruction set this CPU has, checked once at run time.
#include "dequant.h"

#include <atomic>
#include <vector>

#include "dequant_common.h"

namespace gguf_mmap {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the native kernels read little-endian blocks directly");

int8_t g_iq4nl_values[16];
static std::atomic<bool> iq4nl_ready{false};
static std::atomic<bool> force_portable{false};

const float* HalfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; h++) {
      uint32_t bits = HalfToFloatBits(static_cast<uint16_t>(h));
      std::memcpy(&t[h], &bits, 4);
    }
    return t;
  }();
  return table.data();
}

namespace {

// No AVX-512 set: the AVX2 kernels already write at the memory's speed (about 1.1x
// Float32Array.fill on a 262 MB output), so wider vectors have nothing left to win.
enum class Isa { kPortable, kAvx2 };

Isa DetectIsa() {
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return Isa::kAvx2;
#endif
  return Isa::kPortable;
}

Isa CurrentIsa() {
  static const Isa detected = DetectIsa();
  return force_portable.load() ? Isa::kPortable : detected;
}

// The kernel for one slot: the chosen set's, else the portable one.
DequantFn Pick(DequantFn KernelSet::*slot) {
#if defined(__x86_64__) || defined(_M_X64)
  if (CurrentIsa() == Isa::kAvx2 && kAvx2Kernels.*slot != nullptr) return kAvx2Kernels.*slot;
#endif
  return kPortableKernels.*slot;
}

}  // namespace

namespace {

// The types with native kernels: ggml type id, elements and bytes per block, kernel slot.
struct KernelShape {
  int type_id;
  int block_size;
  int type_size;
  DequantFn KernelSet::*slot;
};

constexpr KernelShape kKernelShapes[] = {
    {1, 1, 2, &KernelSet::f16},        {30, 1, 2, &KernelSet::bf16},
    {2, 32, 18, &KernelSet::q4_0},     {8, 32, 34, &KernelSet::q8_0},
    {12, 256, 144, &KernelSet::q4_k},  {13, 256, 176, &KernelSet::q5_k},
    {14, 256, 210, &KernelSet::q6_k},  {20, 32, 18, &KernelSet::iq4_nl},
};

}  // namespace

bool FindDequantKernel(int type_id, DequantKernel* kernel) {
  for (const KernelShape& shape : kKernelShapes) {
    if (shape.type_id != type_id) continue;
    if (type_id == 20 && !iq4nl_ready.load()) return false;  // IQ4_NL needs its table first
    *kernel = {shape.type_id, shape.block_size, shape.type_size, Pick(shape.slot)};
    return true;
  }
  return false;
}

std::vector<int> DequantTypeIds() {
  std::vector<int> ids;
  for (const KernelShape& shape : kKernelShapes) {
    DequantKernel kernel;
    if (FindDequantKernel(shape.type_id, &kernel)) ids.push_back(shape.type_id);
  }
  return ids;
}

const char* DequantIsa() {
  return CurrentIsa() == Isa::kAvx2 ? "avx2" : "portable";
}

void ForcePortableDequant(bool portable) { force_portable.store(portable); }

void SetIq4nlValues(const int8_t values[16]) {
  std::memcpy(g_iq4nl_values, values, 16);
  iq4nl_ready.store(true);
}

}  // namespace gguf_mmap
