// The SSE4.1 micro-kernel (compiled with -msse4.1): a 6x8 tile of int32 sums in 12 xmm
// registers, one pmaddwd + paddd per accumulator per depth pair, exact for all 8-bit operands.
#include <smmintrin.h>

#include <cstdint>

#include "internal/kernel.h"
#include "internal/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// Six lhs rows against eight rhs columns (two vectors of 4 int32): the AVX2 tile at half width.
constexpr KernelFormat kSse41Format{6, 8, 2, PackedType::kInt16};
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

inline __m128i MultiplyAdd(__m128i acc, __m128i lhs_pair, __m128i rhs_pairs) {
  return _mm_add_epi32(acc, _mm_madd_epi16(lhs_pair, rhs_pairs));
}

void MicroKernelSse41(const void* lhs_panel, const void* rhs_panel, int padded_depth,
                      std::int32_t* acc, int acc_stride, bool accumulate) {
  const auto* lhs = static_cast<const std::int16_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::int16_t*>(rhs_panel);
  __m128i acc00 = _mm_setzero_si128(), acc01 = _mm_setzero_si128();
  __m128i acc10 = _mm_setzero_si128(), acc11 = _mm_setzero_si128();
  __m128i acc20 = _mm_setzero_si128(), acc21 = _mm_setzero_si128();
  __m128i acc30 = _mm_setzero_si128(), acc31 = _mm_setzero_si128();
  __m128i acc40 = _mm_setzero_si128(), acc41 = _mm_setzero_si128();
  __m128i acc50 = _mm_setzero_si128(), acc51 = _mm_setzero_si128();
  for (int d = 0; d < padded_depth; d += 2) {
    _mm_prefetch(reinterpret_cast<const char*>(lhs + 8 * 2 * kRows), _MM_HINT_T0);
    const __m128i rhs0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs));
    const __m128i rhs1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs + 8));
    // Rows 0-3 in one load and rows 4-5 in another; pshufd copies one row's pair to all lanes.
    const __m128i rows0123 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lhs));
    const __m128i rows45 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(lhs + 8));
    __m128i pair = _mm_shuffle_epi32(rows0123, 0x00);
    acc00 = MultiplyAdd(acc00, pair, rhs0);
    acc01 = MultiplyAdd(acc01, pair, rhs1);
    pair = _mm_shuffle_epi32(rows0123, 0x55);
    acc10 = MultiplyAdd(acc10, pair, rhs0);
    acc11 = MultiplyAdd(acc11, pair, rhs1);
    pair = _mm_shuffle_epi32(rows0123, 0xaa);
    acc20 = MultiplyAdd(acc20, pair, rhs0);
    acc21 = MultiplyAdd(acc21, pair, rhs1);
    pair = _mm_shuffle_epi32(rows0123, 0xff);
    acc30 = MultiplyAdd(acc30, pair, rhs0);
    acc31 = MultiplyAdd(acc31, pair, rhs1);
    pair = _mm_shuffle_epi32(rows45, 0x00);
    acc40 = MultiplyAdd(acc40, pair, rhs0);
    acc41 = MultiplyAdd(acc41, pair, rhs1);
    pair = _mm_shuffle_epi32(rows45, 0x55);
    acc50 = MultiplyAdd(acc50, pair, rhs0);
    acc51 = MultiplyAdd(acc51, pair, rhs1);
    lhs += 2 * kRows;
    rhs += 2 * kCols;
  }
  const __m128i sums[kRows][2] = {{acc00, acc01}, {acc10, acc11}, {acc20, acc21},
                                  {acc30, acc31}, {acc40, acc41}, {acc50, acc51}};
  for (int i = 0; i < kRows; ++i) {
    auto* out = reinterpret_cast<__m128i*>(acc + i * acc_stride);
    __m128i low = sums[i][0], high = sums[i][1];
    if (accumulate) {
      low = _mm_add_epi32(low, _mm_loadu_si128(out));
      high = _mm_add_epi32(high, _mm_loadu_si128(out + 1));
    }
    _mm_storeu_si128(out, low);
    _mm_storeu_si128(out + 1, high);
  }
}

}  // namespace

const KernelImplementation& Sse41Kernel() {
  static const KernelImplementation implementation{Kernel::kSse41, kSse41Format, &PackLhsSse41,
                                                   &PackRhsSse41, &MicroKernelSse41};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
