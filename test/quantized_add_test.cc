// Tests of lowbit/public/quantized_add.h against a double-precision reference: random scales and
// every zero point, the extremes of the types and of the scale ratios, per-axis against per-tensor
// inputs, the errors of every bad argument; and the add's output stage in a GEMM against the
// elementwise add.
#include "lowbit/public/quantized_add.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "lowbit/lowbit.h"
#include "lowbit/public/error.h"
#include "test/test_util.h"

namespace lowbit {
namespace {

// Runs `call` and expects a lowbit::Error whose argument is `argument`.
template <typename Call>
void ExpectError(Call call, const std::string& argument) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(argument), std::string::npos) << error.what();
    return;
  }
  ADD_FAILURE() << "no lowbit::Error for " << argument;
}

QuantizedAddInput PerTensor(QuantizedType type, double scale, std::int32_t zero_point) {
  return {type, {{scale, zero_point}}, ChannelAxis::kRow};
}

// clamp(round((real lhs + real rhs) / output scale) + output zero point), in double (each
// scale divided by the output's first, so that scales near DBL_MAX do not overflow).
std::int32_t Reference(std::int32_t lhs, const QuantizationParams& lhs_params, std::int32_t rhs,
                       const QuantizationParams& rhs_params, const QuantizationParams& output,
                       std::int32_t output_min, std::int32_t output_max) {
  const double steps = lhs_params.scale / output.scale * (lhs - lhs_params.zero_point) +
                       rhs_params.scale / output.scale * (rhs - rhs_params.zero_point);
  const double result = std::round(steps) + output.zero_point;
  return static_cast<std::int32_t>(
      std::min<double>(std::max<double>(result, output_min), output_max));
}

// Every value of a type, in its storage type.
template <typename Data>
std::vector<Data> AllValues() {
  std::vector<Data> values;
  for (int v = std::numeric_limits<Data>::min(); v <= std::numeric_limits<Data>::max(); ++v) {
    values.push_back(static_cast<Data>(v));
  }
  return values;
}

template <typename Data>
constexpr QuantizedType TypeOf() {
  return std::is_signed<Data>::value ? QuantizedType::Int8() : QuantizedType::Uint8();
}

struct Tally {
  std::int64_t results = 0;
  std::int64_t exact = 0;
  int worst = 0;
};

// Adds every lhs value to every rhs value (a 256 x 256 matrix) with a per-tensor plan and
// compares each result with the reference.
template <typename Lhs, typename Rhs, typename Output>
void CheckAllPairs(const QuantizationParams& lhs_params, const QuantizationParams& rhs_params,
                   const QuantizationParams& output, std::int32_t output_min,
                   std::int32_t output_max, Tally* tally) {
  const QuantizedAddPlan plan =
      MakeQuantizedAddPlan(PerTensor(TypeOf<Lhs>(), lhs_params.scale, lhs_params.zero_point),
                           PerTensor(TypeOf<Rhs>(), rhs_params.scale, rhs_params.zero_point),
                           output, TypeOf<Output>(), output_min, output_max);
  const std::vector<Lhs> lhs_values = AllValues<Lhs>();
  const std::vector<Rhs> rhs_values = AllValues<Rhs>();
  std::vector<Lhs> lhs;
  std::vector<Rhs> rhs;
  for (Lhs l : lhs_values) {
    for (Rhs r : rhs_values) {
      lhs.push_back(l);
      rhs.push_back(r);
    }
  }
  std::vector<Output> result(lhs.size());
  QuantizedAdd(plan, lhs.data(), rhs.data(), 256, 256, result.data());
  for (std::size_t i = 0; i < lhs.size(); ++i) {
    const std::int32_t expected =
        Reference(lhs[i], lhs_params, rhs[i], rhs_params, output, output_min, output_max);
    const int error = std::abs(std::int32_t{result[i]} - expected);
    ++tally->results;
    tally->exact += error == 0;
    if (error > tally->worst) {
      tally->worst = error;
      ASSERT_LE(error, 1) << "lhs " << int{lhs[i]} << " at " << lhs_params.scale << ", "
                          << lhs_params.zero_point << "; rhs " << int{rhs[i]} << " at "
                          << rhs_params.scale << ", " << rhs_params.zero_point << "; output "
                          << output.scale << ", " << output.zero_point;
    }
  }
}

