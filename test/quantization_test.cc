// Tests of lowbit/public/quantization.h against double-precision references: parameter choice, the
// fixed-point multipliers (alone and applied through GEMMs on every kernel), quantize and
// dequantize, and the errors of every bad argument.
#include "lowbit/public/quantization.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lowbit/lowbit.h"

namespace lowbit {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Runs `call`, expects a lowbit::Error whose argument is `argument`, and returns its message.
template <typename Call>
std::string ExpectError(Call call, const std::string& argument) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(argument), std::string::npos) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no lowbit::Error for " << argument;
  return {};
}

// The value a FixedPointMultiplier stands for, exactly (a 31-bit integer times a power of two).
double RealValue(const FixedPointMultiplier& m) {
  return std::ldexp(static_cast<double>(m.multiplier), m.exponent - 31);
}

// ---- ChooseQuantizationParams ----

TEST(ChooseQuantizationParamsTest, Uint8RangeGivesTheNudgedZeroPoint) {
  const QuantizationParams params = ChooseQuantizationParams(-1.0, 3.0);
  EXPECT_DOUBLE_EQ(params.scale, 4.0 / 255);
  EXPECT_EQ(params.zero_point, 64);  // round(255 / 4) = round(63.75)
}

TEST(ChooseQuantizationParamsTest, RangeIsWidenedToContainZero) {
  const QuantizationParams positive = ChooseQuantizationParams(2.0, 4.0);
  EXPECT_DOUBLE_EQ(positive.scale, 4.0 / 255);
  EXPECT_EQ(positive.zero_point, 0);
  const QuantizationParams negative = ChooseQuantizationParams(-4.0, -2.0, QuantizedType::Int8());
  EXPECT_DOUBLE_EQ(negative.scale, 4.0 / 255);
  EXPECT_EQ(negative.zero_point, 127);
}

// Over random ranges and every type: zero point in range, 0.0 exact, the range's ends within
// half a step of representable values.
TEST(ChooseQuantizationParamsTest, RandomRangesCoverTheirEndsWithinHalfAStep) {
  std::mt19937 random(1);
  std::uniform_real_distribution<double> log_size(-20, 20), uniform(-1, 1);
  for (int bits = 2; bits <= 8; ++bits) {
    for (bool is_signed : {false, true}) {
      const QuantizedType type{is_signed, bits};
      for (int i = 0; i < 2000; ++i) {
        double min = uniform(random) * std::exp2(log_size(random));
        double max = uniform(random) * std::exp2(log_size(random));
        if (min > max) std::swap(min, max);
        const QuantizationParams params = ChooseQuantizationParams(min, max, type);
        ASSERT_GE(params.zero_point, type.min());
        ASSERT_LE(params.zero_point, type.max());
        const double low = params.scale * (type.min() - params.zero_point);
        const double high = params.scale * (type.max() - params.zero_point);
        const double step = params.scale;
        ASSERT_LE(low, std::min(min, 0.0) + step / 2 * (1 + 1e-12));
        ASSERT_GE(high, std::max(max, 0.0) - step / 2 * (1 + 1e-12));
        ASSERT_NEAR(high - low, std::max(max, 0.0) - std::min(min, 0.0), step * 1e-9);
      }
    }
  }
}

