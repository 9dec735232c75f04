// Where lowbit carries gemmlowp's name it computes gemmlowp's bits: the fixed-point transcendental
// functions and the output stages, compared with Debian's libgemmlowp-dev (header-only) on every
// int16 input, sampled int32 inputs and random GEMMs. gemmlowp is included as TFLite includes it,
// with its own folder on the include path ("public/...", "fixedpoint/..."), in the same translation
// unit as lowbit: lowbit's headers reach each other through the lowbit/ root, never those paths.
#include <fixedpoint/fixedpoint.h>
#include <gtest/gtest.h>
#include <public/gemmlowp.h>

#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "lowbit/fixedpoint/fixedpoint.h"
#include "lowbit/lowbit.h"

namespace {

namespace fp = lowbit::fixedpoint;

// Every input of an int16 raw; of an int32 raw, 2^18 evenly spaced ones, random ones and the edges.
template <typename Scalar>
std::vector<Scalar> Inputs() {
  std::vector<Scalar> inputs;
  if (sizeof(Scalar) == 2) {
    for (int raw = std::numeric_limits<Scalar>::lowest(); raw <= std::numeric_limits<Scalar>::max();
         ++raw) {
      inputs.push_back(static_cast<Scalar>(raw));
    }
    return inputs;
  }
  for (std::int64_t raw = std::numeric_limits<std::int32_t>::lowest();
       raw <= std::numeric_limits<std::int32_t>::max(); raw += std::int64_t{1} << 14) {
    inputs.push_back(static_cast<Scalar>(raw));
  }
  std::mt19937 generator(5);
  for (int i = 0; i < (1 << 16); ++i) inputs.push_back(static_cast<Scalar>(generator()));
  for (const std::int64_t edge : {-2147483648LL, -2147483647LL, -1LL, 0LL, 1LL, 2147483647LL}) {
    inputs.push_back(static_cast<Scalar>(edge));
  }
  return inputs;
}

// lowbit's and gemmlowp's function of the same format on every input that `in_domain` keeps.
template <typename Scalar, int IntegerBits, typename Lowbit, typename Gemmlowp, typename InDomain>
void ExpectSameBits(const char* what, Lowbit lowbit_function, Gemmlowp gemmlowp_function,
                    InDomain in_domain) {
  int compared = 0;
  for (const Scalar raw : Inputs<Scalar>()) {
    if (!in_domain(raw)) continue;
    const Scalar ours = lowbit_function(fp::FixedPoint<Scalar, IntegerBits>::FromRaw(raw)).raw();
    const Scalar theirs =
        gemmlowp_function(gemmlowp::FixedPoint<Scalar, IntegerBits>::FromRaw(raw)).raw();
    ASSERT_EQ(ours, theirs) << what << " int" << 8 * sizeof(Scalar) << " IntegerBits "
                            << IntegerBits << " input " << raw;
    ++compared;
  }
  EXPECT_GT(compared, 1000) << what;
}

template <typename Scalar>
bool Any(Scalar) {
  return true;
}
template <typename Scalar>
bool NonPositive(Scalar raw) {
  return raw <= 0;
}
template <typename Scalar>
bool NonNegative(Scalar raw) {
  return raw >= 0;
}
// [-1/4, 0) without integer bits.
template <typename Scalar>
bool NegativeQuarter(Scalar raw) {
  return raw < 0 && raw >= -(Scalar{1} << (8 * sizeof(Scalar) - 3));
}

template <typename Scalar, int IntegerBits>
void CompareFunctionsOfValues() {
  using LowbitInput = fp::FixedPoint<Scalar, IntegerBits>;
  using GemmlowpInput = gemmlowp::FixedPoint<Scalar, IntegerBits>;
  ExpectSameBits<Scalar, IntegerBits>(
      "exp_on_negative_values", [](LowbitInput x) { return fp::exp_on_negative_values(x); },
      [](GemmlowpInput x) { return gemmlowp::exp_on_negative_values(x); }, NonPositive<Scalar>);
  // tanh doubles its input: one integer bit fewer than the raw type leaves 2 fractional bits.
  if constexpr (IntegerBits <= 8 * static_cast<int>(sizeof(Scalar)) - 4) {
    ExpectSameBits<Scalar, IntegerBits>(
        "tanh", [](LowbitInput x) { return fp::tanh(x); },
        [](GemmlowpInput x) { return gemmlowp::tanh(x); }, Any<Scalar>);
    ExpectSameBits<Scalar, IntegerBits>(
        "neg_tanh_on_negative_values",
        [](LowbitInput x) { return fp::neg_tanh_on_negative_values(x); },
        [](GemmlowpInput x) { return gemmlowp::neg_tanh_on_negative_values(x); },
        NonPositive<Scalar>);
  }
  ExpectSameBits<Scalar, IntegerBits>(
      "logistic", [](LowbitInput x) { return fp::logistic(x); },
      [](GemmlowpInput x) { return gemmlowp::logistic(x); }, Any<Scalar>);
  ExpectSameBits<Scalar, IntegerBits>(
      "logistic_on_positive_values",
      [](LowbitInput x) { return fp::logistic_on_positive_values(x); },
      [](GemmlowpInput x) { return gemmlowp::logistic_on_positive_values(x); },
      NonNegative<Scalar>);
}

template <typename Scalar, int... IntegerBits>
void CompareFunctionsOfValuesForAll(std::integer_sequence<int, IntegerBits...>) {
  (CompareFunctionsOfValues<Scalar, IntegerBits>(), ...);
}

template <typename Scalar>
void CompareFunctionsWithoutIntegerBits() {
  using LowbitF = fp::FixedPoint<Scalar, 0>;
  using GemmlowpF = gemmlowp::FixedPoint<Scalar, 0>;
  ExpectSameBits<Scalar, 0>(
      "exp_on_interval_between_negative_one_quarter_and_0_excl",
      [](LowbitF x) { return fp::exp_on_interval_between_negative_one_quarter_and_0_excl(x); },
      [](GemmlowpF x) {
        return gemmlowp::exp_on_interval_between_negative_one_quarter_and_0_excl(x);
      },
      NegativeQuarter<Scalar>);
  ExpectSameBits<Scalar, 0>(
      "one_over_one_plus_x_for_x_in_0_1",
      [](LowbitF x) { return fp::one_over_one_plus_x_for_x_in_0_1(x); },
      [](GemmlowpF x) { return gemmlowp::one_over_one_plus_x_for_x_in_0_1(x); },
      NonNegative<Scalar>);
  ExpectSameBits<Scalar, 0>(
      "one_minus_x_over_one_plus_x_for_x_in_0_1",
      [](LowbitF x) { return fp::one_minus_x_over_one_plus_x_for_x_in_0_1(x); },
      [](GemmlowpF x) { return gemmlowp::one_minus_x_over_one_plus_x_for_x_in_0_1(x); },
      NonNegative<Scalar>);
}

TEST(GemmlowpBits, TranscendentalFunctionsInt16EveryInput) {
  CompareFunctionsWithoutIntegerBits<std::int16_t>();
  CompareFunctionsOfValuesForAll<std::int16_t>(std::make_integer_sequence<int, 7>());
}

TEST(GemmlowpBits, TranscendentalFunctionsInt32) {
  CompareFunctionsWithoutIntegerBits<std::int32_t>();
  CompareFunctionsOfValuesForAll<std::int32_t>(std::make_integer_sequence<int, 7>());
}

// One GEMM, uint8 operands (lhs row-major, rhs column-major, result column-major), through
// gemmlowp's pipeline and through lowbit's of the same stages.
struct Case {
  int rows, depth, cols;
  std::vector<std::uint8_t> lhs, rhs;
  int lhs_offset, rhs_offset;
};

Case RandomCase(std::mt19937* generator) {
  std::uniform_int_distribution<int> size(1, 24), byte(0, 255), offset(-255, 0);
  Case c{size(*generator),   size(*generator),  size(*generator), {}, {},
         offset(*generator), offset(*generator)};
  c.lhs.resize(static_cast<std::size_t>(c.rows) * c.depth);
  c.rhs.resize(static_cast<std::size_t>(c.depth) * c.cols);
  for (auto& v : c.lhs) v = static_cast<std::uint8_t>(byte(*generator));
  for (auto& v : c.rhs) v = static_cast<std::uint8_t>(byte(*generator));
  return c;
}

template <typename GemmlowpPipeline>
std::vector<std::uint8_t> GemmlowpResult(const Case& c, const GemmlowpPipeline& pipeline) {
  gemmlowp::GemmContext context;
  const gemmlowp::MatrixMap<const std::uint8_t, gemmlowp::MapOrder::RowMajor> lhs(c.lhs.data(),
                                                                                  c.rows, c.depth);
  const gemmlowp::MatrixMap<const std::uint8_t, gemmlowp::MapOrder::ColMajor> rhs(c.rhs.data(),
                                                                                  c.depth, c.cols);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(c.rows) * c.cols);
  gemmlowp::MatrixMap<std::uint8_t, gemmlowp::MapOrder::ColMajor> result(out.data(), c.rows,
                                                                         c.cols);
  gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::uint8_t, gemmlowp::DefaultL8R8BitDepthParams>(
      &context, lhs, rhs, &result, c.lhs_offset, c.rhs_offset, pipeline);
  return out;
}

