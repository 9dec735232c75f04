// Each output stage against an independent formulation of its documented semantics (exact
// 128-bit rational arithmetic, or double with a stated bound), over dense edge values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "lowbit/lowbit.h"

namespace lowbit {
namespace {

using Int128 = __int128;
constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();

// numerator / 2^exponent rounded to nearest, ties away from zero.
Int128 DivideByPOTTiesAway(Int128 numerator, int exponent) {
  const Int128 denominator = Int128{1} << exponent;
  const Int128 magnitude = numerator < 0 ? -numerator : numerator;
  const Int128 quotient = (2 * magnitude + denominator) / (2 * denominator);
  return numerator < 0 ? -quotient : quotient;
}

std::int32_t WrapToInt32(Int128 value) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(value)));
}

// ARM VQRDMULH, which gemmlowp and TFLite reproduce: floor((2ab + 2^31) / 2^32), so ties
// round toward +infinity (-0.5 -> 0, -1.5 -> -1), saturating only INT32_MIN * INT32_MIN.
std::int32_t ReferenceSRDHM(std::int32_t a, std::int32_t b) {
  if (a == kInt32Min && b == kInt32Min) return kInt32Max;
  const Int128 numerator = Int128{2} * a * b + (Int128{1} << 31);
  const Int128 denominator = Int128{1} << 32;
  Int128 quotient = numerator / denominator;
  if (numerator % denominator != 0 && numerator < 0) --quotient;
  return static_cast<std::int32_t>(quotient);
}

// Accumulators around every power of two and the int32 ends, plus random ones.
std::vector<std::int32_t> EdgeAccumulators() {
  std::vector<std::int32_t> values = {0, 1, -1, kInt32Min, kInt32Min + 1, kInt32Max, kInt32Max - 1};
  for (int bit = 0; bit < 31; ++bit) {
    for (std::int64_t delta = -2; delta <= 2; ++delta) {
      const std::int64_t power = std::int64_t{1} << bit;
      for (std::int64_t value : {power + delta, -power + delta, power / 2 * 3 + delta}) {
        if (value >= kInt32Min && value <= kInt32Max) {
          values.push_back(static_cast<std::int32_t>(value));
        }
      }
    }
  }
  std::mt19937 random(17);
  std::uniform_int_distribution<std::int32_t> any(kInt32Min, kInt32Max);
  for (int i = 0; i < 2000; ++i) values.push_back(any(random));
  return values;
}

std::vector<std::int32_t> EdgeMultipliers() {
  return {0,         1,     2,        1 << 30, (1 << 30) + 1, 1518500250, 1073741823, kInt32Max - 1,
          kInt32Max, 12345, 987654321};
}

TEST(OutputStageTest, KnownValuesOfTheRoundingPrimitives) {
  // RoundingDivideByPOT rounds ties away from zero.
  const OutputStageShiftByPOT halve{-1, Rounding::kNearest, 0};
  EXPECT_EQ(halve.Eval(3, 0, 0), 2);
  EXPECT_EQ(halve.Eval(-3, 0, 0), -2);
  EXPECT_EQ(halve.Eval(5, 0, 0), 3);
  EXPECT_EQ(halve.Eval(-5, 0, 0), -3);
  EXPECT_EQ((OutputStageShiftByPOT{-2, Rounding::kNearest, 0}.Eval(-5, 0, 0)), -1);
  EXPECT_EQ((OutputStageShiftByPOT{-2, Rounding::kNearest, 0}.Eval(-6, 0, 0)), -2);
  EXPECT_EQ(fixedpoint::SaturatingRoundingDoublingHighMul(kInt32Min, kInt32Min), kInt32Max);
  EXPECT_EQ(fixedpoint::SaturatingRoundingDoublingHighMul(1 << 30, 1 << 30), 1 << 29);
  // SRDHM rounds ties up, as VQRDMULH does: 2 * 3 * 2^30 / 2^32 = 1.5 -> 2, -1.5 -> -1,
  // -0.5 -> 0.
  EXPECT_EQ(fixedpoint::SaturatingRoundingDoublingHighMul(3, 1 << 30), 2);
  EXPECT_EQ(fixedpoint::SaturatingRoundingDoublingHighMul(-3, 1 << 30), -1);
  EXPECT_EQ(fixedpoint::SaturatingRoundingDoublingHighMul(-(1 << 30), 1), 0);
  EXPECT_EQ(fixedpoint::SaturatingRoundingDoublingHighMul(-(1 << 30) - 1, 1), -1);
}

