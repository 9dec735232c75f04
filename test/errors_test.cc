// Every rejected input: the error names the argument and its rule, and the result is untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/test_util.h"

namespace lowbit {
namespace {

constexpr std::int32_t kSentinel = 0x5a5a5a5a;

// A valid 4x6 * 6x5 problem whose pieces each case breaks one at a time.
class ErrorTest : public testing::Test {
 protected:
  ErrorTest()
      : lhs_data_(4 * 6, 200),
        rhs_data_(6 * 5, 100),
        result_data_(4 * 5 + 64, kSentinel),
        lhs_(lhs_data_.data(), 4, 6, Order::kRowMajor),
        rhs_(rhs_data_.data(), 6, 5, Order::kColMajor),
        result_(result_data_.data(), 4, 5, Order::kRowMajor) {}

  // Runs `call`, expects lowbit::Error for `argument` with `rule` in its message, and checks
  // that no result entry was written.
  void ExpectRejected(const std::function<void()>& call, const std::string& argument,
                      const std::string& rule) {
    test::ExpectError(call, argument, rule);
    for (std::int32_t entry : result_data_) ASSERT_EQ(entry, kSentinel) << "result was written";
  }

  template <typename Pipeline>
  void ExpectPipelineRejected(const Pipeline& pipeline, const std::string& argument,
                              const std::string& rule) {
    std::vector<std::uint8_t> out(result_data_.size(), 0x5a);
    MatrixMap<std::uint8_t> out_map(out.data(), 4, 5, Order::kRowMajor);
    test::ExpectError(
        [&] { GemmWithOutputPipeline(&context_, lhs_, rhs_, &out_map, -128, -3, pipeline); },
        argument, rule);
    for (std::uint8_t entry : out) ASSERT_EQ(entry, 0x5a) << "result was written";
  }

  void RunInt32(const MatrixMap<const std::uint8_t>& lhs, const MatrixMap<const std::uint8_t>& rhs,
                MatrixMap<std::int32_t>* result, const Offsets& lhs_offset = 0,
                const Offsets& rhs_offset = 0) {
    Gemm(&context_, lhs, rhs, result, lhs_offset, rhs_offset);
  }

