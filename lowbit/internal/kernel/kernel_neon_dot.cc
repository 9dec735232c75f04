// The aarch64 8-bit micro-kernel on the Armv8.2 dot-product instruction SDOT (8x12 tile, int8
// operands, depth in groups of 4), and the same tile on prepacked weights of at most 4 bits stored
// two to a byte. Compiled with +dotprod; dispatch runs them only where cpuinfo reports the
// instruction.
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

// Stores (or adds to) the accumulator block the tile's first kRows rows, each kept as
// kColRegisters registers of 4 columns: the layout of a row of the block, so no shuffle. Unrolled,
// or GCC copies the sums to the stack to loop over them.
template <int kRows>
__attribute__((always_inline)) inline void StoreRows(const int32x4_t (&sums)[kRows][kColRegisters],
                                                     std::int32_t* acc, int acc_stride,
                                                     bool accumulate) {
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
  StoreRows(sums, acc, acc_stride, accumulate);
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

// Prepacked weights of at most 4 bits (PackedType::kUint4Pairs), the memory-bound matrix-vector
// product's operand: two of the tile's rhs steps in the bytes of one, byte j of the first step in
// the low nibble of byte j and byte j of the next (the same column, 4 depth values on) in the high
// nibble. The tile takes 8 depth values a step: the nibbles of each 16-byte register separate into
// the two steps' registers of 4 columns (an AND and a shift), and each row's group of 8 lhs values
// (lanes 0 and 1, or 2 and 3, of a register holding two rows) multiplies them. Values are the
// unsigned 4-bit ones, which SDOT's int8 side holds as they are.
constexpr KernelFormat kUint4PairsFormat{kNeonDotFormat.lhs_rows, kNeonDotFormat.rhs_cols,
                                         2 * kGroup, PackedType::kInt8, PackedType::kUint4Pairs};
constexpr int kPairRowsPerRegister = 2;
constexpr int kPairStepBytes = kUint4PairsFormat.rhs_cols * kGroup;  // two steps, folded

void PackLhsNeonDotPairs(const MatrixView& source, int start, int count, int depth_start, int depth,
                         void* packed, std::int32_t* sums) {
  PackInt8Neon(source, kUint4PairsFormat, kUint4PairsFormat.lhs_rows, start, count, depth_start,
               depth, packed, sums);
}

// kUint8 groups of 4 depth values, the layout that PackNibblePairs folds. Only prepacking calls it.
void PackUint8GroupsOfFour(const MatrixView& source, PackedType type, int panel_width, int start,
                           int count, int depth_start, int depth, void* packed,
                           std::int32_t* sums) {
  PackBytesPortable(source, type, kNeonDotFormat, panel_width, start, count, depth_start, depth,
                    packed, sums);
}

void PackRhsNeonDotPairs(const MatrixView& source, int start, int count, int depth_start, int depth,
                         void* packed, std::int32_t* sums) {
  PackNibblePairs(&PackUint8GroupsOfFour, PackedType::kUint8, kUint4PairsFormat.rhs_cols,
                  kUint4PairsFormat.depth_group, 2 * kPairStepBytes, source, start, count,
                  depth_start, depth, packed, sums);
}

// low_sum += low x the 4 depth values in lane kLane of `two_rows`, high_sum += high x those in
// lane kLane + 1 (the next 4 depth values of the same row).
template <int kLane>
inline void AddPairRow(int8x16_t low, int8x16_t high, int8x16_t two_rows, int32x4_t& low_sum,
                       int32x4_t& high_sum) {
  low_sum = vdotq_laneq_s32(low_sum, low, two_rows, kLane);
  high_sum = vdotq_laneq_s32(high_sum, high, two_rows, kLane + 1);
}

template <int kRows>
void PairMicroKernelRows(const std::int8_t* lhs, const std::uint8_t* rhs, int padded_depth,
                         std::int32_t* acc, int acc_stride, bool accumulate) {
  constexpr int kLhsRegisters = (kRows + kPairRowsPerRegister - 1) / kPairRowsPerRegister;
  constexpr int kStepDepth = kUint4PairsFormat.depth_group;
  // Up to 4 rows (a matrix-vector product has one) leave registers to spare: the high nibbles'
  // products go to a second set of sums, so that each sum takes one sdot a step, not a chain of
  // two. 8 rows keep 24 chains in flight without.
  constexpr bool kSplit = kRows <= 4;
  int32x4_t sums[kRows][kColRegisters];
  int32x4_t high_sums[kSplit ? kRows : 1][kColRegisters];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < kColRegisters; ++j) {
      sums[i][j] = vdupq_n_s32(0);
      if (kSplit) high_sums[i][j] = vdupq_n_s32(0);
    }
  }
  const uint8x16_t low_nibbles = vdupq_n_u8(0x0f);
  for (int d = 0; d < padded_depth; d += kStepDepth) {
    int8x16_t rows[kLhsRegisters];
    for (int r = 0; r < kLhsRegisters; ++r) rows[r] = vld1q_s8(lhs + r * kRegisterBytes);
#pragma GCC unroll 3
    for (int j = 0; j < kColRegisters; ++j) {
      const uint8x16_t pairs = vld1q_u8(rhs + j * kRegisterBytes);
      const int8x16_t low = vreinterpretq_s8_u8(vandq_u8(pairs, low_nibbles));
      const int8x16_t high = vreinterpretq_s8_u8(vshrq_n_u8(pairs, 4));
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        int32x4_t& high_sum = kSplit ? high_sums[kSplit ? i : 0][j] : sums[i][j];
        if (i % kPairRowsPerRegister == 0) {
          AddPairRow<0>(low, high, rows[i / kPairRowsPerRegister], sums[i][j], high_sum);
        } else {
          AddPairRow<2>(low, high, rows[i / kPairRowsPerRegister], sums[i][j], high_sum);
        }
      }
    }
    lhs += kUint4PairsFormat.lhs_rows * kStepDepth;
    rhs += kPairStepBytes;
  }
  if constexpr (kSplit) {
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      for (int j = 0; j < kColRegisters; ++j) sums[i][j] = vaddq_s32(sums[i][j], high_sums[i][j]);
    }
  }
  StoreRows(sums, acc, acc_stride, accumulate);
}

void PairMicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                     std::int32_t* acc, int acc_stride, bool accumulate) {
  const auto* lhs = static_cast<const std::int8_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::uint8_t*>(rhs_panel);
  ForRowCount<kUint4PairsFormat.lhs_rows>(rows, [&](auto used_rows) {
    PairMicroKernelRows<decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride,
                                                    accumulate);
  });
}

}  // namespace

const KernelImplementation& NeonDotKernel() {
  static const KernelImplementation implementation{Kernel::kNeon, kNeonDotFormat, &PackLhsNeonDot,
                                                   &PackRhsNeonDot, &MicroKernelNeonDot};
  return implementation;
}

const KernelImplementation& NeonDotUint4PairsKernel() {
  static const KernelImplementation implementation{Kernel::kNeon, kUint4PairsFormat,
                                                   &PackLhsNeonDotPairs, &PackRhsNeonDotPairs,
                                                   &PairMicroKernel};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
