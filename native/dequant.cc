// Kernel selection: per type, the kernel of the widest instruction set this CPU has (detected
// once at run time; a limit can narrow it) that has one, else the next narrower set's.
#include "dequant.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
#if !defined(__wasm__)
#include <thread>
#endif

#include "dequant_common.h"

namespace gguf_mmap {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the native kernels read little-endian blocks directly");

DequantTables g_tables;
static std::atomic<uint32_t> tables_ready{0};
static std::atomic<uint32_t> tables_claimed{0};  // bit i: a thread is setting kTables[i], or has
static std::atomic<int> isa_limit{2};  // Isa::kAvx512: no limit

float g_half_table[65536];
float g_ue4m3_half_table[256];

// Both conversion tables, filled when the library loads (before any kernel can run): kernels read
// them as plain arrays, with no call per block to a function that builds them on first use (in a
// shared library such a call also goes through the PLT).
static const bool conversion_tables_filled = [] {
  for (uint32_t h = 0; h < 65536; h++) {
    const uint32_t bits = HalfToFloatBits(static_cast<uint16_t>(h));
    std::memcpy(&g_half_table[h], &bits, 4);
  }
  for (int x = 0; x < 256; x++) {
    const int exponent = (x >> 3) & 15, mantissa = x & 7;
    const float raw = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                    : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
    g_ue4m3_half_table[x] = (x == 0 || x == 0x7f) ? 0.0f : raw * 0.5f;  // every value is exact in float32
  }
  return true;
}();

namespace {

// The bytes of grid entries (kWidth bytes each, of type Byte) as floats (exact).
template <typename Byte, typename Entry, size_t kWidth>
void GridAsFloats(const Entry* grid, size_t entries, float (*out)[kWidth]) {
  for (size_t i = 0; i < entries; i++) {
    for (size_t j = 0; j < kWidth; j++) out[i][j] = static_cast<float>(static_cast<Byte>(grid[i] >> (8 * j)));
  }
}

void DeriveIq2xxs() { GridAsFloats<uint8_t>(g_tables.iq2xxs_grid, 256, g_tables.iq2xxs_grid_f); }
void DeriveIq2xs() { GridAsFloats<uint8_t>(g_tables.iq2xs_grid, 512, g_tables.iq2xs_grid_f); }
void DeriveIq2s() { GridAsFloats<uint8_t>(g_tables.iq2s_grid, 1024, g_tables.iq2s_grid_f); }
void DeriveIq3xxs() { GridAsFloats<uint8_t>(g_tables.iq3xxs_grid, 256, g_tables.iq3xxs_grid_f); }
void DeriveIq3s() { GridAsFloats<uint8_t>(g_tables.iq3s_grid, 512, g_tables.iq3s_grid_f); }
void DeriveKsigns() {
  for (int i = 0; i < 128; i++) {
    for (int j = 0; j < 8; j++) g_tables.ksigns_f[i][j] = ((g_tables.ksigns_iq2xs[i] >> j) & 1) ? -1.0f : 1.0f;
  }
}
void DeriveIq1s() { GridAsFloats<int8_t>(g_tables.iq1s_grid, 2048, g_tables.iq1s_grid_f); }

// The lookup tables by name, where each lives, how long it is and what is made from it once it is
// set; bit i of tables_ready is kTables[i].
struct TableSlot {
  const char* name;
  void* data;
  size_t length;
  void (*derive)();
};
const TableSlot kTables[] = {
    {"kvalues_iq4nl", g_tables.iq4nl, sizeof g_tables.iq4nl, nullptr},
    {"kvalues_fp4", g_tables.fp4, sizeof g_tables.fp4, nullptr},
    {"ksigns_iq2xs", g_tables.ksigns_iq2xs, sizeof g_tables.ksigns_iq2xs, DeriveKsigns},
    {"iq2xxs_grid", g_tables.iq2xxs_grid, sizeof g_tables.iq2xxs_grid, DeriveIq2xxs},
    {"iq2xs_grid", g_tables.iq2xs_grid, sizeof g_tables.iq2xs_grid, DeriveIq2xs},
    {"iq2s_grid", g_tables.iq2s_grid, sizeof g_tables.iq2s_grid, DeriveIq2s},
    {"iq3xxs_grid", g_tables.iq3xxs_grid, sizeof g_tables.iq3xxs_grid, DeriveIq3xxs},
    {"iq3s_grid", g_tables.iq3s_grid, sizeof g_tables.iq3s_grid, DeriveIq3s},
    {"iq1s_grid", g_tables.iq1s_grid, sizeof g_tables.iq1s_grid, DeriveIq1s},
};
enum : uint32_t { kIq4nl = 1, kFp4 = 2, kKsigns = 4, kIq2xxs = 8, kIq2xs = 16, kIq2s = 32, kIq3xxs = 64, kIq3s = 128, kIq1s = 256 };

// Instruction sets, each including the ones before it.
enum class Isa { kPortable, kAvx2, kAvx512 };
const char* const kIsaNames[] = {"portable", "avx2", "avx512"};

Isa DetectIsa() {
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports also checks that the OS saves the vector registers (XCR0). F16C from
  // CPUID itself (some compilers do not know it by name); its registers are AVX's.
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && f16c;
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    return Isa::kAvx512;
  }
  if (avx2) return Isa::kAvx2;
#endif
  return Isa::kPortable;
}

Isa DetectedIsa() {
  static const Isa detected = DetectIsa();
  return detected;
}

Isa CurrentIsa() {
  const Isa limit = static_cast<Isa>(isa_limit.load());
  return DetectedIsa() < limit ? DetectedIsa() : limit;
}

// The kernel for one slot, and its set: the widest set this CPU may use that has one, else the
// portable one.
DequantFn Pick(DequantFn KernelSet::*slot, Isa* from) {
#if defined(__x86_64__) || defined(_M_X64)
  const Isa isa = CurrentIsa();
  *from = Isa::kAvx512;
  if (isa >= Isa::kAvx512 && kAvx512Kernels.*slot != nullptr) return kAvx512Kernels.*slot;
  *from = Isa::kAvx2;
  if (isa >= Isa::kAvx2 && kAvx2Kernels.*slot != nullptr) return kAvx2Kernels.*slot;
#endif
#if defined(__wasm_simd128__)
  *from = Isa::kPortable;  // (the WebAssembly build has no other set to tell apart)
  if (kSimd128Kernels.*slot != nullptr) return kSimd128Kernels.*slot;
#endif
  *from = Isa::kPortable;
  return kPortableKernels.*slot;
}

}  // namespace