TEST(ChooseQuantizationParamsTest, SymmetricZeroPoints) {
  const QuantizationParams int8 =
      ChooseQuantizationParams(-0.5, 2.54, QuantizedType::Int8(), QuantizationMode::kSymmetric);
  EXPECT_EQ(int8.zero_point, 0);
  EXPECT_DOUBLE_EQ(int8.scale, 2.54 / 127);
  const QuantizationParams uint8 =
      ChooseQuantizationParams(-3.0, 1.0, QuantizedType::Uint8(), QuantizationMode::kSymmetric);
  EXPECT_EQ(uint8.zero_point, 128);
  EXPECT_DOUBLE_EQ(uint8.scale, 3.0 / 127);
  const QuantizationParams int4 =
      ChooseQuantizationParams(-1.0, 0.5, QuantizedType::Signed(4), QuantizationMode::kSymmetric);
  EXPECT_EQ(int4.zero_point, 0);
  EXPECT_DOUBLE_EQ(int4.scale, 1.0 / 7);
  const QuantizationParams uint4 =
      ChooseQuantizationParams(-1.0, 0.5, QuantizedType::Unsigned(4), QuantizationMode::kSymmetric);
  EXPECT_EQ(uint4.zero_point, 8);
  EXPECT_DOUBLE_EQ(uint4.scale, 1.0 / 7);
}

TEST(ChooseQuantizationParamsTest, NarrowTypeRanges) {
  EXPECT_EQ(QuantizedType::Unsigned(2).min(), 0);
  EXPECT_EQ(QuantizedType::Unsigned(2).max(), 3);
  EXPECT_EQ(QuantizedType::Signed(2).min(), -2);
  EXPECT_EQ(QuantizedType::Signed(2).max(), 1);
  EXPECT_EQ(QuantizedType::Signed(7).min(), -64);
  EXPECT_EQ(QuantizedType::Unsigned(5).max(), 31);
  const QuantizationParams params = ChooseQuantizationParams(-1.0, 2.0, QuantizedType::Unsigned(2));
  EXPECT_DOUBLE_EQ(params.scale, 1.0);
  EXPECT_EQ(params.zero_point, 1);
}

TEST(ChooseQuantizationParamsTest, DegenerateRangeIsExactZero) {
  for (QuantizationMode mode : {QuantizationMode::kAsymmetric, QuantizationMode::kSymmetric}) {
    for (QuantizedType type : {QuantizedType::Uint8(), QuantizedType::Int8()}) {
      const QuantizationParams params = ChooseQuantizationParams(0.0, 0.0, type, mode);
      EXPECT_EQ(params.scale, 1.0);
      const float zeros[3] = {0.0f, -0.0f, 0.0f};
      std::int8_t signed_q[3];
      std::uint8_t unsigned_q[3];
      float back[3];
      if (type.is_signed) {
        Quantize(zeros, 3, params, signed_q);
        Dequantize(signed_q, 3, params, back);
      } else {
        Quantize(zeros, 3, params, unsigned_q);
        Dequantize(unsigned_q, 3, params, back);
      }
      for (float value : back) EXPECT_EQ(value, 0.0f);
    }
  }
}

TEST(ChooseQuantizationParamsTest, PerChannelMatchesPerTensor) {
  const std::vector<float> min = {-1.0f, 0.0f, -0.25f, 0.0f};
  const std::vector<float> max = {0.5f, 0.0f, 3.0f, 2.0f};
  const std::vector<QuantizationParams> params = ChooseQuantizationParamsPerChannel(min, max);
  ASSERT_EQ(params.size(), 4u);
  for (std::size_t c = 0; c < min.size(); ++c) {
    const QuantizationParams expected = ChooseQuantizationParams(
        min[c], max[c], QuantizedType::Int8(), QuantizationMode::kSymmetric);
    EXPECT_EQ(params[c].scale, expected.scale);
    EXPECT_EQ(params[c].zero_point, expected.zero_point);
  }
  EXPECT_EQ(params[1].scale, 1.0);  // the all-zero channel
}

