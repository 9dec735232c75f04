// The aarch64 NEON micro-kernel (4x4 tile, int8 operands, depth in groups of 16) and its
// packing. Exact for full-range uint8 and int8: every product is widened before it is summed.
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"

namespace lowbit {
namespace internal {
namespace {

// uint8 sources are packed as value - 2^(bits-1) (PackedValueShift), so every packed value is
// in [-128, 127] and every product in [-16256, 16384]: one product fits int16, but two of
// -128 * -128 do not, which is why the 8-bit kernel never adds two products in int16. The
// narrow kernels do, as many as NeonNarrowInt16Steps allows.
constexpr KernelFormat kNeonFormat{4, 4, 16, PackedType::kInt8, PackedType::kInt8};
constexpr int kGroup = kNeonFormat.depth_group;

// 16 source values along the depth, as packed int8: value - value_shift, which wraps to the
// right byte for uint8 and is the value itself for int8 (no shift).
constexpr int kChunk = 16;
int8x16_t LoadChunk(const void* source, int value_shift) {
  const uint8x16_t raw = vld1q_u8(static_cast<const std::uint8_t*>(source));
  return vreinterpretq_s8_u8(vsubq_u8(raw, vdupq_n_u8(static_cast<std::uint8_t>(value_shift))));
}

std::int8_t PackedValue(const MatrixView& source, int row, int col, int value_shift) {
  const std::int32_t value = source.type == ElementType::kUint8
                                 ? LoadSource<std::uint8_t>(source, row, col)
                                 : LoadSource<std::int8_t>(source, row, col);
  return static_cast<std::int8_t>(value - value_shift);
}

// The packer when each row's depth values are contiguous (a row-major lhs, a column-major rhs):
// 16 values at a time are loaded, shifted and summed with NEON, then stored as groups of
// kDepthGroup bytes, each at its place in the panel. The last, partial chunk of a row is
// assembled in a zero-filled buffer so its padding stays zero.
template <int kDepthGroup>
void PackContiguousDepth(const MatrixView& source, int panel_width, int start, int count,
                         int depth_start, int depth, void* packed, std::int32_t* sums) {
  static_assert(kChunk % kDepthGroup == 0, "a chunk holds whole groups");
  const int value_shift = PackedValueShift(PackedType::kInt8, source);
  const int padded_depth = RoundUp(depth, kDepthGroup);
  const std::ptrdiff_t group_step = static_cast<std::ptrdiff_t>(panel_width) * kDepthGroup;
  auto* out = static_cast<std::int8_t*>(packed);
  for (int panel_start = 0; panel_start < count; panel_start += panel_width) {
    for (int i = 0; i < panel_width; ++i) {
      const int row = panel_start + i;
      // Row i's group g goes after g groups of the whole panel and i rows of group g.
      std::int8_t* row_out = out + static_cast<std::ptrdiff_t>(panel_start) * padded_depth +
                             static_cast<std::ptrdiff_t>(i) * kDepthGroup;
      if (row >= count) {
        for (int group = 0; group < padded_depth; group += kDepthGroup, row_out += group_step) {
          std::memset(row_out, 0, kDepthGroup);
        }
        continue;
      }
      // Both source types are one byte per value.
      const auto* row_source = static_cast<const std::uint8_t*>(source.data) +
                               static_cast<std::ptrdiff_t>(start + row) * source.stride +
                               depth_start;
      // Each lane sums at most depth / 4 values of magnitude 128: far from int32's limit for
      // any depth the GEMM accepts.
      int32x4_t row_sum = vdupq_n_s32(0);
      for (int chunk = 0; chunk < padded_depth; chunk += kChunk) {
        int8x16_t values;
        if (chunk + kChunk <= depth) {
          values = LoadChunk(row_source + chunk, value_shift);
        } else {
          std::int8_t partial[kChunk] = {};
          for (int d = chunk; d < depth; ++d) {
            partial[d - chunk] = PackedValue(source, start + row, depth_start + d, value_shift);
          }
          values = vld1q_s8(partial);
        }
        row_sum = vpadalq_s16(row_sum, vpaddlq_s8(values));
        if constexpr (kDepthGroup == kChunk) {
          vst1q_s8(row_out, values);
          row_out += group_step;
        } else {
          std::int8_t bytes[kChunk];
          vst1q_s8(bytes, values);
          const int chunk_end = std::min(chunk + kChunk, padded_depth);
          for (int group = chunk; group < chunk_end; group += kDepthGroup, row_out += group_step) {
            std::memcpy(row_out, bytes + (group - chunk), kDepthGroup);
          }
        }
      }
      sums[row] += vaddvq_s32(row_sum);
    }
  }
}

}  // namespace

void PackInt8Neon(const MatrixView& source, const KernelFormat& format, int panel_width, int start,
                  int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  const bool contiguous_depth = source.order == Order::kRowMajor;
  if (contiguous_depth && format.depth_group == 4) {
    PackContiguousDepth<4>(source, panel_width, start, count, depth_start, depth, packed, sums);
  } else if (contiguous_depth && format.depth_group == 8) {
    PackContiguousDepth<8>(source, panel_width, start, count, depth_start, depth, packed, sums);
  } else if (contiguous_depth && format.depth_group == 16) {
    PackContiguousDepth<16>(source, panel_width, start, count, depth_start, depth, packed, sums);
  } else {
    PackBytesPortable(source, PackedType::kInt8, format, panel_width, start, count, depth_start,
                      depth, packed, sums);
  }
}

namespace {

void PackLhsNeon(const MatrixView& source, int start, int count, int depth_start, int depth,
                 void* packed, std::int32_t* sums) {
  PackInt8Neon(source, kNeonFormat, kNeonFormat.lhs_rows, start, count, depth_start, depth, packed,
               sums);
}

void PackRhsNeon(const MatrixView& source, int start, int count, int depth_start, int depth,
                 void* packed, std::int32_t* sums) {
  PackInt8Neon(source, kNeonFormat, kNeonFormat.rhs_cols, start, count, depth_start, depth, packed,
               sums);
}

// Folds each (row, column) pair's four int32 lanes into one and stores (or adds) the first
// `rows` rows of the tile.
inline void StoreTile(const int32x4_t (&lanes)[kNeonFormat.lhs_rows][kNeonFormat.rhs_cols],
                      int rows, std::int32_t* acc, int acc_stride, bool accumulate) {
  for (int i = 0; i < rows; ++i) {
    // [sum of lanes[i][0], ..., sum of lanes[i][3]]: row i of the tile.
    int32x4_t row =
        vpaddq_s32(vpaddq_s32(lanes[i][0], lanes[i][1]), vpaddq_s32(lanes[i][2], lanes[i][3]));
    std::int32_t* out = acc + static_cast<std::ptrdiff_t>(i) * acc_stride;
    if (accumulate) row = vaddq_s32(row, vld1q_s32(out));
    vst1q_s32(out, row);
  }
}

// Per group, each of the 16 (row, column) pairs multiplies 16 int8 values into int16
// (vmull_s8, exact) and adds adjacent pairs of products into its four int32 lanes
// (vpadalq_s16, exact: a pair is at most 32768 in magnitude). Not vmlal_s8: it sums two
// products in int16 and overflows for -128 * -128 + -128 * -128. The lanes wrap like every
// int32 sum of the library; the final horizontal adds fold the four lanes into one.
// The whole tile is computed (16 accumulators unrolled in registers); only `rows` rows are stored.
void MicroKernelNeon(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                     std::int32_t* acc, int acc_stride, bool accumulate) {
  constexpr int kRows = kNeonFormat.lhs_rows;
  constexpr int kCols = kNeonFormat.rhs_cols;
  const auto* lhs = static_cast<const std::int8_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::int8_t*>(rhs_panel);
  int32x4_t lanes[kRows][kCols];
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < kCols; ++j) lanes[i][j] = vdupq_n_s32(0);
  }
  for (int group = 0; group < padded_depth; group += kGroup) {
    int8x16_t lhs_rows[kRows];
    int8x16_t rhs_cols[kCols];
    for (int i = 0; i < kRows; ++i) lhs_rows[i] = vld1q_s8(lhs + i * kGroup);
    for (int j = 0; j < kCols; ++j) rhs_cols[j] = vld1q_s8(rhs + j * kGroup);
    for (int i = 0; i < kRows; ++i) {
      for (int j = 0; j < kCols; ++j) {
        const int16x8_t low = vmull_s8(vget_low_s8(lhs_rows[i]), vget_low_s8(rhs_cols[j]));
        const int16x8_t high = vmull_high_s8(lhs_rows[i], rhs_cols[j]);
        lanes[i][j] = vpadalq_s16(vpadalq_s16(lanes[i][j], low), high);
      }
    }
    lhs += kRows * kGroup;
    rhs += kCols * kGroup;
  }
  StoreTile(lanes, rows, acc, acc_stride, accumulate);
}

// The narrow kernel: the same tile and packing, but vmlal_s8 adds kSteps products (two per
// group: its low and high halves) in each int16 lane before vpadalq_s16 widens them into the
// int32 sums, which wait on the stack: the 16 int16 accumulators and the 8 operands fill the
// registers.
template <int kSteps>
void MicroKernelNeonNarrow(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                           std::int32_t* acc, int acc_stride, bool accumulate) {
  constexpr int kRows = kNeonFormat.lhs_rows;
  constexpr int kCols = kNeonFormat.rhs_cols;
  constexpr int kGroupsPerRun = kSteps / 2;
  const auto* lhs = static_cast<const std::int8_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::int8_t*>(rhs_panel);
  int32x4_t wide[kRows][kCols];
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < kCols; ++j) wide[i][j] = vdupq_n_s32(0);
  }
  const int groups = padded_depth / kGroup;
  for (int group = 0; group < groups; group += kGroupsPerRun) {
    const int run = groups - group < kGroupsPerRun ? groups - group : kGroupsPerRun;
    int16x8_t narrow[kRows][kCols];
    for (int i = 0; i < kRows; ++i) {
      for (int j = 0; j < kCols; ++j) narrow[i][j] = vdupq_n_s16(0);
    }
    for (int step = 0; step < run; ++step) {
      int8x16_t lhs_rows[kRows];
      int8x16_t rhs_cols[kCols];
      for (int i = 0; i < kRows; ++i) lhs_rows[i] = vld1q_s8(lhs + i * kGroup);
      for (int j = 0; j < kCols; ++j) rhs_cols[j] = vld1q_s8(rhs + j * kGroup);
      for (int i = 0; i < kRows; ++i) {
        for (int j = 0; j < kCols; ++j) {
          narrow[i][j] = vmlal_s8(narrow[i][j], vget_low_s8(lhs_rows[i]), vget_low_s8(rhs_cols[j]));
          narrow[i][j] = vmlal_high_s8(narrow[i][j], lhs_rows[i], rhs_cols[j]);
        }
      }
      lhs += kRows * kGroup;
      rhs += kCols * kGroup;
    }
    for (int i = 0; i < kRows; ++i) {
      for (int j = 0; j < kCols; ++j) wide[i][j] = vpadalq_s16(wide[i][j], narrow[i][j]);
    }
  }
  StoreTile(wide, rows, acc, acc_stride, accumulate);
}

template <int kSteps>
const KernelImplementation& NeonNarrowWithSteps() {
  static const KernelImplementation implementation{Kernel::kNeon, kNeonFormat, &PackLhsNeon,
                                                   &PackRhsNeon, &MicroKernelNeonNarrow<kSteps>};
  return implementation;
}

}  // namespace

const KernelImplementation& NeonKernel() {
  static const KernelImplementation implementation{Kernel::kNeon, kNeonFormat, &PackLhsNeon,
                                                   &PackRhsNeon, &MicroKernelNeon};
  return implementation;
}

const KernelImplementation* NeonNarrowKernel(int lhs_bits, int rhs_bits) {
  const int steps = NeonNarrowInt16Steps(lhs_bits, rhs_bits);
  if (steps < 2) return nullptr;
  return ForInt16Steps<2>(
      steps, [](auto constant) { return &NeonNarrowWithSteps<decltype(constant)::value>(); });
}

}  // namespace internal
}  // namespace lowbit