TEST(OutputStageTest, QuantizeDownByFixedPointIsRoundedHighMulThenRoundedShift) {
  for (std::int32_t multiplier : EdgeMultipliers()) {
    for (int shift = 0; shift <= 31; ++shift) {
      const OutputStageQuantizeDownInt32ByFixedPoint stage{multiplier, shift, -17};
      for (std::int32_t acc : EdgeAccumulators()) {
        const Int128 high = ReferenceSRDHM(acc, multiplier);
        const std::int32_t expected = WrapToInt32(DivideByPOTTiesAway(high, shift) - 17);
        ASSERT_EQ(stage.Eval(acc, 0, 0), expected)
            << "acc " << acc << " multiplier " << multiplier << " shift " << shift;
      }
    }
  }
}

TEST(OutputStageTest, ScaleByFixedPointAndExponentShiftsLeftThenScalesThenShiftsRight) {
  for (std::int32_t multiplier : EdgeMultipliers()) {
    for (int exponent = -31; exponent <= 30; ++exponent) {
      const OutputStageScaleInt32ByFixedPointAndExponent stage{multiplier, exponent, 3};
      for (std::int32_t acc : EdgeAccumulators()) {
        // The left shift wraps, as vpslld / vshlq_s32 do.
        const std::int32_t shifted =
            exponent > 0 ? WrapToInt32(Int128{acc} * (Int128{1} << exponent)) : acc;
        const Int128 high = ReferenceSRDHM(shifted, multiplier);
        const std::int32_t expected =
            WrapToInt32(DivideByPOTTiesAway(high, exponent < 0 ? -exponent : 0) + 3);
        ASSERT_EQ(stage.Eval(acc, 0, 0), expected)
            << "acc " << acc << " multiplier " << multiplier << " exponent " << exponent;
      }
    }
  }
}

TEST(OutputStageTest, PerChannelStagesUseTheirChannelsParameters) {
  const std::int32_t multipliers[] = {1 << 30, 1518500250, 0};
  const std::int32_t shifts[] = {0, 5, 31};
  const std::int32_t exponents[] = {2, -5, -31};
  const VectorMap<const std::int32_t> multiplier_map(multipliers, 3);
  const OutputStageQuantizeDownInt32ByFixedPointPerChannel quantize_rows{
      multiplier_map, VectorMap<const std::int32_t>(shifts, 3), 7, ChannelAxis::kRow};
  const OutputStageScaleInt32ByFixedPointAndExponentPerChannel scale_cols{
      multiplier_map, VectorMap<const std::int32_t>(exponents, 3), -1, ChannelAxis::kCol};
  const std::int32_t legacy_offsets[] = {-100, 0, 77};
  const std::int32_t legacy_multipliers[] = {1, 3, 1000};
  const OutputStageQuantizeDownInt32ToUint8ScalePerChannel legacy_rows{
      VectorMap<const std::int32_t>(legacy_offsets, 3),
      VectorMap<const std::int32_t>(legacy_multipliers, 3), 9, ChannelAxis::kRow};
  const std::int32_t bias[] = {5, -9, kInt32Max};
  const OutputStageBiasAddition bias_cols{VectorMap<const std::int32_t>(bias, 3),
                                          ChannelAxis::kCol};
  for (std::int32_t acc : EdgeAccumulators()) {
    for (int channel = 0; channel < 3; ++channel) {
      const OutputStageQuantizeDownInt32ByFixedPoint row_stage{multipliers[channel],
                                                               shifts[channel], 7};
      ASSERT_EQ(quantize_rows.Eval(acc, channel, 2 - channel), row_stage.Eval(acc, 0, 0));
      const OutputStageScaleInt32ByFixedPointAndExponent col_stage{multipliers[channel],
                                                                   exponents[channel], -1};
      ASSERT_EQ(scale_cols.Eval(acc, 2 - channel, channel), col_stage.Eval(acc, 0, 0));
      const OutputStageQuantizeDownInt32ToUint8Scale legacy_stage{legacy_offsets[channel],
                                                                  legacy_multipliers[channel], 9};
      ASSERT_EQ(legacy_rows.Eval(acc, channel, 1), legacy_stage.Eval(acc, 0, 0));
      ASSERT_EQ(bias_cols.Eval(acc, 1, channel), WrapToInt32(Int128{acc} + bias[channel]));
    }
  }
}