TEST(ChooseQuantizationParamsTest, BadArgumentsAreNamed) {
  ExpectError([] { ChooseQuantizationParams(kNaN, 1.0); }, "min");
  ExpectError([] { ChooseQuantizationParams(0.0, kNaN); }, "max");
  ExpectError([] { ChooseQuantizationParams(-kInfinity, 1.0); }, "min");
  ExpectError([] { ChooseQuantizationParams(0.0, kInfinity); }, "max");
  const std::string message = ExpectError([] { ChooseQuantizationParams(2.0, 1.0); }, "min");
  EXPECT_NE(message.find("must not exceed max"), std::string::npos) << message;
  ExpectError([] { ChooseQuantizationParams(-1.0, 1.0, QuantizedType::Unsigned(1)); }, "type.bits");
  ExpectError([] { ChooseQuantizationParams(-1.0, 1.0, QuantizedType::Signed(9)); }, "type.bits");
  ExpectError(
      [] {
        ChooseQuantizationParams(-1.0, 1.0, QuantizedType::Uint8(),
                                 static_cast<QuantizationMode>(7));
      },
      "mode");
  // max - min overflows, and a range so small that the scale is subnormal.
  ExpectError([] { ChooseQuantizationParams(-1e308, 1e308); }, "max");
  ExpectError([] { ChooseQuantizationParams(0.0, 1e-310); }, "max");
  ExpectError([] { ChooseQuantizationParamsPerChannel({0.0f, 1.0f}, {1.0f, 0.5f}); }, "min[1]");
  ExpectError(
      [] { ChooseQuantizationParamsPerChannel({0.0f}, {std::numeric_limits<float>::quiet_NaN()}); },
      "max[0]");
  ExpectError([] { ChooseQuantizationParamsPerChannel({0.0f, 0.0f}, {1.0f}); }, "max");
}

// ---- QuantizeMultiplier ----

constexpr double kRelativeBound = 1.0 / (1u << 30) / 2;  // 2^-31, half the 2^-30 asked for

void CheckMultiplier(double real, double* max_relative_error) {
  const FixedPointMultiplier m = QuantizeMultiplier(real);
  ASSERT_GE(m.multiplier, 1 << 30) << real;
  ASSERT_GE(m.exponent, -31) << real;
  ASSERT_LE(m.exponent, 30) << real;
  const double relative = std::abs(RealValue(m) - real) / real;
  ASSERT_LE(relative, kRelativeBound) << real;
  *max_relative_error = std::max(*max_relative_error, relative);
}

TEST(QuantizeMultiplierTest, RelativeErrorBelowTwoToMinus31) {
  double max_relative_error = 0;
  // Edges: powers of two, the doubles just below and above them, 1 and 0.5.
  for (int e = -31; e < 30; ++e) {
    const double power = std::ldexp(1.0, e);
    CheckMultiplier(power, &max_relative_error);
    CheckMultiplier(std::nextafter(power, 0.0), &max_relative_error);
    CheckMultiplier(std::nextafter(power, kInfinity), &max_relative_error);
    // Just below 2^e by less than half a Q31 step: rounds up to 2^30 * 2^(e + 1 - 31).
    const FixedPointMultiplier up = QuantizeMultiplier(power * (1 - std::ldexp(1.0, -33)));
    EXPECT_EQ(up.multiplier, 1 << 30);
    EXPECT_EQ(up.exponent, e + 1);
  }
  CheckMultiplier(std::nextafter(std::ldexp(1.0, 30), 0.0) * (1 - std::ldexp(1.0, -31)),
                  &max_relative_error);
  EXPECT_EQ(QuantizeMultiplier(1.0).multiplier, 1 << 30);
  EXPECT_EQ(QuantizeMultiplier(1.0).exponent, 1);
  EXPECT_EQ(QuantizeMultiplier(0.5).exponent, 0);
  // The wrapping case of the hand-written copy (-1073741824 for 1.5).
  EXPECT_EQ(QuantizeMultiplier(1.5).multiplier, 3 << 29);
  EXPECT_EQ(QuantizeMultiplier(1.5).exponent, 1);
  // Log-uniform over [2^-31, 2^30).
  std::mt19937_64 random(2);
  std::uniform_real_distribution<double> log2(-31, 30);
  for (int i = 0; i < 1000000; ++i) CheckMultiplier(std::exp2(log2(random)), &max_relative_error);
  std::printf("QuantizeMultiplier: max relative error %.3g = 2^%.2f\n", max_relative_error,
              std::log2(max_relative_error));
}

