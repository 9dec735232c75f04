// Tests for lowbit/fixedpoint/fixedpoint.h: the exact primitives against references written from
// their definitions, FixedPoint arithmetic, and the measured accuracy of the transcendentals.
#include "lowbit/fixedpoint/fixedpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace lowbit {
namespace fixedpoint {
namespace {

constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::lowest();
constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int16_t kInt16Min = std::numeric_limits<std::int16_t>::lowest();
constexpr std::int16_t kInt16Max = std::numeric_limits<std::int16_t>::max();

template <typename Scalar>
constexpr int kBits = 8 * static_cast<int>(sizeof(Scalar));

// One unit in the last place of a format without integer bits: 2^-31 or 2^-15.
template <typename Scalar>
double Lsb() {
  return std::ldexp(1.0, -(kBits<Scalar> - 1));
}

template <typename Scalar>
Scalar ClampToScalar(std::int64_t x) {
  return static_cast<Scalar>(
      std::min<std::int64_t>(std::max<std::int64_t>(x, std::numeric_limits<Scalar>::lowest()),
                             std::numeric_limits<Scalar>::max()));
}

// 0, +-1, +-2, every +-2^k and its neighbours, and the extremes with their neighbours.
template <typename Scalar>
std::vector<Scalar> EdgeValues() {
  std::vector<std::int64_t> wide = {0, 1, -1, 2, -2};
  for (int k = 1; k < kBits<Scalar>; ++k) {
    const std::int64_t power = std::int64_t{1} << k;
    for (const std::int64_t v : {power - 1, power, power + 1}) {
      wide.push_back(v);
      wide.push_back(-v);
    }
  }
  wide.push_back(std::numeric_limits<Scalar>::lowest());
  wide.push_back(std::numeric_limits<Scalar>::lowest() + 1);
  wide.push_back(std::numeric_limits<Scalar>::max());
  wide.push_back(std::numeric_limits<Scalar>::max() - 1);
  std::vector<Scalar> values;
  for (const std::int64_t v : wide) {
    if (v >= std::numeric_limits<Scalar>::lowest() && v <= std::numeric_limits<Scalar>::max()) {
      values.push_back(static_cast<Scalar>(v));
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::vector<std::int16_t> AllInt16() {
  std::vector<std::int16_t> values;
  for (std::int32_t v = kInt16Min; v <= kInt16Max; ++v) {
    values.push_back(static_cast<std::int16_t>(v));
  }
  return values;
}

// Every int16 value except a stride, plus the edges: a dense second operand for int16 pairs.
std::vector<std::int16_t> Int16Stride(int stride) {
  std::vector<std::int16_t> values = EdgeValues<std::int16_t>();
  for (std::int32_t v = kInt16Min; v <= kInt16Max; v += stride) {
    values.push_back(static_cast<std::int16_t>(v));
  }
  return values;
}

// floor(numerator / denominator) for denominator > 0.
__int128 FloorDiv(__int128 numerator, __int128 denominator) {
  const __int128 quotient = numerator / denominator;
  return (numerator % denominator != 0 && numerator < 0) ? quotient - 1 : quotient;
}

// VQRDMULH by definition: the high half of 2ab, rounded to nearest with halves going up
// (floor((2ab + 2^(bits-1)) / 2^bits)), saturated.
template <typename Scalar>
Scalar ReferenceSrdhm(Scalar a, Scalar b) {
  const __int128 doubled_product = __int128{2} * a * b;
  const __int128 half = __int128{1} << (kBits<Scalar> - 1);
  const __int128 high = FloorDiv(doubled_product + half, __int128{1} << kBits<Scalar>);
  return high > std::numeric_limits<Scalar>::max() ? std::numeric_limits<Scalar>::max()
                                                   : static_cast<Scalar>(high);
}

// x / 2^exponent rounded to nearest, ties away from zero: round the magnitude half up and restore
// the sign.
std::int64_t ReferenceRoundingDivideByPot(std::int64_t x, int exponent) {
  const std::int64_t magnitude = x < 0 ? -x : x;
  const std::int64_t rounded =
      exponent == 0 ? magnitude : (magnitude + (std::int64_t{1} << (exponent - 1))) >> exponent;
  return x < 0 ? -rounded : rounded;
}

template <typename Scalar>
Scalar ReferenceMultiplyByPot(Scalar x, int exponent) {
  if (exponent >= 0) {
    return ClampToScalar<Scalar>(std::int64_t{x} * (std::int64_t{1} << exponent));
  }
  return static_cast<Scalar>(ReferenceRoundingDivideByPot(x, -exponent));
}

// (a + b) / 2, exact when the sum is even, otherwise the half goes away from zero.
template <typename Scalar>
Scalar ReferenceRoundingHalfSum(Scalar a, Scalar b) {
  const std::int64_t sum = std::int64_t{a} + b;
  if (sum % 2 == 0) {
    return static_cast<Scalar>(sum / 2);
  }
  return static_cast<Scalar>(sum > 0 ? (sum + 1) / 2 : (sum - 1) / 2);
}

// ---------------------------------------------------------------------------------------------
// Primitives

TEST(Primitives, WrappingArithmeticAndShifts) {
  for (const std::int32_t a : EdgeValues<std::int32_t>()) {
    for (const std::int32_t b : EdgeValues<std::int32_t>()) {
      const auto ua = static_cast<std::uint32_t>(a);
      const auto ub = static_cast<std::uint32_t>(b);
      ASSERT_EQ(static_cast<std::uint32_t>(Add(a, b)), ua + ub);
      ASSERT_EQ(static_cast<std::uint32_t>(Sub(a, b)), ua - ub);
      ASSERT_EQ(static_cast<std::uint32_t>(Mul(a, b)), ua * ub);
    }
    ASSERT_EQ(static_cast<std::uint32_t>(Neg(a)), 0u - static_cast<std::uint32_t>(a));
    for (int shift = 0; shift < 32; ++shift) {
      ASSERT_EQ(static_cast<std::uint32_t>(ShiftLeft(a, shift)), static_cast<std::uint32_t>(a)
                                                                     << shift);
      ASSERT_EQ(ShiftRight(a, shift),
                static_cast<std::int32_t>(
                    FloorDiv(a, __int128{1} << shift)));  // arithmetic shift = floor division
    }
  }
  for (const std::int16_t a : AllInt16()) {
    ASSERT_EQ(Neg(a), static_cast<std::int16_t>(a == kInt16Min ? kInt16Min : -a));
    ASSERT_EQ(ShiftLeft(a, 15), static_cast<std::int16_t>((a & 1) ? kInt16Min : 0));
    ASSERT_EQ(ShiftRight(a, 15), static_cast<std::int16_t>(a < 0 ? -1 : 0));
  }
}

TEST(Primitives, MasksAreAllOnesOrAllZeros) {
  const std::vector<std::int32_t> values = EdgeValues<std::int32_t>();
  for (const std::int32_t a : values) {
    EXPECT_EQ(MaskIfZero(a), a == 0 ? -1 : 0);
    EXPECT_EQ(MaskIfNonZero(a), a != 0 ? -1 : 0);
    for (const std::int32_t b : values) {
      ASSERT_EQ(MaskIfEqual(a, b), a == b ? -1 : 0);
      ASSERT_EQ(MaskIfNotEqual(a, b), a != b ? -1 : 0);
      ASSERT_EQ(MaskIfGreaterThan(a, b), a > b ? -1 : 0);
      ASSERT_EQ(MaskIfGreaterThanOrEqual(a, b), a >= b ? -1 : 0);
      ASSERT_EQ(MaskIfLessThan(a, b), a < b ? -1 : 0);
      ASSERT_EQ(MaskIfLessThanOrEqual(a, b), a <= b ? -1 : 0);
      ASSERT_EQ(SelectUsingMask(MaskIfLessThan(a, b), a, b), std::min(a, b));
    }
  }
  const std::int16_t minus_one = -1;
  EXPECT_EQ(MaskIfLessThan<std::int16_t>(kInt16Min, kInt16Max), minus_one);
  EXPECT_EQ(MaskIfGreaterThan<std::int16_t>(kInt16Min, kInt16Max), 0);
  EXPECT_EQ(SelectUsingMask<std::int16_t>(minus_one, 5, 7), 5);
  EXPECT_EQ(SelectUsingMask<std::int16_t>(0, 5, 7), 7);
  EXPECT_EQ(BitAnd<std::int16_t>(0x0ff0, 0x00ff), 0x00f0);
  EXPECT_EQ(BitOr<std::int16_t>(0x0ff0, 0x00ff), 0x0fff);
  EXPECT_EQ(BitXor<std::int16_t>(0x0ff0, 0x00ff), 0x0f0f);
  EXPECT_EQ(BitNot<std::int16_t>(0), minus_one);
  EXPECT_EQ(Dup<std::int16_t>(-3), -3);
  EXPECT_EQ(RawTypeTraits<std::int32_t>::kLanes, 1);
}

TEST(Primitives, RoundingHalfSumMatchesReference) {
  for (const std::int16_t a : AllInt16()) {
    for (const std::int16_t b : Int16Stride(509)) {
      ASSERT_EQ(RoundingHalfSum(a, b), ReferenceRoundingHalfSum(a, b)) << a << " " << b;
    }
  }
  for (const std::int32_t a : EdgeValues<std::int32_t>()) {
    for (const std::int32_t b : EdgeValues<std::int32_t>()) {
      ASSERT_EQ(RoundingHalfSum(a, b), ReferenceRoundingHalfSum(a, b)) << a << " " << b;
    }
  }
  EXPECT_EQ(RoundingHalfSum<std::int32_t>(-2, -1), -2);
  EXPECT_EQ(RoundingHalfSum<std::int32_t>(2, 1), 2);
}

TEST(Primitives, SaturatingAddClampsToRange) {
  for (const std::int16_t a : AllInt16()) {
    for (const std::int16_t b : Int16Stride(509)) {
      ASSERT_EQ(SaturatingAdd(a, b), ClampToScalar<std::int16_t>(std::int64_t{a} + b));
    }
  }
  for (const std::int32_t a : EdgeValues<std::int32_t>()) {
    for (const std::int32_t b : EdgeValues<std::int32_t>()) {
      ASSERT_EQ(SaturatingAdd(a, b), ClampToScalar<std::int32_t>(std::int64_t{a} + b));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SaturatingRoundingDoublingHighMul

TEST(SaturatingRoundingDoublingHighMul, Int32EdgePairs) {
  const std::vector<std::int32_t> values = EdgeValues<std::int32_t>();
  for (const std::int32_t a : values) {
    for (const std::int32_t b : values) {
      ASSERT_EQ(SaturatingRoundingDoublingHighMul(a, b), ReferenceSrdhm(a, b)) << a << " " << b;
    }
  }
}

TEST(SaturatingRoundingDoublingHighMul, Int32RandomPairs) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::int32_t> any(kInt32Min, kInt32Max);
  for (int i = 0; i < 1000000; ++i) {
    const std::int32_t a = any(rng);
    const std::int32_t b = any(rng);
    ASSERT_EQ(SaturatingRoundingDoublingHighMul(a, b), ReferenceSrdhm(a, b)) << a << " " << b;
  }
}

// Products that sit exactly halfway between two results: a = odd * 2^s, b = odd * 2^(30 - s).
TEST(SaturatingRoundingDoublingHighMul, Int32RandomExactHalves) {
  std::mt19937 rng(777);
  std::uniform_int_distribution<int> split(0, 30);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    const int s = split(rng);
    const std::int64_t odd_a = (bits(rng) & ((std::uint32_t{1} << (30 - s)) - 1)) | 1;
    const std::int64_t odd_b = (bits(rng) & ((std::uint64_t{1} << s) - 1)) | 1;
    const std::int64_t sign_a = (bits(rng) & 1) ? -1 : 1;
    const std::int64_t sign_b = (bits(rng) & 1) ? -1 : 1;
    const auto a = static_cast<std::int32_t>(sign_a * odd_a * (std::int64_t{1} << s));
    const auto b = static_cast<std::int32_t>(sign_b * odd_b * (std::int64_t{1} << (30 - s)));
    ASSERT_EQ(SaturatingRoundingDoublingHighMul(a, b), ReferenceSrdhm(a, b)) << a << " " << b;
  }
}

// Halves round towards +infinity (as VQRDMULH does), not away from zero.
TEST(SaturatingRoundingDoublingHighMul, HalvesRoundUpAndOnlyMinTimesMinSaturates) {
  EXPECT_EQ(SaturatingRoundingDoublingHighMul<std::int32_t>(1 << 15, 1 << 15), 1);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul<std::int32_t>(-(1 << 15), 1 << 15), 0);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul<std::int32_t>(3 << 15, 1 << 15), 2);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul<std::int32_t>(-(3 << 15), 1 << 15), -1);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul<std::int16_t>(-(1 << 7), 1 << 7), 0);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul<std::int16_t>(1 << 7, 1 << 7), 1);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt32Min, kInt32Min), kInt32Max);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt32Min, kInt32Max), kInt32Min + 1);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt32Max, kInt32Max), kInt32Max - 1);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt16Min, kInt16Min), kInt16Max);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt16Min, static_cast<std::int16_t>(kInt16Min + 1)),
            kInt16Max);
}

