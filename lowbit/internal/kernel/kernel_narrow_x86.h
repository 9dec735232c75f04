// The x86 micro-kernel for narrow operands (fewer than 8 bits on at least one side), written
// once over an ISA's vector operations and instantiated by kernel_avx2.cc and kernel_sse41.cc.
// Include it only from a file compiled for that ISA.
#ifndef LOWBIT_INTERNAL_KERNEL_KERNEL_NARROW_X86_H_
#define LOWBIT_INTERNAL_KERNEL_KERNEL_NARROW_X86_H_

#include <cstdint>
#include <type_traits>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/kernel/kernel_pairs_x86.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {

// A tile of kNarrowRows lhs rows by two vectors of rhs columns. pmaddubsw multiplies the
// unsigned lhs bytes by the signed rhs bytes and adds adjacent products into int16; kSteps such
// sums (one per depth group of 4, two per int16 lane) are added in int16 before pmaddwd by ones
// widens each pair of lanes into the int32 sum of one column. Each row keeps two int16 and two
// int32 accumulators in registers: 3 rows, 2 rhs vectors and a broadcast fill 15 of 16.
constexpr int kNarrowRows = 3;
constexpr int kNarrowGroup = 4;

// What the ISAs' WidenPairsFromMemory multiplies by: 16 int16 ones, aligned for SSE's pmaddwd.
alignas(32) inline constexpr std::int16_t kInt16Ones[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                            1, 1, 1, 1, 1, 1, 1, 1};

// How NarrowTile reads a step of its rhs panel: 4 depth values of 2 * kInt32Lanes columns, two
// vectors of int8 values stored as they are (kInt8).
template <typename Isa>
struct ByteNarrowSteps {
  static constexpr int kStepBytes = 2 * kNarrowGroup * Isa::kInt32Lanes;
  static void Load(const std::int8_t* rhs, typename Isa::Vector& low, typename Isa::Vector& high) {
    low = Isa::Load(rhs);
    high = Isa::Load(rhs + kStepBytes / 2);
  }
};

// Isa provides what kernel_pairs_x86.h asks for, and Load(const void*), MultiplyAddBytes(unsigned,
// signed) (pmaddubsw), AddInt16, WidenPairs (pmaddwd by ones), WidenPairsFromMemory (the same
// with kInt16Ones as its memory operand) and kPackByteGroups, its packer. RhsSteps reads the rhs
// panel's steps as ByteNarrowSteps does.
template <typename Isa, typename RhsSteps = ByteNarrowSteps<Isa>>
struct NarrowTile {
  using Vector = typename Isa::Vector;
  using Row = TileRow<Isa>;
  static constexpr int kCols = 2 * Isa::kInt32Lanes;

  // The int16 sums of one step: this row's group of 4 lhs bytes against both rhs vectors, added
  // to `sums`, or in their place for a block's first step (kFirst).
  template <bool kFirst = false>
  static Row Step(Row sums, const std::uint8_t* lhs_group, Vector rhs_low, Vector rhs_high) {
    const Vector group = Isa::BroadcastGroup(lhs_group);
    const Row products{Isa::MultiplyAddBytes(group, rhs_low),
                       Isa::MultiplyAddBytes(group, rhs_high)};
    if constexpr (kFirst) return products;
    return {Isa::AddInt16(sums.low, products.low), Isa::AddInt16(sums.high, products.high)};
  }

  // Keeps a row's int16 sums where they are, to be added to step by step: where a block's steps
  // are unrolled whole, GCC otherwise sees that the sums start at zero, adds the block's products
  // as a tree and keeps them on the stack (checked in the disassembly).
  static void PinSums(Row& sums) { asm("" : "+x"(sums.low), "+x"(sums.high)); }

  static Row Widen(Row wide, Row narrow) {
    return {Isa::AddInt32(wide.low, Isa::WidenPairs(narrow.low)),
            Isa::AddInt32(wide.high, Isa::WidenPairs(narrow.high))};
  }

  // The first kUsedRows rows of the tile, widening to int32 every kSteps depth groups. Named
  // rows rather than an array, and one store loop: otherwise GCC keeps accumulators on the
  // stack.
  template <int kSteps, int kUsedRows>
  __attribute__((noinline)) static void Rows(const std::uint8_t* lhs, const std::int8_t* rhs,
                                             int padded_depth, std::int32_t* acc, int acc_stride,
                                             bool accumulate) {
    const Row zero{Isa::Zero(), Isa::Zero()};
    Row wide0 = zero, wide1 = zero, wide2 = zero;
    const int groups = padded_depth / kNarrowGroup;
    for (int group = 0; group < groups;) {
      const int steps = groups - group < kSteps ? groups - group : kSteps;
      Row narrow0 = zero, narrow1 = zero, narrow2 = zero;
      // One step of the used rows: `first` (of a block) and `pinned` (their sums) are
      // std::bool_constant, so that each combination compiles to its own code.
      const auto step = [&](auto first, auto pinned) {
        Vector rhs_low, rhs_high;
        RhsSteps::Load(rhs, rhs_low, rhs_high);
        const auto row = [&](Row& sums, const std::uint8_t* lhs_group) {
          sums = Step<decltype(first)::value>(sums, lhs_group, rhs_low, rhs_high);
          if constexpr (decltype(pinned)::value) PinSums(sums);
        };
        row(narrow0, lhs);
        if (kUsedRows > 1) row(narrow1, lhs + kNarrowGroup);
        if (kUsedRows > 2) row(narrow2, lhs + 2 * kNarrowGroup);
        lhs += kNarrowRows * kNarrowGroup;
        rhs += RhsSteps::kStepBytes;
      };
      constexpr std::true_type yes;
      constexpr std::false_type no;
      if (kSteps <= 8 && steps == kSteps) {
        // A whole block: a constant count, unrolled without the test after each step that GCC
        // puts in a loop of a run-time count (2 of its 19 instructions a step). The first step
        // starts the sums, and every step's are pinned (PinSums). 5% fewer kernel instructions for
        // L7R5 at 1024^3, and 174.3 -> 181.1 GOPS (medians of 24 interleaved repetitions).
        step(/*first=*/yes, /*pinned=*/yes);
        for (int i = 1; i < kSteps; ++i) step(/*first=*/no, /*pinned=*/yes);
      } else if (kSteps <= 8) {
        // The last, partial block.
        for (int i = 0; i < steps; ++i) step(/*first=*/no, /*pinned=*/no);
      } else {
        // Past 8 steps GCC must be told to unroll, or it copies every accumulator back to the
        // register it started in at each step.
#pragma GCC unroll 8
        for (int i = 0; i < steps; ++i) step(/*first=*/no, /*pinned=*/no);
      }
      group += steps;
      wide0 = Widen(wide0, narrow0);
      if (kUsedRows > 1) wide1 = Widen(wide1, narrow1);
      if (kUsedRows > 2) wide2 = Widen(wide2, narrow2);
    }
    const Row rows[kNarrowRows] = {wide0, wide1, wide2};
    for (int i = 0; i < kUsedRows; ++i) rows[i].Store(accumulate, acc + i * acc_stride);
  }