template <typename Lhs, typename Rhs, typename Output>
void CheckRandomCases(int cases, std::mt19937* random, Tally* tally, int* rejected) {
  // Scales log-uniform over [2^-20, 2^4], independently for each input and the output.
  std::uniform_real_distribution<double> log_scale(-20, 4);
  const QuantizedType lhs_type = TypeOf<Lhs>(), rhs_type = TypeOf<Rhs>(),
                      output_type = TypeOf<Output>();
  for (int i = 0; i < cases; ++i) {
    // Over 256 cases each input and the output take every zero point of their type once.
    const QuantizationParams lhs{std::exp2(log_scale(*random)), lhs_type.min() + (i * 37) % 256};
    const QuantizationParams rhs{std::exp2(log_scale(*random)), rhs_type.min() + (i * 101) % 256};
    const QuantizationParams output{std::exp2(log_scale(*random)), output_type.min() + i % 256};
    // Every fourth case fuses a ReLU: the output zero point as the lower bound.
    const std::int32_t output_min = i % 4 == 3 ? output.zero_point : output_type.min();
    // The plan rejects an output scale so fine that an input step is more than 2^29 output
    // steps, beyond this test's range; it must accept everything up to that.
    const double ratio = (lhs.scale + rhs.scale) / output.scale;
    try {
      CheckAllPairs<Lhs, Rhs, Output>(lhs, rhs, output, output_min, output_type.max(), tally);
    } catch (const Error& error) {
      EXPECT_EQ(error.argument(), "output.scale") << error.what();
      EXPECT_GT(ratio, std::exp2(29)) << error.what();
      ++*rejected;
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(QuantizedAddTest, RandomScalesAndEveryZeroPointWithinOneLsb) {
  std::mt19937 random(20);
  Tally tally;
  int rejected = 0;
  constexpr int kCases = 256;  // for each of the 8 type combinations, every input pair
  CheckRandomCases<std::uint8_t, std::uint8_t, std::uint8_t>(kCases, &random, &tally, &rejected);
  CheckRandomCases<std::uint8_t, std::uint8_t, std::int8_t>(kCases, &random, &tally, &rejected);
  CheckRandomCases<std::uint8_t, std::int8_t, std::uint8_t>(kCases, &random, &tally, &rejected);
  CheckRandomCases<std::uint8_t, std::int8_t, std::int8_t>(kCases, &random, &tally, &rejected);
  CheckRandomCases<std::int8_t, std::uint8_t, std::uint8_t>(kCases, &random, &tally, &rejected);
  CheckRandomCases<std::int8_t, std::uint8_t, std::int8_t>(kCases, &random, &tally, &rejected);
  CheckRandomCases<std::int8_t, std::int8_t, std::uint8_t>(kCases, &random, &tally, &rejected);
  CheckRandomCases<std::int8_t, std::int8_t, std::int8_t>(kCases, &random, &tally, &rejected);
  EXPECT_LE(tally.worst, 1);
  std::printf(
      "quantized add: %lld results of %d scale cases (%d rejected: output scale too fine),"
      " worst error %d LSB, exact %.4f%%\n",
      static_cast<long long>(tally.results), 8 * kCases, rejected, tally.worst,
      100.0 * static_cast<double>(tally.exact) / static_cast<double>(tally.results));
}

// Scales of ordinary residual adds (every scale within a factor 4 of the output's): nearly
// every result is the correctly rounded sum.
TEST(QuantizedAddTest, ComparableScalesAreAlmostAlwaysExact) {
  std::mt19937 random(21);
  std::uniform_real_distribution<double> log_scale(-2, 2);
  Tally tally;
  for (int i = 0; i < 64; ++i) {
    const double base = std::exp2(std::uniform_real_distribution<double>(-20, 4)(random));
    CheckAllPairs<std::uint8_t, std::int8_t, std::uint8_t>(
        {base * std::exp2(log_scale(random)), (i * 37) % 256},
        {base * std::exp2(log_scale(random)), -128 + (i * 101) % 256},
        {base * std::exp2(log_scale(random)), (i * 7) % 256}, 0, 255, &tally);
    if (HasFatalFailure()) return;
  }
  EXPECT_LE(tally.worst, 1);
  const double exact = static_cast<double>(tally.exact) / static_cast<double>(tally.results);
  std::printf("comparable scales: worst error %d LSB, exact %.5f%%\n", tally.worst, 100 * exact);
  EXPECT_GT(exact, 0.999);
}

// The largest |sum| the plan allows, 255 (A_lhs + A_rhs), fits in int32 for every plan (for a
// split plan, the same of the high parts, with which the add starts).
void ExpectSumFits(const QuantizedAddPlan& plan) {
  const std::int64_t lhs =
      *std::max_element(plan.lhs_multipliers.begin(), plan.lhs_multipliers.end());
  const std::int64_t rhs =
      *std::max_element(plan.rhs_multipliers.begin(), plan.rhs_multipliers.end());
  EXPECT_LE(255 * (lhs + rhs), std::numeric_limits<std::int32_t>::max());
  EXPECT_LE(plan.output_exponent, -8);
}

// Inputs at the ends of their types with zero points at the other end (|q - z| = 255, the
// largest products), under extreme ratios of scales and the finest output scale the plan
// accepts: an overflow anywhere would be far from the reference.
TEST(QuantizedAddTest, ExtremesDoNotOverflow) {
  const std::vector<double> scales = {std::exp2(-60), std::exp2(-20), 0.37, 1.0,
                                      std::exp2(4),   std::exp2(40)};
  int checked = 0, split = 0, rejected = 0;
  for (double lhs_scale : scales) {
    for (double rhs_scale : scales) {
      // From far too fine (rejected) to coarse, in quarter octaves.
      for (int quarter = -4 * 32; quarter <= 4 * 20; ++quarter) {
        const double output_scale = (lhs_scale + rhs_scale) * std::exp2(quarter / 4.0);
        for (std::int32_t lhs_zero : {0, 255}) {
          for (std::int32_t rhs_zero : {-128, 127}) {
            for (std::int32_t output_zero : {-128, 0, 127}) {
              const QuantizationParams lhs{lhs_scale, lhs_zero}, rhs{rhs_scale, rhs_zero},
                  output{output_scale, output_zero};
              QuantizedAddPlan plan;
              try {
                plan = MakeQuantizedAddPlan(PerTensor(QuantizedType::Uint8(), lhs_scale, lhs_zero),
                                            PerTensor(QuantizedType::Int8(), rhs_scale, rhs_zero),
                                            output, QuantizedType::Int8());
              } catch (const Error& error) {
                ASSERT_EQ(error.argument(), "output.scale");
                ASSERT_GT((lhs_scale + rhs_scale) / output_scale, std::exp2(29));
                ++rejected;
                continue;
              }
              ExpectSumFits(plan);
              split += plan.low_bits > 0;
              const std::vector<std::uint8_t> lhs_data = {0, 0, 255, 255, 0, 255};
              const std::vector<std::int8_t> rhs_data = {-128, 127, -128, 127, 0, 0};
              std::vector<std::int8_t> result(lhs_data.size());
              QuantizedAdd(plan, lhs_data.data(), rhs_data.data(), lhs_data.size(), result.data());
              for (std::size_t i = 0; i < lhs_data.size(); ++i) {
                const std::int32_t expected =
                    Reference(lhs_data[i], lhs, rhs_data[i], rhs, output, -128, 127);
                ASSERT_LE(std::abs(result[i] - expected), 1)
                    << lhs_scale << " " << rhs_scale << " " << output_scale << " entry " << i;
              }
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(split, 1000);
  EXPECT_GT(rejected, 100);
}

// Scales at the ends of the double range are accepted or rejected, never undefined.
TEST(QuantizedAddTest, ScalesAtTheEndsOfTheDoubleRange) {
  const double huge = std::numeric_limits<double>::max();
  const double tiny = std::numeric_limits<double>::min();
  for (double lhs : {huge, 1.0, tiny}) {
    for (double rhs : {huge, 1.0, tiny}) {
      for (double output : {huge, 1.0, tiny}) {
        try {
          const QuantizedAddPlan plan =
              MakeQuantizedAddPlan(PerTensor(QuantizedType::Uint8(), lhs, 0),
                                   PerTensor(QuantizedType::Uint8(), rhs, 0), {output, 0});
          const std::vector<std::uint8_t> data = {0, 1, 255};
          std::vector<std::uint8_t> result(3);
          QuantizedAdd(plan, data.data(), data.data(), data.size(), result.data());
          for (std::size_t i = 0; i < data.size(); ++i) {
            EXPECT_LE(std::abs(result[i] - Reference(data[i], {lhs, 0}, data[i], {rhs, 0},
                                                     {output, 0}, 0, 255)),
                      1)
                << lhs << " " << rhs << " " << output << " entry " << i;
          }
        } catch (const Error& error) {
          EXPECT_EQ(error.argument(), "output.scale") << lhs << " " << rhs << " " << output;
          EXPECT_GT((lhs + rhs) / output, std::exp2(29));
        }
      }
    }
  }
}

// Inputs at nearly equal coarse scales and an output scale 2^20 times finer: most sums saturate,
// and the near cancellations in between need the two-part sum's precision.
TEST(QuantizedAddTest, FineOutputScaleNearCancellation) {
  Tally tally;
  CheckAllPairs<std::uint8_t, std::int8_t, std::int8_t>(
      {12.0, 128}, {12.0 * (1 + 1e-6), 0}, {12.0 * std::exp2(-20), 0}, -128, 127, &tally);
  CheckAllPairs<std::int8_t, std::int8_t, std::uint8_t>({3.0, -3}, {-3.0 / -7.0001, 5},
                                                        {std::exp2(-18), 100}, 0, 255, &tally);
  EXPECT_LE(tally.worst, 1);
}

// A per-axis input whose channels share one scale and zero point gives the per-tensor bits;
// with different channels, each entry follows its channel, within 1 LSB of the reference.
TEST(QuantizedAddTest, PerAxisMatchesPerTensor) {
  std::mt19937 random(22);
  std::uniform_real_distribution<double> log_scale(-10, 2);
  std::uniform_int_distribution<int> value(-128, 127), zero(-128, 127), byte(0, 255);
  const int rows = 7, cols = 13;
  for (ChannelAxis axis : {ChannelAxis::kRow, ChannelAxis::kCol}) {
    const int channels = axis == ChannelAxis::kRow ? rows : cols;
    for (int trial = 0; trial < 50; ++trial) {
      const QuantizationParams shared{std::exp2(log_scale(random)), zero(random)};
      const QuantizationParams rhs{std::exp2(log_scale(random)), byte(random)};
      const QuantizationParams output{std::exp2(log_scale(random)), byte(random)};
      std::vector<std::int8_t> lhs_data(rows * cols);
      std::vector<std::uint8_t> rhs_data(rows * cols);
      for (auto& v : lhs_data) v = static_cast<std::int8_t>(value(random));
      for (auto& v : rhs_data) v = static_cast<std::uint8_t>(byte(random));
      const QuantizedAddInput rhs_input =
          PerTensor(QuantizedType::Uint8(), rhs.scale, rhs.zero_point);
      std::vector<std::uint8_t> per_tensor(rows * cols), per_axis(rows * cols);
      try {
        QuantizedAdd(
            MakeQuantizedAddPlan(PerTensor(QuantizedType::Int8(), shared.scale, shared.zero_point),
                                 rhs_input, output),
            lhs_data.data(), rhs_data.data(), rows, cols, per_tensor.data());
      } catch (const Error& error) {
        ASSERT_EQ(error.argument(), "output.scale");
        continue;
      }
      const QuantizedAddInput same_channels{
          QuantizedType::Int8(), std::vector<QuantizationParams>(channels, shared), axis};
      const QuantizedAddPlan plan = MakeQuantizedAddPlan(same_channels, rhs_input, output);
      QuantizedAdd(plan, lhs_data.data(), rhs_data.data(), rows, cols, per_axis.data());
      ASSERT_EQ(per_axis, per_tensor);

      // Different channels (scales within 2^4 of the shared one), and both inputs per-axis.
      std::vector<QuantizationParams> lhs_channels, rhs_channels;
      for (int c = 0; c < channels; ++c) {
        lhs_channels.push_back({shared.scale * std::exp2(c % 5 - 2), zero(random)});
        rhs_channels.push_back({rhs.scale * std::exp2(1 - c % 3), byte(random)});
      }
      QuantizedAddPlan mixed;
      try {
        mixed = MakeQuantizedAddPlan({QuantizedType::Int8(), lhs_channels, axis},
                                     {QuantizedType::Uint8(), rhs_channels, axis}, output);
      } catch (const Error& error) {
        ASSERT_EQ(error.argument(), "output.scale");
        continue;
      }
      QuantizedAdd(mixed, lhs_data.data(), rhs_data.data(), rows, cols, per_axis.data());
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
          const int channel = axis == ChannelAxis::kRow ? r : c;
          const int i = r * cols + c;
          const std::int32_t expected = Reference(lhs_data[i], lhs_channels[channel], rhs_data[i],
                                                  rhs_channels[channel], output, 0, 255);
          ASSERT_LE(std::abs(per_axis[i] - expected), 1) << r << ", " << c;
        }
      }
    }
  }
}

TEST(QuantizedAddTest, FusedClampBoundsTheOutput) {
  // ReLU6 on uint8 with scale 1/32 and zero point 10: [10, 10 + 6 * 32 = 202].
  const QuantizedAddPlan plan = MakeQuantizedAddPlan(
      PerTensor(QuantizedType::Uint8(), 0.1, 128), PerTensor(QuantizedType::Uint8(), 0.1, 128),
      {1.0 / 32, 10}, QuantizedType::Uint8(), 10, 202);
  const std::vector<std::uint8_t> lhs = {0, 128, 255, 140};
  const std::vector<std::uint8_t> rhs = {0, 128, 255, 128};
  std::vector<std::uint8_t> out(4);
  QuantizedAdd(plan, lhs.data(), rhs.data(), lhs.size(), out.data());
  EXPECT_EQ(out, (std::vector<std::uint8_t>{10, 10, 202, 10 + 38}));  // 1.2 / (1/32) = 38.4
}

TEST(QuantizedAddTest, BadArgumentsAreNamed) {
  const QuantizedAddInput good = PerTensor(QuantizedType::Uint8(), 0.5, 3);
  const QuantizationParams output{0.25, 7};
  // The plan.
  ExpectError(
      [&] {
        MakeQuantizedAddPlan(PerTensor({false, 9}, 0.5, 3), good, output);
      },
      "lhs.type.bits");
  ExpectError(
      [&] {
        MakeQuantizedAddPlan(good, {QuantizedType::Uint8(), {}, ChannelAxis::kRow}, output);
      },
      "rhs.params");
  ExpectError(
      [&] { MakeQuantizedAddPlan(PerTensor(QuantizedType::Uint8(), 0.0, 3), good, output); },
      "lhs.params[0].scale");
  ExpectError(
      [&] {
        MakeQuantizedAddPlan(good, PerTensor(QuantizedType::Uint8(), std::nan(""), 3), output);
      },
      "rhs.params[0].scale");
  ExpectError(
      [&] {
        MakeQuantizedAddPlan(
            good,
            QuantizedAddInput{QuantizedType::Int8(), {{1, 0}, {1, 0}, {-1, 0}}, ChannelAxis::kCol},
            output);
      },
      "rhs.params[2].scale");
  ExpectError(
      [&] { MakeQuantizedAddPlan(good, PerTensor(QuantizedType::Uint8(), HUGE_VAL, 3), output); },
      "rhs.params[0].scale");
  ExpectError(
      [&] { MakeQuantizedAddPlan(good, PerTensor(QuantizedType::Uint8(), 1e-310, 3), output); },
      "rhs.params[0].scale");
  ExpectError(
      [&] { MakeQuantizedAddPlan(PerTensor(QuantizedType::Int8(), 0.5, 128), good, output); },
      "lhs.params[0].zero_point");
  ExpectError(
      [&] { MakeQuantizedAddPlan(good, PerTensor(QuantizedType::Uint8(), 0.5, -1), output); },
      "rhs.params[0].zero_point");
  ExpectError(
      [&] {
        MakeQuantizedAddPlan({QuantizedType::Uint8(), {{1, 0}}, static_cast<ChannelAxis>(5)}, good,
                             output);
      },
      "lhs.axis");
  ExpectError([&] { MakeQuantizedAddPlan(good, good, {-0.25, 7}); }, "output.scale");
  ExpectError([&] { MakeQuantizedAddPlan(good, good, {0.25, 300}); }, "output.zero_point");
  ExpectError(
      [&] {
        MakeQuantizedAddPlan(good, good, {0.25, 200}, QuantizedType::Int8());
      },
      "output.zero_point");
  ExpectError([&] { MakeQuantizedAddPlan(good, good, output, {true, 1}); }, "output_type.bits");
  ExpectError([&] { MakeQuantizedAddPlan(good, good, output, QuantizedType::Uint8(), -1, 255); },
              "output_min");
  ExpectError([&] { MakeQuantizedAddPlan(good, good, output, QuantizedType::Uint8(), 0, 256); },
              "output_max");
  ExpectError([&] { MakeQuantizedAddPlan(good, good, output, QuantizedType::Uint8(), 9, 8); },
              "output_min");
  // A ratio of scales the int32 alignment cannot hold within the bound.
  ExpectError([&] { MakeQuantizedAddPlan(good, good, {std::exp2(-31), 0}); }, "output.scale");

  // The add.
  const QuantizedAddPlan plan = MakeQuantizedAddPlan(good, good, output);
  std::vector<std::uint8_t> a(6, 1), b(6, 2), out(6, 99);
  std::vector<std::int8_t> signed_data(6, 0);
  ExpectError(
      [&] {
        QuantizedAdd(plan, a.data(), static_cast<const std::uint8_t*>(nullptr), a.size(),
                     out.data());
      },
      "rhs");
  ExpectError(
      [&] {
        QuantizedAdd(plan, static_cast<const std::uint8_t*>(nullptr), b.data(), 2, 3, out.data());
      },
      "lhs");
  ExpectError(
      [&] { QuantizedAdd(plan, a.data(), b.data(), 2, 3, static_cast<std::uint8_t*>(nullptr)); },
      "output");
  ExpectError([&] { QuantizedAdd(plan, signed_data.data(), b.data(), 2, 3, out.data()); }, "lhs");
  ExpectError([&] { QuantizedAdd(plan, a.data(), b.data(), 2, 3, signed_data.data()); }, "output");
  ExpectError([&] { QuantizedAdd(plan, a.data(), b.data(), -2, 3, out.data()); }, "rows");
  ExpectError([&] { QuantizedAdd(plan, a.data(), b.data(), 2, -3, out.data()); }, "cols");
  const QuantizedAddPlan per_row = MakeQuantizedAddPlan(
      {QuantizedType::Uint8(), {{0.5, 3}, {0.25, 4}}, ChannelAxis::kRow}, good, output);
  ExpectError([&] { QuantizedAdd(per_row, a.data(), b.data(), 3, 2, out.data()); }, "lhs");
  ExpectError([&] { QuantizedAdd(per_row, a.data(), b.data(), a.size(), out.data()); }, "lhs");
  // Nothing was written by any rejected call; a null pointer with no entries is fine.
  EXPECT_EQ(out, std::vector<std::uint8_t>(6, 99));
  QuantizedAdd(per_row, a.data(), b.data(), 2, 3, out.data());
  QuantizedAdd(plan, static_cast<const std::uint8_t*>(nullptr),
               static_cast<const std::uint8_t*>(nullptr), 0, static_cast<std::uint8_t*>(nullptr));
}

// The add runs on the writer of the kernel a default Context picks (LOWBIT_KERNEL): every kernel's
// writer gives the reference kernel's bits (the scalar loop), per-tensor, per-axis along rows and
// columns, and split, for a shape that leaves partial vectors and chunks.
TEST(QuantizedAddTest, EveryKernelGivesTheScalarBits) {
  std::mt19937 random(43);
  constexpr int kRows = 7, kCols = 1100;
  std::vector<std::uint8_t> lhs(kRows * kCols);
  std::vector<std::int8_t> rhs(kRows * kCols);
  for (std::uint8_t& value : lhs) value = static_cast<std::uint8_t>(random());
  for (std::int8_t& value : rhs) value = static_cast<std::int8_t>(random());
  QuantizedAddInput per_row{QuantizedType::Uint8(), {}, ChannelAxis::kRow};
  for (int r = 0; r < kRows; ++r) per_row.params.push_back({0.02 * (1 + r), 100 + r});
  QuantizedAddInput per_col{QuantizedType::Int8(), {}, ChannelAxis::kCol};
  for (int c = 0; c < kCols; ++c) per_col.params.push_back({0.01 * (1 + c % 9), c % 11 - 5});
  const QuantizedAddPlan plans[] = {
      MakeQuantizedAddPlan(PerTensor(QuantizedType::Uint8(), 0.03, 120),
                           PerTensor(QuantizedType::Int8(), 0.05, -3), {0.06, 30}),
      MakeQuantizedAddPlan(per_row, per_col, {0.07, -20}, QuantizedType::Int8()),
      MakeQuantizedAddPlan(per_row, PerTensor(QuantizedType::Int8(), 0.5, 3), {1e-5, 128})};
  ASSERT_GT(plans[2].low_bits, 0);
  const char* const saved = std::getenv("LOWBIT_KERNEL");
  const std::string saved_value = saved != nullptr ? saved : "";
  for (const QuantizedAddPlan& plan : plans) {
    const auto add = [&](const char* kernel) {
      setenv("LOWBIT_KERNEL", kernel, 1);
      std::vector<std::uint8_t> unsigned_out(lhs.size());
      std::vector<std::int8_t> signed_out(lhs.size());
      if (plan.output_type.is_signed) {
        QuantizedAdd(plan, lhs.data(), rhs.data(), kRows, kCols, signed_out.data());
        return std::vector<int>(signed_out.begin(), signed_out.end());
      }
      QuantizedAdd(plan, lhs.data(), rhs.data(), kRows, kCols, unsigned_out.data());
      return std::vector<int>(unsigned_out.begin(), unsigned_out.end());
    };
    const std::vector<int> scalar = add("reference");
    for (Kernel kernel : AvailableKernels()) {
      EXPECT_EQ(add(KernelName(kernel)), scalar) << KernelName(kernel);
    }
  }
  if (saved != nullptr) {
    setenv("LOWBIT_KERNEL", saved_value.c_str(), 1);
  } else {
    unsetenv("LOWBIT_KERNEL");
  }
}

// The stage in a GEMM (bias, requantization to the lhs's scale, the residual add, the cast) gives
// the bits of the same GEMM stored in the lhs type and then QuantizedAdd, on every kernel, thread
// count and blocking, for residuals in either storage order, a split plan and a residual
// quantized per column.
TEST(QuantizedAddTest, StageInAGemmMatchesTheElementwiseAdd) {
  std::mt19937 random(41);
  const QuantizedAddInput gemm_result = PerTensor(QuantizedType::Uint8(), 0.03, 110);
  const QuantizedAddPlan plans[] = {
      MakeQuantizedAddPlan(gemm_result, PerTensor(QuantizedType::Int8(), 0.05, -9), {0.06, 40},
                           QuantizedType::Uint8(), 40, 255),  // a fused ReLU
      MakeQuantizedAddPlan(gemm_result, PerTensor(QuantizedType::Int8(), 0.01, 3),
                           {0.03 * std::exp2(-14), 128}, QuantizedType::Uint8())};
  ASSERT_GT(plans[1].low_bits, 0);
  const FixedPointMultiplier requantize = QuantizeMultiplier(std::exp2(-14) / 0.03);
  const test::Shape shapes[] = {{1, 1, 1}, {5, 33, 17}, {67, 64, 131}, {8, 300, 40}};
  for (const test::PathSetting& setting : test::PathSettings({1, 2})) {
    SCOPED_TRACE(testing::PrintToString(setting));
    Context context;
    test::Configure(&context, setting);
    for (const test::Shape& shape : shapes) {
      test::OwnedMatrix<std::uint8_t> lhs(shape.rows, shape.depth, Order::kRowMajor, 0, &random);
      test::OwnedMatrix<std::int8_t> rhs(shape.depth, shape.cols, Order::kColMajor, 1, &random);
      std::vector<std::int32_t> bias(shape.rows);
      for (std::int32_t& value : bias) value = static_cast<std::int32_t>(random() % 20001) - 10000;
      const OutputStageBiasAddition bias_stage{
          VectorMap<const std::int32_t>(bias.data(), shape.rows), ChannelAxis::kRow};
      const OutputStageScaleInt32ByFixedPointAndExponent requantize_stage{requantize.multiplier,
                                                                          requantize.exponent, 110};
      // And a residual quantized per column.
      QuantizedAddInput per_column{QuantizedType::Int8(), {}, ChannelAxis::kCol};
      for (int c = 0; c < shape.cols; ++c) {
        per_column.params.push_back({0.05 * (1 + c % 3 * 0.25), -9 + c % 4});
      }
      std::vector<QuantizedAddPlan> shape_plans(std::begin(plans), std::end(plans));
      shape_plans.push_back(MakeQuantizedAddPlan(gemm_result, per_column, {0.06, 40}));
      for (const QuantizedAddPlan& plan : shape_plans) {
        for (Order order : {Order::kRowMajor, Order::kColMajor}) {
          test::OwnedMatrix<std::int8_t> residual(shape.rows, shape.cols, order, 2, &random);
          // Stored in the lhs type, then added.
          std::vector<std::uint8_t> stored(static_cast<std::size_t>(shape.rows) * shape.cols);
          MatrixMap<std::uint8_t> stored_map(stored.data(), shape.rows, shape.cols,
                                             Order::kRowMajor);
          GemmWithOutputPipeline(
              &context, lhs.const_map(), rhs.const_map(), &stored_map, Offsets(-128), Offsets(3),
              std::make_tuple(bias_stage, requantize_stage, OutputStageSaturatingCastToUint8{}));
          std::vector<std::int8_t> residual_rows(stored.size());
          for (int r = 0; r < shape.rows; ++r) {
            for (int c = 0; c < shape.cols; ++c) {
              residual_rows[static_cast<std::size_t>(r) * shape.cols + c] = residual.map(r, c);
            }
          }
          std::vector<std::uint8_t> expected(stored.size());
          QuantizedAdd(plan, stored.data(), residual_rows.data(), shape.rows, shape.cols,
                       expected.data());
          // Fused.
          std::vector<std::uint8_t> fused(stored.size(), 7);
          MatrixMap<std::uint8_t> fused_map(fused.data(), shape.rows, shape.cols, Order::kRowMajor);
          GemmWithOutputPipeline(
              &context, lhs.const_map(), rhs.const_map(), &fused_map, Offsets(-128), Offsets(3),
              std::make_tuple(bias_stage, requantize_stage,
                              MakeOutputStageQuantizedAdd(plan, residual.const_map()),
                              OutputStageSaturatingCastToUint8{}));
          ASSERT_EQ(fused, expected)
              << shape.rows << "x" << shape.depth << "x" << shape.cols
              << (plan.low_bits > 0 ? ", split plan" : "")
              << (order == Order::kRowMajor ? ", row-major residual" : ", column-major residual");
        }
      }
    }
  }
}

// The stage's arguments: a residual of the other signedness, of the wrong size, malformed, or in
// the result's memory, and a per-axis input whose channels do not fit the result; each named
// before anything is written.
TEST(QuantizedAddTest, BadStageArgumentsAreNamed) {
  const QuantizedAddInput good = PerTensor(QuantizedType::Uint8(), 0.5, 3);
  const QuantizedAddPlan plan = MakeQuantizedAddPlan(good, good, {0.25, 7});
  std::vector<std::uint8_t> residual(12, 1);
  const MatrixMap<const std::uint8_t> residual_map(residual.data(), 3, 4, Order::kRowMajor);
  std::vector<std::int8_t> signed_residual(12, 1);
  ExpectError(
      [&] {
        MakeOutputStageQuantizedAdd(
            plan, MatrixMap<const std::int8_t>(signed_residual.data(), 3, 4, Order::kRowMajor));
      },
      "residual");

  Context context;
  std::vector<std::uint8_t> lhs(3 * 5, 2), rhs(5 * 4, 3), result(12, 99);
  const MatrixMap<const std::uint8_t> lhs_map(lhs.data(), 3, 5, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs_map(rhs.data(), 5, 4, Order::kColMajor);
  MatrixMap<std::uint8_t> result_map(result.data(), 3, 4, Order::kRowMajor);
  const auto run = [&](const MatrixMap<const std::uint8_t>& residual_argument) {
    GemmWithOutputPipeline(&context, lhs_map, rhs_map, &result_map, Offsets(0), Offsets(0),
                           std::make_tuple(OutputStageShiftByPOT{-2},
                                           MakeOutputStageQuantizedAdd(plan, residual_argument),
                                           OutputStageSaturatingCastToUint8{}));
  };
  ExpectError([&] { run(MatrixMap<const std::uint8_t>(residual.data(), 4, 3, Order::kRowMajor)); },
              "pipeline[1].residual");
  ExpectError(
      [&] { run(MatrixMap<const std::uint8_t>(residual.data(), 3, 4, Order::kRowMajor, 2)); },
      "pipeline[1].residual.stride");
  ExpectError([&] { run(MatrixMap<const std::uint8_t>(nullptr, 3, 4, Order::kRowMajor)); },
              "pipeline[1].residual.data");
  ExpectError([&] { run(result_map); }, "pipeline[1].residual");
  // A per-axis input of 4 channels along the rows of a 3-row result.
  const QuantizedAddPlan per_row = MakeQuantizedAddPlan(
      good, {QuantizedType::Uint8(), {{0.5, 3}, {0.25, 4}, {1, 0}, {1, 0}}, ChannelAxis::kRow},
      {0.25, 7});
  ExpectError(
      [&] {
        GemmWithOutputPipeline(&context, lhs_map, rhs_map, &result_map, Offsets(0), Offsets(0),
                               std::make_tuple(MakeOutputStageQuantizedAdd(per_row, residual_map),
                                               OutputStageSaturatingCastToUint8{}));
      },
      "pipeline[0].plan");
  EXPECT_EQ(result, std::vector<std::uint8_t>(12, 99));
  run(residual_map);
  // Each accumulator 2 * 3 * 5 = 30, shifted to 8 (7.5 rounded away from zero): real
  // (8 - 3) * 0.5 plus (1 - 3) * 0.5 = 1.5, which is 6 steps of 0.25 above 7.
  EXPECT_EQ(result, std::vector<std::uint8_t>(12, 13));
}

// The snippet of doc/quantization.md, "Adding tensors at different scales".
TEST(QuantizedAddTest, DocumentationSnippet) {
  const QuantizationParams branch = ChooseQuantizationParams(-2.0, 2.0);  // uint8
  const QuantizationParams shortcut = ChooseQuantizationParams(-0.5, 8.0, QuantizedType::Int8());
  const QuantizationParams sum = ChooseQuantizationParams(0.0, 10.0);  // after a ReLU
  const QuantizedAddPlan plan =
      MakeQuantizedAddPlan({QuantizedType::Uint8(), {branch}, ChannelAxis::kRow},
                           {QuantizedType::Int8(), {shortcut}, ChannelAxis::kRow}, sum,
                           QuantizedType::Uint8(), sum.zero_point, 255);  // the fused ReLU
  const std::vector<float> x = {-1.5f, 0.0f, 1.0f, 2.0f}, y = {0.25f, 3.0f, 7.5f, -0.5f};
  std::vector<std::uint8_t> xq(4), out(4);
  std::vector<std::int8_t> yq(4);
  Quantize(x.data(), x.size(), branch, xq.data());
  Quantize(y.data(), y.size(), shortcut, yq.data());
  QuantizedAdd(plan, xq.data(), yq.data(), xq.size(), out.data());
  std::vector<float> back(4);
  Dequantize(out.data(), out.size(), sum, back.data());
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(back[i], std::max(0.0f, x[i] + y[i]),
                sum.scale + branch.scale / 2 + shortcut.scale / 2);
  }
}

}  // namespace
}  // namespace lowbit