// Every int16 a against every 61st b plus the edges (about 1200 values): 8e7 pairs.
TEST(SaturatingRoundingDoublingHighMul, Int16AllAgainstDense) {
  const std::vector<std::int16_t> others = Int16Stride(61);
  for (const std::int16_t a : AllInt16()) {
    for (const std::int16_t b : others) {
      ASSERT_EQ(SaturatingRoundingDoublingHighMul(a, b), ReferenceSrdhm(a, b)) << a << " " << b;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// RoundingDivideByPOT

// For each exponent: values at, just below and just above the halfway points m*2^e +- 2^(e-1)
// and at the multiples themselves, for multiples near 0 and near both ends of the range, both
// signs; the extremes; and random values.
TEST(RoundingDivideByPOT, Int32HalfwayBoundariesAndRandom) {
  std::mt19937 rng(4242);
  std::uniform_int_distribution<std::int32_t> any(kInt32Min, kInt32Max);
  for (int exponent = 0; exponent < 32; ++exponent) {
    const std::int64_t step = std::int64_t{1} << exponent;
    const std::int64_t half = step / 2;
    const std::int64_t multiples_in_range = (std::int64_t{1} << 31) / step;
    std::vector<std::int64_t> multiples;
    for (std::int64_t m = -3; m <= 3; ++m) {
      for (const std::int64_t base : {std::int64_t{0}, multiples_in_range, -multiples_in_range}) {
        multiples.push_back(base + m);
      }
    }
    std::vector<std::int64_t> inputs = {kInt32Min, kInt32Min + 1, kInt32Max, kInt32Max - 1};
    for (const std::int64_t m : multiples) {
      for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1},
                                        half - 1, half, half + 1, -half - 1, -half, -half + 1}) {
        inputs.push_back(m * step + offset);
      }
    }
    for (int i = 0; i < 50000; ++i) {
      inputs.push_back(any(rng));
    }
    for (const std::int64_t x : inputs) {
      if (x < kInt32Min || x > kInt32Max) {
        continue;
      }
      ASSERT_EQ(RoundingDivideByPOT(static_cast<std::int32_t>(x), exponent),
                ReferenceRoundingDivideByPot(x, exponent))
          << x << " / 2^" << exponent;
    }
  }
}