TEST(QuantizeMultiplierTest, SmallerThanOneIsTheSameMultiplierAsAShift) {
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> log2(-32, 0);
  for (int i = 0; i < 10000; ++i) {
    const double real = std::exp2(log2(random));
    if (real < std::ldexp(1.0, -32)) continue;
    const FixedPointMultiplier exponent_form = QuantizeMultiplier(real);
    if (exponent_form.exponent > 0) continue;  // rounded up to 1
    const FixedPointMultiplierAndShift shift_form = QuantizeMultiplierSmallerThanOne(real);
    ASSERT_EQ(shift_form.multiplier, exponent_form.multiplier);
    ASSERT_EQ(shift_form.right_shift, -exponent_form.exponent);
  }
  EXPECT_EQ(QuantizeMultiplierSmallerThanOne(0.5).right_shift, 0);
  EXPECT_EQ(QuantizeMultiplierSmallerThanOne(std::ldexp(1.0, -32)).right_shift, 31);
  ExpectError([] { QuantizeMultiplierSmallerThanOne(1.0); }, "real_multiplier");
  ExpectError([] { QuantizeMultiplierSmallerThanOne(std::nextafter(1.0, 0.0)); },
              "real_multiplier");
}

TEST(QuantizeMultiplierTest, BadMultipliersAreNamed) {
  // The hand-written copy looped forever on 0 and on negatives and gave shift 39 for 1e-12.
  for (double bad : {0.0, -0.0, -1.0, -1e-300, kNaN, kInfinity, -kInfinity, 1e-12,
                     std::ldexp(1.0, -33), std::ldexp(1.0, 30), 1e10, 1e300, 4.9e-324}) {
    const std::string message = ExpectError([&] { QuantizeMultiplier(bad); }, "real_multiplier");
    EXPECT_NE(message.find("must be"), std::string::npos) << message;
  }
  EXPECT_NE(ExpectError([] { QuantizeMultiplier(1e-12); }, "real_multiplier").find("1e-12"),
            std::string::npos);
  EXPECT_NE(ExpectError([] { QuantizeMultiplier(0.0); }, "real_multiplier").find("positive"),
            std::string::npos);
  ExpectError([] { QuantizeMultipliers({0.5, 2.0, 0.0}); }, "real_multipliers[2]");
  ExpectError([] { QuantizeMultipliers({-0.5}); }, "real_multipliers[0]");
}

TEST(QuantizeMultiplierTest, PerChannelVectorsMatchTheScalarFunction) {
  const std::vector<double> reals = {1e-9, 0.25, 0.7, 1.0, 1.5, 3e5};
  const FixedPointMultipliers vectors = QuantizeMultipliers(reals);
  ASSERT_EQ(vectors.multipliers.size(), reals.size());
  ASSERT_EQ(vectors.exponents.size(), reals.size());
  for (std::size_t c = 0; c < reals.size(); ++c) {
    EXPECT_EQ(vectors.multipliers[c], QuantizeMultiplier(reals[c]).multiplier);
    EXPECT_EQ(vectors.exponents[c], QuantizeMultiplier(reals[c]).exponent);
  }
}

// ---- Applying the multiplier through GEMMs ----

// An independent 64-bit model of the stage: wrapping left shift, SRDHM (ties away from zero),
// RoundingDivideByPOT (ties away from zero), plus the offset.
std::int32_t ApplyReference(std::int32_t acc, const FixedPointMultiplier& m, std::int32_t offset) {
  const int left = std::max(m.exponent, 0), right = std::max(-m.exponent, 0);
  const auto shifted = static_cast<std::int32_t>(static_cast<std::uint32_t>(acc) << left);
  const std::int64_t product = std::int64_t{shifted} * m.multiplier;
  const std::int64_t nudge = product >= 0 ? (std::int64_t{1} << 30) : 1 - (std::int64_t{1} << 30);
  const auto high = static_cast<std::int32_t>((product + nudge) / (std::int64_t{1} << 31));
  const std::int64_t mask = (std::int64_t{1} << right) - 1;
  const std::int64_t remainder = high & mask;
  const std::int64_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
  return static_cast<std::int32_t>((high >> right) + (remainder > threshold ? 1 : 0) + offset);
}

