// Adds the rank-1 offset terms to raw kernel sums (see unpack.h), in wrapping int32 arithmetic,
// and rescales the sums of requantized operands.
#include "lowbit/internal/output/unpack.h"

#include <algorithm>

// Unpacking runs once per result entry, outside the kernels' ISA files: its AVX2 clones
// (avx2_clones.h) take four doubles (eight int32) per instruction instead of two (four).
#include "lowbit/internal/driver/avx2_clones.h"

namespace lowbit {
namespace internal {

void EffectiveOffsets(const Offsets& offsets, int value_shift, int count, std::int32_t* out) {
  const auto shifted = [value_shift](std::int32_t offset) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(offset) +
                                     static_cast<std::uint32_t>(value_shift));
  };
  // Uniform offsets as a fill, which vectorizes: Offsets' operator() tests its kind each time.
  if (!offsets.is_per_channel()) {
    std::fill_n(out, count, shifted(offsets(0)));
    return;
  }
  const std::int32_t* const values = offsets.per_channel_data();
  for (int i = 0; i < count; ++i) out[i] = shifted(values[i]);
}

void MakeRowTerms(const std::int32_t* lhs_offsets, int depth, int rows, std::int32_t* row_sums) {
  for (int r = 0; r < rows; ++r) {
    row_sums[r] = static_cast<std::int32_t>(static_cast<std::uint32_t>(row_sums[r]) +
                                            static_cast<std::uint32_t>(depth) *
                                                static_cast<std::uint32_t>(lhs_offsets[r]));
  }
}

LOWBIT_AVX2_CLONES
void ScaleTerms(std::int32_t factor, const std::int32_t* values, std::int32_t addend, int count,
                std::int32_t* out) {
  // Unsigned, so that wrapping is defined.
  for (int i = 0; i < count; ++i) {
    out[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(factor) *
                                           static_cast<std::uint32_t>(values[i]) +
                                       static_cast<std::uint32_t>(addend));
  }
}

LOWBIT_AVX2_CLONES
void AddOffsetTerms(const std::int32_t* lhs_offsets, const std::int32_t* row_terms, int rows,
                    const std::int32_t* rhs_offsets, const std::int32_t* col_sums, int cols,
                    std::int32_t* acc, int acc_stride) {
  // Unsigned, so that wrapping is defined; the inner loop is a plain array expression the
  // compiler vectorizes.
  const auto* b = reinterpret_cast<const std::uint32_t*>(rhs_offsets);
  const auto* column_sums = reinterpret_cast<const std::uint32_t*>(col_sums);
  for (int r = 0; r < rows; ++r) {
    const auto a = static_cast<std::uint32_t>(lhs_offsets[r]);
    const auto row_term = static_cast<std::uint32_t>(row_terms[r]);
    auto* acc_row =
        reinterpret_cast<std::uint32_t*>(acc + static_cast<std::ptrdiff_t>(r) * acc_stride);
    for (int c = 0; c < cols; ++c) acc_row[c] += a * column_sums[c] + b[c] * row_term;
  }
}

// Without trapping math GCC if-converts the clamp and vectorizes the loop: nothing here can
// trap, every value being a finite integer. (Clang has no such attribute; it builds the fuzzing
// harnesses only.)
#if defined(__clang__)
#define LOWBIT_NO_TRAPPING_MATH
#else
#define LOWBIT_NO_TRAPPING_MATH __attribute__((optimize("no-trapping-math")))
#endif
LOWBIT_AVX2_CLONES LOWBIT_NO_TRAPPING_MATH void RescaleBlock(const Rescale& rescale, int row_start,
                                                             int rows, int col_start, int cols,
                                                             std::int32_t* acc, int acc_stride) {
  // Doubles, so that the loop vectorizes; they compute exactly what int64 would. Under the
  // depth guard every product and sum below is an integer of magnitude < 2^52
  // (lowbit/internal/driver/bit_depth.cc), so each is exact. The quotient n / divisor with divisor
  // odd lies at least 1 / (2 * divisor) >= 2^-17 from a half-integer (no ties), while multiplying
  // by the rounded reciprocal errs by less than |n / divisor| * 2^-51 <= 2^-19 wherever the result
  // does not saturate: rounding the product to the nearest integer gives round(n / divisor)
  // exactly.
  const double reciprocal = 1.0 / rescale.divisor;
  // Adding and subtracting 1.5 * 2^52 rounds a double of magnitude < 2^51 to the nearest
  // integer (the FPU's default rounding), in plain vectorizable arithmetic.
  constexpr double kRound = 6755399441055744.0;
  const double* lhs_a = rescale.lhs.a + row_start;
  const double* lhs_b = rescale.lhs.b + row_start;
  const double* rhs_a = rescale.rhs.a + col_start;
  const double* rhs_b = rescale.rhs.b + col_start;
  for (int r = 0; r < rows; ++r) {
    std::int32_t* acc_row = acc + static_cast<std::ptrdiff_t>(r) * acc_stride;
    for (int c = 0; c < cols; ++c) {
      const double n = 65025.0 * acc_row[c] + lhs_a[r] * rhs_a[c] + lhs_b[r] * rhs_b[c];
      double quotient = n * reciprocal;
      quotient = quotient > -2147483648.0 ? quotient : -2147483648.0;
      quotient = quotient < 2147483647.0 ? quotient : 2147483647.0;
      acc_row[c] = static_cast<std::int32_t>((quotient + kRound) - kRound);
    }
  }
}

}  // namespace internal
}  // namespace lowbit
