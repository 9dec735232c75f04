// The bit-serial kernels for 1- and 2-bit operands on NEON (aarch64 baseline, no flag): products
// of bit planes by AND and a popcount per byte (vcnt), summed into int32 lanes.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "lowbit/internal/kernel/kernel_bit_serial.h"
#include "lowbit/internal/pack/pack.h"
#include "lowbit/internal/pack/pack_bit_planes.h"

namespace lowbit {
namespace internal {
namespace {

// An rhs vector holds a plane's words of 4 columns, a broadcast one lhs row's word
// (kernel_bit_serial.h). NEON counts bits per byte only, and widening every count to int32 would
// take two more instructions per AND, so the counts of each weight p + q (a "class") are added up
// as bytes for a block of groups, as many as keep every byte within 255. At the end of a block the
// classes are weighted and added pairwise into uint16 lanes, and those into the uint32 lane of
// their word. Registers: kRows x 2 vectors x classes byte counts, 2 x rhs planes rhs vectors, the
// broadcasts and the counts of the ANDs in flight, within the 32 NEON registers (GCC 12 at -O2
// spills counts to the stack every group with a row more, below ForRowCount's 8). The uint32 totals
// may wait on the stack while a block runs.
template <int kLhsPlanes, int kRhsPlanes>
struct BitSerialTile {
  static constexpr int kClasses = WeightClasses(kLhsPlanes, kRhsPlanes);
  static constexpr int kRows = kClasses == 1 ? 8 : kClasses == 2 ? 4 : 2;
  static constexpr int kVectors = 2;
  static constexpr int kCols = 4 * kVectors;

  static constexpr int kBlockGroups = ByteCountGroups(kLhsPlanes, kRhsPlanes);
  // Weighting in uint16 must not overflow it: a lane adds two bytes of each class.
  static_assert(2 * 255 * ((1 << kClasses) - 1) <= 65535, "weighted counts fit uint16");