// gemmlowp's legacy stage: the sum and the product wrap in int32, then the product is divided
// by 2^shift rounding to nearest, ties away from zero (RoundingDivideByPOT).
TEST(OutputStageTest, LegacyScaleAddsMultipliesAndRoundsTheProduct) {
  for (std::int32_t multiplier : {0, 1, 3, 255, 65535, 1 << 20}) {
    for (int shift = 0; shift <= 31; ++shift) {
      const OutputStageQuantizeDownInt32ToUint8Scale stage{-1234, multiplier, shift};
      for (std::int32_t acc : EdgeAccumulators()) {
        const Int128 product = WrapToInt32(Int128{WrapToInt32(Int128{acc} - 1234)} * multiplier);
        const Int128 half = shift < 1 ? 0 : Int128{1} << (shift - 1);
        const Int128 magnitude = ((product < 0 ? -product : product) + half) >> shift;
        const auto expected = static_cast<std::int32_t>(product < 0 ? -magnitude : magnitude);
        ASSERT_EQ(stage.Eval(acc, 0, 0), expected)
            << "acc " << acc << " multiplier " << multiplier << " shift " << shift;
      }
    }
  }
}

TEST(OutputStageTest, ShiftByPOTSaturatesLeftAndRoundsRightToNearest) {
  for (int exponent = -31; exponent <= 31; ++exponent) {
    const OutputStageShiftByPOT stage{exponent, Rounding::kNearest, 0};
    for (std::int32_t acc : EdgeAccumulators()) {
      Int128 expected;
      if (exponent >= 0) {
        expected = Int128{acc} * (Int128{1} << exponent);
        expected = expected > kInt32Max ? kInt32Max : expected < kInt32Min ? kInt32Min : expected;
      } else {
        expected = DivideByPOTTiesAway(acc, -exponent);
      }
      ASSERT_EQ(stage.Eval(acc, 0, 0), static_cast<std::int32_t>(expected))
          << "acc " << acc << " exponent " << exponent;
    }
  }
}

TEST(OutputStageTest, StochasticShiftIsFloorOrCeilReproducibleAndUnbiased) {
  for (int exponent : {-1, -4, -13, -31}) {
    const OutputStageShiftByPOT stage{exponent, Rounding::kStochastic, 12345};
    const OutputStageShiftByPOT other_seed{exponent, Rounding::kStochastic, 54321};
    for (std::int32_t acc : {7, -7, 1000003, -1000003, kInt32Max, kInt32Min, 0}) {
      const double exact = std::ldexp(static_cast<double>(acc), exponent);
      double sum = 0;
      int differences = 0;
      constexpr int kRows = 100, kCols = 100;
      for (int row = 0; row < kRows; ++row) {
        for (int col = 0; col < kCols; ++col) {
          const std::int32_t value = stage.Eval(acc, row, col);
          ASSERT_TRUE(value == std::floor(exact) || value == std::ceil(exact)) << value;
          ASSERT_EQ(value, stage.Eval(acc, row, col));
          differences += value != other_seed.Eval(acc, row, col);
          sum += value;
        }
      }
      // The mean of n Bernoulli roundings has standard deviation <= 0.5 / sqrt(n) = 0.005:
      // 5 standard deviations.
      const double fraction = exact - std::floor(exact);
      EXPECT_NEAR(sum / (kRows * kCols), exact, 0.025) << "acc " << acc << " exponent " << exponent;
      if (fraction > 0.1 && fraction < 0.9) {
        EXPECT_GT(differences, 0);
      }
    }
  }
}

