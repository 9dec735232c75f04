// Unpacking, compiled half: turns a block of raw kernel sums into the final accumulators by
// adding the rank-1 offset terms. The other half, the output pipeline, is the header template in
// lowbit/public/gemm.h, fused per caller.
#ifndef LOWBIT_INTERNAL_OUTPUT_UNPACK_H_
#define LOWBIT_INTERNAL_OUTPUT_UNPACK_H_

#include <cstdint>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/public/map.h"

namespace lowbit {
namespace internal {

// out[i] = offsets(i) + value_shift for i < count: the effective offsets, since packing stored
// value - value_shift. Computed once per GEMM so that the per-entry loop reads arrays.
void EffectiveOffsets(const Offsets& offsets, int value_shift, int count, std::int32_t* out);

// row_terms[r] = row_sums[r] + depth * a[r], in place, for the `rows` rows of a task: with it,
// an entry's offset terms are a[r] * col_sums[c] + b[c] * row_terms[r] (a, b the effective
// offsets), two products.
void MakeRowTerms(const std::int32_t* lhs_offsets, int depth, int rows, std::int32_t* row_sums);

// out[i] = factor * values[i] + addend (wrapping) for i < count. When both effective offsets are
// uniform, a and b, an entry's terms separate into a row part b * row_terms[r] and a column part
// a * col_sums[c], each computed once per row or column.
void ScaleTerms(std::int32_t factor, const std::int32_t* values, std::int32_t addend, int count,
                std::int32_t* out);

// The offset terms of a block of raw sums, in the block's result coordinates: entry (i, j) is
// owed row_first[i] * col_first[j] + row_second[i] * col_second[j], indices counted from the
// block's first row and column, in wrapping int32 arithmetic: the true result fits int32 (the
// depth guard), so the wrapped intermediate sums come back to it exactly. The vectorized
// output writers add them as they load the block; otherwise AddOffsetTerms does. All null: none
// owed, the block holds final sums.
struct OffsetTerms {
  const std::int32_t* row_first = nullptr;
  const std::int32_t* col_first = nullptr;
  const std::int32_t* row_second = nullptr;
  const std::int32_t* col_second = nullptr;
  // Or, when both offsets are uniform (ScaleTerms), row_part[i] + col_part[j]: one term per row
  // and one per column, with the four above unused; owed by the raw sums times sum_factor (not 1
  // for the exact rescale of requantized operands, lowbit/internal/driver/driver.h).
  const std::int32_t* row_part = nullptr;
  const std::int32_t* col_part = nullptr;
  std::int32_t sum_factor = 1;
  // Known to be zero in every row, or every column: the parts of an operand whose factor is zero
  // (the other operand's offset cancels the shift it is packed with). The writers leave such
  // parts out rather than add them; false says nothing.
  bool row_parts_zero = false;
  bool col_parts_zero = false;

  static OffsetTerms Separable(const std::int32_t* row_part, const std::int32_t* col_part,
                               std::int32_t sum_factor = 1, bool row_parts_zero = false,
                               bool col_parts_zero = false) {
    OffsetTerms terms;
    terms.row_part = row_part;
    terms.col_part = col_part;
    terms.sum_factor = sum_factor;
    terms.row_parts_zero = row_parts_zero;
    terms.col_parts_zero = col_parts_zero;
    return terms;
  }

  // The terms of the part of the block from its row `row` and column `col` on.
  OffsetTerms From(int row, int col) const {
    const auto advance = [](const std::int32_t* values, int by) {
      return values != nullptr ? values + by : nullptr;
    };
    OffsetTerms part;
    part.row_first = advance(row_first, row);
    part.col_first = advance(col_first, col);
    part.row_second = advance(row_second, row);
    part.col_second = advance(col_second, col);
    part.row_part = advance(row_part, row);
    part.col_part = advance(col_part, col);
    part.sum_factor = sum_factor;
    part.row_parts_zero = row_parts_zero;
    part.col_parts_zero = col_parts_zero;
    return part;
  }
};

// acc[r][c] += a[r] * col_sums[c] + b[c] * row_terms[r] for the rows x cols of a task's block
// (row-major, acc_stride apart).
void AddOffsetTerms(const std::int32_t* lhs_offsets, const std::int32_t* row_terms, int rows,
                    const std::int32_t* rhs_offsets, const std::int32_t* col_sums, int cols,
                    std::int32_t* acc, int acc_stride);

// Replaces each exact sum acc[r][c] of the block at (row_start, col_start) by the rescaled
// approximation of the 8-bit result that `rescale` describes (lowbit/internal/driver/driver.h).
void RescaleBlock(const Rescale& rescale, int row_start, int rows, int col_start, int cols,
                  std::int32_t* acc, int acc_stride);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_UNPACK_H_
