// The aarch64 8-bit micro-kernel on the Armv8.2 dot-product instruction SDOT (8x12 tile, int8
// operands, depth in groups of 4). Compiled with +dotprod; dispatch runs it only where cpuinfo
// reports the instruction.
#include <arm_neon.h>

#include <cstdint>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"

namespace lowbit {
namespace internal {
namespace {

// SDOT adds four int8 x int8 products into each int32 lane: at most 4 * 2^14, so it is exact for
// every packed value (uint8 sources as value - 128, PackedValueShift) and needs no int16 step.
//
// The tile: one SDOT by element multiplies a register of 4 columns x 4 depth values by the 4
// depth values of one row (a lane of a register of 4 rows) into the 4 columns of that row.
// 8 rows x 12 columns take 8 x 3 accumulator registers, and each depth step loads 2 lhs and 3
// rhs registers: 29 of aarch64's 32 vector registers, so nothing spills, and 24 SDOTs share 5
// loads (8 x 8 would share 4 loads among 16; 12 x 12 would need 36 accumulators). The extra
// columns go to the rhs rather than the lhs because a short lhs panel computes only its rows,
// and the driver keeps a GEMM's short side on the left where the result's order allows: a
// matrix-vector product's vector always, a column-major result's shorter operand.
constexpr KernelFormat kNeonDotFormat{8, 12, 4, PackedType::kInt8, PackedType::kInt8};
constexpr int kGroup = kNeonDotFormat.depth_group;
// A register holds one group of 4 rows (columns).
constexpr int kRowsPerRegister = 4;
constexpr int kRegisterBytes = kRowsPerRegister * kGroup;
constexpr int kColRegisters = kNeonDotFormat.rhs_cols / kRowsPerRegister;

// A group of 4 depth values per row is the 4-byte element SDOT takes.
void PackLhsNeonDot(const MatrixView& source, int start, int count, int depth_start, int depth,
                    void* packed, std::int32_t* sums) {
  PackInt8Neon(source, kNeonDotFormat, kNeonDotFormat.lhs_rows, start, count, depth_start, depth,
               packed, sums);
}

void PackRhsNeonDot(const MatrixView& source, int start, int count, int depth_start, int depth,
                    void* packed, std::int32_t* sums) {
  PackInt8Neon(source, kNeonDotFormat, kNeonDotFormat.rhs_cols, start, count, depth_start, depth,
               packed, sums);
}

// row += columns x the 4 depth values in lane kLane of `rows`.
template <int kLane>
inline void AddRow(const int8x16_t (&columns)[kColRegisters], int8x16_t rows,
                   int32x4_t (&row)[kColRegisters]) {
  for (int j = 0; j < kColRegisters; ++j) row[j] = vdotq_laneq_s32(row[j], columns[j], rows, kLane);
}

// The first kRows rows of the tile, each kept as kColRegisters registers of 4 columns: the
// layout of a row of the accumulator block, so the stores need no shuffle.
template <int kRows>
void MicroKernelRows(const std::int8_t* lhs, const std::int8_t* rhs, int padded_depth,
                     std::int32_t* acc, int acc_stride, bool accumulate) {
  constexpr int kLhsRegisters = (kRows + kRowsPerRegister - 1) / kRowsPerRegister;
  int32x4_t sums[kRows][kColRegisters];
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < kColRegisters; ++j) sums[i][j] = vdupq_n_s32(0);
  }
  for (int group = 0; group < padded_depth; group += kGroup) {
    int8x16_t rows[kLhsRegisters];
    int8x16_t columns[kColRegisters];
    for (int r = 0; r < kLhsRegisters; ++r) rows[r] = vld1q_s8(lhs + r * kRegisterBytes);
    for (int j = 0; j < kColRegisters; ++j) columns[j] = vld1q_s8(rhs + j * kRegisterBytes);
      // Unrolled by force: GCC 12 leaves this loop rolled from 5 rows on, and the sums then live
      // in memory, one load and store around every SDOT.
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      const int8x16_t four_rows = rows[i / kRowsPerRegister];
      switch (i % kRowsPerRegister) {
        case 0:
          AddRow<0>(columns, four_rows, sums[i]);
          break;
        case 1:
          AddRow<1>(columns, four_rows, sums[i]);
          break;
        case 2:
          AddRow<2>(columns, four_rows, sums[i]);
          break;
        default:
          AddRow<3>(columns, four_rows, sums[i]);
          break;
      }
    }
    lhs += kNeonDotFormat.lhs_rows * kGroup;
    rhs += kNeonDotFormat.rhs_cols * kGroup;
  }
  // Unrolled too, or GCC copies the sums to the stack to loop over them.
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    std::int32_t* out = acc + static_cast<std::ptrdiff_t>(i) * acc_stride;
    for (int j = 0; j < kColRegisters; ++j) {
      int32x4_t four_columns = sums[i][j];
      if (accumulate) four_columns = vaddq_s32(four_columns, vld1q_s32(out + kRowsPerRegister * j));
      vst1q_s32(out + kRowsPerRegister * j, four_columns);
    }
  }
}

void MicroKernelNeonDot(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                        std::int32_t* acc, int acc_stride, bool accumulate) {
  const auto* lhs = static_cast<const std::int8_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::int8_t*>(rhs_panel);
  ForRowCount<kNeonDotFormat.lhs_rows>(rows, [&](auto used_rows) {
    MicroKernelRows<decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride,
                                                accumulate);
  });
}

}  // namespace

const KernelImplementation& NeonDotKernel() {
  static const KernelImplementation implementation{Kernel::kNeon, kNeonDotFormat, &PackLhsNeonDot,
                                                   &PackRhsNeonDot, &MicroKernelNeonDot};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