TEST(RoundingDivideByPOT, Int16Exhaustive) {
  for (const std::int16_t x : AllInt16()) {
    for (int exponent = 0; exponent < 16; ++exponent) {
      ASSERT_EQ(RoundingDivideByPOT(x, exponent), ReferenceRoundingDivideByPot(x, exponent))
          << x << " / 2^" << exponent;
    }
  }
}

TEST(RoundingDivideByPOT, TiesGoAwayFromZero) {
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>(1, 1), 1);
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>(-1, 1), -1);
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>(-3, 1), -2);
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>(-5, 2), -1);
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>(-6, 2), -2);
  EXPECT_EQ(RoundingDivideByPOT(kInt32Min, 31), -1);
  EXPECT_EQ(RoundingDivideByPOT(kInt32Max, 31), 1);
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>(-(1 << 30), 31), -1);
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>(1 << 30, 31), 1);
  EXPECT_EQ(RoundingDivideByPOT<std::int32_t>((1 << 30) - 1, 31), 0);
}

#ifndef NDEBUG
TEST(RoundingDivideByPOTDeathTest, ExponentOutOfRangeAsserts) {
  EXPECT_DEATH(RoundingDivideByPOT<std::int32_t>(1, 32), "exponent");
  EXPECT_DEATH(RoundingDivideByPOT<std::int16_t>(1, 16), "exponent");
  EXPECT_DEATH(RoundingDivideByPOT<std::int32_t>(1, -1), "exponent");
}
#endif

// ---------------------------------------------------------------------------------------------
// SaturatingRoundingMultiplyByPOT

