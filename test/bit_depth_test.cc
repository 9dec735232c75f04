// Narrow operands: the rounding sequences, the requantization pass against its scalar formula,
// GEMMs with BitDepthParams against a 64-bit reference built from that formula (so every kernel,
// thread count, blocking and prepacking gives the same bits), declared-range exactness, the
// rescale's rounding, and every rejected argument.
#include "lowbit/internal/driver/bit_depth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/output/unpack.h"
#include "lowbit/lowbit.h"
#include "test/test_util.h"

namespace lowbit {
namespace test {
namespace {

using internal::Operand;

constexpr BitDepthRounding kStrategies[] = {BitDepthRounding::kNearest, BitDepthRounding::kXorshift,
                                            BitDepthRounding::kAddMod97};

std::uint8_t Xorshift(std::uint8_t x) {
  x ^= static_cast<std::uint8_t>(x << 7);
  x ^= static_cast<std::uint8_t>(x >> 5);
  x ^= static_cast<std::uint8_t>(x << 3);
  return x;
}

// Sequence values by stepping each generator from its start as design section 3 describes it,
// independently of the library's tables: position j of add-mod-97 (from 0) and of xorshift
// (from state 1, output state - 1).
std::vector<int> SteppedSequence(BitDepthRounding rounding) {
  std::vector<int> values;
  int add_mod = 0;
  std::uint8_t state = 1;
  for (int j = 0; j < 255; ++j) {
    values.push_back(rounding == BitDepthRounding::kAddMod97 ? add_mod : state - 1);
    add_mod = (add_mod + 97) % 255;
    state = Xorshift(state);
  }
  return values;
}

// The offset of element (line, k): 127, or the sequence value at (phase of k's block + k) mod 255.
int ScalarOffset(BitDepthRounding rounding, std::uint32_t seed, Operand operand, int line, int k) {
  static const std::vector<int> add_mod = SteppedSequence(BitDepthRounding::kAddMod97);
  static const std::vector<int> xorshift = SteppedSequence(BitDepthRounding::kXorshift);
  if (rounding == BitDepthRounding::kNearest) return 127;
  const int position = (internal::SequencePhase(seed, operand, line, k / 255) + k) % 255;
  return rounding == BitDepthRounding::kAddMod97 ? add_mod[position] : xorshift[position];
}

template <typename Scalar>
int AsUint8(Scalar value) {
  return std::is_signed<Scalar>::value ? value + 128 : value;
}

// The requantized value of element (line, k) whose source value is `value`.
template <typename Scalar>
std::int64_t ScalarRequantized(Scalar value, int bits, BitDepthRounding rounding,
                               std::uint32_t seed, Operand operand, int line, int k) {
  return (AsUint8(value) * ((1 << bits) - 1) + ScalarOffset(rounding, seed, operand, line, k)) /
         255;
}

// round(n / d) for d > 0 odd (no ties), as floor((n + (d - 1) / 2) / d).
std::int64_t RoundDivide(std::int64_t n, std::int64_t d) {
  const std::int64_t m = n + (d - 1) / 2;
  return m >= 0 ? m / d : -((-m + d - 1) / d);
}

std::int32_t SaturateInt32(std::int64_t value) {
  return static_cast<std::int32_t>(std::min<std::int64_t>(
      std::max<std::int64_t>(value, std::numeric_limits<std::int32_t>::min()),
      std::numeric_limits<std::int32_t>::max()));
}

// The requantize-mode result, straight from the design: with a' and b' the requantized values
// and oa, ob the offsets of the values as uint8, round((255^2 sum a'b' + 255 PR ob sum a' +
// 255 PL oa sum b' + K oa ob PL PR) / (PL PR)), saturated.
template <typename Lhs, typename Rhs>
std::vector<std::int32_t> ReferenceBitDepthResult(const MatrixMap<Lhs>& lhs,
                                                  const MatrixMap<Rhs>& rhs,
                                                  const Offsets& lhs_offset,
                                                  const Offsets& rhs_offset,
                                                  const BitDepthParams& params) {
  const int rows = lhs.rows(), depth = lhs.cols(), cols = rhs.cols();
  const BitDepthRounding rounding = ResolveRounding(params.rounding, depth);
  std::vector<std::int64_t> a(static_cast<std::size_t>(rows) * depth);
  std::vector<std::int64_t> b(static_cast<std::size_t>(depth) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < depth; ++k) {
      a[r * depth + k] =
          ScalarRequantized(lhs(r, k), params.lhs_bits, rounding, params.seed, Operand::kLhs, r, k);
    }
  }
  for (int c = 0; c < cols; ++c) {
    for (int k = 0; k < depth; ++k) {
      b[c * depth + k] =
          ScalarRequantized(rhs(k, c), params.rhs_bits, rounding, params.seed, Operand::kRhs, c, k);
    }
  }
  const std::int64_t pl = (1 << params.lhs_bits) - 1, pr = (1 << params.rhs_bits) - 1;
  std::vector<std::int32_t> result(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    const std::int64_t oa = lhs_offset(r) - (std::is_signed<Lhs>::value ? 128 : 0);
    for (int c = 0; c < cols; ++c) {
      const std::int64_t ob = rhs_offset(c) - (std::is_signed<Rhs>::value ? 128 : 0);
      std::int64_t products = 0, sum_a = 0, sum_b = 0;
      for (int k = 0; k < depth; ++k) {
        products += a[r * depth + k] * b[c * depth + k];
        sum_a += a[r * depth + k];
        sum_b += b[c * depth + k];
      }
      const std::int64_t n = 255 * 255 * products + 255 * pr * ob * sum_a + 255 * pl * oa * sum_b +
                             depth * oa * ob * pl * pr;
      result[r * cols + c] = SaturateInt32(RoundDivide(n, pl * pr));
    }
  }
  return result;
}

TEST(SequenceTest, XorshiftHasPeriod255FromEveryNonzeroState) {
  for (int start = 1; start <= 255; ++start) {
    auto state = static_cast<std::uint8_t>(start);
    int period = 0;
    do {
      state = Xorshift(state);
      ++period;
      ASSERT_NE(state, 0) << "the generator reached 0 from " << start;
    } while (state != start && period <= 255);
    EXPECT_EQ(period, 255) << "from state " << start;
  }
}

TEST(SequenceTest, EachSequenceTakesEveryOffsetOncePerPeriod) {
  for (BitDepthRounding rounding : {BitDepthRounding::kXorshift, BitDepthRounding::kAddMod97}) {
    std::set<int> values;
    for (int j = 0; j < 255; ++j) {
      const int value = internal::SequenceValue(rounding, j);
      ASSERT_EQ(value,
                ScalarOffset(rounding, 0, Operand::kLhs, 0,
                             (j - internal::SequencePhase(0, Operand::kLhs, 0, 0) + 255) % 255))
          << BitDepthRoundingName(rounding) << " position " << j;
      values.insert(value);
    }
    EXPECT_EQ(values.size(), 255u) << BitDepthRoundingName(rounding);
    EXPECT_EQ(*values.begin(), 0);
    EXPECT_EQ(*values.rbegin(), 254);
  }
}

TEST(SequenceTest, PhasesDifferBetweenOperandsLinesBlocksAndSeeds) {
  std::set<int> lhs_phases;
  int equal_between_operands = 0, equal_between_seeds = 0, equal_between_blocks = 0;
  for (int line = 0; line < 2000; ++line) {
    const int phase = internal::SequencePhase(7, Operand::kLhs, line, 3);
    lhs_phases.insert(phase);
    equal_between_operands += phase == internal::SequencePhase(7, Operand::kRhs, line, 3);
    equal_between_seeds += phase == internal::SequencePhase(8, Operand::kLhs, line, 3);
    equal_between_blocks += phase == internal::SequencePhase(7, Operand::kLhs, line, 4);
  }
  // 2000 uniform draws from 255 values miss any one value with probability (254/255)^2000.
  EXPECT_EQ(lhs_phases.size(), 255u);
  // About 2000 / 255 coincidences are expected of independent phases.
  EXPECT_LT(equal_between_operands, 25);
  EXPECT_LT(equal_between_seeds, 25);
  EXPECT_LT(equal_between_blocks, 25);
}

// RequantizeLines over lines stored along and across the depth, for every bit depth, strategy,
// source type and kernel ISA, against ScalarRequantized.
template <typename Scalar>
void CheckRequantizeLines(Kernel kernel, Order order) {
  std::mt19937 random(static_cast<std::uint32_t>(order == Order::kRowMajor) + 3);
  for (int bits = 1; bits <= 8; ++bits) {
    for (BitDepthRounding rounding : kStrategies) {
      for (Operand operand : {Operand::kLhs, Operand::kRhs}) {
        // Lines stored with padding, of depths within one block of one period, ending at and
        // just past a block's end, and past several blocks: the AVX-512 line's steps of 64
        // straddle blocks, and at 4 bits one ends where a block ends (64 x 255), the next taking
        // none of its lanes from that block.
        std::vector<int> depths = {1, 63, 64, 255, 256, 319, 510, 2 * 1020 + 37};
        if (bits == 4) depths.push_back(64 * 255 + 37);
        for (const int depth : depths) {
          // More lines than the AVX-512 run hashes at once (kPhaseLines).
          const int lines = 11;
          OwnedMatrix<Scalar> source(lines, depth, order, 3, &random);
          std::vector<std::uint8_t> out(static_cast<std::size_t>(lines) * depth);
          std::vector<std::int32_t> sums(lines);
          const std::uint32_t seed = 1000 + bits;
          const internal::MatrixView view = internal::ViewOf(source.const_map());
          std::vector<std::uint32_t> work((internal::RequantizeWorkBytes(view) + 3) / 4);
          internal::RequantizeLines(kernel, view, bits, rounding, seed, operand, out.data(),
                                    sums.data(), work.data());
          const MatrixMap<const std::uint8_t> requantized(out.data(), lines, depth, order);
          for (int line = 0; line < lines; ++line) {
            std::int64_t sum = 0;
            for (int k = 0; k < depth; ++k) {
              const std::int64_t expected =
                  ScalarRequantized(source.map(line, k), bits, rounding, seed, operand, line, k);
              ASSERT_EQ(requantized(line, k), expected)
                  << KernelName(kernel) << ", " << bits << " bits, "
                  << BitDepthRoundingName(rounding) << ", line " << line << ", k " << k;
              sum += expected;
            }
            ASSERT_EQ(sums[line], sum) << "line " << line;
          }
          // Lines 2.. alone, as the driver requantizes a panel: the same values and sums.
          constexpr int kFirst = 2;
          internal::MatrixView part = view;
          part.rows = lines - kFirst;
          part.data = &source.map(kFirst, 0);
          std::vector<std::uint8_t> part_out(static_cast<std::size_t>(part.rows) * depth);
          std::vector<std::int32_t> part_sums(part.rows);
          internal::RequantizeLines(kernel, part, bits, rounding, seed, operand, part_out.data(),
                                    part_sums.data(), work.data(), kFirst);
          const MatrixMap<const std::uint8_t> part_requantized(part_out.data(), part.rows, depth,
                                                               order);
          for (int line = 0; line < part.rows; ++line) {
            ASSERT_EQ(part_sums[line], sums[kFirst + line]) << "line " << kFirst + line;
            for (int k = 0; k < depth; ++k) {
              ASSERT_EQ(part_requantized(line, k), requantized(kFirst + line, k))
                  << "line " << kFirst + line << ", k " << k;
            }
          }
        }
      }
    }
  }
}

TEST(RequantizeTest, EveryBitDepthAndStrategyMatchesTheScalarFormula) {
  for (Kernel kernel : AvailableKernels()) {
    for (Order order : {Order::kRowMajor, Order::kColMajor}) {
      CheckRequantizeLines<std::uint8_t>(kernel, order);
      CheckRequantizeLines<std::int8_t>(kernel, order);
    }
  }
}

TEST(RequantizeTest, ProbabilisticRoundingIsExactOnAverageOverAPeriod) {
  // Over a whole period every offset 0..254 occurs once, and sum_o floor((x + o) / 255) = x:
  // the mean requantized value is exactly s (2^N - 1) / 255.
  for (BitDepthRounding rounding : {BitDepthRounding::kXorshift, BitDepthRounding::kAddMod97}) {
    for (int value : {1, 77, 200, 254}) {
      std::vector<std::uint8_t> source(255, static_cast<std::uint8_t>(value)), out(255);
      std::int32_t sum = 0;
      const internal::MatrixView view{
          source.data(), internal::ElementType::kUint8, 1, 255, Order::kRowMajor, 255};
      std::vector<std::uint32_t> work((internal::RequantizeWorkBytes(view) + 3) / 4);
      internal::RequantizeLines(Kernel::kReference, view, 5, rounding, 9, Operand::kLhs, out.data(),
                                &sum, work.data());
      EXPECT_EQ(sum, value * 31) << BitDepthRoundingName(rounding) << " " << value;
    }
  }
}

// The rescale's rounding against RoundDivide on random sums and terms, both signs, and its
// saturation (which the depth guard keeps GEMMs from reaching).
TEST(RescaleTest, RoundsToNearestAndSaturates) {
  std::mt19937 random(5);
  std::uniform_int_distribution<std::int32_t> sum(-(1 << 30), 1 << 30);
  std::uniform_int_distribution<std::int64_t> term(-(1LL << 14), 1LL << 14);
  for (const int divisor : {1, 3, 7 * 31, 127 * 255, 255 * 255}) {
    constexpr int kRows = 3, kCols = 5, kStride = 8;
    double lhs_a[kRows], lhs_b[kRows], rhs_a[kCols], rhs_b[kCols];
    for (double* terms : {lhs_a, lhs_b}) {
      for (int i = 0; i < kRows; ++i) terms[i] = static_cast<double>(term(random));
    }
    for (double* terms : {rhs_a, rhs_b}) {
      for (int i = 0; i < kCols; ++i) terms[i] = static_cast<double>(term(random));
    }
    std::int32_t acc[kRows * kStride];
    for (std::int32_t& value : acc) value = sum(random) / 65025 * (divisor == 1 ? 1 : 9);
    acc[0] = std::numeric_limits<std::int32_t>::max();
    acc[1] = std::numeric_limits<std::int32_t>::min();
    std::int32_t expected[kRows * kStride];
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < kCols; ++c) {
        const std::int64_t n =
            65025LL * acc[r * kStride + c] +
            static_cast<std::int64_t>(lhs_a[r]) * static_cast<std::int64_t>(rhs_a[c]) +
            static_cast<std::int64_t>(lhs_b[r]) * static_cast<std::int64_t>(rhs_b[c]);
        expected[r * kStride + c] = SaturateInt32(RoundDivide(n, divisor));
      }
    }
    const internal::Rescale rescale{{lhs_a, lhs_b}, {rhs_a, rhs_b}, divisor};
    internal::RescaleBlock(rescale, 0, kRows, 0, kCols, acc, kStride);
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < kCols; ++c) {
        ASSERT_EQ(acc[r * kStride + c], expected[r * kStride + c])
            << "divisor " << divisor << " (" << r << ", " << c << ")";
      }
    }
    if (divisor < 65025) {
      EXPECT_EQ(acc[0], std::numeric_limits<std::int32_t>::max());
      EXPECT_EQ(acc[1], std::numeric_limits<std::int32_t>::min());
    }
  }
}

