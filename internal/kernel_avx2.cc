// The AVX2 micro-kernels (compiled with -mavx2): a 6x16 tile of int32 sums in 12 ymm registers,
// one vpmaddwd + vpaddd per accumulator per depth pair, exact for all 8-bit operands. The rhs is
// packed as int16, or as int8 for prepacked weights.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "internal/kernel.h"
#include "internal/kernel_narrow_x86.h"
#include "internal/pack.h"
#include "internal/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// Six lhs rows are broadcast against sixteen rhs columns (two vectors of 8 int32): 12
// accumulators, 2 rhs vectors, a broadcast and a product fill the 16 ymm registers.
constexpr KernelFormat kAvx2Format{6, 16, 2, PackedType::kInt16, PackedType::kInt16};
// Prepacked weights are read from memory on every call, and a matrix-vector product does little
// else: int8 halves that traffic, for one vpmovsxbw per rhs vector.
constexpr KernelFormat kAvx2Int8RhsFormat{6, 16, 2, PackedType::kInt16, PackedType::kInt8};
constexpr int kRows = kAvx2Format.lhs_rows;
constexpr int kCols = kAvx2Format.rhs_cols;

void PackLhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                 void* packed, std::int32_t* sums) {
  PackInt16PairsSse41(source, kRows, start, count, depth_start, depth, packed, sums);
}

void PackRhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                 void* packed, std::int32_t* sums) {
  PackInt16PairsSse41(source, kCols, start, count, depth_start, depth, packed, sums);
}

void PackInt8RhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                     void* packed, std::int32_t* sums) {
  PackBytesPortable(source, PackedType::kInt8, kAvx2Int8RhsFormat, kCols, start, count, depth_start,
                    depth, packed, sums);
}

// Eight columns' (d, d + 1) pairs as int16, from either packed rhs type.
inline __m256i LoadRhsPairs(const std::int16_t* rhs) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rhs));
}
inline __m256i LoadRhsPairs(const std::int8_t* rhs) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs)));
}

// Row i's (d, d + 1) pair, as the int32 that vpbroadcastd copies into every lane.
inline __m256i BroadcastPair(const std::int16_t* pair) {
  std::int32_t bits;
  std::memcpy(&bits, pair, sizeof(bits));
  return _mm256_set1_epi32(bits);
}

inline __m256i MultiplyAdd(__m256i acc, __m256i lhs_pair, __m256i rhs_pairs) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(lhs_pair, rhs_pairs));
}

// One row of the tile: its accumulators for the low and high rhs vectors.
struct RowSums {
  __m256i low;
  __m256i high;
};

// The row's next pair times both rhs vectors. Passed and returned by value: accumulators
// whose address is taken end up on the stack.
inline RowSums MultiplyRow(RowSums sums, const std::int16_t* lhs_pair, __m256i rhs0, __m256i rhs1) {
  const __m256i pair = BroadcastPair(lhs_pair);
  return {MultiplyAdd(sums.low, pair, rhs0), MultiplyAdd(sums.high, pair, rhs1)};
}

inline void StoreRow(RowSums sums, bool accumulate, std::int32_t* acc) {
  __m256i low = sums.low, high = sums.high;
  auto* out = reinterpret_cast<__m256i*>(acc);
  if (accumulate) {
    low = _mm256_add_epi32(low, _mm256_loadu_si256(out));
    high = _mm256_add_epi32(high, _mm256_loadu_si256(out + 1));
  }
  _mm256_storeu_si256(out, low);
  _mm256_storeu_si256(out + 1, high);
}

// The first kUsedRows rows of the tile. One named RowSums per row, not an array: GCC keeps an
// array of vectors on the stack even when every index is a constant.
template <int kUsedRows, typename RhsElement>
__attribute__((noinline)) void MicroKernelRows(const std::int16_t* lhs, const RhsElement* rhs,
                                               int padded_depth, std::int32_t* acc, int acc_stride,
                                               bool accumulate) {
  // The accumulator tile is touched only at the end: fetch it while the depth loop runs.
  for (int i = 0; i < kUsedRows; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(acc + i * acc_stride), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(acc + i * acc_stride + kCols - 1), _MM_HINT_T0);
  }
  const RowSums zero{_mm256_setzero_si256(), _mm256_setzero_si256()};
  RowSums row0 = zero, row1 = zero, row2 = zero, row3 = zero, row4 = zero, row5 = zero;
#pragma GCC unroll 2
  for (int d = 0; d < padded_depth; d += 2) {
    // The lhs panel streams from L2: ask for it 8 groups (192 bytes) ahead.
    _mm_prefetch(reinterpret_cast<const char*>(lhs + 8 * 2 * kRows), _MM_HINT_T0);
    // Prepacked int8 weights stream from L3 or memory (the int16 rhs sits in L1): 2 KiB ahead
    // hides the latency (a matrix-vector product measured 56 GOPS at 256 bytes, 66 from 2 KiB).
    if (sizeof(RhsElement) == 1) {
      _mm_prefetch(reinterpret_cast<const char*>(rhs + 64 * 2 * kCols), _MM_HINT_T0);
    }
    const __m256i rhs0 = LoadRhsPairs(rhs);
    const __m256i rhs1 = LoadRhsPairs(rhs + 16);
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
template <typename RhsElement>
void MicroKernelAvx2(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                     std::int32_t* acc, int acc_stride, bool accumulate) {
  const auto* lhs = static_cast<const std::int16_t*>(lhs_panel);
  const auto* rhs = static_cast<const RhsElement*>(rhs_panel);
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
struct Avx2Isa {
  using Vector = __m256i;
  static constexpr Kernel kKernel = Kernel::kAvx2;
  static constexpr int kInt32Lanes = 8;
  static Vector Zero() { return _mm256_setzero_si256(); }
  static Vector Load(const void* bytes) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(bytes));
  }
  static Vector BroadcastGroup(const std::uint8_t* group) {
    std::int32_t bits;
    std::memcpy(&bits, group, sizeof(bits));
    return _mm256_set1_epi32(bits);
  }
  static Vector MultiplyAddBytes(Vector unsigned_bytes, Vector signed_bytes) {
    return _mm256_maddubs_epi16(unsigned_bytes, signed_bytes);
  }
  static Vector AddInt16(Vector a, Vector b) { return _mm256_add_epi16(a, b); }
  static Vector WidenPairs(Vector v) { return _mm256_madd_epi16(v, _mm256_set1_epi16(1)); }
  static Vector AddInt32(Vector a, Vector b) { return _mm256_add_epi32(a, b); }
  static Vector LoadInt32(const std::int32_t* values) { return Load(values); }
  static void StoreInt32(std::int32_t* values, Vector v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(values), v);
  }
};

}  // namespace

const KernelImplementation* Avx2NarrowKernel(int lhs_bits, int rhs_bits) {
  const int steps = NarrowInt16Steps(lhs_bits, rhs_bits);
  return steps == 0 ? nullptr : &NarrowKernels<Avx2Isa>::ForSteps(steps);
}

const KernelImplementation& Avx2Kernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2Format, &PackLhsAvx2,
                                                   &PackRhsAvx2, &MicroKernelAvx2<std::int16_t>};
  return implementation;
}

const KernelImplementation& Avx2Int8RhsKernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2Int8RhsFormat, &PackLhsAvx2,
                                                   &PackInt8RhsAvx2, &MicroKernelAvx2<std::int8_t>};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