// The bound of lowbit/public/quantization.h: the SRDHM's rounding, the right shift's if there is
// one, and the multiplier's relative error.
double ApplyBound(std::int64_t acc, double real, const FixedPointMultiplier& m) {
  const double shift_rounding = m.exponent < 0 ? std::ldexp(0.5, m.exponent) : 0.0;
  return 0.5 + shift_rounding + std::abs(static_cast<double>(acc) * real) * std::ldexp(1.0, -31);
}

struct Accumulators {
  int rows, depth, cols;
  std::vector<std::uint8_t> lhs, rhs;
  std::int32_t lhs_offset, rhs_offset;
  std::vector<std::int64_t> acc;  // row-major
};

Accumulators RandomGemm(std::mt19937* random) {
  std::uniform_int_distribution<int> size(1, 40), byte(0, 255), offset(-255, 0);
  Accumulators g{
      size(*random), size(*random), size(*random), {}, {}, offset(*random), offset(*random), {}};
  g.lhs.resize(g.rows * g.depth);
  g.rhs.resize(g.depth * g.cols);
  for (auto& v : g.lhs) v = static_cast<std::uint8_t>(byte(*random));
  for (auto& v : g.rhs) v = static_cast<std::uint8_t>(byte(*random));
  g.acc.assign(g.rows * g.cols, 0);
  for (int r = 0; r < g.rows; ++r) {
    for (int c = 0; c < g.cols; ++c) {
      for (int k = 0; k < g.depth; ++k) {
        g.acc[r * g.cols + c] += std::int64_t{g.lhs[r * g.depth + k] + g.lhs_offset} *
                                 (g.rhs[k * g.cols + c] + g.rhs_offset);
      }
    }
  }
  return g;
}

// A multiplier drawn log-uniformly among those for which acc << exponent and acc * m fit int32.
double RandomMultiplier(const Accumulators& g, std::mt19937* random) {
  std::int64_t largest = 1;
  for (std::int64_t a : g.acc) largest = std::max(largest, std::abs(a));
  const double top = std::min(29.0, std::floor(std::log2(2147483647.0 / largest)) - 1);
  std::uniform_real_distribution<double> log2(-31, top);
  return std::exp2(log2(*random));
}