template <int Exponent, typename Scalar>
void CheckMultiplyByPot(const std::vector<Scalar>& values) {
  for (const Scalar x : values) {
    const Scalar expected = ReferenceMultiplyByPot(x, Exponent);
    ASSERT_EQ(SaturatingRoundingMultiplyByPOT<Exponent>(x), expected) << x << " * 2^" << Exponent;
    ASSERT_EQ(SaturatingRoundingMultiplyByPOT(x, Exponent), expected) << x << " * 2^" << Exponent;
  }
}

template <typename Scalar, int... Offsets>
void CheckMultiplyByPotAllExponents(const std::vector<Scalar>& values,
                                    std::integer_sequence<int, Offsets...>) {
  (CheckMultiplyByPot<Offsets - (kBits<Scalar> - 1)>(values), ...);
}

TEST(SaturatingRoundingMultiplyByPOT, Int16ExhaustiveAllExponents) {
  CheckMultiplyByPotAllExponents(AllInt16(), std::make_integer_sequence<int, 31>());
}

TEST(SaturatingRoundingMultiplyByPOT, Int32EdgesAndRandomAllExponents) {
  std::vector<std::int32_t> values = EdgeValues<std::int32_t>();
  // The saturation boundary of each left shift, 2^(31-e), its neighbours and their negations.
  for (int exponent = 1; exponent < 32; ++exponent) {
    const std::int64_t boundary = std::int64_t{1} << (31 - exponent);
    for (const std::int64_t v : {boundary - 1, boundary, boundary + 1}) {
      values.push_back(ClampToScalar<std::int32_t>(v));
      values.push_back(ClampToScalar<std::int32_t>(-v));
    }
  }
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::int32_t> any(kInt32Min, kInt32Max);
  for (int i = 0; i < 20000; ++i) {
    values.push_back(any(rng));
  }
  CheckMultiplyByPotAllExponents(values, std::make_integer_sequence<int, 63>());
}

TEST(SaturatingRoundingMultiplyByPOT, SaturationEdges) {
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<1>(std::int32_t{1 << 30}), kInt32Max);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<1>(std::int32_t{(1 << 30) - 1}), kInt32Max - 1);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<1>(std::int32_t{-(1 << 30)}), kInt32Min);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<1>(std::int32_t{-(1 << 30) - 1}), kInt32Min);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<31>(std::int32_t{1}), kInt32Max);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<31>(std::int32_t{-1}), kInt32Min);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<31>(std::int32_t{0}), 0);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<-31>(kInt32Min), -1);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<15>(std::int16_t{-1}), kInt16Min);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<15>(std::int16_t{1}), kInt16Max);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT(std::int16_t{0x2000}, 2), kInt16Max);
}

// ---------------------------------------------------------------------------------------------
// FixedPoint

TEST(FixedPoint, Constants) {
  using Q0 = FixedPoint<std::int32_t, 0>;
  using Q5 = FixedPoint<std::int32_t, 5>;
  using Q0s = FixedPoint<std::int16_t, 0>;
  EXPECT_EQ(Q0::One().raw(), kInt32Max);
  EXPECT_EQ(Q0s::One().raw(), kInt16Max);
  EXPECT_EQ(Q5::One().raw(), 1 << 26);
  EXPECT_EQ(Q5::Zero().raw(), 0);
  EXPECT_EQ(Q0::ConstantPOT<-1>().raw(), 1 << 30);
  EXPECT_EQ(Q0::ConstantPOT<-31>().raw(), 1);
  EXPECT_EQ(Q5::ConstantPOT<4>().raw(), 1 << 30);
  EXPECT_EQ(Q5::ConstantPOT<-26>().raw(), 1);
  EXPECT_EQ(ToDouble(Q5::ConstantPOT<-3>()), 0.125);
  EXPECT_EQ(Q5::FromScalarRaw(-7).raw(), -7);
  EXPECT_EQ(Q5::kFractionalBits, 26);
  EXPECT_EQ(Q0s::kFractionalBits, 15);
}

TEST(FixedPoint, FromDoubleRoundsHalfAwayFromZeroAndSaturates) {
  using Q0 = FixedPoint<std::int32_t, 0>;
  using Q3 = FixedPoint<std::int32_t, 3>;
  using Q2s = FixedPoint<std::int16_t, 2>;
  const double lsb = std::ldexp(1.0, -31);
  EXPECT_EQ(Q0::FromDouble(0.5 * lsb).raw(), 1);
  EXPECT_EQ(Q0::FromDouble(-0.5 * lsb).raw(), -1);
  EXPECT_EQ(Q0::FromDouble(0.49 * lsb).raw(), 0);
  EXPECT_EQ(Q0::FromDouble(-0.51 * lsb).raw(), -1);
  EXPECT_EQ(Q0::FromDouble(2.5 * lsb).raw(), 3);
  EXPECT_EQ(Q0::FromDouble(1.0).raw(), kInt32Max);
  EXPECT_EQ(Q0::FromDouble(-1.0).raw(), kInt32Min);
  EXPECT_EQ(Q0::FromDouble(-1e300).raw(), kInt32Min);
  EXPECT_EQ(Q0::FromDouble(1e300).raw(), kInt32Max);
  EXPECT_EQ(Q3::FromDouble(2.5).raw(), 5 << 27);
  EXPECT_EQ(Q3::FromDouble(-8.0).raw(), kInt32Min);
  EXPECT_EQ(Q2s::FromDouble(-1.75).raw(), -7 * (1 << 11));
  EXPECT_EQ(Q2s::FromDouble(4.0).raw(), kInt16Max);
  static_assert(Q3::ScalarRawFromDouble(0.75) == 3 << 26, "FromDouble usable at compile time");
  EXPECT_EQ(ToDouble(Q3::FromDouble(-1.625)), -1.625);
}

