// Every GEMM entry point against the plain 64-bit triple loop, bit for bit: all shapes 1..24,
// odd and prime shapes to ~300, large ones, every storage order, padded strides, scalar and
// per-channel offsets over their full range, every kernel, thread count and blocking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/test_util.h"

#if defined(__x86_64__)
#include "lowbit/internal/kernel/amx_tile_config.h"
#endif

namespace lowbit {
namespace test {
namespace {

// One GEMM problem: shape, storage, operand types and offsets, all derived from `seed`.
struct Problem {
  Shape shape;
  Order lhs_order;
  Order rhs_order;
  Order result_order;
  int padding;
  bool lhs_signed;
  bool rhs_signed;
  bool per_channel_offsets;
  std::uint32_t seed;
  // Offsets that cancel the shift each operand is packed with where a kernel packs both operands
  // as bytes (-128 for uint8 values, 0 for int8 ones), instead of random ones.
  bool cancelling_offsets = false;
};

Order OrderBit(std::uint32_t bits, int bit) {
  return (bits >> bit) & 1 ? Order::kColMajor : Order::kRowMajor;
}

// Storage orders, padding, types and offset kinds cycle with the index, so that a sweep
// covers every combination many times over.
Problem MakeProblem(Shape shape, std::uint32_t index) {
  const std::uint32_t bits = index * 2654435761U >> 7;
  return Problem{shape,
                 OrderBit(index, 0),
                 OrderBit(index, 1),
                 OrderBit(index, 2),
                 (bits >> 3) % 3 == 0 ? 3 : 0,
                 ((bits >> 5) & 1) != 0,
                 ((bits >> 6) & 1) != 0,
                 ((bits >> 7) & 1) != 0,
                 index,
                 false};
}

std::vector<std::int32_t> RandomOffsets(int count, std::mt19937& random) {
  std::uniform_int_distribution<int> offset(-255, 255);
  std::vector<std::int32_t> offsets(count);
  for (auto& value : offsets) value = offset(random);
  return offsets;
}

// Runs `problem` through GemmWithOutputPipeline with `pipeline` and compares every result entry
// with the pipeline applied to the 64-bit reference accumulator. The result's padding must
// keep its old contents.
template <typename Lhs, typename Rhs, typename Pipeline>
void CheckProblem(Context* context, const Problem& problem, const Pipeline& pipeline) {
  using Result = typename meta::PipelineOutput<Pipeline>::type;
  std::mt19937 random(problem.seed);
  const Shape& shape = problem.shape;
  OwnedMatrix<Lhs> lhs(shape.rows, shape.depth, problem.lhs_order, problem.padding, &random);
  OwnedMatrix<Rhs> rhs(shape.depth, shape.cols, problem.rhs_order, problem.padding, &random);
  OwnedMatrix<Result> result(shape.rows, shape.cols, problem.result_order, problem.padding,
                             &random);
  const std::vector<Result> result_before = result.storage;
  std::vector<std::int32_t> lhs_offsets = RandomOffsets(shape.rows, random);
  std::vector<std::int32_t> rhs_offsets = RandomOffsets(shape.cols, random);
  if (problem.cancelling_offsets) {
    lhs_offsets.assign(shape.rows, std::is_signed<Lhs>::value ? 0 : -128);
    rhs_offsets.assign(shape.cols, std::is_signed<Rhs>::value ? 0 : -128);
  }
  const Offsets lhs_offset =
      problem.per_channel_offsets
          ? Offsets(VectorMap<const std::int32_t>(lhs_offsets.data(), shape.rows))
          : Offsets(lhs_offsets.empty() ? 0 : lhs_offsets[0]);
  const Offsets rhs_offset =
      problem.per_channel_offsets
          ? Offsets(VectorMap<const std::int32_t>(rhs_offsets.data(), shape.cols))
          : Offsets(rhs_offsets.empty() ? 0 : rhs_offsets[0]);

  GemmWithOutputPipeline(context, lhs.const_map(), rhs.const_map(), &result.map, lhs_offset,
                         rhs_offset, pipeline);

  const std::vector<std::int64_t> expected_acc =
      ReferenceAccumulators(lhs.const_map(), rhs.const_map(), lhs_offset, rhs_offset);
  std::vector<bool> is_entry(result.storage.size(), false);
  for (int r = 0; r < shape.rows; ++r) {
    for (int c = 0; c < shape.cols; ++c) {
      const std::int64_t acc = expected_acc[static_cast<std::size_t>(r) * shape.cols + c];
      ASSERT_EQ(acc, static_cast<std::int32_t>(acc)) << "reference overflow: a test bug";
      const Result expected = meta::EvalPipeline(pipeline, static_cast<std::int32_t>(acc), r, c);
      ASSERT_EQ(result.map(r, c), expected)
          << "entry (" << r << ", " << c << ") of " << shape.rows << "x" << shape.depth << "x"
          << shape.cols << ", seed " << problem.seed;
      is_entry[result.map.offset_of(r, c)] = true;
    }
  }
  for (std::size_t i = 0; i < result.storage.size(); ++i) {
    if (!is_entry[i]) {
      ASSERT_EQ(result.storage[i], result_before[i]) << "padding " << i << " written";
    }
  }
}

template <typename Pipeline>
void CheckProblemAnyTypes(Context* context, const Problem& problem, const Pipeline& pipeline) {
  if (problem.lhs_signed && problem.rhs_signed) {
    CheckProblem<std::int8_t, std::int8_t>(context, problem, pipeline);
  } else if (problem.lhs_signed) {
    CheckProblem<std::int8_t, std::uint8_t>(context, problem, pipeline);
  } else if (problem.rhs_signed) {
    CheckProblem<std::uint8_t, std::int8_t>(context, problem, pipeline);
  } else {
    CheckProblem<std::uint8_t, std::uint8_t>(context, problem, pipeline);
  }
}

template <typename... Pipelines>
void CheckProblemWithEach(Context* context, const Problem& problem, const Pipelines&... pipelines) {
  (CheckProblemAnyTypes(context, problem, pipelines), ...);
}

class GemmTest : public testing::TestWithParam<PathSetting> {
 protected:
  void SetUp() override { Configure(&context_, GetParam()); }
  Context context_;
};

// Small shapes: one thread suffices, they fit one block unless the blocks are tiny.
class SmallShapeTest : public GemmTest {};

TEST_P(SmallShapeTest, AllShapesUpTo24MatchReference) {
  std::uint32_t index = 0;
  for (int rows = 1; rows <= 24; ++rows) {
    for (int depth = 1; depth <= 24; ++depth) {
      for (int cols = 1; cols <= 24; ++cols) {
        CheckProblemAnyTypes(&context_, MakeProblem({rows, depth, cols}, index++), std::tuple<>());
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(SmallShapeTest, EveryStorageOrderAndPaddingMatchReference) {
  for (const Shape shape : {Shape{1, 1, 1}, Shape{5, 3, 7}, Shape{8, 16, 4}, Shape{17, 23, 19}}) {
    for (std::uint32_t orders = 0; orders < 8; ++orders) {
      for (int padding : {0, 1, 5}) {
        for (std::uint32_t types = 0; types < 8; ++types) {
          const Problem problem{shape,
                                OrderBit(orders, 0),
                                OrderBit(orders, 1),
                                OrderBit(orders, 2),
                                padding,
                                (types & 1) != 0,
                                (types & 2) != 0,
                                (types & 4) != 0,
                                orders * 97 + types * 13 + static_cast<std::uint32_t>(padding)};
          CheckProblemAnyTypes(&context_, problem, std::tuple<>());
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, SmallShapeTest, testing::ValuesIn(PathSettings({1})),
                         PathSettingName);

class LargeShapeTest : public GemmTest {};

TEST_P(LargeShapeTest, OddAndPrimeShapesMatchReference) {
  const int sizes[] = {1, 2, 3, 5, 7, 13, 31, 61, 127, 131, 293};
  constexpr int kCount = sizeof(sizes) / sizeof(sizes[0]);
  std::uint32_t index = 0;
  for (int i = 0; i < kCount; ++i) {
    for (int j = 0; j < kCount; ++j) {
      // The depth walks the list against the other two so every size meets every other.
      const Shape shape{sizes[i], sizes[(i + j) % kCount], sizes[j]};
      CheckProblemAnyTypes(&context_, MakeProblem(shape, index++), std::tuple<>());
      if (HasFatalFailure()) return;
    }
  }
}

// An lhs of up to 8 rows (and one more) against an rhs stored column-major, each column's depth
// values adjacent: where the kernel has a direct product (DirectRhsFunction) it reads the rhs
// unpacked, 64 depth values a step, so the depths cross and straddle whole steps.
TEST_P(LargeShapeTest, ShortLhsAgainstAdjacentRhsColumnsMatchReference) {
  std::uint32_t index = 0;
  for (int rows = 1; rows <= 9; ++rows) {
    for (int depth : {1, 63, 64, 65, 200}) {
      for (int cols : {1, 3, 4, 7, 33}) {
        Problem problem = MakeProblem({rows, depth, cols}, index++);
        problem.rhs_order = Order::kColMajor;
        CheckProblemAnyTypes(&context_, problem, std::tuple<>());
        if (HasFatalFailure()) return;
      }
    }
  }
}

// 9 to 16 rows against rhs columns of adjacent depth values in deep products, which the AVX-512
// VNNI kernel's direct product takes 8 rows and 16 columns at a time (direct_rhs_deep_depth), and
// 17 rows, which it packs: groups and chunks in part, every operand type and offset kind.
TEST_P(LargeShapeTest, DeepLhsOfUpTo16RowsAgainstAdjacentRhsColumnsMatchReference) {
  std::uint32_t index = 0;
  for (int rows : {9, 12, 15, 16, 17}) {
    for (int depth : {1024, 1091}) {
      for (int cols : {1, 16, 17, 40}) {
        Problem problem = MakeProblem({rows, depth, cols}, index++);
        problem.rhs_order = Order::kColMajor;
        CheckProblemAnyTypes(&context_, problem, std::tuple<>());
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The direct product walks the rhs columns along their 64-byte lines, and the lhs copy along
// the same offsets: columns that start at each offset within a line, with strides of whole
// lines (every column at the same offset) and not, against 1 to 8 rows. The lhs offsets cancel
// the uint8 lhs's centring (-128) or are zero for an int8 lhs in half the cases, where the
// product skips the column sums; result entries past those written must stay untouched.
TEST_P(LargeShapeTest, ShortLhsAgainstRhsColumnsAtEveryLineOffsetMatchReference) {
  std::mt19937 random(41);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uint32_t index = 0;
  for (int lead = 0; lead < 64; lead += 3) {
    for (int depth : {1, 40, 64, 100, 192}) {
      for (int stride : {depth, 256}) {
        const int rows = 1 + static_cast<int>(index % 8);
        const int cols = 1 + static_cast<int>(index * 7 % 9);
        const bool lhs_signed = index % 3 == 0;
        const bool centred = index % 2 == 0;
        ++index;
        // Storage on a 64-byte boundary, so that the columns start `lead` bytes into a line.
        std::vector<std::uint8_t> storage(64 + lead + static_cast<std::size_t>(stride) * cols);
        for (auto& value : storage) value = static_cast<std::uint8_t>(byte(random));
        const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
        const std::uint8_t* first = storage.data() + (64 - base % 64) % 64 + lead;
        const MatrixMap<const std::uint8_t> rhs(first, depth, cols, Order::kColMajor, stride);
        const std::int32_t lhs_offset = centred ? (lhs_signed ? 0 : -128) : 77;
        const std::int32_t rhs_offset = -3;
        std::vector<std::int32_t> result(static_cast<std::size_t>(rows) * cols + 1, 12345);
        MatrixMap<std::int32_t> result_map(result.data(), rows, cols, Order::kRowMajor);
        std::vector<std::int64_t> expected;
        if (lhs_signed) {
          OwnedMatrix<std::int8_t> lhs(rows, depth, Order::kRowMajor, 0, &random);
          Gemm(&context_, lhs.const_map(), rhs, &result_map, lhs_offset, rhs_offset);
          expected = ReferenceAccumulators(lhs.const_map(), rhs, lhs_offset, rhs_offset);
        } else {
          OwnedMatrix<std::uint8_t> lhs(rows, depth, Order::kRowMajor, 0, &random);
          Gemm(&context_, lhs.const_map(), rhs, &result_map, lhs_offset, rhs_offset);
          expected = ReferenceAccumulators(lhs.const_map(), rhs, lhs_offset, rhs_offset);
        }
        for (std::size_t i = 0; i < expected.size(); ++i) {
          ASSERT_EQ(result[i], expected[i])
              << "entry " << i << " of " << rows << "x" << depth << "x" << cols << ", lead " << lead
              << ", stride " << stride << ", lhs offset " << lhs_offset;
        }
        ASSERT_EQ(result.back(), 12345) << "written past the result";
      }
    }
  }
}

TEST_P(LargeShapeTest, LargeShapesMatchReference) {
  std::uint32_t index = 11;
  for (const Shape shape : {Shape{256, 256, 256}, Shape{1031, 1237, 17}, Shape{67, 1500, 389}}) {
    CheckProblemAnyTypes(&context_, MakeProblem(shape, index++), std::tuple<>());
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, LargeShapeTest, testing::ValuesIn(PathSettings({1, 2, 3})),
                         PathSettingName);

class PipelineTest : public GemmTest {};

// Multi-stage pipelines into every result type, with per-channel parameters on both axes.
TEST_P(PipelineTest, PipelinesMatchStagesAppliedToReference) {
  const Shape shapes[] = {{1, 1, 1}, {7, 29, 13}, {33, 64, 5}, {61, 131, 67}};
  std::uint32_t index = 3;
  for (const Shape& shape : shapes) {
    std::mt19937 random(index);
    std::uniform_int_distribution<std::int32_t> bias_value(-100000, 100000);
    std::uniform_int_distribution<std::int32_t> multiplier(1 << 28, 0x7fffffff);
    std::uniform_int_distribution<std::int32_t> exponent(-12, 2);
    std::vector<std::int32_t> row_bias(shape.rows), col_bias(shape.cols),
        row_multipliers(shape.rows), row_exponents(shape.rows), row_shifts(shape.rows),
        col_offsets(shape.cols), col_mults(shape.cols);
    for (auto& v : row_bias) v = bias_value(random);
    for (auto& v : col_bias) v = bias_value(random);
    for (auto& v : row_multipliers) v = multiplier(random);
    for (auto& v : row_exponents) v = exponent(random);
    for (int r = 0; r < shape.rows; ++r) row_shifts[r] = std::abs(row_exponents[r]);
    for (auto& v : col_offsets) v = bias_value(random);
    for (auto& v : col_mults) v = multiplier(random) >> 20;
    const VectorMap<const std::int32_t> row_bias_map(row_bias.data(), shape.rows);
    const VectorMap<const std::int32_t> col_bias_map(col_bias.data(), shape.cols);

    const auto to_uint8 =
        std::make_tuple(OutputStageBiasAddition{row_bias_map, ChannelAxis::kRow},
                        OutputStageQuantizeDownInt32ByFixedPoint{1518500250, 9, 128},
                        OutputStageSaturatingCastToUint8{});
    const auto to_int8 = std::make_tuple(
        OutputStageBiasAddition{col_bias_map, ChannelAxis::kCol},
        OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
            VectorMap<const std::int32_t>(row_multipliers.data(), shape.rows),
            VectorMap<const std::int32_t>(row_exponents.data(), shape.rows), -3, ChannelAxis::kRow},
        OutputStageClamp{-100, 90}, OutputStageSaturatingCastToInt8{});
    const auto to_int16 = std::make_tuple(
        OutputStageQuantizeDownInt32ToUint8ScalePerChannel{
            VectorMap<const std::int32_t>(col_offsets.data(), shape.cols),
            VectorMap<const std::int32_t>(col_mults.data(), shape.cols), 13, ChannelAxis::kCol},
        OutputStageSaturatingCastToInt16{});
    const auto activations =
        std::make_tuple(OutputStageShiftByPOT{-6, Rounding::kStochastic, 7},
                        OutputStageTanh{12, 300}, OutputStageSaturatingCastToInt16{});
    const auto logistic =
        std::make_tuple(OutputStageScaleInt32ByFixedPointAndExponent{1 << 30, -4, 0},
                        OutputStageLogistic{-20, 255}, OutputStageTruncatingCastToUint8{});
    const auto int32_result = std::make_tuple(
        OutputStageShiftByPOT{3, Rounding::kNearest, 0},
        OutputStageQuantizeDownInt32ByFixedPointPerChannel{
            VectorMap<const std::int32_t>(row_multipliers.data(), shape.rows),
            VectorMap<const std::int32_t>(row_shifts.data(), shape.rows), 0, ChannelAxis::kRow},
        OutputStageShiftByPOT{-2, Rounding::kNearest, 0});
    for (std::uint32_t variant = 0; variant < 8; ++variant) {
      CheckProblemWithEach(&context_, MakeProblem(shape, index++), to_uint8, to_int8, to_int16,
                           activations, logistic, int32_result);
      if (HasFatalFailure()) return;
    }
  }
}

// A QuantizeDown and the cast to 8 bits, with uniform offsets (ones that cancel the packing's
// shifts, and others, which leave terms along the lines): the AVX-512 VNNI kernel writes these
// results between its tiles' steps (LinesBetweenSteps), in the last depth slice, for result lines
// along the result's memory and, where a column-major result has fewer rows than columns, across
// it. Shapes with tiles short of 8 rows (down to a run of one line), two depth slices, blocks of
// 17 to 1000 columns, lines that end in part of a batch; scales that saturate both ends, the
// benchmarks' (whose float form sends about one batch in 8 to the exact arithmetic) and the
// widest window's; with a bias by rows or by columns; a scale per channel by rows or by columns.
TEST_P(PipelineTest, ResultsWrittenBetweenTileStepsMatchStagesAppliedToReference) {
  const Shape shapes[] = {{64, 64, 64},   {256, 100, 70}, {100, 256, 1000}, {192, 320, 33},
                          {128, 61, 64},  {512, 512, 9},  {40, 96, 50},     {300, 17, 64},
                          {32, 80, 1000}, {9, 70, 200}};
  const auto saturating = std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 8, 10},
                                          OutputStageSaturatingCastToUint8{});
  const auto benchmarks =
      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
                      OutputStageSaturatingCastToUint8{});
  const auto widest_window =
      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1518500250, 9, -3},
                      OutputStageSaturatingCastToInt8{});
  std::uint32_t index = 11;
  for (const Shape& shape : shapes) {
    // A layer's bias before the scale, by rows and by columns (across the written lines or along
    // them, whichever way the result runs).
    std::mt19937 random(index);
    std::uniform_int_distribution<std::int32_t> bias_value(-3000000, 3000000);
    std::vector<std::int32_t> row_bias(shape.rows), col_bias(shape.cols);
    for (auto& v : row_bias) v = bias_value(random);
    for (auto& v : col_bias) v = bias_value(random);
    const auto biased_by_rows = std::make_tuple(
        OutputStageBiasAddition{VectorMap<const std::int32_t>(row_bias.data(), shape.rows),
                                ChannelAxis::kRow},
        OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
        OutputStageSaturatingCastToUint8{});
    const auto biased_by_cols = std::make_tuple(
        OutputStageBiasAddition{VectorMap<const std::int32_t>(col_bias.data(), shape.cols),
                                ChannelAxis::kCol},
        OutputStageQuantizeDownInt32ByFixedPoint{1518500250, 9, -3},
        OutputStageSaturatingCastToInt8{});
    // A scale per channel by rows and by columns (across the written lines or along them), with
    // shifts below 8, whose lines take the exact arithmetic throughout.
    std::uniform_int_distribution<std::int32_t> multiplier_value(
        1 << 29, std::numeric_limits<std::int32_t>::max());
    std::uniform_int_distribution<std::int32_t> shift_value(6, 16);
    std::vector<std::int32_t> row_multipliers(shape.rows), row_shifts(shape.rows);
    std::vector<std::int32_t> col_multipliers(shape.cols), col_shifts(shape.cols);
    for (auto& v : row_multipliers) v = multiplier_value(random);
    for (auto& v : row_shifts) v = shift_value(random);
    for (auto& v : col_multipliers) v = multiplier_value(random);
    for (auto& v : col_shifts) v = shift_value(random);
    const auto scaled_by_rows = std::make_tuple(
        OutputStageQuantizeDownInt32ByFixedPointPerChannel{
            VectorMap<const std::int32_t>(row_multipliers.data(), shape.rows),
            VectorMap<const std::int32_t>(row_shifts.data(), shape.rows), 128, ChannelAxis::kRow},
        OutputStageSaturatingCastToUint8{});
    const auto scaled_by_cols = std::make_tuple(
        OutputStageBiasAddition{VectorMap<const std::int32_t>(col_bias.data(), shape.cols),
                                ChannelAxis::kCol},
        OutputStageQuantizeDownInt32ByFixedPointPerChannel{
            VectorMap<const std::int32_t>(col_multipliers.data(), shape.cols),
            VectorMap<const std::int32_t>(col_shifts.data(), shape.cols), -3, ChannelAxis::kCol},
        OutputStageSaturatingCastToInt8{});
    for (Order result_order : {Order::kColMajor, Order::kRowMajor}) {
      for (bool cancelling : {true, false}) {
        Problem problem = MakeProblem(shape, index++);
        problem.result_order = result_order;
        problem.per_channel_offsets = false;
        problem.cancelling_offsets = cancelling;
        CheckProblemWithEach(&context_, problem, saturating, benchmarks, widest_window,
                             biased_by_rows, biased_by_cols, scaled_by_rows, scaled_by_cols);
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, PipelineTest, testing::ValuesIn(PathSettings({1, 2})),
                         PathSettingName);

// One extreme: every lhs entry `lhs_value`, every rhs entry `rhs_value`, at the largest depth
// the offsets allow, so that every product is as large as the bound assumes.
template <typename Lhs, typename Rhs>
void CheckExtreme(Lhs lhs_value, Rhs rhs_value, std::int32_t lhs_offset, std::int32_t rhs_offset,
                  std::int64_t safe_depth) {
  const int depth = static_cast<int>(safe_depth);
  const int rows = 3, cols = 2;
  const std::vector<Lhs> lhs(static_cast<std::size_t>(rows) * depth, lhs_value);
  const std::vector<Rhs> rhs(static_cast<std::size_t>(depth) * cols, rhs_value);
  const MatrixMap<const Lhs> lhs_map(lhs.data(), rows, depth, Order::kRowMajor);
  const MatrixMap<const Rhs> rhs_map(rhs.data(), depth, cols, Order::kColMajor);
  ASSERT_EQ(internal::LargestSafeDepth(internal::ViewOf(lhs_map), internal::ViewOf(rhs_map),
                                       lhs_offset, rhs_offset),
            safe_depth);
  const std::int64_t expected =
      std::int64_t{depth} * (lhs_value + lhs_offset) * (rhs_value + rhs_offset);
  for (Kernel kernel : AvailableKernels()) {
    Context context;
    context.set_kernel(kernel);
    std::vector<std::int32_t> result(rows * cols);
    MatrixMap<std::int32_t> result_map(result.data(), rows, cols, Order::kRowMajor);
    Gemm(&context, lhs_map, rhs_map, &result_map, lhs_offset, rhs_offset);
    for (std::int32_t entry : result) ASSERT_EQ(entry, expected) << KernelName(kernel);
  }
}

// The accumulator bound (doc/design.md): at the largest safe depth, with every product at its
// extreme, the exact result is within int32 although raw kernel sums may wrap many times over.
TEST(GemmBoundTest, LargestSafeDepthIsExactAtExtremeValues) {
  // 255 * 255 per product, no offsets.
  CheckExtreme<std::uint8_t, std::uint8_t>(255, 255, 0, 0, 33025);
  // (255 - 128)^2 per product while the raw sums of 255 * 255 overflow 65 times.
  CheckExtreme<std::uint8_t, std::uint8_t>(255, 255, -128, -128, 131071);
  // 0 - 128 on both sides: kernels that store uint8 as value - 128 multiply -128 by -128.
  CheckExtreme<std::uint8_t, std::uint8_t>(0, 0, -128, -128, 131071);
  CheckExtreme<std::int8_t, std::int8_t>(-128, -128, 0, 0, 131071);
  // |-128 - 127| * 255 per product: an int8 lhs against a uint8 rhs.
  CheckExtreme<std::int8_t, std::uint8_t>(-128, 255, -127, 0, 33025);
}

TEST(GemmEntryPointTest, ClassicUint8GemmMatchesItsPipeline) {
  std::mt19937 random(5);
  OwnedMatrix<std::uint8_t> lhs(9, 31, Order::kRowMajor, 0, &random);
  OwnedMatrix<std::uint8_t> rhs(31, 11, Order::kColMajor, 0, &random);
  OwnedMatrix<std::uint8_t> classic(9, 11, Order::kColMajor, 0, &random);
  OwnedMatrix<std::uint8_t> pipelined(9, 11, Order::kColMajor, 0, &random);
  Context context;
  Gemm(&context, lhs.const_map(), rhs.const_map(), &classic.map, -75, -91, 127, 3, 14);
  GemmWithOutputPipeline(&context, lhs.const_map(), rhs.const_map(), &pipelined.map, -75, -91,
                         std::make_tuple(OutputStageQuantizeDownInt32ToUint8Scale{127, 3, 14},
                                         OutputStageSaturatingCastToUint8{}));
  const auto acc = ReferenceAccumulators(lhs.const_map(), rhs.const_map(), -75, -91);
  for (int r = 0; r < 9; ++r) {
    for (int c = 0; c < 11; ++c) {
      // RoundingDivideByPOT((acc + 127) * 3, 14): to nearest, ties away from zero.
      const std::int64_t product = (acc[r * 11 + c] + 127) * 3;
      const std::int64_t scaled =
          product < 0 ? -((-product + (1 << 13)) >> 14) : (product + (1 << 13)) >> 14;
      const auto expected =
          static_cast<std::uint8_t>(std::min<std::int64_t>(std::max<std::int64_t>(scaled, 0), 255));
      ASSERT_EQ(classic.map(r, c), expected);
      ASSERT_EQ(pipelined.map(r, c), expected);
    }
  }
}

// A VectorMap of mutable data passes where a VectorMap of const data is taken (bias, offsets),
// as a MatrixMap of mutable data does.
TEST(GemmEntryPointTest, MutableVectorMapsPassAsBiasAndOffsets) {
  std::mt19937 random(8);
  OwnedMatrix<std::uint8_t> lhs(4, 9, Order::kRowMajor, 0, &random);
  OwnedMatrix<std::uint8_t> rhs(9, 5, Order::kColMajor, 0, &random);
  std::vector<std::int32_t> lhs_offsets = {-3, -100, 0, -255};
  std::vector<std::int32_t> bias = {7, -7, 1000, 0, -123456};
  const VectorMap<std::int32_t> mutable_offsets(lhs_offsets.data(), 4);
  const VectorMap<std::int32_t> mutable_bias(bias.data(), 5);
  std::vector<std::int32_t> from_mutable(20), from_const(20);
  MatrixMap<std::int32_t> mutable_result(from_mutable.data(), 4, 5, Order::kRowMajor);
  MatrixMap<std::int32_t> const_result(from_const.data(), 4, 5, Order::kRowMajor);
  Context context;
  GemmWithOutputPipeline(&context, lhs.const_map(), rhs.const_map(), &mutable_result,
                         mutable_offsets, -9,
                         std::make_tuple(OutputStageBiasAddition{mutable_bias, ChannelAxis::kCol}));
  GemmWithOutputPipeline(&context, lhs.const_map(), rhs.const_map(), &const_result,
                         VectorMap<const std::int32_t>(lhs_offsets.data(), 4), -9,
                         std::make_tuple(OutputStageBiasAddition{
                             VectorMap<const std::int32_t>(bias.data(), 5), ChannelAxis::kCol}));
  EXPECT_EQ(from_mutable, from_const);
  const auto acc =
      ReferenceAccumulators(lhs.const_map(), rhs.const_map(), Offsets(mutable_offsets), -9);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 5; ++c) EXPECT_EQ(from_mutable[r * 5 + c], acc[r * 5 + c] + bias[c]);
  }
}

TEST(GemmEntryPointTest, ZeroDepthGivesThePipelineOfZero) {
  Context context;
  std::vector<std::int32_t> result(6, 99);
  MatrixMap<std::int32_t> result_map(result.data(), 2, 3, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> lhs(nullptr, 2, 0, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs(nullptr, 0, 3, Order::kRowMajor);
  GemmWithOutputPipeline(&context, lhs, rhs, &result_map, 5, 7,
                         std::make_tuple(OutputStageClamp{4, 10}));
  for (std::int32_t entry : result) EXPECT_EQ(entry, 4);
}

TEST(GemmEntryPointTest, EmptyResultWritesNothing) {
  Context context;
  std::uint8_t lhs[6] = {1, 2, 3, 4, 5, 6};
  const MatrixMap<const std::uint8_t> lhs_map(lhs, 2, 3, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs_map(nullptr, 3, 0, Order::kRowMajor);
  MatrixMap<std::int32_t> result_map(nullptr, 2, 0, Order::kRowMajor);
  Gemm(&context, lhs_map, rhs_map, &result_map, 0, 0);
}

TEST(GemmEntryPointTest, ContextIsReusedAcrossShapesAndSettings) {
  Context context;
  std::uint32_t index = 0;
  for (int threads : {1, 2, 1, 3}) {
    context.set_max_num_threads(threads);
    for (const Shape shape : {Shape{200, 100, 300}, Shape{3, 5, 2}, Shape{64, 700, 64}}) {
      CheckProblemAnyTypes(&context, MakeProblem(shape, index++), std::tuple<>());
    }
  }
}

#if defined(__x86_64__)
// The AMX kernel leaves the tiles configured after a GEMM, for the thread's next one
// (lowbit/internal/kernel/kernel_amx.cc). Another library on the thread may release them or
// configure other shapes in between, as oneDNN does: the next GEMM must configure them again,
// neither faulting (tile instructions on released tiles raise #UD) nor multiplying smaller tiles.
TEST(GemmEntryPointTest, AmxGemmsAfterTheTilesWereReleasedOrConfiguredOtherwise) {
  const std::vector<Kernel> kernels = AvailableKernels();
  if (std::find(kernels.begin(), kernels.end(), Kernel::kAmx) == kernels.end()) {
    GTEST_SKIP() << "this CPU has no AMX";
  }
  Context context;
  Configure(&context, PathSetting{Kernel::kAmx, 1, false});
  internal::TileConfig other;
  for (int tile = 0; tile < 8; ++tile) {
    other.bytes_per_row[tile] = 32;
    other.rows[tile] = 8;
  }
  std::uint32_t index = 0;
  for (const char* before : {"", "released", "configured otherwise", "configured otherwise"}) {
    SCOPED_TRACE(testing::Message() << "tiles " << before);
    if (std::string(before) == "released") asm volatile("tilerelease");
    if (std::string(before) == "configured otherwise") internal::LoadTileConfig(other);
    CheckProblemAnyTypes(&context, MakeProblem(Shape{70, 90, 130}, index++), std::tuple<>());
  }
}
#endif

// A GEMM that could use threads runs on one where its shape ran faster so
// (lowbit/internal/driver/measured_choice.h); the pool is created only once a GEMM uses threads.
TEST(GemmEntryPointTest, AGemmThatCouldUseThreadsFollowsTheThreadChoice) {
  Context context;
  context.set_max_num_threads(2);
  context.state().cores = 2;
  const int rows = 200, depth = 300, cols = 100;  // 6M multiply-adds: enough for two threads
  internal::MeasuredChoice& choice = context.state().thread_choice;
  // Tries of threads, then of one thread: threads lose.
  for (const bool threads : {true, false}) {
    for (int i = 0; i < internal::MeasuredChoice::kTryRuns; ++i) {
      const internal::MeasuredChoice::Decision decision = choice.Choose(rows, cols, depth);
      ASSERT_EQ(decision.preferred, threads);
      choice.Record(decision, threads ? 1000000000 : 1000, 6e6);
    }
  }
  const std::vector<std::uint8_t> lhs(rows * depth, 3), rhs(depth * cols, 5);
  std::vector<std::int32_t> result(rows * cols);
  const MatrixMap<const std::uint8_t> lhs_map(lhs.data(), rows, depth, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs_map(rhs.data(), depth, cols, Order::kColMajor);
  MatrixMap<std::int32_t> result_map(result.data(), rows, cols, Order::kRowMajor);
  for (int i = 0; i < 3; ++i) Gemm(&context, lhs_map, rhs_map, &result_map, 0, 0);
  EXPECT_EQ(result[0], 3 * 5 * depth);
  EXPECT_EQ(context.state().PoolThreads(), 0);
  // A shape class not seen yet tries threads first.
  MatrixMap<std::int32_t> narrower_map(result.data(), rows, cols / 2, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> narrower_rhs(rhs.data(), depth, cols / 2, Order::kColMajor);
  Gemm(&context, lhs_map, narrower_rhs, &narrower_map, 0, 0);
  EXPECT_EQ(result[0], 3 * 5 * depth);
  EXPECT_EQ(context.state().PoolThreads(), 2);
}

}  // namespace
}  // namespace test
}  // namespace lowbit