TEST(OutputStageTest, ClampAndCastsSaturateOrTruncate) {
  const OutputStageClamp clamp{-5, 9};
  EXPECT_EQ(clamp.Eval(kInt32Min, 0, 0), -5);
  EXPECT_EQ(clamp.Eval(3, 0, 0), 3);
  EXPECT_EQ(clamp.Eval(10, 0, 0), 9);
  for (std::int32_t acc : EdgeAccumulators()) {
    const std::int64_t wide = acc;
    EXPECT_EQ(OutputStageSaturatingCastToUint8{}.Eval(acc, 0, 0),
              std::min<std::int64_t>(std::max<std::int64_t>(wide, 0), 255));
    EXPECT_EQ(OutputStageSaturatingCastToInt8{}.Eval(acc, 0, 0),
              std::min<std::int64_t>(std::max<std::int64_t>(wide, -128), 127));
    EXPECT_EQ(OutputStageSaturatingCastToInt16{}.Eval(acc, 0, 0),
              std::min<std::int64_t>(std::max<std::int64_t>(wide, -32768), 32767));
    EXPECT_EQ(OutputStageTruncatingCastToUint8{}.Eval(acc, 0, 0), ((wide % 256) + 256) % 256);
  }
}

// Tanh and logistic on lowbit's accurate functions: within `units` of the exact value (the
// fixed-point functions are accurate to far below one output unit for amplitudes up to 2^20),
// monotonic where `monotonic`, and saturated beyond the cutoff. gemmlowp's tanh is off by up to
// 306 LSB of Q0.31, which reaches the outputs of large amplitudes.
template <typename MakeStage>
void CheckActivation(MakeStage make_stage, double (*function)(double), double low_limit,
                     double units, bool monotonic) {
  for (std::int32_t amplitude : {1, 7, 128, 255, 1000, 32767, 1 << 20}) {
    for (std::int32_t zero : {0, -50, 128, 1 << 24}) {
      const auto stage = make_stage(zero, amplitude);
      std::int32_t previous = kInt32Min;
      const std::int64_t span = std::int64_t{9} * amplitude;
      const std::int64_t step = std::max<std::int64_t>(1, span / 4000);
      for (std::int64_t centered = -span; centered <= span; centered += step) {
        const auto acc = static_cast<std::int32_t>(zero + centered);
        const double x = static_cast<double>(centered) / amplitude;
        double real = function(x);
        if (x >= 8) real = 1;
        if (x <= -8) real = low_limit;
        const double expected = zero + amplitude * real;
        const std::int32_t value = stage.Eval(acc, 0, 0);
        ASSERT_NEAR(value, expected, units) << "x " << x << " amplitude " << amplitude;
        if (monotonic) {
          ASSERT_GE(value, previous) << "not monotonic at x " << x;
        }
        previous = value;
      }
    }
  }
}

double Logistic(double x) { return 1 / (1 + std::exp(-x)); }
double Tanh(double x) { return std::tanh(x); }

TEST(OutputStageTest, AccurateTanhTracksTheRealFunction) {
  const auto make_stage = [](std::int32_t zero, std::int32_t amplitude) {
    return OutputStageTanh{zero, amplitude, TanhArithmetic::kAccurate};
  };
  CheckActivation(make_stage, &Tanh, -1, 1.0, true);
  const OutputStageTanh stage{100, 1000, TanhArithmetic::kAccurate};
  EXPECT_EQ(stage.Eval(100, 0, 0), 100);
  for (std::int32_t delta : {1, 17, 500, 2999, 7999}) {
    EXPECT_EQ(stage.Eval(100 + delta, 0, 0) - 100, 100 - stage.Eval(100 - delta, 0, 0));
  }
}

