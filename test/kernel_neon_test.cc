// The NEON packing and micro-kernel on their own, against the portable packer, the reference
// kernel and a 64-bit sum, at the values that break inexact int8 kernels (built for aarch64 only).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "internal/kernel.h"
#include "internal/pack.h"

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
// with `pack` into a buffer pre-filled with garbage, so unwritten bytes show, and sums
// starting from 7, so a packer that stores its sums instead of adding them shows.

PackedBlock Pack(PackFunction pack, const KernelFormat& format, const MatrixView& source, int start,
                 int count, int depth_start, int depth) {
  const std::size_t size = static_cast<std::size_t>(RoundUp(count, format.lhs_rows)) *
                           RoundUp(depth, format.depth_group) * PackedSize(format.lhs_type);
  PackedBlock block{std::vector<std::int8_t>(size, 0x55), std::vector<std::int32_t>(count, 7)};
  pack(source, start, count, depth_start, depth, block.bytes.data(), block.sums.data());
  return block;
}

void PackPortable(const MatrixView& source, int start, int count, int depth_start, int depth,
                  void* packed, std::int32_t* sums) {
  const KernelFormat& format = NeonKernel().format;
  PackWithFormat<std::int8_t>(source, format, format.lhs_rows, start, count, depth_start, depth,
                              packed, sums);
}

template <typename Scalar>
void CheckPackMatchesPortablePacker() {
  const KernelImplementation& neon = NeonKernel();
  ASSERT_EQ(neon.format.lhs_rows, neon.format.rhs_cols) << "one panel width is assumed below";
  for (Order order : {Order::kRowMajor, Order::kColMajor}) {
    for (Fill fill : kFills) {
      for (int count : {1, 3, 4, 7}) {
        for (int depth : {1, 15, 16, 17, 40}) {
          for (int depth_start : {0, 5}) {
            SCOPED_TRACE(testing::Message() << (order == Order::kRowMajor ? "row" : "col")
                                            << "-major, " << FillName(fill) << ", count " << count
                                            << ", depth " << depth << " from " << depth_start);
            const int start = 2;
            const Operand<Scalar> source(start + count, depth_start + depth, order, fill,
                                         static_cast<std::uint32_t>(count * 100 + depth));
            const PackedBlock expected =
                Pack(&PackPortable, neon.format, source.View(), start, count, depth_start, depth);
            for (PackFunction pack : {neon.pack_lhs, neon.pack_rhs}) {
              const PackedBlock actual =
                  Pack(pack, neon.format, source.View(), start, count, depth_start, depth);
              ASSERT_EQ(actual.bytes, expected.bytes);
              ASSERT_EQ(actual.sums, expected.sums);
            }
          }
        }
      }
    }
  }
}

TEST(NeonPackTest, Uint8MatchesPortablePacker) { CheckPackMatchesPortablePacker<std::uint8_t>(); }

TEST(NeonPackTest, Int8MatchesPortablePacker) { CheckPackMatchesPortablePacker<std::int8_t>(); }

// One tile: packs lhs and rhs whole with `kernel` and runs its micro-kernel, first storing,
// then accumulating onto the stored tile, which must double it. The tile is written with a
// stride wider than the tile, whose extra entries must keep their contents.
struct Tile {
  std::vector<std::uint32_t> raw;  // kRows x kCols, row-major
  std::vector<std::int32_t> row_sums;
  std::vector<std::int32_t> col_sums;
};

template <typename Lhs, typename Rhs>
Tile RunTile(const KernelImplementation& kernel, const Operand<Lhs>& lhs, const Operand<Rhs>& rhs) {
  const KernelFormat& format = kernel.format;
  const int depth = lhs.depth();
  const PackedBlock packed_lhs =
      Pack(kernel.pack_lhs, format, lhs.View(), 0, format.lhs_rows, 0, depth);
  const PackedBlock packed_rhs =
      Pack(kernel.pack_rhs, format, rhs.View(), 0, format.rhs_cols, 0, depth);
  const int stride = format.rhs_cols + 2;
  const std::int32_t kUntouched = -12345;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(format.lhs_rows) * stride, kUntouched);
  const int padded_depth = RoundUp(depth, format.depth_group);
  kernel.micro_kernel(packed_lhs.bytes.data(), packed_rhs.bytes.data(), padded_depth,
                      format.lhs_rows, acc.data(), stride, false);
  Tile tile{{}, {}, {}};
  for (int i = 0; i < format.lhs_rows; ++i) {
    for (int j = 0; j < format.rhs_cols; ++j) {
      tile.raw.push_back(static_cast<std::uint32_t>(acc[i * stride + j]));
    }
  }
  kernel.micro_kernel(packed_lhs.bytes.data(), packed_rhs.bytes.data(), padded_depth,
                      format.lhs_rows, acc.data(), stride, true);
  for (int i = 0; i < format.lhs_rows; ++i) {
    for (int j = 0; j < stride; ++j) {
      const std::int32_t value = acc[i * stride + j];
      if (j < format.rhs_cols) {
        EXPECT_EQ(static_cast<std::uint32_t>(value), 2 * tile.raw[i * format.rhs_cols + j])
            << "accumulating (" << i << ", " << j << ")";
      } else {
        EXPECT_EQ(value, kUntouched) << "written outside the tile at (" << i << ", " << j << ")";
      }
    }
  }
  // The sums started from 7 (see Pack).
  for (std::int32_t sum : packed_lhs.sums) tile.row_sums.push_back(sum - 7);
  for (std::int32_t sum : packed_rhs.sums) tile.col_sums.push_back(sum - 7);
  return tile;
}

