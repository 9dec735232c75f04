// The 8-bit NEON kernels (plain and dot-product) called directly, whichever one dispatch picks:
// packing against the portable packer, micro-kernels against a 64-bit sum at the values that
// break inexact int8 kernels, and the dispatch between them; and the dot-product tile on 4-bit
// weights two to a byte (built for aarch64 only).
#include <cpuinfo.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"
#include "test/kernel_check.h"

namespace lowbit {
namespace internal {
namespace {

enum class Fill { kMax, kMin, kMaxMinAlternating, kRandom };

const char* FillName(Fill fill) {
  switch (fill) {
    case Fill::kMax:
      return "max";
    case Fill::kMin:
      return "min";
    case Fill::kMaxMinAlternating:
      return "max/min alternating";
    case Fill::kRandom:
      return "random";
  }
  return "?";
}

constexpr Fill kFills[] = {Fill::kMax, Fill::kMin, Fill::kMaxMinAlternating, Fill::kRandom};

// A rows x depth operand as packing sees it (lhs rows, or rhs columns along the depth),
// stored in `order` without padding.
template <typename Scalar>
class Operand {
 public:
  Operand(int rows, int depth, Order order, Fill fill, std::uint32_t seed)
      : rows_(rows), depth_(depth), order_(order), values_(static_cast<std::size_t>(rows) * depth) {
    constexpr int kMin = std::numeric_limits<Scalar>::min();
    constexpr int kMax = std::numeric_limits<Scalar>::max();
    std::mt19937 random(seed);
    std::uniform_int_distribution<int> any(kMin, kMax);
    for (int r = 0; r < rows; ++r) {
      for (int d = 0; d < depth; ++d) {
        int value = any(random);
        if (fill == Fill::kMax) value = kMax;
        if (fill == Fill::kMin) value = kMin;
        if (fill == Fill::kMaxMinAlternating) value = (r + d) % 2 == 0 ? kMax : kMin;
        values_[Index(r, d)] = static_cast<Scalar>(value);
      }
    }
  }

  MatrixView View() const {
    return {values_.data(), ElementTypeOf<Scalar>(),
            rows_,          depth_,
            order_,         order_ == Order::kRowMajor ? depth_ : rows_};
  }
  std::int64_t operator()(int r, int d) const { return values_[Index(r, d)]; }
  int depth() const { return depth_; }

 private:
  std::size_t Index(int r, int d) const {
    return order_ == Order::kRowMajor ? static_cast<std::size_t>(r) * depth_ + d
                                      : r + static_cast<std::size_t>(d) * rows_;
  }

  int rows_;
  int depth_;
  Order order_;
  std::vector<Scalar> values_;
};

struct PackedBlock {
  std::vector<std::int8_t> bytes;
  std::vector<std::int32_t> sums;
};

// Packs rows [start, start + count) and depth [depth_start, depth_start + depth) of `source`
// with `pack` (panels `width` wide) into a buffer pre-filled with garbage, so unwritten bytes
// show, and sums starting from 7, so a packer that stores its sums instead of adding them shows.
template <typename Pack>
PackedBlock PackBlock(Pack pack, const KernelFormat& format, int width, const MatrixView& source,
                      int start, int count, int depth_start, int depth) {
  const std::size_t size =
      static_cast<std::size_t>(RoundUp(count, width)) * RoundUp(depth, format.depth_group);
  PackedBlock block{std::vector<std::int8_t>(size, 0x55), std::vector<std::int32_t>(count, 7)};
  pack(source, start, count, depth_start, depth, block.bytes.data(), block.sums.data());
  return block;
}

bool HasNeonDot() { return cpuinfo_initialize() && cpuinfo_has_arm_neon_dot(); }

// Each 8-bit NEON kernel is tested directly, so the one dispatch does not pick stays covered.
enum class Variant { kPlain, kDot };

const char* VariantName(Variant variant) { return variant == Variant::kDot ? "Dot" : "Plain"; }

// How GoogleTest names the parameter in a failure message.
void PrintTo(Variant variant, std::ostream* os) { *os << VariantName(variant); }

class NeonKernelTest : public testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (GetParam() == Variant::kDot && !HasNeonDot()) {
      GTEST_SKIP() << "this CPU has no dot-product instructions (SDOT)";
    }
  }