namespace {

// The types with native kernels: ggml type id, elements and bytes per block, kernel slot, the
// lookup tables it needs. A new type is one row here and one kernel in each KernelSet.
struct KernelShape {
  int type_id;
  int block_size;
  int type_size;
  DequantFn KernelSet::*slot;
  uint32_t tables;
};

constexpr KernelShape kKernelShapes[] = {
    {1, 1, 2, &KernelSet::f16, 0},
    {30, 1, 2, &KernelSet::bf16, 0},
    {2, 32, 18, &KernelSet::q4_0, 0},
    {3, 32, 20, &KernelSet::q4_1, 0},
    {6, 32, 22, &KernelSet::q5_0, 0},
    {7, 32, 24, &KernelSet::q5_1, 0},
    {8, 32, 34, &KernelSet::q8_0, 0},
    {41, 128, 18, &KernelSet::q1_0, 0},
    {42, 64, 18, &KernelSet::q2_0, 0},
    {39, 32, 17, &KernelSet::mxfp4, kFp4},
    {40, 64, 36, &KernelSet::nvfp4, kFp4},
    {10, 256, 84, &KernelSet::q2_k, 0},
    {11, 256, 110, &KernelSet::q3_k, 0},
    {12, 256, 144, &KernelSet::q4_k, 0},
    {13, 256, 176, &KernelSet::q5_k, 0},
    {14, 256, 210, &KernelSet::q6_k, 0},
    {15, 256, 292, &KernelSet::q8_k, 0},
    {16, 256, 66, &KernelSet::iq2_xxs, kIq2xxs | kKsigns},
    {17, 256, 74, &KernelSet::iq2_xs, kIq2xs | kKsigns},
    {22, 256, 82, &KernelSet::iq2_s, kIq2s},
    {18, 256, 98, &KernelSet::iq3_xxs, kIq3xxs | kKsigns},
    {21, 256, 110, &KernelSet::iq3_s, kIq3s},
    {19, 256, 50, &KernelSet::iq1_s, kIq1s},
    {29, 256, 56, &KernelSet::iq1_m, kIq1s},
    {20, 32, 18, &KernelSet::iq4_nl, kIq4nl},
    {23, 256, 136, &KernelSet::iq4_xs, kIq4nl},
    {34, 256, 54, &KernelSet::tq1_0, 0},
    {35, 256, 66, &KernelSet::tq2_0, 0},
};

}  // namespace