template <typename Pipeline>
std::vector<std::int32_t> RunGemm(const Accumulators& g, Kernel kernel, int threads,
                                  const Pipeline& pipeline) {
  Context context;
  context.set_kernel(kernel);
  context.set_max_num_threads(threads);
  const MatrixMap<const std::uint8_t> lhs(g.lhs.data(), g.rows, g.depth, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs(g.rhs.data(), g.depth, g.cols, Order::kRowMajor);
  std::vector<std::int32_t> result(g.rows * g.cols);
  MatrixMap<std::int32_t> result_map(result.data(), g.rows, g.cols, Order::kRowMajor);
  GemmWithOutputPipeline(&context, lhs, rhs, &result_map, g.lhs_offset, g.rhs_offset, pipeline);
  return result;
}

TEST(QuantizeMultiplierGemmTest, EveryKernelMatchesTheReferenceAndTheRealProduct) {
  std::mt19937 random(4);
  std::uniform_int_distribution<int> offset_value(-100, 100);
  double worst = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const Accumulators g = RandomGemm(&random);
    const double real = RandomMultiplier(g, &random);
    const FixedPointMultiplier m = QuantizeMultiplier(real);
    const std::int32_t offset = offset_value(random);
    const auto pipeline = std::make_tuple(
        OutputStageScaleInt32ByFixedPointAndExponent{m.multiplier, m.exponent, offset});
    for (Kernel kernel : AvailableKernels()) {
      for (int threads : {1, 2}) {
        const std::vector<std::int32_t> result = RunGemm(g, kernel, threads, pipeline);
        for (std::size_t i = 0; i < result.size(); ++i) {
          const auto acc = static_cast<std::int32_t>(g.acc[i]);
          ASSERT_EQ(result[i], ApplyReference(acc, m, offset))
              << KernelName(kernel) << " real " << real << " acc " << acc;
          const double exact = static_cast<double>(acc) * real + offset;
          const double error = std::abs(result[i] - exact);
          ASSERT_LE(error, ApplyBound(acc, real, m)) << "real " << real << " acc " << acc;
          // Below 2^29 the bound is under 1: at most 1 from the correctly rounded result.
          if (std::abs(exact) < std::ldexp(1.0, 29)) {
            ASSERT_LE(std::abs(result[i] - std::round(exact)), 1.0);
          }
          worst = std::max(worst, error);
        }
      }
    }
  }
  std::printf("applied multipliers: worst |result - acc * m - offset| %.4f\n", worst);
}

TEST(QuantizeMultiplierGemmTest, PerChannelStageAndShiftFormMatchTheScalarStage) {
  std::mt19937 random(5);
  for (int trial = 0; trial < 20; ++trial) {
    const Accumulators g = RandomGemm(&random);
    std::vector<double> reals(g.rows);
    for (auto& real : reals) real = std::min(RandomMultiplier(g, &random), 0.99);
    const FixedPointMultipliers vectors = QuantizeMultipliers(reals);
    const auto per_channel = std::make_tuple(OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
        VectorMap<const std::int32_t>(vectors.multipliers.data(), g.rows),
        VectorMap<const std::int32_t>(vectors.exponents.data(), g.rows), 3, ChannelAxis::kRow});
    for (Kernel kernel : AvailableKernels()) {
      const std::vector<std::int32_t> result = RunGemm(g, kernel, 1, per_channel);
      for (int r = 0; r < g.rows; ++r) {
        const FixedPointMultiplier m = QuantizeMultiplier(reals[r]);
        const FixedPointMultiplierAndShift shift_form = QuantizeMultiplierSmallerThanOne(reals[r]);
        const auto quantize_down = std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{
            shift_form.multiplier, shift_form.right_shift, 3});
        const std::vector<std::int32_t> shifted = RunGemm(g, kernel, 1, quantize_down);
        for (int c = 0; c < g.cols; ++c) {
          const auto acc = static_cast<std::int32_t>(g.acc[r * g.cols + c]);
          ASSERT_EQ(result[r * g.cols + c], ApplyReference(acc, m, 3)) << KernelName(kernel);
          ASSERT_EQ(shifted[r * g.cols + c], result[r * g.cols + c]) << KernelName(kernel);
        }
      }
    }
  }
}

// ---- Quantize and Dequantize ----