  Context context_;
  std::vector<std::uint8_t> lhs_data_;
  std::vector<std::uint8_t> rhs_data_;
  std::vector<std::int32_t> result_data_;
  MatrixMap<const std::uint8_t> lhs_;
  MatrixMap<const std::uint8_t> rhs_;
  MatrixMap<std::int32_t> result_;
};

TEST_F(ErrorTest, NullContextAndResult) {
  ExpectRejected([&] { Gemm(nullptr, lhs_, rhs_, &result_, 0, 0); }, "context", "must not be null");
  ExpectRejected(
      [&] { Gemm(&context_, lhs_, rhs_, static_cast<MatrixMap<std::int32_t>*>(nullptr), 0, 0); },
      "result", "must not be null");
}

TEST_F(ErrorTest, NullData) {
  const MatrixMap<const std::uint8_t> null_lhs(nullptr, 4, 6, Order::kRowMajor);
  ExpectRejected([&] { RunInt32(null_lhs, rhs_, &result_); }, "lhs.data", "must not be null");
  const MatrixMap<const std::uint8_t> null_rhs(nullptr, 6, 5, Order::kRowMajor);
  ExpectRejected([&] { RunInt32(lhs_, null_rhs, &result_); }, "rhs.data", "must not be null");
  MatrixMap<std::int32_t> null_result(nullptr, 4, 5, Order::kRowMajor);
  ExpectRejected([&] { RunInt32(lhs_, rhs_, &null_result); }, "result.data", "must not be null");
}

TEST_F(ErrorTest, NegativeSizes) {
  const MatrixMap<const std::uint8_t> negative_rows(lhs_data_.data(), -1, 6, Order::kRowMajor, 6);
  ExpectRejected([&] { RunInt32(negative_rows, rhs_, &result_); }, "lhs.rows", "[0, ");
  const MatrixMap<const std::uint8_t> negative_cols(rhs_data_.data(), 6, -5, Order::kColMajor, 6);
  ExpectRejected([&] { RunInt32(lhs_, negative_cols, &result_); }, "rhs.cols", "got -5");
}

TEST_F(ErrorTest, StrideShorterThanALine) {
  const MatrixMap<const std::uint8_t> short_rows(lhs_data_.data(), 4, 6, Order::kRowMajor, 5);
  ExpectRejected([&] { RunInt32(short_rows, rhs_, &result_); }, "lhs.stride",
                 "row-major matrix needs stride >= its number of columns (6), got 5");
  const MatrixMap<const std::uint8_t> short_cols(rhs_data_.data(), 6, 5, Order::kColMajor, 2);
  ExpectRejected([&] { RunInt32(lhs_, short_cols, &result_); }, "rhs.stride",
                 "column-major matrix needs stride >= its number of rows (6), got 2");
  MatrixMap<std::int32_t> short_result(result_data_.data(), 4, 5, Order::kColMajor, 3);
  ExpectRejected([&] { RunInt32(lhs_, rhs_, &short_result); }, "result.stride", "got 3");
}

TEST_F(ErrorTest, DimensionsThatDisagree) {
  const MatrixMap<const std::uint8_t> deeper_rhs(rhs_data_.data(), 5, 5, Order::kColMajor);
  ExpectRejected([&] { RunInt32(lhs_, deeper_rhs, &result_); }, "rhs.rows",
                 "must equal lhs.cols, the depth (6), got 5");
  MatrixMap<std::int32_t> taller(result_data_.data(), 5, 5, Order::kRowMajor);
  ExpectRejected([&] { RunInt32(lhs_, rhs_, &taller); }, "result.rows", "must equal lhs.rows (4)");
  MatrixMap<std::int32_t> wider(result_data_.data(), 4, 6, Order::kRowMajor);
  ExpectRejected([&] { RunInt32(lhs_, rhs_, &wider); }, "result.cols", "must equal rhs.cols (5)");
}

TEST_F(ErrorTest, OffsetVectorsOfTheWrongLength) {
  const std::int32_t offsets[6] = {};
  ExpectRejected(
      [&] { RunInt32(lhs_, rhs_, &result_, VectorMap<const std::int32_t>(offsets, 3), 0); },
      "lhs_offset", "one entry per lhs row (4), got 3");
  ExpectRejected(
      [&] { RunInt32(lhs_, rhs_, &result_, 0, VectorMap<const std::int32_t>(offsets, 6)); },
      "rhs_offset", "one entry per rhs column (5), got 6");
  ExpectRejected(
      [&] { RunInt32(lhs_, rhs_, &result_, VectorMap<const std::int32_t>(nullptr, 4), 0); },
      "lhs_offset", "must not be null");
}

TEST_F(ErrorTest, DepthThatCouldOverflowInt32) {
  // uint8 x uint8 without offsets: 255 * 255 per product allows 33025.
  std::vector<std::uint8_t> deep_lhs(33026), deep_rhs(33026);
  const MatrixMap<const std::uint8_t> lhs(deep_lhs.data(), 1, 33026, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs(deep_rhs.data(), 33026, 1, Order::kColMajor);
  MatrixMap<std::int32_t> result(result_data_.data(), 1, 1, Order::kRowMajor);
  ExpectRejected([&] { RunInt32(lhs, rhs, &result); }, "lhs.cols",
                 "the depth 33026 can overflow int32 accumulators");
  ExpectRejected([&] { RunInt32(lhs, rhs, &result); }, "lhs.cols", "at most 33025");
  // Offsets count: with a -128 zero point the bound is 131071, well past 33026.
  RunInt32(lhs, rhs, &result, -128, -128);
  EXPECT_EQ(result_data_[0], 33026 * 128 * 128);
  result_data_[0] = kSentinel;
  // A per-channel offset is bounded by its largest entry: 510 * 128 per product allows 32896.
  const std::int32_t offsets[1] = {255};
  ExpectRejected(
      [&] { RunInt32(lhs, rhs, &result, VectorMap<const std::int32_t>(offsets, 1), -128); },
      "lhs.cols", "at most 32896");
}

TEST_F(ErrorTest, ResultOverlappingAnInput) {
  std::vector<std::int32_t> shared(64);
  const MatrixMap<const std::uint8_t> lhs(reinterpret_cast<const std::uint8_t*>(shared.data() + 8),
                                          4, 6, Order::kRowMajor);
  MatrixMap<std::int32_t> result(shared.data(), 4, 5, Order::kRowMajor);
  std::vector<std::int32_t> before = shared;
  test::ExpectError([&] { RunInt32(lhs, rhs_, &result); }, "result", "overlaps lhs");
  EXPECT_EQ(shared, before);
  // Adjacent but disjoint memory is fine.
  const MatrixMap<const std::uint8_t> after_result(
      reinterpret_cast<const std::uint8_t*>(shared.data() + 20), 4, 6, Order::kRowMajor);
  RunInt32(after_result, rhs_, &result);
}

TEST_F(ErrorTest, StageParametersOutOfRange) {
  const auto cast = OutputStageSaturatingCastToUint8{};
  ExpectPipelineRejected(
      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 32, 0}, cast),
      "pipeline[0].result_shift", "must be in [0, 31], got 32");
  ExpectPipelineRejected(std::make_tuple(OutputStageClamp{0, 10},
                                         OutputStageQuantizeDownInt32ByFixedPoint{-1, 3, 0}, cast),
                         "pipeline[1].result_fixedpoint_multiplier", "got -1");
  ExpectPipelineRejected(
      std::make_tuple(OutputStageScaleInt32ByFixedPointAndExponent{1 << 30, 31, 0}, cast),
      "pipeline[0].result_exponent", "must be in [-31, 30], got 31");
  ExpectPipelineRejected(std::make_tuple(OutputStageQuantizeDownInt32ToUint8Scale{0, -3, 2}, cast),
                         "pipeline[0].result_mult_int", "got -3");
  ExpectPipelineRejected(std::make_tuple(OutputStageShiftByPOT{-32}, cast), "pipeline[0].exponent",
                         "must be in [-31, 31], got -32");
  ExpectPipelineRejected(std::make_tuple(OutputStageClamp{5, 4}, cast), "pipeline[0].min",
                         "must not exceed max (4), got 5");
  ExpectPipelineRejected(std::make_tuple(OutputStageTanh{0, 0}, cast),
                         "pipeline[0].real_amplitude_as_int32", "got 0");
  ExpectPipelineRejected(std::make_tuple(OutputStageLogistic{0, -5}, cast),
                         "pipeline[0].real_amplitude_as_int32", "got -5");
}

TEST_F(ErrorTest, PerChannelVectorsOfTheWrongLengthOrRange) {
  const std::int32_t values[8] = {1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 3, 3, 3};
  const std::int32_t bad_shifts[5] = {1, 2, 40, 3, 4};
  const auto cast = OutputStageSaturatingCastToUint8{};
  ExpectPipelineRejected(
      std::make_tuple(
          OutputStageBiasAddition{VectorMap<const std::int32_t>(values, 5), ChannelAxis::kRow},
          cast),
      "pipeline[0].bias", "ChannelAxis::kRow must have one entry per result row (4), got 5");
  ExpectPipelineRejected(
      std::make_tuple(
          OutputStageBiasAddition{VectorMap<const std::int32_t>(nullptr, 5), ChannelAxis::kCol},
          cast),
      "pipeline[0].bias", "must not be null");
  ExpectPipelineRejected(
      std::make_tuple(
          OutputStageQuantizeDownInt32ByFixedPointPerChannel{
              VectorMap<const std::int32_t>(values, 5),
              VectorMap<const std::int32_t>(bad_shifts, 5), 0, ChannelAxis::kCol},
          cast),
      "pipeline[0].result_shift[2]", "got 40");
  ExpectPipelineRejected(std::make_tuple(
                             OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
                                 VectorMap<const std::int32_t>(values, 4),
                                 VectorMap<const std::int32_t>(values, 5), 0, ChannelAxis::kRow},
                             cast),
                         "pipeline[0].result_exponent", "one entry per result row (4), got 5");
  ExpectPipelineRejected(std::make_tuple(
                             OutputStageQuantizeDownInt32ToUint8ScalePerChannel{
                                 VectorMap<const std::int32_t>(values, 5),
                                 VectorMap<const std::int32_t>(values, 4), 0, ChannelAxis::kCol},
                             cast),
                         "pipeline[0].result_mult_int", "one entry per result column (5), got 4");
}