// One problem: operand types, orders, offsets and params from `index`.
struct BitDepthProblem {
  Shape shape;
  std::uint32_t index;
  BitDepthParams params;
};

BitDepthParams ParamsFor(std::uint32_t index) {
  constexpr BitDepthRounding kAll[] = {BitDepthRounding::kNearest, BitDepthRounding::kXorshift,
                                       BitDepthRounding::kAddMod97, BitDepthRounding::kAuto};
  const std::uint32_t bits = index * 2654435761U >> 9;
  return BitDepthParams{static_cast<int>(bits % 8) + 1, static_cast<int>((bits >> 3) % 8) + 1,
                        kAll[(bits >> 6) % 4], bits >> 8, BitDepthMode::kRequantize};
}

class BitDepthGemmTest : public testing::TestWithParam<PathSetting> {
 protected:
  void SetUp() override { Configure(&context_, GetParam()); }

  // Runs the GEMM (int32 result and a uint8 pipeline; plain and prepacked rhs) and compares
  // every entry with ReferenceBitDepthResult. With uniform_lhs_offset, the lhs offset is that
  // one (uniform) whatever the index says.
  template <typename Lhs, typename Rhs>
  void Check(const Shape& shape, std::uint32_t index, const BitDepthParams& params,
             const std::int32_t* uniform_lhs_offset = nullptr) {
    std::mt19937 random(index);
    const Order lhs_order = index & 1 ? Order::kColMajor : Order::kRowMajor;
    const Order rhs_order = index & 2 ? Order::kColMajor : Order::kRowMajor;
    const Order result_order = index & 4 ? Order::kColMajor : Order::kRowMajor;
    OwnedMatrix<Lhs> lhs(shape.rows, shape.depth, lhs_order, index % 3, &random);
    OwnedMatrix<Rhs> rhs(shape.depth, shape.cols, rhs_order, index % 2, &random);
    std::uniform_int_distribution<std::int32_t> offset(-255, 255);
    std::vector<std::int32_t> lhs_offsets(shape.rows), rhs_offsets(shape.cols);
    for (auto& value : lhs_offsets) value = offset(random);
    for (auto& value : rhs_offsets) value = offset(random);
    const bool per_channel = (index >> 3) & 1;
    const Offsets lhs_offset =
        uniform_lhs_offset != nullptr ? Offsets(*uniform_lhs_offset)
        : per_channel ? Offsets(VectorMap<const std::int32_t>(lhs_offsets.data(), shape.rows))
                      : Offsets(offset(random));
    const Offsets rhs_offset =
        per_channel ? Offsets(VectorMap<const std::int32_t>(rhs_offsets.data(), shape.cols))
                    : Offsets(offset(random));
    const std::vector<std::int32_t> expected =
        ReferenceBitDepthResult(lhs.const_map(), rhs.const_map(), lhs_offset, rhs_offset, params);

    OwnedMatrix<std::int32_t> acc(shape.rows, shape.cols, result_order, 0, &random);
    Gemm(&context_, lhs.const_map(), rhs.const_map(), &acc.map, lhs_offset, rhs_offset, params);
    const PrepackedRhs prepacked(&context_, rhs.const_map(), params);
    OwnedMatrix<std::int32_t> prepacked_acc(shape.rows, shape.cols, result_order, 0, &random);
    Gemm(&context_, lhs.const_map(), prepacked, &prepacked_acc.map, lhs_offset, rhs_offset, params);
    const auto pipeline = std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 9, 7},
                                          OutputStageSaturatingCastToUint8{});
    OwnedMatrix<std::uint8_t> out(shape.rows, shape.cols, result_order, 1, &random);
    GemmWithOutputPipeline(&context_, lhs.const_map(), rhs.const_map(), &out.map, lhs_offset,
                           rhs_offset, pipeline, params);
    OwnedMatrix<std::uint8_t> prepacked_out(shape.rows, shape.cols, result_order, 1, &random);
    GemmWithOutputPipeline(&context_, lhs.const_map(), prepacked, &prepacked_out.map, lhs_offset,
                           rhs_offset, pipeline, params);
    for (int r = 0; r < shape.rows; ++r) {
      for (int c = 0; c < shape.cols; ++c) {
        const std::int32_t value = expected[r * shape.cols + c];
        ASSERT_EQ(acc.map(r, c), value)
            << "(" << r << ", " << c << ") of " << shape.rows << "x" << shape.depth << "x"
            << shape.cols << ", L" << params.lhs_bits << "R" << params.rhs_bits << " "
            << BitDepthRoundingName(params.rounding) << ", index " << index;
        ASSERT_EQ(prepacked_acc.map(r, c), value) << "prepacked (" << r << ", " << c << ")";
        ASSERT_EQ(out.map(r, c), meta::EvalPipeline(pipeline, value, r, c));
        ASSERT_EQ(prepacked_out.map(r, c), out.map(r, c)) << "prepacked (" << r << ", " << c << ")";
      }
    }
  }

  void CheckAnyTypes(const Shape& shape, std::uint32_t index, const BitDepthParams& params,
                     const std::int32_t* uniform_lhs_offset = nullptr) {
    switch ((index >> 4) % 4) {
      case 0:
        return Check<std::uint8_t, std::uint8_t>(shape, index, params, uniform_lhs_offset);
      case 1:
        return Check<std::int8_t, std::uint8_t>(shape, index, params, uniform_lhs_offset);
      case 2:
        return Check<std::uint8_t, std::int8_t>(shape, index, params, uniform_lhs_offset);
      default:
        return Check<std::int8_t, std::int8_t>(shape, index, params, uniform_lhs_offset);
    }
  }

  Context context_;
};