template <typename LowbitPipeline>
std::vector<std::uint8_t> LowbitResult(const Case& c, const LowbitPipeline& pipeline) {
  lowbit::Context context;
  const lowbit::MatrixMap<const std::uint8_t> lhs(c.lhs.data(), c.rows, c.depth,
                                                  lowbit::Order::kRowMajor);
  const lowbit::MatrixMap<const std::uint8_t> rhs(c.rhs.data(), c.depth, c.cols,
                                                  lowbit::Order::kColMajor);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(c.rows) * c.cols);
  lowbit::MatrixMap<std::uint8_t> result(out.data(), c.rows, c.cols, lowbit::Order::kColMajor);
  lowbit::GemmWithOutputPipeline(&context, lhs, rhs, &result, c.lhs_offset, c.rhs_offset, pipeline);
  return out;
}

// The examples first, then random cases.
TEST(GemmlowpBits, QuantizeDownInt32ToUint8Scale) {
  // (255 * 255) * 33025 is just below 2^31: gemmlowp rounds the product, not a wrapped sum.
  const Case edge{1, 1, 1, {255}, {255}, 0, 0};
  EXPECT_EQ(LowbitResult(edge, std::make_tuple(
                                   lowbit::OutputStageQuantizeDownInt32ToUint8Scale{0, 33025, 17},
                                   lowbit::OutputStageSaturatingCastToUint8{}))[0],
            255);
  std::mt19937 generator(1);
  std::uniform_int_distribution<int> offset(-100000, 100000), multiplier(0, 40000), shift(0, 24);
  for (int trial = 0; trial < 300; ++trial) {
    const Case c = trial == 0 ? edge : RandomCase(&generator);
    const int result_offset = offset(generator), mult = multiplier(generator),
              result_shift = shift(generator);
    gemmlowp::OutputStageQuantizeDownInt32ToUint8Scale theirs;
    theirs.result_offset = result_offset;
    theirs.result_mult_int = mult;
    theirs.result_shift = result_shift;
    ASSERT_EQ(
        LowbitResult(
            c, std::make_tuple(lowbit::OutputStageQuantizeDownInt32ToUint8Scale{result_offset, mult,
                                                                                result_shift},
                               lowbit::OutputStageSaturatingCastToUint8{})),
        GemmlowpResult(c, std::make_tuple(theirs, gemmlowp::OutputStageSaturatingCastToUint8{})))
        << "trial " << trial << " offset " << result_offset << " multiplier " << mult << " shift "
        << result_shift;
  }
}

