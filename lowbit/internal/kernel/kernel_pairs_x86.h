// The x86 6-row register tile, written once over an ISA's vector operations and an arithmetic:
// the 8-bit micro-kernel of kernel_avx2.cc and kernel_sse41.cc (int16 depth pairs, (v)pmaddwd +
// (v)paddd, exact for every uint8 and int8 value) and the narrow one-step kernel of
// kernel_narrow_x86.h. Include it only from a file compiled for that ISA.
#ifndef LOWBIT_INTERNAL_KERNEL_KERNEL_PAIRS_X86_H_
#define LOWBIT_INTERNAL_KERNEL_KERNEL_PAIRS_X86_H_

#include <xmmintrin.h>

#include <cstdint>

#include "lowbit/internal/kernel/kernel.h"

namespace lowbit {
namespace internal {

// Six lhs rows are broadcast against two vectors of rhs columns: 12 accumulators, 2 rhs vectors,
// a broadcast and a product fill the 16 vector registers. SixRowTile below is that tile; the 8-bit
// kernels run it on int16 depth pairs, the narrow kernels on bytes for one int16 step.
constexpr int kPairRows = 6;
constexpr int kPairGroup = 2;

// One row of an x86 tile (this one and kernel_narrow_x86.h's): its accumulators for the low and
// high rhs vectors. Passed and returned by value: accumulators whose address is taken end up on
// the stack.
template <typename Isa>
struct TileRow {
  using Vector = typename Isa::Vector;
  Vector low;
  Vector high;

  // Stores the row's int32 sums at acc, or adds them to what is there.
  void Store(bool accumulate, std::int32_t* acc) const {
    Vector sums_low = low, sums_high = high;
    if (accumulate) {
      sums_low = Isa::AddInt32(sums_low, Isa::LoadInt32(acc));
      sums_high = Isa::AddInt32(sums_high, Isa::LoadInt32(acc + Isa::kInt32Lanes));
    }
    Isa::StoreInt32(acc, sums_low);
    Isa::StoreInt32(acc + Isa::kInt32Lanes, sums_high);
  }
};

// Isa provides Vector, kInt32Lanes and: Zero(), BroadcastGroup(const std::uint8_t*) (4 bytes to
// every 32-bit lane), AddInt32, LoadInt32(const std::int32_t*), StoreInt32(std::int32_t*,
// Vector), and Load(const void*).
//
// SixRowTile is the 6 x 2-vector tile over an arithmetic: each step, every row's 4-byte lhs group
// is broadcast against both rhs vectors, and Products adds each pair of them to the int32 sums,
// one per column. Products provides kDepth (depth values per step), kLhsType and kRhsType (the
// packed types) and Add(sums, broadcast group, rhs vector). The lhs panel holds a row's group
// after another's, the rhs panel kCols columns' groups a step: 4 x 6 and 4 x kCols bytes a step.
template <typename Isa, typename Products>
struct SixRowTile {
  using Vector = typename Isa::Vector;
  using Row = TileRow<Isa>;
  static constexpr int kCols = 2 * Isa::kInt32Lanes;
  static constexpr KernelFormat kFormat =
      RhsPanelFromL2({kPairRows, kCols, Products::kDepth, Products::kLhsType, Products::kRhsType});
  static constexpr int kGroupBytes = 4;
  static constexpr int kLhsStepBytes = kGroupBytes * kPairRows;
  static constexpr int kRhsStepBytes = kGroupBytes * kCols;

  static Row MultiplyRow(Row sums, const std::uint8_t* lhs_group, Vector rhs_low, Vector rhs_high) {
    const Vector group = Isa::BroadcastGroup(lhs_group);
    return {Products::Add(sums.low, group, rhs_low), Products::Add(sums.high, group, rhs_high)};
  }

  // Adds one step of the first kUsedRows rows to row0, row1, ... in turn.
  template <int kUsedRows>
  __attribute__((always_inline)) static void MultiplyStep(const std::uint8_t* lhs,
                                                          const std::uint8_t* rhs, Row& row0,
                                                          Row& row1, Row& row2, Row& row3,
                                                          Row& row4, Row& row5) {
    const Vector rhs_low = Isa::Load(rhs);
    const Vector rhs_high = Isa::Load(rhs + kGroupBytes * Isa::kInt32Lanes);
    row0 = MultiplyRow(row0, lhs, rhs_low, rhs_high);
    if (kUsedRows > 1) row1 = MultiplyRow(row1, lhs + kGroupBytes, rhs_low, rhs_high);
    if (kUsedRows > 2) row2 = MultiplyRow(row2, lhs + 2 * kGroupBytes, rhs_low, rhs_high);
    if (kUsedRows > 3) row3 = MultiplyRow(row3, lhs + 3 * kGroupBytes, rhs_low, rhs_high);
    if (kUsedRows > 4) row4 = MultiplyRow(row4, lhs + 4 * kGroupBytes, rhs_low, rhs_high);
    if (kUsedRows > 5) row5 = MultiplyRow(row5, lhs + 5 * kGroupBytes, rhs_low, rhs_high);
  }