// The NEON tile, the reference kernel's tile and the 64-bit sum must agree modulo 2^32 once
// the NEON tile gets back what packing subtracted: with shifts a (lhs) and b (rhs),
// sum l*r = sum (l-a)(r-b) + b*sum(l-a) + a*sum(r-b) + a*b*depth, which is what unpacking adds.
template <typename Lhs, typename Rhs>
void CheckTile(const Operand<Lhs>& lhs, const Operand<Rhs>& rhs) {
  const KernelImplementation& neon = NeonKernel();
  const KernelImplementation& reference = ReferenceKernel();
  const int rows = neon.format.lhs_rows;
  const int cols = neon.format.rhs_cols;
  ASSERT_EQ(reference.format.lhs_rows, rows) << "both kernels must cover the same tile";
  ASSERT_EQ(reference.format.rhs_cols, cols) << "both kernels must cover the same tile";
  const int depth = lhs.depth();
  const Tile neon_tile = RunTile(neon, lhs, rhs);
  const Tile reference_tile = RunTile(reference, lhs, rhs);
  const std::uint32_t lhs_shift = PackedValueShift(neon.format.lhs_type, lhs.View());
  const std::uint32_t rhs_shift = PackedValueShift(neon.format.rhs_type, rhs.View());
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      std::int64_t exact = 0;
      for (int d = 0; d < depth; ++d) exact += lhs(i, d) * rhs(j, d);
      const auto expected = static_cast<std::uint32_t>(exact);
      const std::uint32_t restored = neon_tile.raw[i * cols + j] +
                                     rhs_shift * static_cast<std::uint32_t>(neon_tile.row_sums[i]) +
                                     lhs_shift * static_cast<std::uint32_t>(neon_tile.col_sums[j]) +
                                     lhs_shift * rhs_shift * static_cast<std::uint32_t>(depth);
      EXPECT_EQ(reference_tile.raw[i * cols + j], expected)
          << "reference (" << i << ", " << j << ")";
      EXPECT_EQ(restored, expected) << "neon (" << i << ", " << j << ")";
    }
  }
}

template <typename Lhs, typename Rhs>
void CheckTilesAtDepth(int depth, Order order) {
  for (Fill lhs_fill : kFills) {
    for (Fill rhs_fill : kFills) {
      SCOPED_TRACE(testing::Message() << "lhs " << FillName(lhs_fill) << ", rhs "
                                      << FillName(rhs_fill) << ", depth " << depth);
      const Operand<Lhs> lhs(4, depth, order, lhs_fill, 1);
      const Operand<Rhs> rhs(4, depth, order, rhs_fill, 2);
      CheckTile(lhs, rhs);
    }
  }
}

template <typename Lhs, typename Rhs>
void CheckTilesAtShortDepths() {
  for (Order order : {Order::kRowMajor, Order::kColMajor}) {
    for (int depth : {1, 2, 15, 16, 17, 33, 1000}) CheckTilesAtDepth<Lhs, Rhs>(depth, order);
  }
}

// All four operand type pairs: uint8 zeros pack to -128, so uint8 x uint8 at its minimum is
// the -128 * -128 case, as is int8 x int8 at its minimum; uint8 255 packs to 127.
TEST(NeonMicroKernelTest, Uint8Uint8MatchesReference) {
  CheckTilesAtShortDepths<std::uint8_t, std::uint8_t>();
}
TEST(NeonMicroKernelTest, Uint8Int8MatchesReference) {
  CheckTilesAtShortDepths<std::uint8_t, std::int8_t>();
}
TEST(NeonMicroKernelTest, Int8Uint8MatchesReference) {
  CheckTilesAtShortDepths<std::int8_t, std::uint8_t>();
}
TEST(NeonMicroKernelTest, Int8Int8MatchesReference) {
  CheckTilesAtShortDepths<std::int8_t, std::int8_t>();
}

// Past the int32 limit: 16384 * 131077 > 2^31 for the packed -128 * -128, and 65025 * 131077
// for uint8 255 * 255 in the reference's int16 layout, so the raw sums wrap and only agree
// modulo 2^32. The depth is not a multiple of the group either.
TEST(NeonMicroKernelTest, WrapsLikeReferenceBeyondInt32Limit) {
  constexpr int kDepth = 131077;
  static_assert(16384LL * kDepth > std::numeric_limits<std::int32_t>::max(), "must wrap");
  const Operand<std::int8_t> int8_min(4, kDepth, Order::kRowMajor, Fill::kMin, 1);
  const Operand<std::uint8_t> uint8_min(4, kDepth, Order::kRowMajor, Fill::kMin, 1);
  const Operand<std::uint8_t> uint8_max(4, kDepth, Order::kColMajor, Fill::kMax, 1);
  const Operand<std::uint8_t> uint8_mixed(4, kDepth, Order::kRowMajor, Fill::kMaxMinAlternating, 1);
  CheckTile(int8_min, int8_min);
  CheckTile(uint8_min, uint8_min);
  CheckTile(uint8_max, uint8_max);
  CheckTile(uint8_mixed, int8_min);
  CheckTile(uint8_max, uint8_mixed);
}

}  // namespace
}  // namespace internal
}  // namespace lowbit