TEST(GemmlowpBits, TanhStage) {
  // lhs 153, rhs 1, the identity requantization, tanh around 128 with amplitude 12: gemmlowp 139.
  const Case example{1, 1, 1, {153}, {1}, 0, 0};
  EXPECT_EQ(
      LowbitResult(example, std::make_tuple(
                                lowbit::OutputStageQuantizeDownInt32ByFixedPoint{2147483647, 0, 0},
                                lowbit::OutputStageTanh{128, 12},
                                lowbit::OutputStageSaturatingCastToUint8{}))[0],
      139);
  std::mt19937 generator(2);
  std::uniform_int_distribution<int> multiplier(1 << 28, 2147483647), shift(4, 14), zero(-300, 300),
      amplitude(1, 4000);
  for (int trial = 0; trial < 300; ++trial) {
    const Case c = trial == 0 ? example : RandomCase(&generator);
    const int mult = trial == 0 ? 2147483647 : multiplier(generator);
    const int result_shift = trial == 0 ? 0 : shift(generator);
    const int real_zero = trial == 0 ? 128 : zero(generator);
    // Amplitudes small and large, powers of two among them (where the reciprocal is exact).
    const int real_amplitude = trial == 0       ? 12
                               : trial % 7 == 0 ? 1 << (trial % 12)
                                                : amplitude(generator);
    gemmlowp::OutputStageQuantizeDownInt32ByFixedPoint theirs_scale;
    theirs_scale.result_fixedpoint_multiplier = mult;
    theirs_scale.result_shift = result_shift;
    theirs_scale.result_offset_after_shift = 128;
    gemmlowp::OutputStageTanh theirs_tanh;
    theirs_tanh.real_zero_as_int32 = real_zero + 128;
    theirs_tanh.real_amplitude_as_int32 = real_amplitude;
    ASSERT_EQ(LowbitResult(
                  c, std::make_tuple(
                         lowbit::OutputStageQuantizeDownInt32ByFixedPoint{mult, result_shift, 128},
                         lowbit::OutputStageTanh{real_zero + 128, real_amplitude},
                         lowbit::OutputStageSaturatingCastToUint8{})),
              GemmlowpResult(c, std::make_tuple(theirs_scale, theirs_tanh,
                                                gemmlowp::OutputStageSaturatingCastToUint8{})))
        << "trial " << trial << " multiplier " << mult << " shift " << result_shift << " zero "
        << real_zero + 128 << " amplitude " << real_amplitude;
  }
}

// gemmlowp's stage forms zero +- 8 amplitudes in int32; beyond that only the accurate tanh runs.
TEST(GemmlowpBits, TanhStageRejectsAnAmplitudeGemmlowpCannotForm) {
  const Case c{1, 1, 1, {1}, {1}, 0, 0};
  EXPECT_THROW(LowbitResult(c, std::make_tuple(lowbit::OutputStageTanh{0, 1 << 28},
                                               lowbit::OutputStageSaturatingCastToUint8{})),
               lowbit::Error);
  EXPECT_NO_THROW(LowbitResult(
      c, std::make_tuple(lowbit::OutputStageTanh{0, 1 << 28, lowbit::TanhArithmetic::kAccurate},
                         lowbit::OutputStageSaturatingCastToUint8{})));
}

}  // namespace