bool FindDequantKernel(int type_id, DequantKernel* kernel) {
  // Indexed by type id once: row lookups ask for every call.
  static const auto by_id = [] {
    std::vector<const KernelShape*> table(64, nullptr);
    for (const KernelShape& shape : kKernelShapes) table.at(shape.type_id) = &shape;
    return table;
  }();
  if (type_id < 0 || static_cast<size_t>(type_id) >= by_id.size() || by_id[type_id] == nullptr) return false;
  const KernelShape& shape = *by_id[type_id];
  if ((tables_ready.load() & shape.tables) != shape.tables) return false;  // its tables first
  Isa from;
  const DequantFn fn = Pick(shape.slot, &from);
  *kernel = {shape.type_id, shape.block_size, shape.type_size, fn, kIsaNames[static_cast<int>(from)]};
  return true;
}

std::vector<int> DequantTypeIds() {
  std::vector<int> ids;
  for (const KernelShape& shape : kKernelShapes) {
    DequantKernel kernel;
    if (FindDequantKernel(shape.type_id, &kernel)) ids.push_back(shape.type_id);
  }
  return ids;
}

const char* DequantIsa() { return kIsaNames[static_cast<int>(CurrentIsa())]; }

std::vector<const char*> DequantIsas() {
  std::vector<const char*> names;
  for (int i = 0; i <= static_cast<int>(DetectedIsa()); i++) names.push_back(kIsaNames[i]);
  return names;
}

bool LimitDequantIsa(const char* name) {
  for (int i = 0; i < 3; i++) {
    if (std::strcmp(kIsaNames[i], name) == 0) {
      isa_limit.store(i);
      return true;
    }
  }
  return false;
}

bool SetDequantTable(const char* name, const uint8_t* bytes, size_t length) {
  for (size_t i = 0; i < sizeof kTables / sizeof kTables[0]; i++) {
    if (std::strcmp(kTables[i].name, name) != 0) continue;
    if (length != kTables[i].length) return false;
    // Set once, by the first thread to claim it: kernels on other threads may read the table as
    // soon as its ready bit is set. A thread that loses the claim waits for that bit (the copy
    // takes microseconds), so that every caller returns with the table usable.
    const uint32_t bit = 1u << i;
    if ((tables_claimed.fetch_or(bit) & bit) == 0) {
      std::memcpy(kTables[i].data, bytes, length);
      if (kTables[i].derive != nullptr) kTables[i].derive();
      tables_ready.fetch_or(bit);
    }
    while ((tables_ready.load() & bit) == 0) {
#if !defined(__wasm__)  // (one thread there: the claim and the ready bit come in one call)
      std::this_thread::yield();
#endif
    }
    return true;
  }
  return false;
}

}  // namespace gguf_mmap
