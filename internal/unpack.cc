// Adds the rank-1 offset terms to raw kernel sums (see unpack.h), in wrapping int32 arithmetic.
#include "internal/unpack.h"

namespace lowbit {
namespace internal {

void AddOffsetTerms(const OffsetTerms& terms, int row_start, int rows, int col_start, int cols,
                    const std::int32_t* row_sums, const std::int32_t* col_sums, std::int32_t* acc,
                    int acc_stride) {
  const auto depth = static_cast<std::uint32_t>(terms.depth);
  for (int r = 0; r < rows; ++r) {
    const std::uint32_t a =
        static_cast<std::uint32_t>(terms.lhs_offset(row_start + r)) + terms.lhs_value_shift;
    // a * col_sums[c] + b[c] * (row_sums[r] + depth * a): one product per term per entry.
    const std::uint32_t row_term = static_cast<std::uint32_t>(row_sums[r]) + depth * a;
    std::int32_t* acc_row = acc + static_cast<std::ptrdiff_t>(r) * acc_stride;
    for (int c = 0; c < cols; ++c) {
      const std::uint32_t b =
          static_cast<std::uint32_t>(terms.rhs_offset(col_start + c)) + terms.rhs_value_shift;
      acc_row[c] =
          static_cast<std::int32_t>(static_cast<std::uint32_t>(acc_row[c]) +
                                    a * static_cast<std::uint32_t>(col_sums[c]) + b * row_term);
    }
  }
}

}  // namespace internal
}  // namespace lowbit