struct ResidualAdd {
  MatrixMap<const std::int32_t> residual;

  template <typename Visit>
  void VisitInputs(Visit&& visit) const {
    visit("residual", residual);
  }
  std::int32_t Eval(std::int32_t acc, int row, int col) const { return acc + residual(row, col); }
};

// Every vector a stage or an offset reads while the result is written must lie outside the
// result: a bias in the result's first row gave 4032 wrong entries of 4096.
TEST_F(ErrorTest, InputVectorsInsideTheResult) {
  const VectorMap<const std::int32_t> first_row(result_data_.data(), 5);
  const VectorMap<const std::int32_t> row_of_four(result_data_.data() + 5, 4);
  const std::int32_t ones[5] = {1, 1, 1, 1, 1};
  const VectorMap<const std::int32_t> outside(ones, 5);
  const auto run = [&](const auto& pipeline) {
    return
        [&, pipeline] { GemmWithOutputPipeline(&context_, lhs_, rhs_, &result_, 0, 0, pipeline); };
  };
  const char* const kRule = "lies in the result's memory";
  ExpectRejected(run(std::make_tuple(OutputStageBiasAddition{first_row, ChannelAxis::kCol})),
                 "pipeline[0].bias", kRule);
  ExpectRejected(run(std::make_tuple(OutputStageClamp{0, 5},
                                     OutputStageBiasAddition{row_of_four, ChannelAxis::kRow})),
                 "pipeline[1].bias", kRule);
  ExpectRejected(run(std::make_tuple(OutputStageQuantizeDownInt32ByFixedPointPerChannel{
                     first_row, outside, 0, ChannelAxis::kCol})),
                 "pipeline[0].result_fixedpoint_multiplier", kRule);
  ExpectRejected(run(std::make_tuple(OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
                     row_of_four, VectorMap<const std::int32_t>(ones, 4), 0, ChannelAxis::kRow})),
                 "pipeline[0].result_fixedpoint_multiplier", kRule);
  ExpectRejected(run(std::make_tuple(OutputStageQuantizeDownInt32ToUint8ScalePerChannel{
                     outside, first_row, 0, ChannelAxis::kCol})),
                 "pipeline[0].result_mult_int", kRule);
  ExpectRejected([&] { RunInt32(lhs_, rhs_, &result_, 0, first_row); }, "rhs_offset", kRule);
  ExpectRejected(
      [&] {
        RunInt32(lhs_, rhs_, &result_, VectorMap<const std::int32_t>(result_data_.data() + 16, 4),
                 0);
      },
      "lhs_offset", kRule);
  // A custom stage's inputs, a matrix among them (doc/output-pipeline.md).
  ExpectRejected(run(std::make_tuple(ResidualAdd{MatrixMap<const std::int32_t>(
                     result_data_.data() + 3, 2, 2, Order::kColMajor, 17)})),
                 "pipeline[0].residual", kRule);
  std::vector<std::int32_t> residual(4 * 5, 7);
  ExpectRejected(run(std::make_tuple(ResidualAdd{MatrixMap<const std::int32_t>(
                                         residual.data(), 4, 5, Order::kRowMajor)},
                                     OutputStageBiasAddition{row_of_four, ChannelAxis::kRow})),
                 "pipeline[1].bias", kRule);
  // Right after the result is fine.
  std::vector<std::int32_t> after(result_data_.begin(), result_data_.end());
  MatrixMap<std::int32_t> front(after.data(), 4, 5, Order::kRowMajor);
  GemmWithOutputPipeline(
      &context_, lhs_, rhs_, &front, 0, 0,
      std::make_tuple(OutputStageBiasAddition{VectorMap<const std::int32_t>(after.data() + 20, 5),
                                              ChannelAxis::kCol}));
  EXPECT_EQ(front(0, 0), 6 * 200 * 100 + kSentinel);
}