  template <int kSteps>
  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    const auto* lhs = static_cast<const std::uint8_t*>(lhs_panel);
    const auto* rhs = static_cast<const std::int8_t*>(rhs_panel);
    ForRowCount<kNarrowRows>(rows, [&](auto used_rows) {
      Rows<kSteps, decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    });
  }
};

// Bit depths whose int16 pair sums allow only one step (7 x 8 and 8 x 7 bits: up to 2 x 127 x
// 128 = 32512) widen each pmaddubsw result at once, so no int16 sums are kept: the 6-row tile of
// the 8-bit kernel fits (12 int32 accumulators, 2 rhs vectors, a broadcast and a product), and
// each rhs load serves twice the products of NarrowTile. On cached panels it ran 10 to 18% faster
// than NarrowTile with one step. The ones that widen the int16 sums are read from memory: in a
// register they would take one of the 16 the tile needs, and GCC then spilled an accumulator in
// the depth loop.
template <typename Isa>
struct OneStepProducts {
  static constexpr int kDepth = kNarrowGroup;
  static constexpr PackedType kLhsType = PackedType::kUint8;
  static constexpr PackedType kRhsType = PackedType::kInt8;
  using Vector = typename Isa::Vector;
  static Vector Add(Vector sums, Vector group, Vector rhs) {
    return Isa::AddInt32(sums, Isa::WidenPairsFromMemory(Isa::MultiplyAddBytes(group, rhs)));
  }
};

template <typename Isa>
using OneStepTile = SixRowTile<Isa, OneStepProducts<Isa>>;

// The narrow implementations of one ISA, one per int16 step count (NarrowInt16Steps): the
// one-step tile for one step, NarrowTile for more. All read the same rhs layout.
template <typename Isa>
struct NarrowKernels {
  static constexpr KernelFormat kFormat = RhsPanelFromL2(
      {kNarrowRows, NarrowTile<Isa>::kCols, kNarrowGroup, PackedType::kUint8, PackedType::kInt8});

  // Both tiles' lhs are uint8 byte groups; only their panels' rows differ.
  template <int kRows>
  static void PackLhs(const MatrixView& source, int start, int count, int depth_start, int depth,
                      void* packed, std::int32_t* sums) {
    Isa::kPackByteGroups(source, kFormat.lhs_type, kRows, start, count, depth_start, depth, packed,
                         sums);
  }
  static void PackRhs(const MatrixView& source, int start, int count, int depth_start, int depth,
                      void* packed, std::int32_t* sums) {
    Isa::kPackByteGroups(source, kFormat.rhs_type, kFormat.rhs_cols, start, count, depth_start,
                         depth, packed, sums);
  }

  template <int kSteps>
  static const KernelImplementation& WithSteps() {
    constexpr KernelFormat kOneStepFormat = OneStepTile<Isa>::kFormat;
    static_assert(kOneStepFormat.rhs_cols == kFormat.rhs_cols &&
                      kOneStepFormat.depth_group == kFormat.depth_group &&
                      kOneStepFormat.rhs_type == kFormat.rhs_type,
                  "the narrow tiles read one rhs layout");
    if constexpr (kSteps == 1) {
      static const KernelImplementation implementation{Isa::kKernel, kOneStepFormat,
                                                       &PackLhs<kOneStepFormat.lhs_rows>, &PackRhs,
                                                       &OneStepTile<Isa>::MicroKernel};
      return implementation;
    } else {
      static const KernelImplementation implementation{
          Isa::kKernel, kFormat, &PackLhs<kFormat.lhs_rows>, &PackRhs,
          &NarrowTile<Isa>::template MicroKernel<kSteps>};
      return implementation;
    }
  }

  // `steps` is a power of two from 1 to kMaxNarrowInt16Steps.
  static const KernelImplementation& ForSteps(int steps) {
    return *ForInt16Steps<1>(steps,
                             [](auto constant) { return &WithSteps<decltype(constant)::value>(); });
  }
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_KERNEL_NARROW_X86_H_