  template <int kUsedRows>
  static void Run(const std::uint32_t* lhs, const std::uint32_t* rhs, int padded_depth,
                  std::int32_t* acc, int acc_stride, bool accumulate) {
    // uint32 wraps as the int32 result may: the sum is taken modulo 2^32 either way.
    uint32x4_t totals[kUsedRows][kVectors];
    for (auto& row : totals) {
      for (uint32x4_t& total : row) total = vdupq_n_u32(0);
    }
    const int groups = padded_depth / kBitPlaneGroup;
    for (int block_start = 0; block_start < groups; block_start += kBlockGroups) {
      const int block_end = std::min(groups, block_start + kBlockGroups);
      uint8x16_t counts[kUsedRows][kVectors][kClasses];
      for (auto& row : counts) {
        for (auto& vector : row) {
          for (uint8x16_t& count : vector) count = vdupq_n_u8(0);
        }
      }
      // The loops over the tile are unrolled whole, as at -O2 GCC would not for the larger tiles:
      // an array of accumulators indexed in a loop stays in memory, loaded and stored every group.
      for (int group = block_start; group < block_end; ++group) {
        uint32x4_t rhs_planes[kRhsPlanes][kVectors];
#pragma GCC unroll 8
        for (int q = 0; q < kRhsPlanes; ++q) {
#pragma GCC unroll 8
          for (int v = 0; v < kVectors; ++v) rhs_planes[q][v] = vld1q_u32(rhs + q * kCols + 4 * v);
        }
#pragma GCC unroll 8
        for (int i = 0; i < kUsedRows; ++i) {
#pragma GCC unroll 8
          for (int p = 0; p < kLhsPlanes; ++p) {
            const uint32x4_t lhs_plane = vld1q_dup_u32(lhs + p * kRows + i);
#pragma GCC unroll 8
            for (int v = 0; v < kVectors; ++v) {
#pragma GCC unroll 8
              for (int q = 0; q < kRhsPlanes; ++q) {
                const uint8x16_t both =
                    vreinterpretq_u8_u32(vandq_u32(lhs_plane, rhs_planes[q][v]));
                counts[i][v][p + q] = vaddq_u8(counts[i][v][p + q], vcntq_u8(both));
              }
            }
          }
        }
        lhs += kLhsPlanes * kRows;
        rhs += kRhsPlanes * kCols;
      }
      // Horner's rule from the heaviest class down: each step doubles what the heavier classes
      // hold and adds the next class's byte pairs, one shift and one vpadal per class.
#pragma GCC unroll 8
      for (int i = 0; i < kUsedRows; ++i) {
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) {
          uint16x8_t weighted = vpaddlq_u8(counts[i][v][kClasses - 1]);
#pragma GCC unroll 8
          for (int weight = kClasses - 2; weight >= 0; --weight) {
            weighted = vpadalq_u8(vshlq_n_u16(weighted, 1), counts[i][v][weight]);
          }
          totals[i][v] = vpadalq_u16(totals[i][v], weighted);
        }
      }
    }
    for (int i = 0; i < kUsedRows; ++i) {
      for (int v = 0; v < kVectors; ++v) {
        std::int32_t* out = acc + static_cast<std::ptrdiff_t>(i) * acc_stride + 4 * v;
        int32x4_t sum = vreinterpretq_s32_u32(totals[i][v]);
        if (accumulate) sum = vaddq_s32(sum, vld1q_s32(out));
        vst1q_s32(out, sum);
      }
    }
  }
};

// Bit `plane` of 32 packed values, one bit per value: vtst marks the bytes that have it, each
// keeps its bit's weight within its group of 8, and three pairwise additions add the 8 weights of
// each group into a byte of the word.
std::uint32_t PlaneWord(uint8x16_t low, uint8x16_t high, int plane) {
  const uint8x16_t weights = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bit = vdupq_n_u8(static_cast<std::uint8_t>(1 << plane));
  uint8x16_t sums =
      vpaddq_u8(vandq_u8(vtstq_u8(low, bit), weights), vandq_u8(vtstq_u8(high, bit), weights));
  sums = vpaddq_u8(sums, sums);
  sums = vpaddq_u8(sums, sums);
  return vgetq_lane_u32(vreinterpretq_u32_u8(sums), 0);
}

// Values and plane words for PackBitPlanesAlongDepth.
struct NeonPlanes {
  uint8x16_t shift;
  uint8x16x2_t Load(const std::uint8_t* values) const {
    return {vsubq_u8(vld1q_u8(values), shift), vsubq_u8(vld1q_u8(values + 16), shift)};
  }
  std::uint32_t Word(uint8x16x2_t values, int plane) const {
    return PlaneWord(values.val[0], values.val[1], plane);
  }
};

// A BitPlanePacker: sources whose rows hold their depth values adjacent (a row-major lhs, a
// column-major rhs) 32 values a step, others through the portable packer.
void PackBitPlanesNeon(const MatrixView& source, PackedType type, int panel_width, int start,
                       int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  if (source.order != Order::kRowMajor) {
    PackBitPlanesPortable(source, type, panel_width, start, count, depth_start, depth, packed,
                          sums);
    return;
  }
  const BitPlaneRows words = BitPlaneRows::Cleared(type, panel_width, count, depth, packed);
  const NeonPlanes planes{vdupq_n_u8(static_cast<std::uint8_t>(PackedValueShift(type, source)))};
  PackBitPlanesAlongDepth(source, words, planes, start, count, depth_start, depth, sums);
}

}  // namespace

const KernelImplementation* NeonBitSerialKernel(int lhs_bits, int rhs_bits) {
  return BitSerialKernelFor<BitSerialTile, Kernel::kNeon, &PackBitPlanesNeon>(lhs_bits, rhs_bits);
}

}  // namespace internal
}  // namespace lowbit