// Enum values outside their enumerators (a cast from a stored int, say) are rejected like any
// other bad parameter, not run as one of the others.
TEST_F(ErrorTest, EnumValuesOutsideTheirEnumerators) {
  const auto cast = OutputStageSaturatingCastToUint8{};
  ExpectPipelineRejected(
      std::make_tuple(OutputStageShiftByPOT{-3, static_cast<Rounding>(2), 0}, cast),
      "pipeline[0].rounding", "must be Rounding::kNearest or kStochastic, got 2");
  const std::int32_t bias[5] = {};
  ExpectPipelineRejected(
      std::make_tuple(OutputStageBiasAddition{VectorMap<const std::int32_t>(bias, 5),
                                              static_cast<ChannelAxis>(-1)},
                      cast),
      "pipeline[0].axis", "must be ChannelAxis::kRow or kCol, got -1");
  const MatrixMap<const std::uint8_t> bad_order(lhs_data_.data(), 4, 6, static_cast<Order>(5), 6);
  ExpectRejected([&] { RunInt32(bad_order, rhs_, &result_); }, "lhs.order",
                 "must be Order::kRowMajor or kColMajor, got 5");
}

// Sizes whose rounding up to register tiles would overflow int are refused before packing.
TEST_F(ErrorTest, SizesNearIntMax) {
  constexpr int kIntMax = std::numeric_limits<int>::max();
  const MatrixMap<const std::uint8_t> tall(lhs_data_.data(), kIntMax, 1, Order::kColMajor, kIntMax);
  const MatrixMap<const std::uint8_t> one_by_one(rhs_data_.data(), 1, 1, Order::kColMajor);
  MatrixMap<std::int32_t> tall_result(result_data_.data(), kIntMax, 1, Order::kColMajor, kIntMax);
  ExpectRejected([&] { RunInt32(tall, one_by_one, &tall_result); }, "lhs.rows",
                 "must be at most 1073741823 (2^30 - 1): packing rounds sizes up");
  const MatrixMap<const std::uint8_t> wide(rhs_data_.data(), 1, kIntMax - 31, Order::kRowMajor);
  test::ExpectError([&] { PrepackedRhs packed(&context_, wide); }, "rhs.cols", "got 2147483616");
  const MatrixMap<const std::uint8_t> largest(rhs_data_.data(), 1, (1 << 30), Order::kRowMajor);
  test::ExpectError([&] { PrepackedRhs packed(&context_, largest); }, "rhs.cols",
                    "must be at most 1073741823");
}