// Raw sums and differences are exact as long as they stay in range; checked against doubles,
// which hold these values exactly.
TEST(FixedPoint, AddSubNegAreExact) {
  using Q4 = FixedPoint<std::int32_t, 4>;
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::int32_t> half_range(kInt32Min / 2, kInt32Max / 2);
  for (int i = 0; i < 100000; ++i) {
    const Q4 a = Q4::FromRaw(half_range(rng));
    const Q4 b = Q4::FromRaw(half_range(rng));
    ASSERT_EQ(ToDouble(a + b), ToDouble(a) + ToDouble(b));
    ASSERT_EQ(ToDouble(a - b), ToDouble(a) - ToDouble(b));
    ASSERT_EQ(ToDouble(-a), -ToDouble(a));
    Q4 c = a;
    c += b;
    c -= a;
    ASSERT_EQ(c.raw(), b.raw());
  }
}

// The product is the exact product rounded to the result's LSB: within half an LSB of the result
// format, plus the double rounding of the reference product (|ab| * 2^-53).
template <int IntegerBitsA, int IntegerBitsB, typename Scalar>
void CheckMultiply(std::mt19937& rng) {
  using A = FixedPoint<Scalar, IntegerBitsA>;
  using B = FixedPoint<Scalar, IntegerBitsB>;
  using Product = FixedPoint<Scalar, IntegerBitsA + IntegerBitsB>;
  static_assert(std::is_same<decltype(A() * B()), Product>::value, "integer bits add up");
  std::uniform_int_distribution<Scalar> any(std::numeric_limits<Scalar>::lowest(),
                                            std::numeric_limits<Scalar>::max());
  const double half_lsb = std::ldexp(0.5, -Product::kFractionalBits);
  for (int i = 0; i < 100000; ++i) {
    const A a = A::FromRaw(any(rng));
    const B b = B::FromRaw(any(rng));
    const double exact = ToDouble(a) * ToDouble(b);
    ASSERT_LE(std::abs(ToDouble(a * b) - exact), half_lsb + std::abs(exact) * 0x1p-53)
        << a.raw() << " * " << b.raw();
  }
}

TEST(FixedPoint, MultiplyIsWithinHalfAnLsb) {
  std::mt19937 rng(6);
  CheckMultiply<0, 0, std::int32_t>(rng);
  CheckMultiply<2, 3, std::int32_t>(rng);
  CheckMultiply<7, 0, std::int32_t>(rng);
  CheckMultiply<15, 15, std::int32_t>(rng);
  CheckMultiply<0, 0, std::int16_t>(rng);
  CheckMultiply<3, 4, std::int16_t>(rng);
  using Q0 = FixedPoint<std::int32_t, 0>;
  EXPECT_EQ((Q0::FromRaw(kInt32Min) * Q0::FromRaw(kInt32Min)).raw(), kInt32Max);
  EXPECT_EQ((Q0::ConstantPOT<-1>() * Q0::ConstantPOT<-2>()).raw(), 1 << 28);
}

// Gaining integer bits rounds (within half an LSB of the new format, ties away from zero);
// losing them is exact when the value fits and saturates otherwise.
template <int From, int To, typename Scalar>
void CheckRescale(const std::vector<Scalar>& raws) {
  using Source = FixedPoint<Scalar, From>;
  using Target = FixedPoint<Scalar, To>;
  const double half_lsb = std::ldexp(0.5, -Target::kFractionalBits);
  const double lowest = ToDouble(Target::FromRaw(std::numeric_limits<Scalar>::lowest()));
  const double highest = ToDouble(Target::FromRaw(std::numeric_limits<Scalar>::max()));
  for (const Scalar raw : raws) {
    const Source x = Source::FromRaw(raw);
    const double value = ToDouble(x);
    const double rescaled = ToDouble(Rescale<To>(x));
    if (To >= From) {
      ASSERT_LE(std::abs(rescaled - value), half_lsb) << raw;
    } else {
      ASSERT_EQ(rescaled, std::min(std::max(value, lowest), highest)) << raw;
    }
  }
}

TEST(FixedPoint, Rescale) {
  const std::vector<std::int16_t> all16 = AllInt16();
  CheckRescale<0, 5>(all16);
  CheckRescale<5, 0>(all16);
  CheckRescale<3, 4>(all16);
  CheckRescale<4, 3>(all16);
  CheckRescale<2, 2>(all16);
  std::vector<std::int32_t> raws32 = EdgeValues<std::int32_t>();
  std::mt19937 rng(8);
  std::uniform_int_distribution<std::int32_t> any(kInt32Min, kInt32Max);
  for (int i = 0; i < 100000; ++i) {
    raws32.push_back(any(rng));
  }
  CheckRescale<0, 31 - 1>(raws32);
  CheckRescale<1, 0>(raws32);
  CheckRescale<12, 3>(raws32);
  CheckRescale<3, 12>(raws32);
  using Q0 = FixedPoint<std::int32_t, 0>;
  EXPECT_EQ(Rescale<1>(Q0::FromRaw(3)).raw(), 2);
  EXPECT_EQ(Rescale<1>(Q0::FromRaw(-3)).raw(), -2);
}

TEST(FixedPoint, ExactMulByPotAndMultiplyByPot) {
  using Q4 = FixedPoint<std::int32_t, 4>;
  const Q4 x = Q4::FromDouble(-3.3);
  const auto times_four = ExactMulByPot<2>(x);
  static_assert(std::is_same<decltype(times_four), const FixedPoint<std::int32_t, 6>>::value,
                "ExactMulByPot moves the binary point");
  EXPECT_EQ(ToDouble(times_four), 4 * ToDouble(x));
  EXPECT_EQ(ToDouble(ExactMulByPot<-3>(x)), ToDouble(x) / 8);
  EXPECT_EQ(ToDouble(SaturatingRoundingMultiplyByPOT<1>(x)), 2 * ToDouble(x));
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<3>(x).raw(), kInt32Min);
  EXPECT_EQ(SaturatingRoundingMultiplyByPOT<-1>(Q4::FromRaw(-3)).raw(), -2);
}