  static const KernelImplementation& Implementation() {
    return GetParam() == Variant::kDot ? NeonDotKernel() : NeonKernel();
  }
};

INSTANTIATE_TEST_SUITE_P(Variants, NeonKernelTest, testing::Values(Variant::kPlain, Variant::kDot),
                         [](const testing::TestParamInfo<Variant>& info) {
                           return std::string(VariantName(info.param));
                         });

template <typename Scalar>
void CheckPackMatchesPortablePacker(const KernelImplementation& kernel) {
  const KernelFormat& format = kernel.format;
  for (bool lhs_side : {true, false}) {
    const int width = lhs_side ? format.lhs_rows : format.rhs_cols;
    const auto portable = [&](const MatrixView& source, int start, int count, int depth_start,
                              int depth, void* packed, std::int32_t* sums) {
      PackBytesPortable(source, PackedType::kInt8, format, width, start, count, depth_start, depth,
                        packed, sums);
    };
    for (Order order : {Order::kRowMajor, Order::kColMajor}) {
      for (Fill fill : kFills) {
        for (int count : {1, width - 1, width, width + 1, 2 * width + 3}) {
          for (int depth : {1, 3, 4, 5, 15, 16, 17, 40}) {
            for (int depth_start : {0, 5}) {
              SCOPED_TRACE(testing::Message() << (lhs_side ? "lhs, " : "rhs, ")
                                              << (order == Order::kRowMajor ? "row" : "col")
                                              << "-major, " << FillName(fill) << ", count " << count
                                              << ", depth " << depth << " from " << depth_start);
              const int start = 2;
              const Operand<Scalar> source(start + count, depth_start + depth, order, fill,
                                           static_cast<std::uint32_t>(count * 100 + depth));
              const PackedBlock expected = PackBlock(portable, format, width, source.View(), start,
                                                     count, depth_start, depth);
              const PackedBlock actual =
                  PackBlock(lhs_side ? kernel.pack_lhs : kernel.pack_rhs, format, width,
                            source.View(), start, count, depth_start, depth);
              ASSERT_EQ(actual.bytes, expected.bytes);
              ASSERT_EQ(actual.sums, expected.sums);
            }
          }
        }
      }
    }
  }
}

TEST_P(NeonKernelTest, Uint8PackingMatchesPortablePacker) {
  CheckPackMatchesPortablePacker<std::uint8_t>(Implementation());
}

TEST_P(NeonKernelTest, Int8PackingMatchesPortablePacker) {
  CheckPackMatchesPortablePacker<std::int8_t>(Implementation());
}

// One tile: packs lhs and rhs whole with `kernel` and runs its micro-kernel on the first
// `used_rows` rows, first storing, then accumulating onto the stored tile, which must double
// it. The accumulators have a stride wider than the tile; entries outside the used rows and
// the tile's columns must keep their contents.
struct Tile {
  std::vector<std::uint32_t> raw;  // used_rows x rhs_cols, row-major
  std::vector<std::int32_t> row_sums;
  std::vector<std::int32_t> col_sums;
};

template <typename Lhs, typename Rhs>
Tile RunTile(const KernelImplementation& kernel, const Operand<Lhs>& lhs, const Operand<Rhs>& rhs,
             int used_rows) {
  const KernelFormat& format = kernel.format;
  const int depth = lhs.depth();
  const PackedBlock packed_lhs =
      PackBlock(kernel.pack_lhs, format, format.lhs_rows, lhs.View(), 0, format.lhs_rows, 0, depth);
  const PackedBlock packed_rhs =
      PackBlock(kernel.pack_rhs, format, format.rhs_cols, rhs.View(), 0, format.rhs_cols, 0, depth);
  const int stride = format.rhs_cols + 2;
  const std::int32_t kUntouched = -12345;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(format.lhs_rows) * stride, kUntouched);
  const int padded_depth = RoundUp(depth, format.depth_group);
  kernel.micro_kernel(packed_lhs.bytes.data(), packed_rhs.bytes.data(), padded_depth, used_rows,
                      acc.data(), stride, false);
  Tile tile{{}, {}, {}};
  for (int i = 0; i < used_rows; ++i) {
    for (int j = 0; j < format.rhs_cols; ++j) {
      tile.raw.push_back(static_cast<std::uint32_t>(acc[i * stride + j]));
    }
  }
  kernel.micro_kernel(packed_lhs.bytes.data(), packed_rhs.bytes.data(), padded_depth, used_rows,
                      acc.data(), stride, true);
  for (int i = 0; i < format.lhs_rows; ++i) {
    for (int j = 0; j < stride; ++j) {
      const std::int32_t value = acc[i * stride + j];
      if (i < used_rows && j < format.rhs_cols) {
        EXPECT_EQ(static_cast<std::uint32_t>(value), 2 * tile.raw[i * format.rhs_cols + j])
            << "accumulating (" << i << ", " << j << ")";
      } else {
        EXPECT_EQ(value, kUntouched)
            << "written outside the " << used_rows << " rows at (" << i << ", " << j << ")";
      }
    }
  }
  // The sums started from 7 (see PackBlock).
  for (std::int32_t sum : packed_lhs.sums) tile.row_sums.push_back(sum - 7);
  for (std::int32_t sum : packed_rhs.sums) tile.col_sums.push_back(sum - 7);
  return tile;
}