// gemmlowp's tanh stage (its bits: test/gemmlowp_bits_test.cc) against the real function: its
// result is truncated (a right shift), not rounded, on top of its tanh's error, so within 2 units
// and not always monotonic.
TEST(OutputStageTest, GemmlowpTanhStaysNearTheRealFunction) {
  const auto make_stage = [](std::int32_t zero, std::int32_t amplitude) {
    return OutputStageTanh{zero, amplitude};
  };
  CheckActivation(make_stage, &Tanh, -1, 2.0, false);
}

// Eval is public: parameters that Validate rejects (gemmlowp's arithmetic cannot form zero +-
// 8 * amplitude, or a non-positive amplitude) still give a value without overflow (the
// sanitizer builds check) and without a hang.
TEST(OutputStageTest, GemmlowpTanhEvaluatesAnyParameters) {
  for (const std::int32_t zero : {kInt32Min, -1000, 0, 1072051087, kInt32Max}) {
    for (const std::int32_t amplitude : {kInt32Min, -5, 0, 1, 1 << 28, 1781637766, kInt32Max}) {
      const OutputStageTanh stage{zero, amplitude};
      for (const std::int32_t acc : {kInt32Min, -1, 0, 1, 1 << 30, kInt32Max}) {
        const std::int32_t value = stage.Eval(acc, 0, 0);
        if (amplitude <= 0) {
          EXPECT_TRUE(value == stage_detail::SaturateToInt32(std::int64_t{zero} - amplitude) ||
                      value == stage_detail::SaturateToInt32(std::int64_t{zero} + amplitude));
        }
      }
    }
  }
}

TEST(OutputStageTest, LogisticTracksTheRealFunction) {
  const auto make_stage = [](std::int32_t zero, std::int32_t amplitude) {
    return OutputStageLogistic{zero, amplitude};
  };
  CheckActivation(make_stage, &Logistic, 0, 1.0, true);
  const OutputStageLogistic stage{0, 256};
  EXPECT_EQ(stage.Eval(0, 0, 0), 128);
  EXPECT_EQ(stage.Eval(kInt32Max, 0, 0), 256);
  EXPECT_EQ(stage.Eval(kInt32Min, 0, 0), 0);
}

// A custom stage is any struct with Eval (and optionally Validate); it composes with built-ins.
struct SquareThenCap {
  std::int32_t cap;
  std::int32_t Eval(std::int32_t value, int, int) const {
    const std::int64_t square = std::int64_t{value} * value;
    return static_cast<std::int32_t>(std::min<std::int64_t>(square, cap));
  }
};

TEST(OutputStageTest, CustomStagesComposeWithBuiltInStages) {
  const std::uint8_t lhs[] = {1, 2, 3, 4};
  const std::uint8_t rhs[] = {1, 0, 0, 1};
  std::int16_t result[4];
  Context context;
  const MatrixMap<const std::uint8_t> lhs_map(lhs, 2, 2, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs_map(rhs, 2, 2, Order::kRowMajor);
  MatrixMap<std::int16_t> result_map(result, 2, 2, Order::kRowMajor);
  GemmWithOutputPipeline(&context, lhs_map, rhs_map, &result_map, 0, 0,
                         std::make_tuple(SquareThenCap{10}, OutputStageShiftByPOT{1},
                                         OutputStageSaturatingCastToInt16{}));
  EXPECT_EQ(result[0], 2);
  EXPECT_EQ(result[1], 8);
  EXPECT_EQ(result[2], 18);
  EXPECT_EQ(result[3], 20);
}

}  // namespace
}  // namespace lowbit
