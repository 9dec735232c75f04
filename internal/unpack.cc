// Adds the rank-1 offset terms to raw kernel sums (see unpack.h), in wrapping int32 arithmetic.
#include "internal/unpack.h"

namespace lowbit {
namespace internal {

void EffectiveOffsets(const Offsets& offsets, int value_shift, int count, std::int32_t* out) {
  for (int i = 0; i < count; ++i) {
    out[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(offsets(i)) +
                                       static_cast<std::uint32_t>(value_shift));
  }
}

void MakeRowTerms(const std::int32_t* lhs_offsets, int depth, int rows, std::int32_t* row_sums) {
  for (int r = 0; r < rows; ++r) {
    row_sums[r] = static_cast<std::int32_t>(static_cast<std::uint32_t>(row_sums[r]) +
                                            static_cast<std::uint32_t>(depth) *
                                                static_cast<std::uint32_t>(lhs_offsets[r]));
  }
}

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

}  // namespace internal
}  // namespace lowbit