TEST(FixedPoint, ComparisonsSelectHalfSumSaturatingAdd) {
  using Q2 = FixedPoint<std::int16_t, 2>;
  const Q2 a = Q2::FromDouble(1.5);
  const Q2 b = Q2::FromDouble(-0.25);
  const std::int16_t all_ones = -1;
  EXPECT_EQ(MaskIfGreaterThan(a, b), all_ones);
  EXPECT_EQ(MaskIfGreaterThanOrEqual(a, a), all_ones);
  EXPECT_EQ(MaskIfLessThan(a, b), 0);
  EXPECT_EQ(MaskIfLessThanOrEqual(b, a), all_ones);
  EXPECT_EQ(MaskIfEqual(a, b), 0);
  EXPECT_EQ(MaskIfNotEqual(a, b), all_ones);
  EXPECT_EQ(MaskIfZero(Q2::Zero()), all_ones);
  EXPECT_EQ(MaskIfNonZero(Q2::Zero()), 0);
  EXPECT_EQ(SelectUsingMask(MaskIfLessThan(a, b), a, b).raw(), b.raw());
  EXPECT_EQ(ToDouble(RoundingHalfSum(a, b)), 0.625);
  EXPECT_EQ(SaturatingAdd(a, Q2::FromDouble(3.0)).raw(), kInt16Max);
  EXPECT_EQ(SaturatingAdd(-a, Q2::FromDouble(-3.0)).raw(), kInt16Min);
  EXPECT_EQ(ToDouble(SaturatingAdd(a, b)), 1.25);
}

// ---------------------------------------------------------------------------------------------
// Transcendentals
//
// Each function is swept over every int16 raw input of its domain and, for int32, over every
// 4096th raw value (2^20 points) plus the values next to 0 and the extremes, for IntegerBits 0..6
// where it takes a general input. Errors are absolute, against the double function evaluated at
// the exact input value. Bounds are about twice the largest error measured over all these sweeps
// and are quoted in LSBs of the result (2^-31 for int32, 2^-15 for int16).

