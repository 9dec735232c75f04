// The x86 micro-kernel for 8-bit operands, written once over an ISA's vector operations and
// instantiated by kernel_avx2.cc and kernel_sse41.cc: int16 depth pairs, (v)pmaddwd + (v)paddd,
// exact for every uint8 and int8 value. Include it only from a file compiled for that ISA.
#ifndef LOWBIT_INTERNAL_KERNEL_PAIRS_X86_H_
#define LOWBIT_INTERNAL_KERNEL_PAIRS_X86_H_

#include <xmmintrin.h>

#include <cstdint>

#include "internal/kernel.h"

namespace lowbit {
namespace internal {

// Six lhs rows are broadcast against two vectors of rhs columns: 12 accumulators, 2 rhs vectors,
// a broadcast and a product fill the 16 vector registers.
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
// every 32-bit lane), MultiplyAddPairs (pmaddwd), AddInt32, LoadInt32(const std::int32_t*),
// StoreInt32(std::int32_t*, Vector), and Load(const void*).
template <typename Isa>
struct PairTile {
  using Vector = typename Isa::Vector;
  using Row = TileRow<Isa>;
  static constexpr int kCols = 2 * Isa::kInt32Lanes;
  static constexpr KernelFormat kFormat{kPairRows, kCols, kPairGroup, PackedType::kInt16,
                                        PackedType::kInt16};

  static Row MultiplyRow(Row sums, const std::int16_t* lhs_pair, Vector rhs_low, Vector rhs_high) {
    const Vector pair = Isa::BroadcastGroup(reinterpret_cast<const std::uint8_t*>(lhs_pair));
    return {Isa::AddInt32(sums.low, Isa::MultiplyAddPairs(pair, rhs_low)),
            Isa::AddInt32(sums.high, Isa::MultiplyAddPairs(pair, rhs_high))};
  }

  // Adds one depth pair of the first kUsedRows rows to row0, row1, ... in turn.
  template <int kUsedRows>
  __attribute__((always_inline)) static void MultiplyPair(const std::int16_t* lhs,
                                                          const std::int16_t* rhs, Row& row0,
                                                          Row& row1, Row& row2, Row& row3,
                                                          Row& row4, Row& row5) {
    const Vector rhs_low = Isa::Load(rhs);
    const Vector rhs_high = Isa::Load(rhs + kPairGroup * Isa::kInt32Lanes);
    row0 = MultiplyRow(row0, lhs, rhs_low, rhs_high);
    if (kUsedRows > 1) row1 = MultiplyRow(row1, lhs + 2, rhs_low, rhs_high);
    if (kUsedRows > 2) row2 = MultiplyRow(row2, lhs + 4, rhs_low, rhs_high);
    if (kUsedRows > 3) row3 = MultiplyRow(row3, lhs + 6, rhs_low, rhs_high);
    if (kUsedRows > 4) row4 = MultiplyRow(row4, lhs + 8, rhs_low, rhs_high);
    if (kUsedRows > 5) row5 = MultiplyRow(row5, lhs + 10, rhs_low, rhs_high);
  }

  // The first kUsedRows rows of the tile. One named Row per row, not an array (GCC keeps an
  // array of vectors on the stack even when every index is a constant), and one store loop (a
  // store per row under its own condition makes GCC copy the accumulators to the stack inside
  // the depth loop): checked in the disassembly.
  template <int kUsedRows>
  __attribute__((noinline)) static void Rows(const std::int16_t* lhs, const std::int16_t* rhs,
                                             int padded_depth, std::int32_t* acc, int acc_stride,
                                             bool accumulate) {
    // The accumulator tile is touched only at the end: fetch it while the depth loop runs.
    for (int i = 0; i < kUsedRows; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(acc + i * acc_stride), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(acc + i * acc_stride + kCols - 1), _MM_HINT_T0);
    }
    // The lhs panel streams from L2 (the rhs panel sits in L1): ask for it 8 depth pairs (192
    // bytes) ahead.
    const auto prefetch = [](const std::int16_t* lhs_pair) {
      _mm_prefetch(reinterpret_cast<const char*>(lhs_pair + 8 * kPairGroup * kPairRows),
                   _MM_HINT_T0);
    };
    const Row zero{Isa::Zero(), Isa::Zero()};
    Row row0 = zero, row1 = zero, row2 = zero, row3 = zero, row4 = zero, row5 = zero;
    // A single row (a matrix-vector product) leaves registers to spare: odd depth pairs go to
    // row 3, which halves the chains of dependent additions, and two pairs a step need one
    // prefetch per stream. A microbenchmark of the matrix-vector loop went from 106 to 118
    // GOPS. Two rows would already spill an accumulator.
    constexpr bool kSplit = kUsedRows == 1;
    if (kSplit) {
      int d = 0;
      for (; d + 2 * kPairGroup <= padded_depth; d += 2 * kPairGroup) {
        prefetch(lhs);
        MultiplyPair<kUsedRows>(lhs, rhs, row0, row1, row2, row3, row4, row5);
        MultiplyPair<kUsedRows>(lhs + kPairGroup * kPairRows, rhs + kPairGroup * kCols, row3, row4,
                                row5, row0, row1, row2);
        lhs += 2 * kPairGroup * kPairRows;
        rhs += 2 * kPairGroup * kCols;
      }
      if (d < padded_depth) MultiplyPair<kUsedRows>(lhs, rhs, row0, row1, row2, row3, row4, row5);
      row0 = {Isa::AddInt32(row0.low, row3.low), Isa::AddInt32(row0.high, row3.high)};
    } else {
#pragma GCC unroll 2
      for (int d = 0; d < padded_depth; d += kPairGroup) {
        prefetch(lhs);
        MultiplyPair<kUsedRows>(lhs, rhs, row0, row1, row2, row3, row4, row5);
        lhs += kPairGroup * kPairRows;
        rhs += kPairGroup * kCols;
      }
    }
    const Row rows[kPairRows] = {row0, row1, row2, row3, row4, row5};
    for (int i = 0; i < kUsedRows; ++i) rows[i].Store(accumulate, acc + i * acc_stride);
  }

  // A MicroKernelFunction: a short last panel (a matrix-vector product has one row) multiplies
  // only its real rows.
  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    const auto* lhs = static_cast<const std::int16_t*>(lhs_panel);
    const auto* rhs = static_cast<const std::int16_t*>(rhs_panel);
    ForRowCount<kPairRows>(rows, [&](auto used_rows) {
      Rows<decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    });
  }
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_PAIRS_X86_H_
