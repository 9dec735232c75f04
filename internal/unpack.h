// Unpacking, compiled half: turns a block of raw kernel sums into the final accumulators by
// adding the rank-1 offset terms. The other half, the output pipeline, is the header template in
// public/gemm.h, fused per caller.
#ifndef LOWBIT_INTERNAL_UNPACK_H_
#define LOWBIT_INTERNAL_UNPACK_H_

#include <cstdint>

#include "public/map.h"

namespace lowbit {
namespace internal {

// The block's rows start at lhs row `row_start`, its columns at rhs column `col_start`.
// Packing stored value - lhs_value_shift (rhs_value_shift), so the effective offsets are
// lhs_offset + lhs_value_shift and rhs_offset + rhs_value_shift.
struct OffsetTerms {
  const Offsets& lhs_offset;
  const Offsets& rhs_offset;
  int lhs_value_shift;
  int rhs_value_shift;
  int depth;
};

// acc[r][c] += a[r] * col_sums[c] + b[c] * row_sums[r] + depth * a[r] * b[c], with a and b the
// effective offsets, in wrapping int32 arithmetic: the true result fits int32 (the depth
// guard), so the wrapped intermediate sums come back to it exactly.
void AddOffsetTerms(const OffsetTerms& terms, int row_start, int rows, int col_start, int cols,
                    const std::int32_t* row_sums, const std::int32_t* col_sums, std::int32_t* acc,
                    int acc_stride);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_UNPACK_H_
