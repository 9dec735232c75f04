// The x86 micro-kernel for prepacked 8-bit weights: the rhs is int8 byte groups (the narrow
// kernels' layout), and each lhs value is split into its low and high 4 bits when it is packed,
// so that pmaddubsw multiplies full 8-bit values exactly. Include it only from a file compiled
// for that ISA.
#ifndef LOWBIT_INTERNAL_KERNEL_KERNEL_NIBBLES_X86_H_
#define LOWBIT_INTERNAL_KERNEL_KERNEL_NIBBLES_X86_H_

#include <cstdint>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/kernel/kernel_narrow_x86.h"

namespace lowbit {
namespace internal {

// Why: pmaddwd needs int16 operands, so a tile that multiplies int8 weights with it (the quad
// tile of kernel_avx2.cc, or the int16 tile on int8 pairs that it replaced) widens them with a
// shuffle for every vector it reads, and a matrix-vector product uses each weight once: 12
// operations per 64 products. Here a lhs value v = 16 * high + low becomes two products of a
// 4-bit and an 8-bit value, added in int16 and widened once per kNibbleSteps groups: 9
// operations per 64 products, none of them a shuffle. Alone on 1 MiB of weights, the int16
// tile's one-row loop and this one measured 50 and 79 GOPS while this host was busy, and 96 and
// 90 while it was quiet. It issues an eighth more multiplies than pmaddwd would (4 pmaddubsw per
// 64 products, and 4 pmaddwd per 8 steps to widen), so prepacked weights (the same layout) go to
// the quad tile for three lhs rows and more (GetPrepackedRhsKernelImplementation).
//
// Layout (PackedType::kNibbles): a panel of kNibbleRows rows holds, for each group of 4 depth
// values and each row, the 4 low halves and then the 4 high halves: the byte-group layout of
// twice as many rows, row 2i the low halves of row i and row 2i + 1 its high halves.
constexpr int kNibbleRows = 2;
constexpr int kNibbleGroup = 4;
// A pair of products is at most 15 * 128 * 2 = 3840 in magnitude (a 4-bit half times an int8
// value), so 8 steps fit int16 (30720): NarrowInt16Steps(4, 8). A test checks the extremes.
constexpr int kNibbleSteps = NarrowInt16Steps(4, 8);
static_assert(kNibbleSteps == 8, "8 steps of 3840 are the most that fit int16");

// Isa provides what NarrowTile asks for, and MultiplyAddPairs (pmaddwd) and SplatInt16.
template <typename Isa>
struct NibbleTile {
  using Vector = typename Isa::Vector;
  using Row = TileRow<Isa>;
  using Narrow = NarrowTile<Isa>;
  static constexpr int kCols = Narrow::kCols;
  static constexpr KernelFormat kFormat =
      RhsPanelFromL2({kNibbleRows, kCols, kNibbleGroup, PackedType::kNibbles, PackedType::kInt8});

  // wide + low + 16 * high, each int16 pair of lanes widened into its column's int32 sum.
  static Row Widen(Row wide, Row low, Row high) {
    const Vector sixteen = Isa::SplatInt16(16);
    return {Isa::AddInt32(wide.low, Isa::AddInt32(Isa::WidenPairs(low.low),
                                                  Isa::MultiplyAddPairs(high.low, sixteen))),
            Isa::AddInt32(wide.high, Isa::AddInt32(Isa::WidenPairs(low.high),
                                                   Isa::MultiplyAddPairs(high.high, sixteen)))};
  }

  struct Weights {
    Vector low;
    Vector high;
  };

  // One step's two vectors of weights. They stream from L3 or memory: 2 KiB ahead hides the
  // latency (a matrix-vector product through the int16 tile measured 56 GOPS prefetching 256
  // bytes ahead, 66 from 2 KiB). The prefetch is a volatile asm so that it stays with its step:
  // GCC moved the 8 prefetches of an unrolled block together to its start, and the one-row
  // GEMM ran at 67.0 GOPS against 77.5 (medians of 24 interleaved repetitions).
  static Weights LoadWeights(const std::int8_t* rhs) {
    asm volatile("prefetcht0 %0" : : "m"(rhs[2048]));
    return {Isa::Load(rhs), Isa::Load(rhs + kNibbleGroup * Isa::kInt32Lanes)};
  }

  // The int16 sums of one step of one row, pinned (NarrowTile::PinSums).
  static void Step(Row& low, Row& high, const std::uint8_t* lhs_row, Vector rhs_low,
                   Vector rhs_high) {
    low = Narrow::Step(low, lhs_row, rhs_low, rhs_high);
    high = Narrow::Step(high, lhs_row + kNibbleGroup, rhs_low, rhs_high);
    Narrow::PinSums(low);
    Narrow::PinSums(high);
  }

  template <int kUsedRows>
  __attribute__((noinline)) static void Rows(const std::uint8_t* lhs, const std::int8_t* rhs,
                                             int padded_depth, std::int32_t* acc, int acc_stride,
                                             bool accumulate) {
    const Row zero{Isa::Zero(), Isa::Zero()};
    Row wide0 = zero, wide1 = zero;
    const int groups = padded_depth / kNibbleGroup;
    for (int group = 0; group < groups;) {
      const int steps = groups - group < kNibbleSteps ? groups - group : kNibbleSteps;
      Row low0 = zero, high0 = zero, low1 = zero, high1 = zero;
      if (kUsedRows == 1 && steps == kNibbleSteps) {
        // A whole block of one row: a constant count, unrolled without the test after each step
        // that GCC puts in a loop of a run-time count (with the 3 register copies that line the
        // sums up for each exit: 18 instructions a step instead of 13).
        for (int i = 0; i < kNibbleSteps; ++i) {
          const Weights weights = LoadWeights(rhs);
          Step(low0, high0, lhs, weights.low, weights.high);
          lhs += kNibbleRows * 2 * kNibbleGroup;
          rhs += kCols * kNibbleGroup;
        }
      } else {
        // Two rows' sums, weights and widening constants take 17 registers; here the tests
        // between the steps keep GCC from spilling (unrolled whole, it kept sums on the stack,
        // 45% more instructions).
#pragma GCC unroll 8
        for (int i = 0; i < steps; ++i) {
          const Weights weights = LoadWeights(rhs);
          Step(low0, high0, lhs, weights.low, weights.high);
          if (kUsedRows > 1) Step(low1, high1, lhs + 2 * kNibbleGroup, weights.low, weights.high);
          lhs += kNibbleRows * 2 * kNibbleGroup;
          rhs += kCols * kNibbleGroup;
        }
      }
      group += steps;
      wide0 = Widen(wide0, low0, high0);
      if (kUsedRows > 1) wide1 = Widen(wide1, low1, high1);
    }
    const Row rows[kNibbleRows] = {wide0, wide1};
    for (int i = 0; i < kUsedRows; ++i) rows[i].Store(accumulate, acc + i * acc_stride);
  }

  // A MicroKernelFunction.
  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    const auto* lhs = static_cast<const std::uint8_t*>(lhs_panel);
    const auto* rhs = static_cast<const std::int8_t*>(rhs_panel);
    ForRowCount<kNibbleRows>(rows, [&](auto used_rows) {
      Rows<decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    });
  }
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_KERNEL_NIBBLES_X86_H_
