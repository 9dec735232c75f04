// The SSE4.1 micro-kernel (compiled with -msse4.1): a 6x8 tile of int32 sums in 12 xmm
// registers, one pmaddwd + paddd per accumulator per depth pair, exact for all 8-bit operands.
#include <smmintrin.h>

#include <cstdint>
#include <cstring>

#include "internal/kernel.h"
#include "internal/kernel_narrow_x86.h"
#include "internal/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// Six lhs rows against eight rhs columns (two vectors of 4 int32): the AVX2 tile at half width.
constexpr KernelFormat kSse41Format{6, 8, 2, PackedType::kInt16, PackedType::kInt16};
constexpr int kRows = kSse41Format.lhs_rows;
constexpr int kCols = kSse41Format.rhs_cols;

void PackLhsSse41(const MatrixView& source, int start, int count, int depth_start, int depth,
                  void* packed, std::int32_t* sums) {
  PackInt16PairsSse41(source, kRows, start, count, depth_start, depth, packed, sums);
}

void PackRhsSse41(const MatrixView& source, int start, int count, int depth_start, int depth,
                  void* packed, std::int32_t* sums) {
  PackInt16PairsSse41(source, kCols, start, count, depth_start, depth, packed, sums);
}

// Row i's (d, d + 1) pair, as the int32 copied into every lane.
inline __m128i BroadcastPair(const std::int16_t* pair) {
  std::int32_t bits;
  std::memcpy(&bits, pair, sizeof(bits));
  return _mm_set1_epi32(bits);
}

inline __m128i MultiplyAdd(__m128i acc, __m128i lhs_pair, __m128i rhs_pairs) {
  return _mm_add_epi32(acc, _mm_madd_epi16(lhs_pair, rhs_pairs));
}

// One row of the tile: its accumulators for the low and high rhs vectors.
struct RowSums {
  __m128i low;
  __m128i high;
};

// The row's next pair times both rhs vectors. Passed and returned by value: accumulators
// whose address is taken end up on the stack.
inline RowSums MultiplyRow(RowSums sums, const std::int16_t* lhs_pair, __m128i rhs0, __m128i rhs1) {
  const __m128i pair = BroadcastPair(lhs_pair);
  return {MultiplyAdd(sums.low, pair, rhs0), MultiplyAdd(sums.high, pair, rhs1)};
}

inline void StoreRow(RowSums sums, bool accumulate, std::int32_t* acc) {
  __m128i low = sums.low, high = sums.high;
  auto* out = reinterpret_cast<__m128i*>(acc);
  if (accumulate) {
    low = _mm_add_epi32(low, _mm_loadu_si128(out));
    high = _mm_add_epi32(high, _mm_loadu_si128(out + 1));
  }
  _mm_storeu_si128(out, low);
  _mm_storeu_si128(out + 1, high);
}

// The first kUsedRows rows of the tile. One named RowSums per row, not an array: GCC keeps an
// array of vectors on the stack even when every index is a constant.
template <int kUsedRows>
__attribute__((noinline)) void MicroKernelRows(const std::int16_t* lhs, const std::int16_t* rhs,
                                               int padded_depth, std::int32_t* acc, int acc_stride,
                                               bool accumulate) {
  const RowSums zero{_mm_setzero_si128(), _mm_setzero_si128()};
  RowSums row0 = zero, row1 = zero, row2 = zero, row3 = zero, row4 = zero, row5 = zero;
  for (int d = 0; d < padded_depth; d += 2) {
    _mm_prefetch(reinterpret_cast<const char*>(lhs + 8 * 2 * kRows), _MM_HINT_T0);
    const __m128i rhs0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs));
    const __m128i rhs1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs + 8));
    row0 = MultiplyRow(row0, lhs, rhs0, rhs1);
    if (kUsedRows > 1) row1 = MultiplyRow(row1, lhs + 2, rhs0, rhs1);
    if (kUsedRows > 2) row2 = MultiplyRow(row2, lhs + 4, rhs0, rhs1);
    if (kUsedRows > 3) row3 = MultiplyRow(row3, lhs + 6, rhs0, rhs1);
    if (kUsedRows > 4) row4 = MultiplyRow(row4, lhs + 8, rhs0, rhs1);
    if (kUsedRows > 5) row5 = MultiplyRow(row5, lhs + 10, rhs0, rhs1);
    lhs += 2 * kRows;
    rhs += 2 * kCols;
  }
  // Stored in one loop: a separate store per row, each under its own condition, makes GCC
  // keep copies of the accumulators on the stack inside the depth loop.
  const RowSums rows[kRows] = {row0, row1, row2, row3, row4, row5};
  for (int i = 0; i < kUsedRows; ++i) StoreRow(rows[i], accumulate, acc + i * acc_stride);
}

// A short last panel (a matrix-vector product has one row) multiplies only its real rows.
void MicroKernelSse41(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                      std::int32_t* acc, int acc_stride, bool accumulate) {
  const auto* lhs = static_cast<const std::int16_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::int16_t*>(rhs_panel);
  switch (rows) {
    case 1:
      return MicroKernelRows<1>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    case 2:
      return MicroKernelRows<2>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    case 3:
      return MicroKernelRows<3>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    case 4:
      return MicroKernelRows<4>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    case 5:
      return MicroKernelRows<5>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    default:
      return MicroKernelRows<kRows>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
  }
}

// The vector operations of the narrow kernel (kernel_narrow_x86.h).
struct Sse41Isa {
  using Vector = __m128i;
  static constexpr Kernel kKernel = Kernel::kSse41;
  static constexpr int kInt32Lanes = 4;
  static Vector Zero() { return _mm_setzero_si128(); }
  static Vector Load(const void* bytes) {
    return _mm_loadu_si128(static_cast<const __m128i*>(bytes));
  }
  static Vector BroadcastGroup(const std::uint8_t* group) {
    std::int32_t bits;
    std::memcpy(&bits, group, sizeof(bits));
    return _mm_set1_epi32(bits);
  }
  static Vector MultiplyAddBytes(Vector unsigned_bytes, Vector signed_bytes) {
    return _mm_maddubs_epi16(unsigned_bytes, signed_bytes);
  }
  static Vector AddInt16(Vector a, Vector b) { return _mm_add_epi16(a, b); }
  static Vector WidenPairs(Vector v) { return _mm_madd_epi16(v, _mm_set1_epi16(1)); }
  static Vector AddInt32(Vector a, Vector b) { return _mm_add_epi32(a, b); }
  static Vector LoadInt32(const std::int32_t* values) { return Load(values); }
  static void StoreInt32(std::int32_t* values, Vector v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(values), v);
  }
};

}  // namespace

const KernelImplementation* Sse41NarrowKernel(int lhs_bits, int rhs_bits) {
  const int steps = NarrowInt16Steps(lhs_bits, rhs_bits);
  return steps == 0 ? nullptr : &NarrowKernels<Sse41Isa>::ForSteps(steps);
}

const KernelImplementation& Sse41Kernel() {
  static const KernelImplementation implementation{Kernel::kSse41, kSse41Format, &PackLhsSse41,
                                                   &PackRhsSse41, &MicroKernelSse41};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