TEST(QuantizeTest, RoundsHalfAwayFromZeroAndSaturates) {
  const QuantizationParams params{0.5, 10};
  const float values[] = {0.25f,
                          -0.25f,
                          0.75f,
                          -0.75f,
                          0.2f,
                          1000.0f,
                          -1000.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  std::uint8_t unsigned_q[9];
  Quantize(values, 9, params, unsigned_q);
  const std::uint8_t expected_unsigned[] = {11, 9, 12, 8, 10, 255, 0, 255, 0};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(unsigned_q[i], expected_unsigned[i]) << i;
  std::int8_t signed_q[9];
  Quantize(values, 9, params, signed_q);
  const std::int8_t expected_signed[] = {11, 9, 12, 8, 10, 127, -128, 127, -128};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(signed_q[i], expected_signed[i]) << i;
  // A narrow type saturates to its own range.
  std::uint8_t four_bits[9];
  Quantize(values, 9, QuantizationParams{0.5, 3}, four_bits, QuantizedType::Unsigned(4));
  EXPECT_EQ(four_bits[5], 15);
  EXPECT_EQ(four_bits[6], 0);
  std::int8_t signed_four_bits[9];
  Quantize(values, 9, QuantizationParams{0.5, 0}, signed_four_bits, QuantizedType::Signed(4));
  EXPECT_EQ(signed_four_bits[5], 7);
  EXPECT_EQ(signed_four_bits[6], -8);
}

// Random ranges, params and values: q is the double-precision reference, and dequantizing
// gives back every value inside the representable range within half a step.
TEST(QuantizeTest, RoundTripsWithinHalfAStep) {
  std::mt19937 random(6);
  std::uniform_real_distribution<double> log_size(-12, 12), uniform(-1, 1);
  for (int trial = 0; trial < 400; ++trial) {
    const bool is_signed = trial % 2 == 1;
    const int bits = 2 + trial % 7;
    const QuantizedType type{is_signed, bits};
    double min = uniform(random) * std::exp2(log_size(random));
    double max = uniform(random) * std::exp2(log_size(random));
    if (min > max) std::swap(min, max);
    const QuantizationParams params = ChooseQuantizationParams(
        min, max, type,
        trial % 3 == 0 ? QuantizationMode::kSymmetric : QuantizationMode::kAsymmetric);
    const double low = params.scale * (type.min() - params.zero_point);
    const double high = params.scale * (type.max() - params.zero_point);
    std::vector<float> values(300);
    for (auto& v : values) v = static_cast<float>(low + (high - low) * (uniform(random) + 1) / 2);
    std::vector<std::int32_t> quantized(values.size());
    std::vector<float> back(values.size());
    if (is_signed) {
      std::vector<std::int8_t> q(values.size());
      Quantize(values.data(), values.size(), params, q.data(), type);
      Dequantize(q.data(), q.size(), params, back.data());
      quantized.assign(q.begin(), q.end());
    } else {
      std::vector<std::uint8_t> q(values.size());
      Quantize(values.data(), values.size(), params, q.data(), type);
      Dequantize(q.data(), q.size(), params, back.data());
      quantized.assign(q.begin(), q.end());
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double reference = std::min<double>(
          std::max<double>(std::round(values[i] / params.scale) + params.zero_point, type.min()),
          type.max());
      ASSERT_EQ(quantized[i], reference);
      // Half a step, plus the float rounding of the dequantized value.
      ASSERT_LE(std::abs(back[i] - double{values[i]}),
                params.scale / 2 + std::abs(double{values[i]}) * 1e-7 + 1e-300)
          << "value " << values[i] << " scale " << params.scale;
    }
  }
}

// The vectorized rounding against std::round, at the values where it decides: exact ties and
// their float neighbours, steps just inside and beyond the type's bounds, huge values and
// infinities, for every zero point of uint8 and int8; buffers long enough for the vector loop,
// with a tail.
TEST(QuantizeTest, MatchesStdRoundAtTiesBoundsAndInfinities) {
  std::vector<float> values;
  for (int step = -300; step <= 300; ++step) {
    const float tie = (static_cast<float>(step) + 0.5f) * 0.25f;
    values.insert(values.end(), {tie, std::nextafter(tie, -1e9f), std::nextafter(tie, 1e9f),
                                 static_cast<float>(step) * 0.25f});
  }
  values.insert(values.end(), {1e30f, -1e30f, 3e9f, -3e9f, std::numeric_limits<float>::max(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::infinity(), 0.0f, -0.0f});
  for (int zero_point = -128; zero_point <= 255; ++zero_point) {
    const QuantizationParams params{0.25, zero_point};
    const auto reference = [&](float value, const QuantizedType& type) {
      return std::min<double>(
          std::max<double>(std::round(value / params.scale) + zero_point, type.min()), type.max());
    };
    if (zero_point >= 0) {
      std::vector<std::uint8_t> q(values.size());
      Quantize(values.data(), values.size(), params, q.data());
      for (std::size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(q[i], reference(values[i], QuantizedType::Uint8()))
            << values[i] << " with zero point " << zero_point;
      }
    }
    if (zero_point <= 127) {
      std::vector<std::int8_t> q(values.size());
      Quantize(values.data(), values.size(), params, q.data());
      for (std::size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(q[i], reference(values[i], QuantizedType::Int8()))
            << values[i] << " with zero point " << zero_point;
      }
    }
  }
}

TEST(QuantizeTest, BadArgumentsAreNamedAndNothingIsWritten) {
  const float values[] = {0.5f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  std::uint8_t unsigned_q[3] = {7, 7, 7};
  std::int8_t signed_q[3] = {7, 7, 7};
  float back[3];
  const QuantizationParams good{0.5, 10};
  ExpectError([&] { Quantize(values, 3, good, unsigned_q); }, "values[1]");
  for (std::uint8_t q : unsigned_q) EXPECT_EQ(q, 7);  // rejected before any write
  ExpectError([&] { Quantize(values, 3, good, signed_q); }, "values[1]");
  for (std::int8_t q : signed_q) EXPECT_EQ(q, 7);
  for (double scale : {0.0, -1.0, kNaN, kInfinity}) {
    ExpectError(
        [&] {
          Quantize(values, 1, QuantizationParams{scale, 0}, unsigned_q);
        },
        "params.scale");
    ExpectError(
        [&] {
          Dequantize(unsigned_q, 1, QuantizationParams{scale, 0}, back);
        },
        "params.scale");
    ExpectError(
        [&] {
          Dequantize(signed_q, 1, QuantizationParams{scale, 0}, back);
        },
        "params.scale");
  }
  ExpectError(
      [&] {
        Quantize(values, 1, QuantizationParams{1.0, 256}, unsigned_q);
      },
      "params.zero_point");
  ExpectError(
      [&] {
        Quantize(values, 1, QuantizationParams{1.0, -1}, unsigned_q);
      },
      "params.zero_point");
  ExpectError(
      [&] {
        Quantize(values, 1, QuantizationParams{1.0, 128}, signed_q);
      },
      "params.zero_point");
  ExpectError(
      [&] {
        Quantize(values, 1, QuantizationParams{1.0, 16}, unsigned_q, QuantizedType::Unsigned(4));
      },
      "params.zero_point");
  ExpectError([&] { Quantize(values, 1, good, unsigned_q, QuantizedType::Int8()); },
              "type.is_signed");
  ExpectError(
      [&] {
        Quantize(values, 1, QuantizationParams{1.0, 0}, signed_q, QuantizedType::Uint8());
      },
      "type.is_signed");
  ExpectError([&] { Quantize(values, 1, good, unsigned_q, QuantizedType::Unsigned(9)); },
              "type.bits");
  ExpectError([&] { Quantize(nullptr, 1, good, unsigned_q); }, "values");
  ExpectError([&] { Quantize(values, 1, good, static_cast<std::uint8_t*>(nullptr)); }, "quantized");
  ExpectError([&] { Dequantize(static_cast<const std::int8_t*>(nullptr), 1, good, back); },
              "quantized");
  ExpectError([&] { Dequantize(unsigned_q, 1, good, nullptr); }, "values");
  // A count of 0 needs no memory.
  Quantize(nullptr, 0, good, static_cast<std::uint8_t*>(nullptr));
  Dequantize(static_cast<const std::uint8_t*>(nullptr), 0, good, nullptr);
}

}  // namespace
}  // namespace lowbit