// The tile must equal the 64-bit sum modulo 2^32 once it gets back what packing subtracted:
// with shifts a (lhs) and b (rhs), sum l*r = sum (l-a)(r-b) + b*sum(l-a) + a*sum(r-b) +
// a*b*depth, which is what unpacking adds.
template <typename Lhs, typename Rhs>
void CheckTile(const KernelImplementation& kernel, const Operand<Lhs>& lhs, const Operand<Rhs>& rhs,
               int used_rows) {
  const int cols = kernel.format.rhs_cols;
  const int depth = lhs.depth();
  const Tile tile = RunTile(kernel, lhs, rhs, used_rows);
  const std::uint32_t lhs_shift = PackedValueShift(kernel.format.lhs_type, lhs.View());
  const std::uint32_t rhs_shift = PackedValueShift(kernel.format.rhs_type, rhs.View());
  for (int i = 0; i < used_rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      std::int64_t exact = 0;
      for (int d = 0; d < depth; ++d) exact += lhs(i, d) * rhs(j, d);
      const std::uint32_t restored = tile.raw[i * cols + j] +
                                     rhs_shift * static_cast<std::uint32_t>(tile.row_sums[i]) +
                                     lhs_shift * static_cast<std::uint32_t>(tile.col_sums[j]) +
                                     lhs_shift * rhs_shift * static_cast<std::uint32_t>(depth);
      EXPECT_EQ(restored, static_cast<std::uint32_t>(exact))
          << "(" << i << ", " << j << ") of " << used_rows << " rows";
    }
  }
}

template <typename Lhs, typename Rhs>
void CheckTilesAtShortDepths(const KernelImplementation& kernel) {
  const KernelFormat& format = kernel.format;
  for (Order order : {Order::kRowMajor, Order::kColMajor}) {
    for (int depth : {1, 2, 3, 4, 5, 15, 16, 17, 33, 1000}) {
      for (Fill lhs_fill : kFills) {
        for (Fill rhs_fill : kFills) {
          SCOPED_TRACE(testing::Message() << "lhs " << FillName(lhs_fill) << ", rhs "
                                          << FillName(rhs_fill) << ", depth " << depth);
          const Operand<Lhs> lhs(format.lhs_rows, depth, order, lhs_fill, 1);
          const Operand<Rhs> rhs(format.rhs_cols, depth, order, rhs_fill, 2);
          CheckTile(kernel, lhs, rhs, format.lhs_rows);
        }
      }
    }
  }
}

// All four operand type pairs: uint8 zeros pack to -128, so uint8 x uint8 at its minimum is
// the -128 * -128 case, as is int8 x int8 at its minimum; uint8 255 packs to 127.
TEST_P(NeonKernelTest, Uint8Uint8MicroKernelMatchesExactSum) {
  CheckTilesAtShortDepths<std::uint8_t, std::uint8_t>(Implementation());
}
TEST_P(NeonKernelTest, Uint8Int8MicroKernelMatchesExactSum) {
  CheckTilesAtShortDepths<std::uint8_t, std::int8_t>(Implementation());
}
TEST_P(NeonKernelTest, Int8Uint8MicroKernelMatchesExactSum) {
  CheckTilesAtShortDepths<std::int8_t, std::uint8_t>(Implementation());
}
TEST_P(NeonKernelTest, Int8Int8MicroKernelMatchesExactSum) {
  CheckTilesAtShortDepths<std::int8_t, std::int8_t>(Implementation());
}

// A short last panel runs the micro-kernel for fewer rows: each count computes its rows and
// writes no others.
TEST_P(NeonKernelTest, MicroKernelComputesOnlyTheRowsAskedFor) {
  const KernelFormat& format = Implementation().format;
  for (int used_rows = 1; used_rows <= format.lhs_rows; ++used_rows) {
    for (int depth : {1, 7, 33}) {
      SCOPED_TRACE(testing::Message() << used_rows << " rows, depth " << depth);
      const Operand<std::uint8_t> lhs(format.lhs_rows, depth, Order::kRowMajor, Fill::kRandom, 3);
      const Operand<std::int8_t> rhs(format.rhs_cols, depth, Order::kColMajor, Fill::kRandom, 4);
      CheckTile(Implementation(), lhs, rhs, used_rows);
    }
  }
}