// Every int16 raw value; for int32 every 4096th value plus the values within 64 of 0 and of the
// extremes. Sorted ascending.
template <typename Scalar>
std::vector<Scalar> SweepInputs() {
  if constexpr (std::is_same<Scalar, std::int16_t>::value) {
    return AllInt16();
  } else {
    std::vector<std::int32_t> values;
    for (std::int64_t v = kInt32Min; v <= kInt32Max; v += 4096) {
      values.push_back(static_cast<std::int32_t>(v));
    }
    for (std::int32_t d = 0; d <= 64; ++d) {
      values.push_back(-d);
      values.push_back(d);
      values.push_back(kInt32Min + d);
      values.push_back(kInt32Max - d);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  }
}

enum class Monotonic { kNonDecreasing, kNonIncreasing };

struct SweepResult {
  double max_error_lsb = 0;
  double worst_input = 0;
  // The largest decrease (for kNonDecreasing) between consecutive outputs, in raw units.
  std::int64_t largest_backward_step = 0;
  int points = 0;
};

// Applies function to every sweep input with raw value in [lowest_raw, highest_raw].
template <typename Scalar, int IntegerBits, typename Function, typename Reference>
SweepResult Sweep(Scalar lowest_raw, Scalar highest_raw, Monotonic direction, Function function,
                  Reference reference) {
  using Input = FixedPoint<Scalar, IntegerBits>;
  SweepResult result;
  bool has_previous = false;
  Scalar previous = 0;
  for (const Scalar raw : SweepInputs<Scalar>()) {
    if (raw < lowest_raw || raw > highest_raw) {
      continue;
    }
    const Input x = Input::FromRaw(raw);
    const FixedPoint<Scalar, 0> y = function(x);
    const double error = std::abs(ToDouble(y) - reference(ToDouble(x))) / Lsb<Scalar>();
    if (error > result.max_error_lsb) {
      result.max_error_lsb = error;
      result.worst_input = ToDouble(x);
    }
    if (has_previous) {
      const std::int64_t step = std::int64_t{y.raw()} - previous;
      result.largest_backward_step = std::max(
          result.largest_backward_step, direction == Monotonic::kNonDecreasing ? -step : step);
    }
    previous = y.raw();
    has_previous = true;
    ++result.points;
  }
  return result;
}

// allowed_backward_step is 0 (monotonic) except where noted: int16 results are not correctly
// rounded, so where the function moves by less than an LSB per input step (|slope| < 1) an output
// can come out one LSB past its neighbour.
void ExpectWithinBound(const SweepResult& result, double bound_lsb, const char* what,
                       int integer_bits, std::int64_t allowed_backward_step = 0) {
  EXPECT_GT(result.points, 1000) << what;
  EXPECT_LE(result.max_error_lsb, bound_lsb)
      << what << " IntegerBits=" << integer_bits << ": max error " << result.max_error_lsb
      << " LSB at input " << result.worst_input;
  EXPECT_LE(result.largest_backward_step, allowed_backward_step)
      << what << " IntegerBits=" << integer_bits;
}

double Logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

template <typename Scalar>
constexpr Scalar kMax = std::numeric_limits<Scalar>::max();
template <typename Scalar>
constexpr Scalar kLowest = std::numeric_limits<Scalar>::lowest();

template <typename Scalar>
void CheckExpOnQuarterInterval(double bound_lsb) {
  const auto quarter = static_cast<Scalar>(Scalar{1} << (kBits<Scalar> - 3));
  const SweepResult result = Sweep<Scalar, 0>(
      static_cast<Scalar>(-quarter), Scalar{-1}, Monotonic::kNonDecreasing,
      [](FixedPoint<Scalar, 0> x) { return AccurateExpOnNegativeQuarter(x); },
      [](double x) { return std::exp(x); });
  ExpectWithinBound(result, bound_lsb, "exp on [-1/4, 0)", 0);
}

// Measured max abs error: int32 0.96 LSB, int16 0.93 LSB.
TEST(AccurateTranscendentals, ExpOnIntervalBetweenNegativeOneQuarterAnd0Excl) {
  CheckExpOnQuarterInterval<std::int32_t>(1.9);
  CheckExpOnQuarterInterval<std::int16_t>(1.9);
}

template <typename Scalar, int IntegerBits>
void CheckExpOnNegativeValues(double bound_lsb) {
  const SweepResult result = Sweep<Scalar, IntegerBits>(
      kLowest<Scalar>, Scalar{0}, Monotonic::kNonDecreasing,
      [](FixedPoint<Scalar, IntegerBits> x) { return AccurateExpOnNegativeValues(x); },
      [](double x) { return std::exp(x); });
  ExpectWithinBound(result, bound_lsb, "AccurateExpOnNegativeValues", IntegerBits);
  EXPECT_EQ(AccurateExpOnNegativeValues(FixedPoint<Scalar, IntegerBits>::Zero()).raw(),
            kMax<Scalar>);
}

template <typename Scalar, int... IntegerBits>
void CheckExpOnNegativeValuesForAll(double bound_lsb, std::integer_sequence<int, IntegerBits...>) {
  (CheckExpOnNegativeValues<Scalar, IntegerBits>(bound_lsb), ...);
}

// Measured max abs error: int32 1.54 LSB, int16 1.46 LSB.
TEST(AccurateTranscendentals, ExpOnNegativeValues) {
  CheckExpOnNegativeValuesForAll<std::int32_t>(3.1, std::make_integer_sequence<int, 7>());
  CheckExpOnNegativeValuesForAll<std::int16_t>(2.9, std::make_integer_sequence<int, 7>());
  using Q10 = FixedPoint<std::int32_t, 10>;
  EXPECT_EQ(AccurateExpOnNegativeValues(Q10::FromDouble(-32.0)).raw(), 0);
  EXPECT_EQ(AccurateExpOnNegativeValues(Q10::FromRaw(kInt32Min)).raw(), 0);
  EXPECT_GT(AccurateExpOnNegativeValues(Q10::FromDouble(-21.0)).raw(), 0);
  using Q28 = FixedPoint<std::int32_t, 28>;
  EXPECT_NEAR(ToDouble(AccurateExpOnNegativeValues(Q28::FromDouble(-1.5))), std::exp(-1.5), 4e-9);
  EXPECT_EQ(AccurateExpOnNegativeValues(Q28::FromDouble(-1e6)).raw(), 0);
}

template <typename Scalar>
void CheckOneOverOnePlusX(double bound_lsb) {
  const SweepResult result = Sweep<Scalar, 0>(
      Scalar{0}, kMax<Scalar>, Monotonic::kNonIncreasing,
      [](FixedPoint<Scalar, 0> x) { return AccurateOneOverOnePlusX(x); },
      [](double x) { return 1.0 / (1.0 + x); });
  ExpectWithinBound(result, bound_lsb, "AccurateOneOverOnePlusX", 0,
                    std::is_same<Scalar, std::int16_t>::value ? 1 : 0);
}

// Measured max abs error: int32 1.25 LSB, int16 1.0 LSB (at x = 0, where 1 saturates).
TEST(AccurateTranscendentals, OneOverOnePlusX) {
  CheckOneOverOnePlusX<std::int32_t>(2.5);
  CheckOneOverOnePlusX<std::int16_t>(2.0);
}

template <typename Scalar>
void CheckOneMinusXOverOnePlusX(double bound_lsb) {
  const SweepResult result = Sweep<Scalar, 0>(
      Scalar{0}, kMax<Scalar>, Monotonic::kNonIncreasing,
      [](FixedPoint<Scalar, 0> x) { return AccurateOneMinusXOverOnePlusX(x); },
      [](double x) { return (1.0 - x) / (1.0 + x); });
  ExpectWithinBound(result, bound_lsb, "AccurateOneMinusXOverOnePlusX", 0);
}

// Measured max abs error: int32 1.50 LSB, int16 1.0 LSB (at x = 0, where 1 saturates).
TEST(AccurateTranscendentals, OneMinusXOverOnePlusX) {
  CheckOneMinusXOverOnePlusX<std::int32_t>(3.0);
  CheckOneMinusXOverOnePlusX<std::int16_t>(2.0);
}

template <typename Scalar, int IntegerBits>
void CheckTanh(double bound_lsb) {
  using Input = FixedPoint<Scalar, IntegerBits>;
  const auto function = [](Input x) { return AccurateTanh(x); };
  const SweepResult result =
      Sweep<Scalar, IntegerBits>(kLowest<Scalar>, kMax<Scalar>, Monotonic::kNonDecreasing, function,
                                 [](double x) { return std::tanh(x); });
  ExpectWithinBound(result, bound_lsb, "tanh", IntegerBits);
  EXPECT_EQ(AccurateTanh(Input::Zero()).raw(), 0);
  for (const Scalar raw : SweepInputs<Scalar>()) {
    if (raw != kLowest<Scalar>) {
      const Input x = Input::FromRaw(raw);
      ASSERT_EQ(AccurateTanh(-x).raw(), -AccurateTanh(x).raw())
          << "IntegerBits=" << IntegerBits << " " << raw;
    }
  }
}

template <typename Scalar, int... IntegerBits>
void CheckTanhForAll(double bound_lsb, std::integer_sequence<int, IntegerBits...>) {
  (CheckTanh<Scalar, IntegerBits>(bound_lsb), ...);
}

// Measured max abs error: int32 3.38 LSB, int16 2.36 LSB (near |tanh| = 1, where the absolute error
// of exp(-2|a|) is doubled).
TEST(AccurateTranscendentals, Tanh) {
  CheckTanhForAll<std::int32_t>(6.8, std::make_integer_sequence<int, 7>());
  CheckTanhForAll<std::int16_t>(4.7, std::make_integer_sequence<int, 7>());
}

template <typename Scalar, int IntegerBits>
void CheckLogistic(double bound_lsb) {
  using Input = FixedPoint<Scalar, IntegerBits>;
  const auto function = [](Input x) { return AccurateLogistic(x); };
  const SweepResult result = Sweep<Scalar, IntegerBits>(
      kLowest<Scalar>, kMax<Scalar>, Monotonic::kNonDecreasing, function, Logistic);
  const bool slope_below_one_lsb_per_step =
      std::is_same<Scalar, std::int16_t>::value && IntegerBits <= 1;
  ExpectWithinBound(result, bound_lsb, "logistic", IntegerBits,
                    slope_below_one_lsb_per_step ? 1 : 0);
  EXPECT_EQ(AccurateLogistic(Input::Zero()).raw(), Scalar{1} << (kBits<Scalar> - 2));
  const std::int64_t one_raw = std::int64_t{1} << (kBits<Scalar> - 1);
  for (const Scalar raw : SweepInputs<Scalar>()) {
    if (raw != kLowest<Scalar>) {
      const Input x = Input::FromRaw(raw);
      ASSERT_EQ(std::int64_t{AccurateLogistic(x).raw()} + AccurateLogistic(-x).raw(), one_raw)
          << "IntegerBits=" << IntegerBits << " " << raw;
    }
  }
}

template <typename Scalar, int... IntegerBits>
void CheckLogisticForAll(double bound_lsb, std::integer_sequence<int, IntegerBits...>) {
  (CheckLogistic<Scalar, IntegerBits>(bound_lsb), ...);
}

// Measured max abs error: int32 2.19 LSB, int16 1.30 LSB.
TEST(AccurateTranscendentals, Logistic) {
  CheckLogisticForAll<std::int32_t>(4.4, std::make_integer_sequence<int, 7>());
  CheckLogisticForAll<std::int16_t>(2.6, std::make_integer_sequence<int, 7>());
}

// gemmlowp's functions (gemmlowp's bits: test/gemmlowp_bits_test.cc) over the same sweeps, for
// their documented errors (doc/design.md, "Fixed-point functions"): the largest absolute error
// over IntegerBits 0..6 and the largest step against the function's direction.
struct GemmlowpError {
  double int32_lsb;
  double int16_lsb;
};

template <typename Scalar, int IntegerBits>
SweepResult SweepGemmlowp(const char* name) {
  using Input = FixedPoint<Scalar, IntegerBits>;
  const std::string function = name;
  if (function == "exp_on_negative_values") {
    return Sweep<Scalar, IntegerBits>(
        kLowest<Scalar>, Scalar{0}, Monotonic::kNonDecreasing,
        [](Input x) { return exp_on_negative_values(x); }, [](double x) { return std::exp(x); });
  }
  if (function == "tanh") {
    return Sweep<Scalar, IntegerBits>(
        kLowest<Scalar>, kMax<Scalar>, Monotonic::kNonDecreasing, [](Input x) { return tanh(x); },
        [](double x) { return std::tanh(x); });
  }
  return Sweep<Scalar, IntegerBits>(
      kLowest<Scalar>, kMax<Scalar>, Monotonic::kNonDecreasing, [](Input x) { return logistic(x); },
      Logistic);
}

template <typename Scalar, int... IntegerBits>
SweepResult WorstOverFormats(const char* name, std::integer_sequence<int, IntegerBits...>) {
  SweepResult worst;
  for (const SweepResult& result : {SweepGemmlowp<Scalar, IntegerBits>(name)...}) {
    worst.max_error_lsb = std::max(worst.max_error_lsb, result.max_error_lsb);
    worst.largest_backward_step =
        std::max(worst.largest_backward_step, result.largest_backward_step);
    worst.points += result.points;
  }
  return worst;
}

TEST(GemmlowpTranscendentals, ErrorsAsDocumented) {
  // Measured: the largest error (int32 LSB, int16 LSB) and backward step (int32, int16) of each
  // function: exp 492.1 and 1.95 LSB, monotonic; tanh 305.9 and 12.05 LSB, steps back by up to
  // 12 and 16; logistic 152.9 and 6.72 LSB, steps back by up to 6 and 8.
  const struct {
    const char* name;
    GemmlowpError error;
    std::int64_t int32_backward_step;
    std::int64_t int16_backward_step;
  } kFunctions[] = {
      {"exp_on_negative_values", {493, 2.0}, 0, 0},
      {"tanh", {306, 12.1}, 12, 16},
      {"logistic", {153, 6.8}, 6, 8},
  };
  for (const auto& f : kFunctions) {
    const SweepResult int32 =
        WorstOverFormats<std::int32_t>(f.name, std::make_integer_sequence<int, 7>());
    const SweepResult int16 =
        WorstOverFormats<std::int16_t>(f.name, std::make_integer_sequence<int, 7>());
    EXPECT_LE(int32.max_error_lsb, f.error.int32_lsb) << f.name;
    EXPECT_LE(int16.max_error_lsb, f.error.int16_lsb) << f.name;
    EXPECT_LE(int32.largest_backward_step, f.int32_backward_step) << f.name;
    EXPECT_LE(int16.largest_backward_step, f.int16_backward_step) << f.name;
  }
}

}  // namespace
}  // namespace fixedpoint
}  // namespace lowbit
