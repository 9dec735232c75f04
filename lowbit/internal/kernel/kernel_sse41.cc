// The SSE4.1 kernels (compiled with -msse4.1): the 8-bit tile of kernel_pairs_x86.h, 6 rows by 8
// columns in 12 xmm registers (the AVX2 tile at half width), and the narrow tiles of
// kernel_narrow_x86.h.
#include <smmintrin.h>

#include <cstdint>
#include <cstring>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/kernel/kernel_narrow_x86.h"
#include "lowbit/internal/kernel/kernel_pairs_x86.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// The vector operations of the x86 tiles (kernel_pairs_x86.h, kernel_narrow_x86.h).
struct Sse41Isa {
  using Vector = __m128i;
  static constexpr Kernel kKernel = Kernel::kSse41;
  static constexpr int kInt32Lanes = 4;
  static constexpr PackByteGroupsFunction kPackByteGroups = &PackByteGroupsSse41;
  static Vector Zero() { return _mm_setzero_si128(); }
  static Vector Load(const void* bytes) {
    return _mm_loadu_si128(static_cast<const __m128i*>(bytes));
  }
  static Vector BroadcastGroup(const std::uint8_t* group) {
    std::int32_t bits;
    std::memcpy(&bits, group, sizeof(bits));
    return _mm_set1_epi32(bits);
  }
  static Vector MultiplyAddPairs(Vector a, Vector b) { return _mm_madd_epi16(a, b); }
  static Vector MultiplyAddBytes(Vector unsigned_bytes, Vector signed_bytes) {
    return _mm_maddubs_epi16(unsigned_bytes, signed_bytes);
  }
  static Vector AddInt16(Vector a, Vector b) { return _mm_add_epi16(a, b); }
  static Vector WidenPairs(Vector v) { return MultiplyAddPairs(v, _mm_set1_epi16(1)); }
  // The same, by ones read from memory (see OneStepTile); pmaddwd's memory operand must be aligned.
  static Vector WidenPairsFromMemory(Vector v) {
    asm("pmaddwd %1, %0" : "+x"(v) : "m"(kInt16Ones));
    return v;
  }
  static Vector AddInt32(Vector a, Vector b) { return _mm_add_epi32(a, b); }
  static Vector LoadInt32(const std::int32_t* values) { return Load(values); }
  static void StoreInt32(std::int32_t* values, Vector v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(values), v);
  }
};

using Tile = PairTile<Sse41Isa>;
constexpr KernelFormat kSse41Format = Tile::kFormat;

void PackLhsSse41(const MatrixView& source, int start, int count, int depth_start, int depth,
                  void* packed, std::int32_t* sums) {
  PackInt16PairsSse41(source, kSse41Format.lhs_rows, start, count, depth_start, depth, packed,
                      sums);
}

void PackRhsSse41(const MatrixView& source, int start, int count, int depth_start, int depth,
                  void* packed, std::int32_t* sums) {
  PackInt16PairsSse41(source, kSse41Format.rhs_cols, start, count, depth_start, depth, packed,
                      sums);
}

}  // namespace

const KernelImplementation* Sse41NarrowKernel(int lhs_bits, int rhs_bits) {
  const int steps = NarrowInt16Steps(lhs_bits, rhs_bits);
  return steps == 0 ? nullptr : &NarrowKernels<Sse41Isa>::ForSteps(steps);
}

const KernelImplementation& Sse41Kernel() {
  static const KernelImplementation implementation{Kernel::kSse41, kSse41Format, &PackLhsSse41,
                                                   &PackRhsSse41, &Tile::MicroKernel};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