TEST_F(ErrorTest, ContextSettingsAndEnvironment) {
  test::ExpectError([&] { context_.set_max_num_threads(0); }, "threads", "must be in [1, 1024]");
  EXPECT_EQ(context_.max_num_threads(), 1);
  ASSERT_EQ(setenv("LOWBIT_KERNEL", "avx512", 1), 0);
  ExpectRejected([&] { RunInt32(lhs_, rhs_, &result_); }, "LOWBIT_KERNEL",
                 "must be one of: reference, sse41, avx2, avx512vnni, amx, neon; got 'avx512'");
  // A kernel this CPU lacks is refused from the environment and from the Context.
  for (Kernel kernel :
       {Kernel::kSse41, Kernel::kAvx2, Kernel::kAvx512Vnni, Kernel::kAmx, Kernel::kNeon}) {
    const std::vector<Kernel> available = AvailableKernels();
    if (std::find(available.begin(), available.end(), kernel) != available.end()) continue;
    ASSERT_EQ(setenv("LOWBIT_KERNEL", KernelName(kernel), 1), 0);
    ExpectRejected([&] { RunInt32(lhs_, rhs_, &result_); }, "LOWBIT_KERNEL", "is not available");
    test::ExpectError([&] { context_.set_kernel(kernel); }, "kernel", "is not available");
  }
  ASSERT_EQ(setenv("LOWBIT_KERNEL", "reference", 1), 0);
  EXPECT_EQ(context_.ResolvedKernel(), Kernel::kReference);
  ASSERT_EQ(unsetenv("LOWBIT_KERNEL"), 0);
}

TEST_F(ErrorTest, ZeroSizedMatricesAreValidAndDoNothing) {
  MatrixMap<std::int32_t> empty_result(nullptr, 0, 5, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> empty_lhs(nullptr, 0, 6, Order::kRowMajor);
  RunInt32(empty_lhs, rhs_, &empty_result);
  const MatrixMap<const std::uint8_t> no_cols(nullptr, 6, 0, Order::kColMajor);
  MatrixMap<std::int32_t> no_result_cols(result_data_.data(), 4, 0, Order::kRowMajor);
  RunInt32(lhs_, no_cols, &no_result_cols);
  for (std::int32_t entry : result_data_) EXPECT_EQ(entry, kSentinel);
  // No depth and no data, with a stride: nothing to range-check in declared-range mode, and no
  // address to compute from the null pointer either.
  const MatrixMap<const std::uint8_t> no_depth(nullptr, 4, 0, Order::kRowMajor, 10);
  const MatrixMap<const std::uint8_t> no_depth_rhs(nullptr, 0, 5, Order::kColMajor, 10);
  const BitDepthParams declared{4, 4, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
  Gemm(&context_, no_depth, no_depth_rhs, &result_, 0, 0, declared);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(result_data_[i], 0);
}

}  // namespace
}  // namespace lowbit
