// The AVX2 micro-kernel (compiled with -mavx2): a 6x16 tile of int32 sums in 12 ymm registers,
// one vpmaddwd + vpaddd per accumulator per depth pair, exact for all 8-bit operands.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "internal/kernel.h"
#include "internal/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// Six lhs rows are broadcast against sixteen rhs columns (two vectors of 8 int32): 12
// accumulators, 2 rhs vectors, a broadcast and a product fill the 16 ymm registers.
constexpr KernelFormat kAvx2Format{6, 16, 2, PackedType::kInt16};
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

// Row i's (d, d + 1) pair, as the int32 that vpbroadcastd copies into every lane.
inline __m256i BroadcastPair(const std::int16_t* pair) {
  std::int32_t bits;
  std::memcpy(&bits, pair, sizeof(bits));
  return _mm256_set1_epi32(bits);
}

inline __m256i MultiplyAdd(__m256i acc, __m256i lhs_pair, __m256i rhs_pairs) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(lhs_pair, rhs_pairs));
}

void MicroKernelAvx2(const void* lhs_panel, const void* rhs_panel, int padded_depth,
                     std::int32_t* acc, int acc_stride, bool accumulate) {
  const auto* lhs = static_cast<const std::int16_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::int16_t*>(rhs_panel);
  // The accumulator tile is touched only at the end: fetch it while the depth loop runs.
  for (int i = 0; i < kRows; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(acc + i * acc_stride), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(acc + i * acc_stride + kCols - 1), _MM_HINT_T0);
  }
  __m256i acc00 = _mm256_setzero_si256(), acc01 = _mm256_setzero_si256();
  __m256i acc10 = _mm256_setzero_si256(), acc11 = _mm256_setzero_si256();
  __m256i acc20 = _mm256_setzero_si256(), acc21 = _mm256_setzero_si256();
  __m256i acc30 = _mm256_setzero_si256(), acc31 = _mm256_setzero_si256();
  __m256i acc40 = _mm256_setzero_si256(), acc41 = _mm256_setzero_si256();
  __m256i acc50 = _mm256_setzero_si256(), acc51 = _mm256_setzero_si256();
  for (int d = 0; d < padded_depth; d += 2) {
    // The lhs panel streams from L2: ask for it 8 groups (192 bytes) ahead.
    _mm_prefetch(reinterpret_cast<const char*>(lhs + 8 * 2 * kRows), _MM_HINT_T0);
    const __m256i rhs0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rhs));
    const __m256i rhs1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rhs + 16));
    __m256i pair = BroadcastPair(lhs);
    acc00 = MultiplyAdd(acc00, pair, rhs0);
    acc01 = MultiplyAdd(acc01, pair, rhs1);
    pair = BroadcastPair(lhs + 2);
    acc10 = MultiplyAdd(acc10, pair, rhs0);
    acc11 = MultiplyAdd(acc11, pair, rhs1);
    pair = BroadcastPair(lhs + 4);
    acc20 = MultiplyAdd(acc20, pair, rhs0);
    acc21 = MultiplyAdd(acc21, pair, rhs1);
    pair = BroadcastPair(lhs + 6);
    acc30 = MultiplyAdd(acc30, pair, rhs0);
    acc31 = MultiplyAdd(acc31, pair, rhs1);
    pair = BroadcastPair(lhs + 8);
    acc40 = MultiplyAdd(acc40, pair, rhs0);
    acc41 = MultiplyAdd(acc41, pair, rhs1);
    pair = BroadcastPair(lhs + 10);
    acc50 = MultiplyAdd(acc50, pair, rhs0);
    acc51 = MultiplyAdd(acc51, pair, rhs1);
    lhs += 2 * kRows;
    rhs += 2 * kCols;
  }
  const __m256i sums[kRows][2] = {{acc00, acc01}, {acc10, acc11}, {acc20, acc21},
                                  {acc30, acc31}, {acc40, acc41}, {acc50, acc51}};
  for (int i = 0; i < kRows; ++i) {
    auto* out = reinterpret_cast<__m256i*>(acc + i * acc_stride);
    __m256i low = sums[i][0], high = sums[i][1];
    if (accumulate) {
      low = _mm256_add_epi32(low, _mm256_loadu_si256(out));
      high = _mm256_add_epi32(high, _mm256_loadu_si256(out + 1));
    }
    _mm256_storeu_si256(out, low);
    _mm256_storeu_si256(out + 1, high);
  }
}

}  // namespace

const KernelImplementation& Avx2Kernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2Format, &PackLhsAvx2,
                                                   &PackRhsAvx2, &MicroKernelAvx2};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
