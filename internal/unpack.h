// Unpacking, compiled half: turns a block of raw kernel sums into the final accumulators by
// adding the rank-1 offset terms. The other half, the output pipeline, is the header template in
// public/gemm.h, fused per caller.
#ifndef LOWBIT_INTERNAL_UNPACK_H_
#define LOWBIT_INTERNAL_UNPACK_H_

#include <cstdint>

#include "internal/driver.h"
#include "public/map.h"

namespace lowbit {
namespace internal {

// out[i] = offsets(i) + value_shift for i < count: the effective offsets, since packing stored
// value - value_shift. Computed once per GEMM so that the per-entry loop reads arrays.
void EffectiveOffsets(const Offsets& offsets, int value_shift, int count, std::int32_t* out);

// acc[r][c] += a[r] * col_sums[c] + b[c] * row_sums[r] + depth * a[r] * b[c] for the block's
// rows x cols, with a and b its effective offsets, in wrapping int32 arithmetic: the true result
// fits int32 (the depth guard), so the wrapped intermediate sums come back to it exactly.
void AddOffsetTerms(const std::int32_t* lhs_offsets, const std::int32_t* row_sums, int rows,
                    const std::int32_t* rhs_offsets, const std::int32_t* col_sums, int cols,
                    int depth, std::int32_t* acc, int acc_stride);

// Replaces each exact sum acc[r][c] of the block at (row_start, col_start) by the rescaled
// approximation of the 8-bit result that `rescale` describes (internal/driver.h).
void RescaleBlock(const Rescale& rescale, int row_start, int rows, int col_start, int cols,
                  std::int32_t* acc, int acc_stride);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_UNPACK_H_