TEST_P(BitDepthGemmTest, OddAndPrimeShapesMatchTheScalarReference) {
  const int sizes[] = {1, 2, 3, 7, 13, 31, 61, 131};
  constexpr int kCount = sizeof(sizes) / sizeof(sizes[0]);
  std::uint32_t index = 0;
  for (int i = 0; i < kCount; ++i) {
    for (int j = 0; j < kCount; ++j) {
      const Shape shape{sizes[i], sizes[(i + j) % kCount], sizes[j]};
      CheckAnyTypes(shape, index, ParamsFor(index));
      ++index;
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(BitDepthGemmTest, DeepProductsCrossEveryBlockAndAutoChoosesBySize) {
  // Past the Auto threshold and past several sequence periods and depth blocks.
  for (const Shape shape : {Shape{67, kAutoRoundingMinDepth + 5, 29}, Shape{5, 700, 131}}) {
    for (BitDepthRounding rounding : {BitDepthRounding::kAuto, BitDepthRounding::kXorshift}) {
      const BitDepthParams params{7, 5, rounding, 77, BitDepthMode::kRequantize};
      CheckAnyTypes(shape, static_cast<std::uint32_t>(shape.depth) + 16, params);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(BitDepthGemmTest, DeepLinesAlongTheDepthInEveryTypeAndPartialPanel) {
  // Both operands' lines along the depth (a row-major lhs, a column-major rhs), which the AVX-512
  // kernels requantize as they pack them: steps that straddle blocks, a depth tail, partial
  // panels of 8, 16 and 32 lines, every operand type, 8 bits (values unchanged) on one side.
  const BitDepthParams all_params[] = {
      {4, 4, BitDepthRounding::kAddMod97, 5, BitDepthMode::kRequantize},
      {3, 6, BitDepthRounding::kXorshift, 9, BitDepthMode::kRequantize},
      {8, 2, BitDepthRounding::kNearest, 1, BitDepthMode::kRequantize}};
  for (const BitDepthParams& params : all_params) {
    // Index bits: lhs row-major (bit 0 clear), rhs column-major (bit 1), per-channel offsets
    // (bit 3) on half, the four type pairs (bits 4 and 5).
    for (const std::uint32_t index : {2u, 6u + 8u, 18u, 34u + 8u, 50u}) {
      CheckAnyTypes(Shape{19, 2 * 1020 + 37, 45}, index, params);
      if (HasFatalFailure()) return;
    }
  }
}

// A short lhs against an rhs whose columns run along the depth, both requantized: the AVX-512
// VNNI kernel requantizes the rhs as its direct product reads it, every form (a compare for 1
// bit, a table for 2 and 4 bits scaled to the 8-bit values they stand for, the values plus a
// shift otherwise), and the writer rescales by terms from its column sums where the bit depths
// leave a rescale (7 x 5, 3 x 6). Rows on either side of the driver's limit for it, depths with
// and without a tail, within one block of the rounding sequence and straddling several, every
// type pair, lhs offsets that need the column sums and a uint8 lhs with offset -128.
TEST_P(BitDepthGemmTest, ShortLhsAgainstRequantizedRhsColumns) {
  const BitDepthParams all_params[] = {
      {1, 1, BitDepthRounding::kXorshift, 3, BitDepthMode::kRequantize},
      {2, 2, BitDepthRounding::kAddMod97, 4, BitDepthMode::kRequantize},
      {4, 4, BitDepthRounding::kNearest, 5, BitDepthMode::kRequantize},
      {2, 1, BitDepthRounding::kAuto, 6, BitDepthMode::kRequantize},
      {8, 4, BitDepthRounding::kXorshift, 7, BitDepthMode::kRequantize},
      {1, 8, BitDepthRounding::kAddMod97, 8, BitDepthMode::kRequantize},
      {7, 5, BitDepthRounding::kXorshift, 9, BitDepthMode::kRequantize},
      {3, 6, BitDepthRounding::kNearest, 10, BitDepthMode::kRequantize}};
  constexpr std::int32_t kCancellingOffset = -128;
  std::uint32_t step = 0;
  for (const BitDepthParams& params : all_params) {
    for (const int rows : {1, 2, 4, 5}) {
      for (const int depth : {1, 64, 200, 320, 1037}) {
        // Index bits: lhs row-major (bit 0 clear), rhs column-major (bit 1), per-channel offsets
        // (bit 3) on a quarter, the four type pairs (bits 4 and 5) in turn.
        const std::uint32_t index = 2u + (step % 4 == 1 ? 8u : 0u) + 16u * (step % 4);
        CheckAnyTypes(Shape{rows, depth, 4 * rows + 3}, index, params);
        if (HasFatalFailure()) return;
        Check<std::uint8_t, std::uint8_t>(Shape{rows, depth, 9}, index, params, &kCancellingOffset);
        if (HasFatalFailure()) return;
        ++step;
      }
    }
  }
}

// A context keeps the rounding phases of the lines its packers requantize as they read them
// between GEMMs (PhaseCache): again with the same seed and lines, with more lines, fewer, for
// another bit depth, another seed and another depth, every GEMM gives the reference's results.
TEST_P(BitDepthGemmTest, RoundingPhasesKeptBetweenGemmsOfAContext) {
  // A row-major lhs and a column-major rhs (lines along the depth), uniform offsets.
  constexpr std::uint32_t kIndex = 2;
  const BitDepthParams params{4, 4, BitDepthRounding::kAddMod97, 5, BitDepthMode::kRequantize};
  BitDepthParams one_bit = params;
  one_bit.lhs_bits = one_bit.rhs_bits = 1;
  BitDepthParams other_seed = params;
  other_seed.seed = 6;
  const std::pair<Shape, BitDepthParams> gemms[] = {
      {Shape{40, 300, 70}, params},     {Shape{40, 300, 70}, params},
      {Shape{90, 300, 100}, params},    {Shape{17, 300, 33}, params},
      {Shape{64, 300, 64}, one_bit},    {Shape{17, 300, 33}, other_seed},
      {Shape{17, 600, 33}, other_seed}, {Shape{17, 300, 33}, params}};
  for (const auto& [shape, gemm_params] : gemms) {
    Check<std::uint8_t, std::uint8_t>(shape, kIndex, gemm_params);
    if (HasFatalFailure()) return;
  }
}

// 8-bit results of a QuantizeDown of GEMMs whose bit depths leave a rescale to the output (255 /
// (2^bits - 1) not an integer on a side), uniform offsets: what the AVX-512 VNNI kernel writes
// between its tile's steps, the rescale and the scale together in float (LinesBetweenSteps), for
// result lines along the result's memory and across it (a column-major result of fewer rows than
// columns). Shapes with tiles short of 8 rows, two depth slices, blocks of 17 to 512 columns
// (lines that end in part of a batch); uint8 and int8
// operands and results; the benchmarks' scale and scales whose float form sends more vectors to
// the exact arithmetic.
TEST_P(BitDepthGemmTest, RescaledResultsWrittenBetweenTileStepsMatchTheScalarReference) {
  const Shape shapes[] = {{64, 64, 64},  {256, 100, 70}, {100, 1000, 256}, {192, 33, 320},
                          {128, 64, 61}, {512, 9, 512},  {40, 50, 96},     {300, 64, 17}};
  const BitDepthParams all_params[] = {
      {7, 5, BitDepthRounding::kXorshift, 3, BitDepthMode::kRequantize},
      {5, 7, BitDepthRounding::kAddMod97, 4, BitDepthMode::kRequantize},
      {3, 6, BitDepthRounding::kNearest, 5, BitDepthMode::kRequantize},
      {6, 8, BitDepthRounding::kXorshift, 6, BitDepthMode::kRequantize}};
  const auto benchmarks =
      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
                      OutputStageSaturatingCastToUint8{});
  const auto wide_window = std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 9, 7},
                                           OutputStageSaturatingCastToUint8{});
  const auto signed_results =
      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1518500250, 12, -3},
                      OutputStageSaturatingCastToInt8{});
  std::uint32_t index = 21;
  for (const Shape& shape : shapes) {
    for (Order result_order : {Order::kRowMajor, Order::kColMajor}) {
      const BitDepthParams& params = all_params[index % 4];
      std::mt19937 random(index);
      const bool signed_lhs = index & 1, signed_rhs = index & 2;
      std::uniform_int_distribution<std::int32_t> offset(-255, 255);
      const std::int32_t lhs_offset = offset(random), rhs_offset = offset(random);
      const auto check = [&](auto lhs_value, auto rhs_value) {
        using Lhs = decltype(lhs_value);
        using Rhs = decltype(rhs_value);
        OwnedMatrix<Lhs> lhs(shape.rows, shape.depth, Order::kRowMajor, 0, &random);
        OwnedMatrix<Rhs> rhs(shape.depth, shape.cols, Order::kColMajor, 0, &random);
        const std::vector<std::int32_t> expected = ReferenceBitDepthResult(
            lhs.const_map(), rhs.const_map(), lhs_offset, rhs_offset, params);
        const auto check_pipeline = [&](const auto& pipeline) {
          using Result = std::remove_reference_t<decltype(meta::EvalPipeline(pipeline, 0, 0, 0))>;
          OwnedMatrix<Result> out(shape.rows, shape.cols, result_order, 1, &random);
          GemmWithOutputPipeline(&context_, lhs.const_map(), rhs.const_map(), &out.map, lhs_offset,
                                 rhs_offset, pipeline, params);
          for (int r = 0; r < shape.rows; ++r) {
            for (int c = 0; c < shape.cols; ++c) {
              ASSERT_EQ(out.map(r, c),
                        meta::EvalPipeline(pipeline, expected[r * shape.cols + c], r, c))
                  << "(" << r << ", " << c << ") of " << shape.rows << "x" << shape.depth << "x"
                  << shape.cols << ", L" << params.lhs_bits << "R" << params.rhs_bits
                  << ", offsets " << lhs_offset << ", " << rhs_offset << ", index " << index;
            }
          }
        };
        check_pipeline(benchmarks);
        check_pipeline(wide_window);
        check_pipeline(signed_results);
      };
      if (signed_lhs && signed_rhs) {
        check(std::int8_t{}, std::int8_t{});
      } else if (signed_lhs) {
        check(std::int8_t{}, std::uint8_t{});
      } else if (signed_rhs) {
        check(std::uint8_t{}, std::int8_t{});
      } else {
        check(std::uint8_t{}, std::uint8_t{});
      }
      if (HasFatalFailure()) return;
      ++index;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, BitDepthGemmTest, testing::ValuesIn(PathSettings({1, 2, 3})),
                         PathSettingName);

// Small shapes, one block unless the blocks are tiny: one thread suffices.
class BitDepthSmallGemmTest : public BitDepthGemmTest {};

TEST_P(BitDepthSmallGemmTest, EveryBitDepthPairAndStrategy) {
  std::uint32_t index = 100;
  for (int lhs_bits = 1; lhs_bits <= 8; ++lhs_bits) {
    for (int rhs_bits = 1; rhs_bits <= 8; ++rhs_bits) {
      for (BitDepthRounding rounding : kStrategies) {
        const BitDepthParams params{lhs_bits, rhs_bits, rounding, index, BitDepthMode::kRequantize};
        CheckAnyTypes(Shape{9, 37, 11}, index++, params);
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, BitDepthSmallGemmTest, testing::ValuesIn(PathSettings({1})),
                         PathSettingName);

TEST(BitDepthTest, AutoIsNearestBelowTheThresholdAndAddModFromIt) {
  EXPECT_EQ(ResolveRounding(BitDepthRounding::kAuto, kAutoRoundingMinDepth - 1),
            BitDepthRounding::kNearest);
  EXPECT_EQ(ResolveRounding(BitDepthRounding::kAuto, kAutoRoundingMinDepth),
            BitDepthRounding::kAddMod97);
  EXPECT_EQ(ResolveRounding(BitDepthRounding::kXorshift, 1), BitDepthRounding::kXorshift);
}

TEST(BitDepthTest, EightBitsRequantizedIsTheExactGemmAndSeedsMatter) {
  Context context;
  std::mt19937 random(3);
  OwnedMatrix<std::int8_t> lhs(13, 300, Order::kRowMajor, 0, &random);
  OwnedMatrix<std::uint8_t> rhs(300, 17, Order::kColMajor, 0, &random);
  const auto exact = ReferenceAccumulators(lhs.const_map(), rhs.const_map(), 5, -128);
  OwnedMatrix<std::int32_t> acc(13, 17, Order::kRowMajor, 0, &random);
  for (BitDepthRounding rounding : kStrategies) {
    Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, 5, -128,
         BitDepthParams{8, 8, rounding, 1, BitDepthMode::kRequantize});
    for (int i = 0; i < 13 * 17; ++i) ASSERT_EQ(acc.storage[i], exact[i]) << i;
  }
  // Another seed moves probabilistic rounding's offsets, and so the result.
  std::vector<std::int32_t> results[2];
  for (std::uint32_t seed : {1u, 2u}) {
    Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, 5, -128,
         BitDepthParams{5, 6, BitDepthRounding::kAddMod97, seed, BitDepthMode::kRequantize});
    results[seed - 1].assign(acc.storage.begin(), acc.storage.begin() + 13 * 17);
  }
  EXPECT_NE(results[0], results[1]);
}

// Declared range: data drawn from the whole declared range, including both ends, on every
// path; the result is the exact GEMM.
class DeclaredRangeTest : public testing::TestWithParam<PathSetting> {};

template <typename Scalar>
void FillDeclared(OwnedMatrix<Scalar>* matrix, int bits, std::mt19937* random) {
  const int min = std::is_signed<Scalar>::value ? -(1 << (bits - 1)) : 0;
  const int max = std::is_signed<Scalar>::value ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
  std::uniform_int_distribution<int> value(min, max);
  for (auto& entry : matrix->storage) entry = static_cast<Scalar>(value(*random));
  matrix->storage[0] = static_cast<Scalar>(min);
  matrix->storage[1] = static_cast<Scalar>(max);
}

TEST_P(DeclaredRangeTest, ResultsAreExact) {
  Context context;
  Configure(&context, GetParam());
  std::mt19937 random(11);
  // Pairs of 9 bits in all, and the bit-serial kernels' pairs of 1 and 2 bits.
  std::vector<std::pair<int, int>> pairs = {{1, 1}, {1, 2}, {2, 1}, {2, 2}};
  for (int bits = 1; bits <= 8; ++bits) pairs.push_back({bits, 9 - bits});
  for (const auto& [lhs_bits, rhs_bits] : pairs) {
    const int bits = lhs_bits;
    const Shape shape{7 + bits, 29 * bits + 37 * (rhs_bits % 3), 31 - bits};
    OwnedMatrix<std::int8_t> lhs(shape.rows, shape.depth, Order::kRowMajor, 0, &random);
    OwnedMatrix<std::uint8_t> rhs(shape.depth, shape.cols, Order::kColMajor, 0, &random);
    FillDeclared(&lhs, lhs_bits, &random);
    FillDeclared(&rhs, rhs_bits, &random);
    const BitDepthParams params{lhs_bits, rhs_bits, BitDepthRounding::kAuto, 0,
                                BitDepthMode::kDeclaredRange};
    const auto exact = ReferenceAccumulators(lhs.const_map(), rhs.const_map(), -3, 17);
    OwnedMatrix<std::int32_t> acc(shape.rows, shape.cols, Order::kColMajor, 0, &random);
    Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, -3, 17, params);
    const PrepackedRhs prepacked(&context, rhs.const_map(), params);
    OwnedMatrix<std::int32_t> prepacked_acc(shape.rows, shape.cols, Order::kColMajor, 0, &random);
    Gemm(&context, lhs.const_map(), prepacked, &prepacked_acc.map, -3, 17, params);
    for (int r = 0; r < shape.rows; ++r) {
      for (int c = 0; c < shape.cols; ++c) {
        ASSERT_EQ(acc.map(r, c), exact[r * shape.cols + c]) << lhs_bits << "x" << rhs_bits;
        ASSERT_EQ(prepacked_acc.map(r, c), exact[r * shape.cols + c])
            << lhs_bits << "x" << rhs_bits;
      }
    }
  }
}

// Uniform offsets that packing declared values can cancel (the driver packs a side less -offset
// where its packed type holds every value less that, MatrixView::shift), ones it cannot, on
// either side of a transposed and an untransposed GEMM and of a short lhs against an rhs read
// where it lies: exact raw results, and a QuantizeDown pipeline's bytes the same as those of the
// undeclared GEMM of the same values.
TEST_P(DeclaredRangeTest, OffsetsThatPackingCancels) {
  Context context;
  Configure(&context, GetParam());
  std::mt19937 random(17);
  const auto pipeline = std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 11, 100},
                                        OutputStageSaturatingCastToUint8{});
  const auto check = [&](auto lhs_type, const Shape& shape, int bits) {
    using LhsScalar = decltype(lhs_type);
    OwnedMatrix<LhsScalar> lhs(shape.rows, shape.depth, Order::kRowMajor, 0, &random);
    OwnedMatrix<std::uint8_t> rhs(shape.depth, shape.cols, Order::kColMajor, 0, &random);
    FillDeclared(&lhs, bits, &random);
    FillDeclared(&rhs, bits, &random);
    const BitDepthParams params{bits, bits, BitDepthRounding::kAuto, 0,
                                BitDepthMode::kDeclaredRange};
    const int half = 1 << (bits - 1);
    const std::pair<int, int> offsets[] = {{0, 0},        {-128, -128}, {-2 * half + 1, 5},
                                           {-half, -200}, {half, 129},  {100, -300}};
    for (const auto& [lhs_offset, rhs_offset] : offsets) {
      const auto exact =
          ReferenceAccumulators(lhs.const_map(), rhs.const_map(), lhs_offset, rhs_offset);
      OwnedMatrix<std::int32_t> acc(shape.rows, shape.cols, Order::kColMajor, 0, &random);
      Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, lhs_offset, rhs_offset, params);
      OwnedMatrix<std::uint8_t> bytes(shape.rows, shape.cols, Order::kColMajor, 0, &random);
      GemmWithOutputPipeline(&context, lhs.const_map(), rhs.const_map(), &bytes.map, lhs_offset,
                             rhs_offset, pipeline, params);
      OwnedMatrix<std::uint8_t> expected(shape.rows, shape.cols, Order::kColMajor, 0, &random);
      GemmWithOutputPipeline(&context, lhs.const_map(), rhs.const_map(), &expected.map, lhs_offset,
                             rhs_offset, pipeline);
      for (int r = 0; r < shape.rows; ++r) {
        for (int c = 0; c < shape.cols; ++c) {
          ASSERT_EQ(acc.map(r, c), exact[r * shape.cols + c])
              << bits << " bits, offsets " << lhs_offset << ", " << rhs_offset;
          ASSERT_EQ(bytes.map(r, c), expected.map(r, c))
              << bits << " bits, offsets " << lhs_offset << ", " << rhs_offset;
        }
      }
    }
  };
  for (const int bits : {2, 4, 7}) {
    for (const Shape& shape : {Shape{37, 130, 45}, Shape{45, 130, 37}, Shape{3, 130, 45}}) {
      check(std::uint8_t{}, shape, bits);
      check(std::int8_t{}, shape, bits);
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, DeclaredRangeTest, testing::ValuesIn(PathSettings({1, 3})),
                         PathSettingName);

// Prepacked weights declared 4-bit, which AVX-512 VNNI, AVX2 and NEON with SDOT store two to a
// byte: multiplied as they are by a short lhs, and unfolded chunk by chunk for one of more rows
// than the kernel's unfold_above_rows where it has one.
TEST_P(DeclaredRangeTest, FourBitWeightsForShortAndTallLhs) {
  Context context;
  Configure(&context, GetParam());
  std::mt19937 random(13);
  const int folded_rows =
      internal::GetPrepackedRhsKernelImplementation(context.ResolvedKernel(), 8, 4)
          .unfold_above_rows;
  for (int rows : {1, 2, 8, folded_rows, folded_rows + 1, 70, 97}) {
    if (rows == 0) continue;
    const Shape shape{rows, 77, 70};
    OwnedMatrix<std::uint8_t> lhs(shape.rows, shape.depth, Order::kRowMajor, 0, &random);
    OwnedMatrix<std::int8_t> rhs(shape.depth, shape.cols, Order::kColMajor, 0, &random);
    FillDeclared(&lhs, 8, &random);
    FillDeclared(&rhs, 4, &random);
    const BitDepthParams params{8, 4, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
    const auto exact = ReferenceAccumulators(lhs.const_map(), rhs.const_map(), -100, 5);
    const PrepackedRhs prepacked(&context, rhs.const_map(), params);
    OwnedMatrix<std::int32_t> acc(shape.rows, shape.cols, Order::kRowMajor, 0, &random);
    Gemm(&context, lhs.const_map(), prepacked, &acc.map, -100, 5, params);
    for (int r = 0; r < shape.rows; ++r) {
      for (int c = 0; c < shape.cols; ++c) {
        ASSERT_EQ(acc.map(r, c), exact[r * shape.cols + c])
            << rows << " rows (" << r << ", " << c << ")";
      }
    }
  }
}

// Puts a value just outside [min, max] at (d, c) of `rhs` and (c, d) of `tall` (the same values as
// a tall lhs), expects run_rhs (the GEMM of `rhs`) to name it as the rhs's and run_tall (that of
// `tall`) as the lhs's, each leaving its result (result_data, tall_data: the same vector, or two)
// at kSentinel, and puts the values back.
constexpr std::int32_t kSentinel = 0x5a5a5a5a;
template <typename Scalar, typename RunRhs, typename RunTall>
void ExpectValueOutsideNamed(OwnedMatrix<Scalar>* rhs, OwnedMatrix<Scalar>* tall, int d, int c,
                             int min, int max, std::vector<std::int32_t>* result_data,
                             std::vector<std::int32_t>* tall_data, const RunRhs& run_rhs,
                             const RunTall& run_tall) {
  Scalar& entry = rhs->map(d, c);
  const Scalar kept = entry;
  const int outside = (d + c) % 2 == 0 || min == 0 ? max + 1 : min - 1;
  entry = static_cast<Scalar>(outside);
  tall->map(c, d) = entry;
  std::fill(result_data->begin(), result_data->end(), kSentinel);
  ExpectError(run_rhs, "rhs",
              "holds " + std::to_string(outside) + " at (" + std::to_string(d) + ", " +
                  std::to_string(c) + ")");
  for (std::int32_t written : *result_data) ASSERT_EQ(written, kSentinel);
  std::fill(tall_data->begin(), tall_data->end(), kSentinel);
  ExpectError(run_tall, "lhs",
              "holds " + std::to_string(outside) + " at (" + std::to_string(c) + ", " +
                  std::to_string(d) + ")");
  for (std::int32_t written : *tall_data) ASSERT_EQ(written, kSentinel);
  entry = kept;
  tall->map(c, d) = kept;
}

// A short lhs's declared rhs is checked as the direct product reads it (one block, written only
// if the check passes): every value at the edges of the range is accepted and exact, and one
// outside it anywhere (first and last columns, the last column group's tail, the last depth
// value) is reported with its position, the result untouched. Padding outside the matrix holds
// values outside the range, which the check must not read. The transposed case (a column-major
// result with more rows than columns) checks the lhs this way. The short operand's offset either
// needs the other's column sums (-3) or cancels (-128, a uint8 operand packed as int8), where the
// product sums no columns and checks all the same.
template <typename RhsScalar>
void CheckShortLhsRanges(Context* context) {
  std::mt19937 random(17);
  for (const auto& [bits, short_offset] :
       {std::pair<int, int>{2, -3}, {7, -3}, {2, -128}, {7, -128}}) {
    const int min = std::is_signed<RhsScalar>::value ? -(1 << (bits - 1)) : 0;
    const int max = std::is_signed<RhsScalar>::value ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    const BitDepthParams params{8, bits, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
    // Up to 8 rows at any depth, and more rows for deep products (direct_rhs_deep_depth), which
    // the AVX-512 VNNI product takes 8 rows and 16 columns at a time.
    std::vector<std::pair<int, int>> rows_and_depths = {{12, 1030}, {16, 1024}};
    for (int rows : {1, 3, 5, 8}) {
      for (int depth : {1, 70, 200}) rows_and_depths.push_back({rows, depth});
    }
    for (const std::pair<int, int>& rows_and_depth : rows_and_depths) {
      const int rows = rows_and_depth.first, depth = rows_and_depth.second;
      for (int cols : {1, 13, 37}) {
        OwnedMatrix<std::uint8_t> lhs(rows, depth, Order::kRowMajor, 0, &random);
        OwnedMatrix<RhsScalar> rhs(depth, cols, Order::kColMajor, 3, &random);
        std::uniform_int_distribution<int> value(min, max);
        for (int c = 0; c < cols; ++c) {
          for (int d = 0; d < depth; ++d) {
            rhs.storage[c * rhs.map.stride() + d] = static_cast<RhsScalar>(value(random));
          }
          // The padding, outside the range.
          for (int d = depth; d < rhs.map.stride(); ++d) {
            rhs.storage[c * rhs.map.stride() + d] = static_cast<RhsScalar>(max + 1);
          }
        }
        rhs.storage[0] = static_cast<RhsScalar>(min);
        rhs.storage[(cols - 1) * rhs.map.stride() + depth - 1] = static_cast<RhsScalar>(max);
        const auto exact =
            ReferenceAccumulators(lhs.const_map(), rhs.const_map(), short_offset, 17);
        std::vector<std::int32_t> result_data(rows * cols, kSentinel);
        MatrixMap<std::int32_t> result(result_data.data(), rows, cols, Order::kRowMajor);
        Gemm(context, lhs.const_map(), rhs.const_map(), &result, short_offset, 17, params);
        for (int r = 0; r < rows; ++r) {
          for (int c = 0; c < cols; ++c) {
            ASSERT_EQ(result(r, c), exact[r * cols + c])
                << rows << "x" << depth << "x" << cols << ", " << bits << " bits, offset "
                << short_offset;
          }
        }
        // Transposed: the same values as an lhs, against a short rhs, to a column-major result.
        OwnedMatrix<RhsScalar> tall(cols, depth, Order::kRowMajor, 0, &random);
        for (int i = 0; i < cols; ++i) {
          for (int k = 0; k < depth; ++k) tall.map(i, k) = rhs.map(k, i);
        }
        OwnedMatrix<std::uint8_t> short_rhs(depth, rows, Order::kColMajor, 0, &random);
        MatrixMap<std::int32_t> tall_result(result_data.data(), cols, rows, Order::kColMajor);
        const BitDepthParams tall_params{bits, 8, BitDepthRounding::kAuto, 0,
                                         BitDepthMode::kDeclaredRange};
        const auto tall_exact =
            ReferenceAccumulators(tall.const_map(), short_rhs.const_map(), 17, short_offset);
        Gemm(context, tall.const_map(), short_rhs.const_map(), &tall_result, 17, short_offset,
             tall_params);
        for (int i = 0; i < cols; ++i) {
          for (int r = 0; r < rows; ++r) {
            ASSERT_EQ(tall_result(i, r), tall_exact[i * rows + r])
                << "transposed " << rows << "x" << depth << "x" << cols << ", " << bits << " bits";
          }
        }
        for (const auto& [d, c] : {std::pair<int, int>{0, 0},
                                   {depth - 1, cols - 1},
                                   {depth / 2, cols / 2},
                                   {depth - 1, cols - cols % 4}}) {
          if (c >= cols) continue;
          ExpectValueOutsideNamed(
              &rhs, &tall, d, c, min, max, &result_data, &result_data,
              [&] {
                Gemm(context, lhs.const_map(), rhs.const_map(), &result, short_offset, 17, params);
              },
              [&] {
                Gemm(context, tall.const_map(), short_rhs.const_map(), &tall_result, 17,
                     short_offset, tall_params);
              });
        }
      }
    }
  }
}

TEST_P(DeclaredRangeTest, ShortLhsRhsCheckedAsTheProductReadsIt) {
  Context context;
  Configure(&context, GetParam());
  CheckShortLhsRanges<std::uint8_t>(&context);
  CheckShortLhsRanges<std::int8_t>(&context);
}

// Operands that the GEMM packs whole before it writes a block are checked as they are packed: an
// rhs (several row parts, from threads or tiny blocks; or a single row part, whose declared rhs is
// packed whole rather than block by block) and the lhs of a single row part on one thread. A
// value outside the range in the first or last column, in a last partial panel, mid-matrix or in
// a whole panel's last depth value (past the packers' whole 64-value steps) is reported with its
// position and the result left untouched, for the rhs, for the transposed case (a column-major
// result with more rows than columns, whose lhs the GEMM sees as its rhs) and for the same lhs to a
// row-major result. Data at the edges of the range is accepted and exact. The rhs stored in
// `rhs_order`, the tall lhs in the other (the same memory): column-major, each line's depth values
// adjacent; row-major, each depth value's lines adjacent, which packers read differently.
template <typename Scalar>
void CheckRangesOfOperandsPackedUpFront(Context* context, Order rhs_order) {
  std::mt19937 random(29);
  const int rows = 96, depth = 200, cols = 100;
  constexpr int kShortCols = 40;  // the transposed case's result columns: several row parts
  for (int bits : {2, 5}) {
    const int min = std::is_signed<Scalar>::value ? -(1 << (bits - 1)) : 0;
    const int max = std::is_signed<Scalar>::value ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    OwnedMatrix<std::uint8_t> lhs(rows, depth, Order::kRowMajor, 0, &random);
    OwnedMatrix<Scalar> rhs(depth, cols, rhs_order, 0, &random);
    FillDeclared(&rhs, bits, &random);
    // The same values as a tall lhs (cols rows) against a short rhs, to a column-major result.
    const Order tall_order = rhs_order == Order::kColMajor ? Order::kRowMajor : Order::kColMajor;
    OwnedMatrix<Scalar> tall(cols, depth, tall_order, 0, &random);
    for (int i = 0; i < cols; ++i) {
      for (int k = 0; k < depth; ++k) tall.map(i, k) = rhs.map(k, i);
    }
    OwnedMatrix<std::uint8_t> short_rhs(depth, kShortCols, Order::kColMajor, 0, &random);
    const BitDepthParams params{8, bits, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
    const BitDepthParams tall_params{bits, 8, BitDepthRounding::kAuto, 0,
                                     BitDepthMode::kDeclaredRange};
    std::vector<std::int32_t> result_data(rows * cols, kSentinel);
    MatrixMap<std::int32_t> result(result_data.data(), rows, cols, Order::kRowMajor);
    std::vector<std::int32_t> tall_data(cols * kShortCols, kSentinel);
    MatrixMap<std::int32_t> tall_result(tall_data.data(), cols, kShortCols, Order::kColMajor);
    // And to a row-major result, where the tall lhs is the GEMM's own lhs: on one thread a single
    // row part, packed whole before the first block.
    std::vector<std::int32_t> tall_row_data(cols * kShortCols, kSentinel);
    MatrixMap<std::int32_t> tall_row_result(tall_row_data.data(), cols, kShortCols,
                                            Order::kRowMajor);
    const auto exact = ReferenceAccumulators(lhs.const_map(), rhs.const_map(), -3, 17);
    Gemm(context, lhs.const_map(), rhs.const_map(), &result, -3, 17, params);
    for (int i = 0; i < rows * cols; ++i) ASSERT_EQ(result_data[i], exact[i]) << bits << " bits";
    const auto tall_exact = ReferenceAccumulators(tall.const_map(), short_rhs.const_map(), 17, -3);
    Gemm(context, tall.const_map(), short_rhs.const_map(), &tall_result, 17, -3, tall_params);
    Gemm(context, tall.const_map(), short_rhs.const_map(), &tall_row_result, 17, -3, tall_params);
    for (int i = 0; i < cols; ++i) {
      for (int j = 0; j < kShortCols; ++j) {
        ASSERT_EQ(tall_result(i, j), tall_exact[i * kShortCols + j]);
        ASSERT_EQ(tall_row_result(i, j), tall_exact[i * kShortCols + j]);
      }
    }
    const auto run_rhs = [&] {
      Gemm(context, lhs.const_map(), rhs.const_map(), &result, -3, 17, params);
    };
    for (const auto& [d, c] : {std::pair<int, int>{0, 0},
                               {depth - 1, cols - 1},
                               {depth / 2, cols / 2},
                               {7, cols - 3},
                               {depth - 1, 1}}) {
      ExpectValueOutsideNamed(&rhs, &tall, d, c, min, max, &result_data, &tall_data, run_rhs, [&] {
        Gemm(context, tall.const_map(), short_rhs.const_map(), &tall_result, 17, -3, tall_params);
      });
      ExpectValueOutsideNamed(&rhs, &tall, d, c, min, max, &result_data, &tall_row_data, run_rhs,
                              [&] {
                                Gemm(context, tall.const_map(), short_rhs.const_map(),
                                     &tall_row_result, 17, -3, tall_params);
                              });
    }
  }
}

TEST_P(DeclaredRangeTest, OperandsPackedBeforeAnyOutputCheckedAsTheyArePacked) {
  Context context;
  Configure(&context, GetParam());
  for (const Order rhs_order : {Order::kColMajor, Order::kRowMajor}) {
    CheckRangesOfOperandsPackedUpFront<std::uint8_t>(&context, rhs_order);
    CheckRangesOfOperandsPackedUpFront<std::int8_t>(&context, rhs_order);
  }
}

// Where the bit-serial kernel and the other are a close call (GetTimedAlternativeImplementation),
// a context's first GEMMs of a shape run the rule's kernel and then the other, both exact,
// declared and requantized alike, after which the choice has both times and runs the faster
// without a try. Which kernel ran shows in the scratch it took (bit planes against bytes or int16
// pairs): each GEMM runs on a fresh context that carries the choice so far.
TEST(BitDepthTest, TimedKernelChoiceRunsBothKernelsExactly) {
  struct TimedCase {
    int lhs_bits, rhs_bits, uses;
  };
  int timed_cases = 0;
  for (const Kernel kernel : AvailableKernels()) {
    for (const TimedCase& timed : {TimedCase{1, 1, 16}, TimedCase{1, 1, 256}, TimedCase{1, 2, 64},
                                   TimedCase{2, 1, 256}, TimedCase{2, 2, 64}}) {
      if (internal::GetTimedAlternativeImplementation(kernel, timed.lhs_bits, timed.rhs_bits,
                                                      timed.uses) == nullptr) {
        continue;
      }
      ++timed_cases;
      SCOPED_TRACE(std::string(KernelName(kernel)) + " L" + std::to_string(timed.lhs_bits) + "R" +
                   std::to_string(timed.rhs_bits) + ", " + std::to_string(timed.uses) + " uses");
      std::mt19937 random(23);
      const int rows = timed.uses, cols = timed.uses + 4;
      // Enough work for the driver to time the kernel.
      const int depth = static_cast<int>(
          std::max<std::int64_t>(70, internal::kTimedKernelMinWork / (rows * cols) + 1));
      OwnedMatrix<std::uint8_t> lhs(rows, depth, Order::kRowMajor, 0, &random);
      OwnedMatrix<std::uint8_t> rhs(depth, cols, Order::kColMajor, 0, &random);
      FillDeclared(&lhs, timed.lhs_bits, &random);
      FillDeclared(&rhs, timed.rhs_bits, &random);
      const auto exact = ReferenceAccumulators(lhs.const_map(), rhs.const_map(), -1, 2);
      for (const BitDepthMode mode : {BitDepthMode::kDeclaredRange, BitDepthMode::kRequantize}) {
        const BitDepthParams params{timed.lhs_bits, timed.rhs_bits, BitDepthRounding::kXorshift, 3,
                                    mode};
        // The rule's kernel alone, for the requantized GEMM's bits and the rule's scratch.
        Context fixed;
        fixed.set_kernel(kernel);
        fixed.state().DisableMeasuredChoices();
        OwnedMatrix<std::int32_t> expected(rows, cols, Order::kRowMajor, 0, &random);
        Gemm(&fixed, lhs.const_map(), rhs.const_map(), &expected.map, -1, 2, params);
        if (mode == BitDepthMode::kDeclaredRange) {
          for (int i = 0; i < rows * cols; ++i) ASSERT_EQ(expected.storage[i], exact[i]) << i;
        }
        const std::uint32_t variant = internal::KernelChoiceVariant(
            timed.lhs_bits, timed.rhs_bits, mode == BitDepthMode::kRequantize);
        internal::MeasuredChoice choice;
        for (const bool rule : {true, false}) {
          for (int i = 0; i < internal::MeasuredChoice::kTryRuns; ++i) {
            const internal::MeasuredChoice::Decision decision =
                choice.Choose(rows, cols, depth, variant);
            ASSERT_TRUE(decision.trial);
            ASSERT_EQ(decision.preferred, rule);
            Context context;
            context.set_kernel(kernel);
            context.state().kernel_choice = choice;
            OwnedMatrix<std::int32_t> acc(rows, cols, Order::kRowMajor, 0, &random);
            Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, -1, 2, params);
            for (int j = 0; j < rows * cols; ++j) {
              ASSERT_EQ(acc.storage[j], expected.storage[j]) << j << (rule ? " rule" : " other");
            }
            EXPECT_EQ(context.state().ScratchBytes() == fixed.state().ScratchBytes(), rule);
            choice = context.state().kernel_choice;
          }
        }
        EXPECT_FALSE(choice.Choose(rows, cols, depth, variant).trial);
      }
    }
  }
  if (timed_cases == 0) GTEST_SKIP() << "no kernel on this CPU times its bit-serial choice";
}

// Every rejected BitDepthParams, declared range and prepacked mismatch, with the result
// untouched.
class BitDepthErrorTest : public testing::Test {
 protected:
  static constexpr std::int32_t kSentinel = 0x5a5a5a5a;
  BitDepthErrorTest()
      : lhs_data_(4 * 6, 3),
        rhs_data_(6 * 5, 1),
        result_data_(4 * 5, kSentinel),
        lhs_(lhs_data_.data(), 4, 6, Order::kRowMajor),
        rhs_(rhs_data_.data(), 6, 5, Order::kColMajor),
        result_(result_data_.data(), 4, 5, Order::kRowMajor) {}

  void ExpectRejected(const BitDepthParams& params, const std::string& argument,
                      const std::string& rule) {
    ExpectError([&] { Gemm(&context_, lhs_, rhs_, &result_, 0, 0, params); }, argument, rule);
    for (std::int32_t entry : result_data_) ASSERT_EQ(entry, kSentinel) << "result was written";
  }

  Context context_;
  std::vector<std::uint8_t> lhs_data_;
  std::vector<std::int8_t> rhs_data_;
  std::vector<std::int32_t> result_data_;
  MatrixMap<const std::uint8_t> lhs_;
  MatrixMap<const std::int8_t> rhs_;
  MatrixMap<std::int32_t> result_;
};

TEST_F(BitDepthErrorTest, FieldsOutOfRange) {
  ExpectRejected(BitDepthParams{0, 8}, "bit_depth.lhs_bits", "must be in [1, 8], got 0");
  ExpectRejected(BitDepthParams{9, 8}, "bit_depth.lhs_bits", "must be in [1, 8], got 9");
  ExpectRejected(BitDepthParams{8, 0}, "bit_depth.rhs_bits", "must be in [1, 8], got 0");
  ExpectRejected(BitDepthParams{8, 9}, "bit_depth.rhs_bits", "must be in [1, 8], got 9");
  ExpectRejected(BitDepthParams{4, 4, static_cast<BitDepthRounding>(4)}, "bit_depth.rounding",
                 "must be BitDepthRounding::kNearest, kXorshift, kAddMod97 or kAuto, got 4");
  ExpectRejected(BitDepthParams{4, 4, static_cast<BitDepthRounding>(-1)}, "bit_depth.rounding",
                 "got -1");
  ExpectRejected(BitDepthParams{4, 4, BitDepthRounding::kAuto, 0, static_cast<BitDepthMode>(2)},
                 "bit_depth.mode", "must be BitDepthMode::kRequantize or kDeclaredRange, got 2");
  test::ExpectError(
      [&] {
        PrepackedRhs(&context_, rhs_, BitDepthParams{4, 0});
      },
      "bit_depth.rhs_bits", "got 0");
}

TEST_F(BitDepthErrorTest, DeclaredValuesOutsideTheirBitDepth) {
  const BitDepthParams two_bits{2, 2, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
  lhs_data_[2 * 6 + 5] = 4;
  ExpectRejected(two_bits, "lhs",
                 "holds 4 at (2, 5), outside [0, 3]: BitDepthMode::kDeclaredRange promises 2-bit "
                 "values (bit_depth.lhs_bits)");
  lhs_data_[2 * 6 + 5] = 3;
  rhs_data_[3 * 6 + 1] = -3;
  ExpectRejected(two_bits, "rhs", "holds -3 at (1, 3), outside [-2, 1]");
  rhs_data_[3 * 6 + 1] = -2;
  rhs_data_[0] = 2;
  ExpectRejected(two_bits, "rhs", "(bit_depth.rhs_bits)");
  test::ExpectError([&] { PrepackedRhs(&context_, rhs_, two_bits); }, "rhs", "holds 2 at (0, 0)");
  rhs_data_[0] = 1;
  // At the edges of the range the same data is accepted.
  Gemm(&context_, lhs_, rhs_, &result_, 0, 0, two_bits);
  EXPECT_EQ(result_(2, 3), 3 * (-2) + 5 * 3 * 1);
}

// The up-front check reads a contiguous operand as one run of bytes, in chains of 32-byte vectors
// and a tail: a value outside the range is found in every chain and in the tail, named with its
// position, and the result is left untouched.
TEST(BitDepthCheckTest, AValueOutsideTheRangeIsFoundAnywhereInALargeOperand) {
  Context context;
  std::mt19937 random(5);
  const int rows = 37, depth = 301, cols = 9;  // 11137 lhs bytes: 87 steps of 128 and a tail
  OwnedMatrix<std::uint8_t> lhs(rows, depth, Order::kRowMajor, 0, &random);
  OwnedMatrix<std::uint8_t> rhs(depth, cols, Order::kColMajor, 0, &random);
  FillDeclared(&lhs, 3, &random);
  FillDeclared(&rhs, 8, &random);
  const BitDepthParams params{3, 8, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
  OwnedMatrix<std::int32_t> acc(rows, cols, Order::kRowMajor, 0, &random);
  const std::vector<std::int32_t> untouched = acc.storage;
  for (const int index : {0, 31, 32, 63, 64, 95, 96, 127, 128, 5000, 11135, 11136}) {
    const std::uint8_t kept = lhs.storage[index];
    lhs.storage[index] = 8;
    test::ExpectError(
        [&] { Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, 0, 0, params); }, "lhs",
        "holds 8 at (" + std::to_string(index / depth) + ", " + std::to_string(index % depth) +
            "), outside [0, 7]");
    EXPECT_EQ(acc.storage, untouched) << index;
    lhs.storage[index] = kept;
  }
  Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, 0, 0, params);
  const auto exact = ReferenceAccumulators(lhs.const_map(), rhs.const_map(), 0, 0);
  for (int i = 0; i < rows * cols; ++i) ASSERT_EQ(acc.storage[i], exact[i]) << i;
}

TEST_F(BitDepthErrorTest, PrepackedRhsWithOtherParams) {
  const BitDepthParams params{7, 5, BitDepthRounding::kXorshift, 4, BitDepthMode::kRequantize};
  const PrepackedRhs narrow(&context_, rhs_, params);
  const PrepackedRhs plain(&context_, rhs_);
  const auto run = [&](const PrepackedRhs& rhs, const BitDepthParams& call) {
    ExpectError([&] { Gemm(&context_, lhs_, rhs, &result_, 0, 0, call); },
                call.rhs_bits != params.rhs_bits   ? "bit_depth.rhs_bits"
                : call.rounding != params.rounding ? "bit_depth.rounding"
                : call.seed != params.seed         ? "bit_depth.seed"
                                                   : "bit_depth.mode",
                "must equal the prepacked rhs's");
  };
  run(narrow, BitDepthParams{7, 6, BitDepthRounding::kXorshift, 4});
  run(narrow, BitDepthParams{7, 5, BitDepthRounding::kAddMod97, 4});
  run(narrow, BitDepthParams{7, 5, BitDepthRounding::kXorshift, 5});
  run(narrow, BitDepthParams{7, 5, BitDepthRounding::kXorshift, 4, BitDepthMode::kDeclaredRange});
  ExpectError([&] { Gemm(&context_, lhs_, narrow, &result_, 0, 0); }, "rhs",
              "was prepacked with BitDepthParams (7-bit lhs, 5-bit rhs, requantized with xorshift "
              "rounding, seed 4); pass the same BitDepthParams");
  ExpectError([&] { Gemm(&context_, lhs_, plain, &result_, 0, 0, params); }, "rhs",
              "was prepacked without BitDepthParams");
  for (std::int32_t entry : result_data_) ASSERT_EQ(entry, kSentinel) << "result was written";
  // lhs_bits may differ where the kernel it selects reads the same rhs layout: any lhs against
  // a 5-bit rhs; but against an 8-bit rhs, an 8-bit lhs needs the ordinary layout.
  Gemm(&context_, lhs_, narrow, &result_, 0, 0,
       BitDepthParams{3, 5, BitDepthRounding::kXorshift, 4});
  const BitDepthParams eight_bit_rhs{7, 8, BitDepthRounding::kNearest};
  const PrepackedRhs wide(&context_, rhs_, eight_bit_rhs);
  Gemm(&context_, lhs_, wide, &result_, 0, 0, BitDepthParams{2, 8, BitDepthRounding::kNearest});
  const bool narrow_kernels = !internal::SameRhsLayout(
      internal::GetPrepackedRhsKernelImplementation(context_.ResolvedKernel(), 7, 8).format,
      internal::GetPrepackedRhsKernelImplementation(context_.ResolvedKernel(), 8, 8).format);
  if (narrow_kernels) {
    ExpectError(
        [&] {
          Gemm(&context_, lhs_, wide, &result_, 0, 0,
               BitDepthParams{8, 8, BitDepthRounding::kNearest});
        },
        "bit_depth.lhs_bits", "selects a kernel with another rhs layout");
  }
}

TEST_F(BitDepthErrorTest, OrdinaryChecksStillComeFirst) {
  const MatrixMap<const std::uint8_t> short_lhs(lhs_data_.data(), 4, 5, Order::kRowMajor);
  ExpectError(
      [&] {
        Gemm(&context_, short_lhs, rhs_, &result_, 0, 0, BitDepthParams{4, 4});
      },
      "rhs.rows", "must equal lhs.cols");
  ExpectError(
      [&] { Gemm(static_cast<Context*>(nullptr), lhs_, rhs_, &result_, 0, 0, BitDepthParams{}); },
      "context", "must not be null");
}

}  // namespace
}  // namespace test
}  // namespace lowbit