// Past the int32 limit: 16384 * 131077 > 2^31 for the packed -128 * -128, so the raw sums wrap
// and only agree modulo 2^32. The depth is not a multiple of any depth group either.
template <typename Lhs, typename Rhs>
void CheckWrapping(const KernelImplementation& kernel, Order lhs_order, Fill lhs_fill,
                   Order rhs_order, Fill rhs_fill) {
  constexpr int kDepth = 131077;
  static_assert(16384LL * kDepth > std::numeric_limits<std::int32_t>::max(), "must wrap");
  const KernelFormat& format = kernel.format;
  const Operand<Lhs> lhs(format.lhs_rows, kDepth, lhs_order, lhs_fill, 1);
  const Operand<Rhs> rhs(format.rhs_cols, kDepth, rhs_order, rhs_fill, 1);
  CheckTile(kernel, lhs, rhs, format.lhs_rows);
}

TEST_P(NeonKernelTest, MicroKernelWrapsBeyondInt32Limit) {
  using std::int8_t;
  using std::uint8_t;
  const KernelImplementation& kernel = Implementation();
  const Order row = Order::kRowMajor, col = Order::kColMajor;
  CheckWrapping<int8_t, int8_t>(kernel, row, Fill::kMin, row, Fill::kMin);
  CheckWrapping<uint8_t, uint8_t>(kernel, row, Fill::kMin, row, Fill::kMin);
  CheckWrapping<uint8_t, uint8_t>(kernel, col, Fill::kMax, col, Fill::kMax);
  CheckWrapping<uint8_t, int8_t>(kernel, row, Fill::kMaxMinAlternating, row, Fill::kMin);
  CheckWrapping<uint8_t, uint8_t>(kernel, col, Fill::kMax, row, Fill::kMaxMinAlternating);
}

// Kernel::kNeon runs the dot-product kernel where the CPU has SDOT, for an ordinary and a
// prepacked rhs alike, and for narrow operands too (it multiplies 16 values an instruction where
// the narrow kernels' vmlal_s8 multiplies 8); without SDOT, narrow operands take the narrow
// kernels.
TEST(NeonDispatchTest, EightBitOperandsRunTheDotKernelWhereTheCpuHasIt) {
  const KernelImplementation& best = HasNeonDot() ? NeonDotKernel() : NeonKernel();
  EXPECT_EQ(&GetKernelImplementation(Kernel::kNeon), &best);
  EXPECT_EQ(&GetKernelImplementation(Kernel::kNeon, 8, 8), &best);
  EXPECT_EQ(&GetPrepackedRhsKernelImplementation(Kernel::kNeon), &best);
  for (const auto& [lhs_bits, rhs_bits] : {std::pair{7, 5}, std::pair{8, 7}, std::pair{1, 8}}) {
    const KernelImplementation* narrow = NeonNarrowKernel(lhs_bits, rhs_bits);
    ASSERT_NE(narrow, nullptr) << lhs_bits << " x " << rhs_bits << " bits";
    const KernelImplementation* expected = HasNeonDot() ? &best : narrow;
    EXPECT_EQ(&GetKernelImplementation(Kernel::kNeon, lhs_bits, rhs_bits), expected);
    EXPECT_EQ(&GetPrepackedRhsKernelImplementation(Kernel::kNeon, lhs_bits, rhs_bits), expected);
  }
}

// Prepacked weights of at most 4 bits go two to a byte where the CPU has SDOT, for every lhs, and
// stay a byte each for 5 bits. The tile is exact at the extremes of 8-bit lhs values and 4-bit
// weights and on random ones, for every row count, and depths around its 8-value steps.
TEST(NeonDispatchTest, FourBitWeightsTwoToAByte) {
  if (!HasNeonDot()) GTEST_SKIP() << "this CPU has no dot-product instructions (SDOT)";
  const KernelImplementation& pairs = NeonDotUint4PairsKernel();
  EXPECT_EQ(pairs.format.rhs_type, PackedType::kUint4Pairs);
  for (int lhs_bits : {8, 5}) {
    for (int rhs_bits : {3, 4}) {
      for (int lhs_rows : {1, 8, 100}) {
        EXPECT_EQ(&GetPrepackedRhsKernelImplementation(Kernel::kNeon, lhs_bits, rhs_bits, lhs_rows),
                  &pairs)
            << lhs_bits << " x " << rhs_bits << " bits, " << lhs_rows << " rows";
      }
    }
  }
  EXPECT_NE(&GetPrepackedRhsKernelImplementation(Kernel::kNeon, 8, 5), &pairs);
  std::mt19937 random(5);
  test::CheckFourBitWeightsTile(pairs, {1, 3, 4, 5, 8, 9, 64, 67, 1001}, 1001, random,
                                "neon pairs");
}

}  // namespace
}  // namespace internal
}  // namespace lowbit