  // The first kUsedRows rows of the tile. One named Row per row, not an array (GCC keeps an
  // array of vectors on the stack even when every index is a constant), and one store loop (a
  // store per row under its own condition makes GCC copy the accumulators to the stack inside
  // the depth loop): checked in the disassembly.
  template <int kUsedRows>
  __attribute__((noinline)) static void Rows(const std::uint8_t* lhs, const std::uint8_t* rhs,
                                             int padded_depth, std::int32_t* acc, int acc_stride,
                                             bool accumulate) {
    PrefetchAccumulatorRows(acc, acc_stride, kUsedRows, kCols);
    // The lhs panel streams from L2 (the rhs panel sits in L1). The hardware prefetcher keeps up
    // with it: asking for it 8 steps ahead at every step made 256^3 and 1024^3 GEMMs 2 to 5%
    // slower (interleaved A/B runs), and the one-step narrow tile no faster. Only the one-row
    // loop below, tuned with it, keeps a prefetch per two steps.
    const auto prefetch = [](const std::uint8_t* lhs_step) {
      _mm_prefetch(reinterpret_cast<const char*>(lhs_step + 8 * kLhsStepBytes), _MM_HINT_T0);
    };
    constexpr int kDepth = Products::kDepth;
    const Row zero{Isa::Zero(), Isa::Zero()};
    Row row0 = zero, row1 = zero, row2 = zero, row3 = zero, row4 = zero, row5 = zero;
    // A single row (a matrix-vector product) leaves registers to spare: odd steps go to row 3,
    // which halves the chains of dependent additions, and two steps at a time need one prefetch
    // per stream. A microbenchmark of the matrix-vector loop went from 106 to 118 GOPS. Two
    // rows would already spill an accumulator.
    constexpr bool kSplit = kUsedRows == 1;
    if (kSplit) {
      int d = 0;
      for (; d + 2 * kDepth <= padded_depth; d += 2 * kDepth) {
        prefetch(lhs);
        MultiplyStep<kUsedRows>(lhs, rhs, row0, row1, row2, row3, row4, row5);
        MultiplyStep<kUsedRows>(lhs + kLhsStepBytes, rhs + kRhsStepBytes, row3, row4, row5, row0,
                                row1, row2);
        lhs += 2 * kLhsStepBytes;
        rhs += 2 * kRhsStepBytes;
      }
      if (d < padded_depth) MultiplyStep<kUsedRows>(lhs, rhs, row0, row1, row2, row3, row4, row5);
      row0 = {Isa::AddInt32(row0.low, row3.low), Isa::AddInt32(row0.high, row3.high)};
    } else {
#pragma GCC unroll 2
      for (int d = 0; d < padded_depth; d += kDepth) {
        MultiplyStep<kUsedRows>(lhs, rhs, row0, row1, row2, row3, row4, row5);
        lhs += kLhsStepBytes;
        rhs += kRhsStepBytes;
      }
    }
    const Row rows[kPairRows] = {row0, row1, row2, row3, row4, row5};
    for (int i = 0; i < kUsedRows; ++i) rows[i].Store(accumulate, acc + i * acc_stride);
  }

  // A MicroKernelFunction: a short last panel (a matrix-vector product has one row) multiplies
  // only its real rows.
  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    const auto* lhs = static_cast<const std::uint8_t*>(lhs_panel);
    const auto* rhs = static_cast<const std::uint8_t*>(rhs_panel);
    ForRowCount<kPairRows>(rows, [&](auto used_rows) {
      Rows<decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    });
  }
};

// The 8-bit arithmetic: int16 depth pairs, pmaddwd (Isa::MultiplyAddPairs).
template <typename Isa>
struct PairProducts {
  static constexpr int kDepth = kPairGroup;
  static constexpr PackedType kLhsType = PackedType::kInt16;
  static constexpr PackedType kRhsType = PackedType::kInt16;
  using Vector = typename Isa::Vector;
  static Vector Add(Vector sums, Vector group, Vector rhs) {
    return Isa::AddInt32(sums, Isa::MultiplyAddPairs(group, rhs));
  }
};

template <typename Isa>
using PairTile = SixRowTile<Isa, PairProducts<Isa>>;

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_KERNEL_PAIRS_X86_H_
