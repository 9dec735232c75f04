// lowbit::fixedpoint: gemmlowp-compatible fixed-point arithmetic (SRDHM, RoundingDivideByPOT,
// FixedPoint<Raw, IntegerBits>, gemmlowp's exp/tanh/logistic and lowbit's more accurate ones),
// written once over a raw type so SIMD back ends only supply primitives and stay bit-exact with
// the scalar one. The SIMD back ends (fixedpoint_{sse41,avx2,avx512,neon}.h) are not included
// here: only code compiled for an ISA may include its back end (doc/design.md, "Fixed-point back
// ends").
#ifndef LOWBIT_FIXEDPOINT_FIXEDPOINT_H_
#define LOWBIT_FIXEDPOINT_FIXEDPOINT_H_

#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "lowbit/fixedpoint/fixedpoint_scalar.h"

namespace lowbit {
namespace fixedpoint {

namespace detail {

template <typename Raw>
using UnsignedScalarOf = std::make_unsigned_t<ScalarRawTypeOf<Raw>>;

template <typename Raw>
Raw DupMax() {
  return Dup<Raw>(std::numeric_limits<ScalarRawTypeOf<Raw>>::max());
}

template <typename Raw>
Raw DupLowest() {
  return Dup<Raw>(std::numeric_limits<ScalarRawTypeOf<Raw>>::lowest());
}

/// x * 2^exponent clamped to the scalar range, for exponent in [1, bits). Values beyond
/// +-(2^(bits-1-exponent) - 1) are exactly those whose shifted value leaves the range (or, for the
/// negative boundary, lands on lowest, which clamping reproduces).
template <typename Raw>
Raw SaturatingShiftLeft(Raw x, int exponent) {
  using Scalar = ScalarRawTypeOf<Raw>;
  const auto threshold =
      static_cast<Scalar>((UnsignedScalarOf<Raw>{1} << (kScalarBits<Raw> - 1 - exponent)) - 1);
  const Raw positive_overflow = MaskIfGreaterThan(x, Dup<Raw>(threshold));
  const Raw negative_overflow = MaskIfLessThan(x, Dup<Raw>(static_cast<Scalar>(-threshold)));
  const Raw shifted = ShiftLeft(x, exponent);
  return SelectUsingMask(positive_overflow, DupMax<Raw>(),
                         SelectUsingMask(negative_overflow, DupLowest<Raw>(), shifted));
}

/// x / 2^exponent rounded to nearest, ties away from zero, from mask = 2^exponent - 1 and
/// shifted = x >> exponent (arithmetic). Masks are -1 where true, so subtracting one adds 1.
template <typename Raw>
Raw RoundShiftedAwayFromZero(Raw x, Raw mask, Raw shifted) {
  const Raw remainder = BitAnd(x, mask);
  // Halfway remainders round up for x >= 0 and down (away from zero) for x < 0.
  const Raw threshold = Sub(ShiftRight(mask, 1), MaskIfLessThan(x, Dup<Raw>(0)));
  return Sub(shifted, MaskIfGreaterThan(remainder, threshold));
}

}  // namespace detail

/// x / 2^exponent rounded to nearest, ties away from zero (gemmlowp/TFLite semantics).
/// Precondition: 0 <= exponent < bits of the scalar type ([0, 31] for int32, [0, 15] for int16);
/// anything else is asserted in debug builds and undefined otherwise.
template <typename Raw>
Raw RoundingDivideByPOT(Raw x, int exponent) {
  using Scalar = ScalarRawTypeOf<Raw>;
  assert(exponent >= 0 && exponent < detail::kScalarBits<Raw>);
  const auto mask = static_cast<Scalar>((detail::UnsignedScalarOf<Raw>{1} << exponent) - 1);
  return detail::RoundShiftedAwayFromZero(x, Dup<Raw>(mask), ShiftRight(x, exponent));
}

/// x -> RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, multiplier), exponent) + offset,
/// the offset added with wrapping: the fixed-point scale of gemmlowp's QuantizeDown output stages,
/// with its parameters fixed. One operation rather than three so that a back end may round the
/// 64-bit product once instead of twice, for the same bits, and an object so that the constants it
/// derives from the parameters are derived once for many values (fixedpoint_avx2.h).
/// Precondition as for RoundingDivideByPOT.
template <typename Raw>
class QuantizeDownScale {
 public:
  QuantizeDownScale(Raw multiplier, int exponent, Raw offset)
      : multiplier_(multiplier), exponent_(exponent), offset_(offset) {}

  Raw operator()(Raw x) const {
    return Add(RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, multiplier_), exponent_),
               offset_);
  }

 private:
  Raw multiplier_;
  int exponent_;
  Raw offset_;
};

namespace detail {

/// What the x86 back ends' QuantizeDownScale adds to a 64-bit product p before one shift by
/// 31 + e, for e >= 1: 2^30 + 2^(e-1) * 2^31 where p >= 0, and 2^31 less where p < 0
/// (fixedpoint_avx2.h derives it).
inline std::int64_t OneRoundingNudge(int exponent) {
  return (std::int64_t{1} << 30) + (std::int64_t{1} << (exponent - 1) << 31);
}

/// The same nudges plus a bias of 2^63, for back ends without a 64-bit arithmetic shift (SSE4.1,
/// AVX2): every sum is then non-negative and below 2^64, and a logical shift divides it, leaving
/// each quotient `excess` = 2^(32-e) too large.
struct BiasedOneRounding {
  std::int64_t positive_nudge;
  std::int64_t negative_nudge;
  std::int32_t excess;
};
inline BiasedOneRounding BiasedOneRoundingFor(int exponent) {
  const std::uint64_t nudge =
      (std::uint64_t{1} << 63) + static_cast<std::uint64_t>(OneRoundingNudge(exponent));
  return {static_cast<std::int64_t>(nudge),
          static_cast<std::int64_t>(nudge - (std::uint64_t{1} << 31)),
          static_cast<std::int32_t>(std::uint32_t{1} << (32 - exponent))};
}

}  // namespace detail

/// The scale above for one value.
template <typename Raw>
Raw QuantizeDownByFixedPoint(Raw x, Raw multiplier, int exponent, Raw offset) {
  return QuantizeDownScale<Raw>(multiplier, exponent, offset)(x);
}

/// The same with one exponent per lane, each in [0, bits of the scalar type); SIMD raw types only.
template <typename Raw, detail::EnableIfSimd<Raw> = 0>
Raw RoundingDivideByPOT(Raw x, Raw exponent) {
  const Raw one = Dup<Raw>(1);
  return detail::RoundShiftedAwayFromZero(x, Sub(ShiftLeft(one, exponent), one),
                                          ShiftRight(x, exponent));
}

/// x * 2^Exponent: a left shift clamped to the type's range for Exponent > 0,
/// RoundingDivideByPOT(x, -Exponent) for Exponent < 0. |Exponent| < bits of the scalar type.
template <int Exponent, typename Raw>
Raw SaturatingRoundingMultiplyByPOT(Raw x) {
  static_assert(Exponent > -detail::kScalarBits<Raw> && Exponent < detail::kScalarBits<Raw>,
                "Exponent out of range for this raw type");
  if constexpr (Exponent > 0) {
    return detail::SaturatingShiftLeft(x, Exponent);
  } else if constexpr (Exponent < 0) {
    return RoundingDivideByPOT(x, -Exponent);
  } else {
    return x;
  }
}

/// Runtime-exponent version of the above. Precondition: |exponent| < bits of the scalar type
/// ([-31, 31] for int32, [-15, 15] for int16), asserted in debug builds.
template <typename Raw>
Raw SaturatingRoundingMultiplyByPOT(Raw x, int exponent) {
  assert(exponent > -detail::kScalarBits<Raw> && exponent < detail::kScalarBits<Raw>);
  if (exponent > 0) {
    return detail::SaturatingShiftLeft(x, exponent);
  }
  if (exponent < 0) {
    return RoundingDivideByPOT(x, -exponent);
  }
  return x;
}

/// A real number (per lane) stored as raw * 2^-kFractionalBits, where
/// kFractionalBits = bits - 1 - IntegerBits: the range is [-2^IntegerBits, 2^IntegerBits).
template <typename Raw, int IntegerBits>
class FixedPoint {
 public:
  using RawType = Raw;
  using ScalarRawType = ScalarRawTypeOf<Raw>;
  static constexpr int kTotalBits = detail::kScalarBits<Raw>;
  static constexpr int kIntegerBits = IntegerBits;
  static constexpr int kFractionalBits = kTotalBits - 1 - IntegerBits;
  static_assert(IntegerBits >= 0 && IntegerBits < kTotalBits, "IntegerBits out of range");

  FixedPoint() = default;

  static FixedPoint FromRaw(Raw x) {
    FixedPoint result;
    result.raw_ = x;
    return result;
  }

  static FixedPoint FromScalarRaw(ScalarRawType x) { return FromRaw(Dup<Raw>(x)); }

  /// round(x * 2^kFractionalBits), ties away from zero, clamped to the scalar range.
  /// Precondition: x is not NaN.
  static constexpr ScalarRawType ScalarRawFromDouble(double x) {
    assert(x == x);
    constexpr double kHighest = std::numeric_limits<ScalarRawType>::max();
    constexpr double kLowest = std::numeric_limits<ScalarRawType>::lowest();
    const double scaled = x * static_cast<double>(std::int64_t{1} << kFractionalBits);
    if (!(scaled < kHighest)) {
      return std::numeric_limits<ScalarRawType>::max();
    }
    if (!(scaled > kLowest)) {
      return std::numeric_limits<ScalarRawType>::lowest();
    }
    const auto truncated = static_cast<std::int64_t>(scaled);
    // Exact: |scaled| < 2^31, so scaled - truncated loses no bits.
    const double fraction = scaled - static_cast<double>(truncated);
    const std::int64_t rounded = truncated + (fraction >= 0.5 ? 1 : 0) - (fraction <= -0.5 ? 1 : 0);
    return static_cast<ScalarRawType>(rounded);
  }

  static FixedPoint FromDouble(double x) { return FromScalarRaw(ScalarRawFromDouble(x)); }

  static FixedPoint Zero() { return FromScalarRaw(0); }

  /// With no integer bits 1.0 is not representable; One() is then the largest value, 1 - 2^-31
  /// (int32) or 1 - 2^-15 (int16).
  static FixedPoint One() {
    if constexpr (IntegerBits == 0) {
      return FromScalarRaw(std::numeric_limits<ScalarRawType>::max());
    } else {
      return FromScalarRaw(static_cast<ScalarRawType>(ScalarRawType{1} << kFractionalBits));
    }
  }

  /// Exactly 2^Exponent.
  template <int Exponent>
  static FixedPoint ConstantPOT() {
    static_assert(Exponent >= -kFractionalBits && Exponent < IntegerBits,
                  "2^Exponent is not representable in this format");
    return FromScalarRaw(
        static_cast<ScalarRawType>(ScalarRawType{1} << (kFractionalBits + Exponent)));
  }

  const Raw& raw() const { return raw_; }
  Raw& raw() { return raw_; }

 private:
  Raw raw_{};
};

/// + and - wrap on overflow, like the raw additions they are.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> operator+(FixedPoint<Raw, IntegerBits> a,
                                       FixedPoint<Raw, IntegerBits> b) {
  return FixedPoint<Raw, IntegerBits>::FromRaw(Add(a.raw(), b.raw()));
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> operator-(FixedPoint<Raw, IntegerBits> a,
                                       FixedPoint<Raw, IntegerBits> b) {
  return FixedPoint<Raw, IntegerBits>::FromRaw(Sub(a.raw(), b.raw()));
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> operator-(FixedPoint<Raw, IntegerBits> a) {
  return FixedPoint<Raw, IntegerBits>::FromRaw(Neg(a.raw()));
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits>& operator+=(FixedPoint<Raw, IntegerBits>& a,
                                         FixedPoint<Raw, IntegerBits> b) {
  return a = a + b;
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits>& operator-=(FixedPoint<Raw, IntegerBits>& a,
                                         FixedPoint<Raw, IntegerBits> b) {
  return a = a - b;
}

/// The product of formats with a and b integer bits has a + b integer bits, which makes the raw
/// product exactly SRDHM of the raws: rounded to nearest, never overflowing (except -1 * -1 with
/// a + b == 0, which saturates to One()).
template <typename Raw, int IntegerBitsA, int IntegerBitsB>
FixedPoint<Raw, IntegerBitsA + IntegerBitsB> operator*(FixedPoint<Raw, IntegerBitsA> a,
                                                       FixedPoint<Raw, IntegerBitsB> b) {
  return FixedPoint<Raw, IntegerBitsA + IntegerBitsB>::FromRaw(
      SaturatingRoundingDoublingHighMul(a.raw(), b.raw()));
}

template <typename Raw, int IntegerBits>
Raw MaskIfZero(FixedPoint<Raw, IntegerBits> a) {
  return MaskIfZero(a.raw());
}

template <typename Raw, int IntegerBits>
Raw MaskIfNonZero(FixedPoint<Raw, IntegerBits> a) {
  return MaskIfNonZero(a.raw());
}

template <typename Raw, int IntegerBits>
Raw MaskIfEqual(FixedPoint<Raw, IntegerBits> a, FixedPoint<Raw, IntegerBits> b) {
  return MaskIfEqual(a.raw(), b.raw());
}

template <typename Raw, int IntegerBits>
Raw MaskIfNotEqual(FixedPoint<Raw, IntegerBits> a, FixedPoint<Raw, IntegerBits> b) {
  return MaskIfNotEqual(a.raw(), b.raw());
}

template <typename Raw, int IntegerBits>
Raw MaskIfGreaterThan(FixedPoint<Raw, IntegerBits> a, FixedPoint<Raw, IntegerBits> b) {
  return MaskIfGreaterThan(a.raw(), b.raw());
}

template <typename Raw, int IntegerBits>
Raw MaskIfGreaterThanOrEqual(FixedPoint<Raw, IntegerBits> a, FixedPoint<Raw, IntegerBits> b) {
  return MaskIfGreaterThanOrEqual(a.raw(), b.raw());
}

template <typename Raw, int IntegerBits>
Raw MaskIfLessThan(FixedPoint<Raw, IntegerBits> a, FixedPoint<Raw, IntegerBits> b) {
  return MaskIfLessThan(a.raw(), b.raw());
}

template <typename Raw, int IntegerBits>
Raw MaskIfLessThanOrEqual(FixedPoint<Raw, IntegerBits> a, FixedPoint<Raw, IntegerBits> b) {
  return MaskIfLessThanOrEqual(a.raw(), b.raw());
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> SelectUsingMask(Raw mask, FixedPoint<Raw, IntegerBits> if_mask,
                                             FixedPoint<Raw, IntegerBits> if_not_mask) {
  return FixedPoint<Raw, IntegerBits>::FromRaw(
      SelectUsingMask(mask, if_mask.raw(), if_not_mask.raw()));
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> RoundingHalfSum(FixedPoint<Raw, IntegerBits> a,
                                             FixedPoint<Raw, IntegerBits> b) {
  return FixedPoint<Raw, IntegerBits>::FromRaw(RoundingHalfSum(a.raw(), b.raw()));
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> SaturatingAdd(FixedPoint<Raw, IntegerBits> a,
                                           FixedPoint<Raw, IntegerBits> b) {
  return FixedPoint<Raw, IntegerBits>::FromRaw(SaturatingAdd(a.raw(), b.raw()));
}

template <int Exponent, typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> SaturatingRoundingMultiplyByPOT(FixedPoint<Raw, IntegerBits> a) {
  return FixedPoint<Raw, IntegerBits>::FromRaw(SaturatingRoundingMultiplyByPOT<Exponent>(a.raw()));
}

/// The same raw bits reinterpreted with Exponent more integer bits: multiplies the value by
/// 2^Exponent exactly, at no cost.
template <int Exponent, typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits + Exponent> ExactMulByPot(FixedPoint<Raw, IntegerBits> a) {
  return FixedPoint<Raw, IntegerBits + Exponent>::FromRaw(a.raw());
}

/// The same value in another format: exact (or saturated) when gaining fractional bits, rounded
/// to nearest (ties away from zero) when losing them.
template <int NewIntegerBits, typename Raw, int IntegerBits>
FixedPoint<Raw, NewIntegerBits> Rescale(FixedPoint<Raw, IntegerBits> a) {
  return FixedPoint<Raw, NewIntegerBits>::FromRaw(
      SaturatingRoundingMultiplyByPOT<IntegerBits - NewIntegerBits>(a.raw()));
}

template <typename Scalar, int IntegerBits>
double ToDouble(FixedPoint<Scalar, IntegerBits> x) {
  static_assert(detail::kIsScalarRaw<Scalar>, "ToDouble needs a scalar raw type");
  return std::ldexp(static_cast<double>(x.raw()),
                    -FixedPoint<Scalar, IntegerBits>::kFractionalBits);
}

namespace detail {

/// 1 - x for x > 0 in a format without integer bits, where 1 itself is not representable:
/// 2^(bits-1) - raw, computed as (max - raw) + 1 so nothing overflows; saturates to One() at x ==
/// 0.
template <typename Raw>
FixedPoint<Raw, 0> OneMinus(FixedPoint<Raw, 0> x) {
  return FixedPoint<Raw, 0>::FromRaw(SaturatingAdd(Sub(DupMax<Raw>(), x.raw()), Dup<Raw>(1)));
}

template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> MinusAbs(FixedPoint<Raw, IntegerBits> a, Raw negative) {
  return SelectUsingMask(negative, a, -a);
}

}  // namespace detail

// gemmlowp's transcendental functions, bit for bit, under gemmlowp's names: TFLite's quantized
// softmax, logistic and tanh are built on them, so a model validated against those gives the same
// answers here (test/fixedpoint_test.cc compares every int16 input and sampled int32 inputs with
// Debian's libgemmlowp-dev). Their errors reach a few hundred LSB; Accurate* below are lowbit's
// own, nearer the exact values.

namespace detail {

/// A constant given as an int32 raw value, in a format of any raw width: gemmlowp writes its
/// constants once, for int32, and rounds them (RoundingDivideByPOT) to narrower raws.
template <typename F>
F ConstantFromInt32Raw(std::int32_t int32_raw) {
  using Scalar = typename F::ScalarRawType;
  constexpr int kBits = 8 * static_cast<int>(sizeof(Scalar));
  return F::FromScalarRaw(static_cast<Scalar>(RoundingDivideByPOT(int32_raw, 32 - kBits)));
}

/// a + b, saturating for 16-bit raws and wrapping for 32-bit ones, as gemmlowp adds exp's
/// constant term.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, IntegerBits> AddSaturatingIf16Bit(FixedPoint<Raw, IntegerBits> a,
                                                  FixedPoint<Raw, IntegerBits> b) {
  if constexpr (kScalarBits<Raw> == 16) {
    return SaturatingAdd(a, b);
  } else {
    return a + b;
  }
}

/// 1 / (1 + x) for x in [0, 1], times 2, in a format with 2 integer bits: Newton-Raphson on the
/// half denominator d = (1 + x) / 2 from the start 48/17 - 32/17 d, three steps.
template <typename Raw>
FixedPoint<Raw, 2> TwoOverOnePlusX(FixedPoint<Raw, 0> x) {
  using F0 = FixedPoint<Raw, 0>;
  using F2 = FixedPoint<Raw, 2>;
  const F0 half_denominator = RoundingHalfSum(x, F0::One());
  const F2 start_constant = ConstantFromInt32Raw<F2>(1515870810);  // 48/17
  const F2 start_slope = ConstantFromInt32Raw<F2>(-1010580540);    // -32/17
  F2 z = start_constant + half_denominator * start_slope;
  for (int step = 0; step < 3; ++step) {
    const F2 residual = F2::One() - half_denominator * z;
    z = z + Rescale<2>(z * residual);
  }
  return z;
}

/// exp(a) for a <= 0 as both families reduce it: a = r - n with r in [-1/4, 0) and n >= 0 a
/// multiple of 1/4, exp(r) from `exp_on_quarter`, times factor(k) = exp(-2^k) for each set bit
/// 2^k of n, k = -2 .. min(IntegerBits - 1, 4). n (raw, at a's format) is left in *n for the
/// callers' own handling of n >= 32 and of a == 0.
template <typename Raw, int IntegerBits, typename ExpOnQuarter, typename Factor>
FixedPoint<Raw, 0> ExpByQuarters(FixedPoint<Raw, IntegerBits> a, ExpOnQuarter exp_on_quarter,
                                 Factor factor, Raw* n) {
  using InputF = FixedPoint<Raw, IntegerBits>;
  using ResultF = FixedPoint<Raw, 0>;
  using Scalar = ScalarRawTypeOf<Raw>;
  constexpr int kFractionalBits = InputF::kFractionalBits;
  static_assert(kFractionalBits >= 2, "exp on negative values needs 1/4 to be representable");
  const InputF one_quarter = InputF::template ConstantPOT<-2>();
  const InputF below_one_quarter = one_quarter - InputF::FromScalarRaw(1);
  const InputF r = InputF::FromRaw(BitAnd(a.raw(), below_one_quarter.raw())) - one_quarter;
  *n = (r - a).raw();
  // |r| < 1/4, so this left shift never saturates.
  ResultF result = exp_on_quarter(Rescale<0>(r));
  constexpr int kHighestPowerOfTwo = IntegerBits - 1 < 4 ? IntegerBits - 1 : 4;
  for (int k = -2; k <= kHighestPowerOfTwo; ++k) {
    const Raw bit_is_set = MaskIfNonZero(
        BitAnd(*n, Dup<Raw>(static_cast<Scalar>(Scalar{1} << (kFractionalBits + k)))));
    result = SelectUsingMask(bit_is_set, result * factor(k), result);
  }
  return result;
}

}  // namespace detail

/// exp(a) for a in [-1/4, 0): exp(-1/8) exp(x) with x = a + 1/8, exp(x) by its Taylor polynomial
/// of degree 4.
template <typename Raw>
FixedPoint<Raw, 0> exp_on_interval_between_negative_one_quarter_and_0_excl(FixedPoint<Raw, 0> a) {
  using F = FixedPoint<Raw, 0>;
  const F exp_minus_one_eighth = detail::ConstantFromInt32Raw<F>(1895147668);
  const F one_third = detail::ConstantFromInt32Raw<F>(715827883);
  const F x = a + F::template ConstantPOT<-3>();
  const F x2 = x * x;
  const F x3 = x2 * x;
  const F x4 = x2 * x2;
  const F x4_over_4 = SaturatingRoundingMultiplyByPOT<-2>(x4);
  // x^2/2 + x^3/6 + x^4/24 = ((x^4/4 + x^3) / 3 + x^2) / 2.
  const F higher_terms = SaturatingRoundingMultiplyByPOT<-1>((x4_over_4 + x3) * one_third + x2);
  return detail::AddSaturatingIf16Bit(exp_minus_one_eighth,
                                      exp_minus_one_eighth * (x + higher_terms));
}

/// exp(a) for a <= 0: a = r - n with r in [-1/4, 0) and n a multiple of 1/4, exp(r) times
/// exp(-2^k) for each set bit 2^k of n; 0 below -32 (formats that reach it); exp(0) is One().
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> exp_on_negative_values(FixedPoint<Raw, IntegerBits> a) {
  using InputF = FixedPoint<Raw, IntegerBits>;
  using ResultF = FixedPoint<Raw, 0>;
  // exp(-2^k) for k = -2 .. 4, as int32 raws without integer bits.
  constexpr std::int32_t kFactors[] = {1672461947, 1302514674, 790015084, 290630308,
                                       39332535,   720401,     242};
  Raw n;
  ResultF result = detail::ExpByQuarters(
      a, [](ResultF r) { return exp_on_interval_between_negative_one_quarter_and_0_excl(r); },
      [&](int k) { return detail::ConstantFromInt32Raw<ResultF>(kFactors[k + 2]); }, &n);
  if constexpr (IntegerBits > 5) {
    const InputF minus_32 =
        detail::ConstantFromInt32Raw<InputF>(-(std::int32_t{1} << (36 - IntegerBits)));
    result = SelectUsingMask(MaskIfLessThan(a, minus_32), ResultF::Zero(), result);
  }
  return SelectUsingMask(MaskIfZero(a), ResultF::One(), result);
}

/// (1 - x) / (1 + x) for x in [0, 1]: 2 / (1 + x) - 1.
template <typename Raw>
FixedPoint<Raw, 0> one_minus_x_over_one_plus_x_for_x_in_0_1(FixedPoint<Raw, 0> x) {
  return Rescale<0>(detail::TwoOverOnePlusX(x) - FixedPoint<Raw, 2>::One());
}

/// -tanh(a) for a <= 0.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> neg_tanh_on_negative_values(FixedPoint<Raw, IntegerBits> a) {
  return one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(ExactMulByPot<1>(a)));
}

/// tanh(a) = sign(a) (1 - e) / (1 + e) with e = exp(-2|a|); tanh(0) is 0.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> tanh(FixedPoint<Raw, IntegerBits> a) {
  using InputF = FixedPoint<Raw, IntegerBits>;
  using ResultF = FixedPoint<Raw, 0>;
  const Raw negative = MaskIfLessThan(a, InputF::Zero());
  const ResultF t = neg_tanh_on_negative_values(SelectUsingMask(negative, a, -a));
  return SelectUsingMask(MaskIfZero(a), ResultF::Zero(), SelectUsingMask(negative, -t, t));
}

/// 1 / (1 + x) for x in [0, 1].
template <typename Raw>
FixedPoint<Raw, 0> one_over_one_plus_x_for_x_in_0_1(FixedPoint<Raw, 0> x) {
  return Rescale<0>(ExactMulByPot<-1>(detail::TwoOverOnePlusX(x)));
}

/// logistic(a) = 1 / (1 + exp(-a)) for a >= 0.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> logistic_on_positive_values(FixedPoint<Raw, IntegerBits> a) {
  return one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(-a));
}

/// logistic(a) = 1 / (1 + exp(-a)): from |a|, and 1 minus that for a < 0; logistic(0) is 1/2.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> logistic(FixedPoint<Raw, IntegerBits> a) {
  using InputF = FixedPoint<Raw, IntegerBits>;
  using ResultF = FixedPoint<Raw, 0>;
  const Raw positive = MaskIfGreaterThan(a, InputF::Zero());
  const ResultF if_positive = logistic_on_positive_values(SelectUsingMask(positive, a, -a));
  const ResultF if_negative = ResultF::One() - if_positive;
  return SelectUsingMask(MaskIfZero(a), detail::ConstantFromInt32Raw<ResultF>(1 << 30),
                         SelectUsingMask(positive, if_positive, if_negative));
}

// lowbit's own transcendental functions, Accurate*: the same functions as gemmlowp's above, nearer
// the exact values (doc/output-pipeline.md compares them). Accuracy notes give the largest
// absolute error against the exact function measured over the sweeps of test/fixedpoint_test.cc
// (every int16 input; about 2^20 evenly spaced int32 inputs plus edges), for IntegerBits 0..6.
// "LSB" is 2^-31 for int32 raw and 2^-15 for int16 raw.

/// exp(a) for a in [-1/4, 0). exp(a) = exp(-1/8) * exp(x) with x = a + 1/8 in [-1/8, 1/8), and
/// exp(x) by its Taylor polynomial of degree 6, whose truncation error (|x|^7 / 7! * e^(1/8) below
/// 1.1e-10, a quarter of an int32 LSB) is below the rounding of the arithmetic. The factor
/// exp(-1/8) is folded into the coefficients, so every product rounds once and all but the last are
/// then scaled down by |x| <= 1/8. Max abs error 0.96 LSB (2^-31.1) for int32, 0.93 LSB (2^-15.1)
/// for int16; test ExpOnIntervalBetweenNegativeOneQuarterAnd0Excl.
template <typename Raw>
FixedPoint<Raw, 0> AccurateExpOnNegativeQuarter(FixedPoint<Raw, 0> a) {
  using F = FixedPoint<Raw, 0>;
  constexpr double kExpMinusOneEighth = 0.882496902584595402864892143229;
  const F x = a + F::template ConstantPOT<-3>();
  // Horner form of exp(-1/8) * (1 + x + x^2/2! + ... + x^6/6!); every partial result is below 1.
  // The coefficients are raw constants, so that no floating point is left to run time.
  constexpr auto kCoefficient6 = F::ScalarRawFromDouble(kExpMinusOneEighth / 720.0);
  constexpr auto kCoefficient5 = F::ScalarRawFromDouble(kExpMinusOneEighth / 120.0);
  constexpr auto kCoefficient4 = F::ScalarRawFromDouble(kExpMinusOneEighth / 24.0);
  constexpr auto kCoefficient3 = F::ScalarRawFromDouble(kExpMinusOneEighth / 6.0);
  constexpr auto kCoefficient2 = F::ScalarRawFromDouble(kExpMinusOneEighth / 2.0);
  constexpr auto kCoefficient1 = F::ScalarRawFromDouble(kExpMinusOneEighth);
  F poly = F::FromScalarRaw(kCoefficient6);
  poly = poly * x + F::FromScalarRaw(kCoefficient5);
  poly = poly * x + F::FromScalarRaw(kCoefficient4);
  poly = poly * x + F::FromScalarRaw(kCoefficient3);
  poly = poly * x + F::FromScalarRaw(kCoefficient2);
  poly = poly * x + F::FromScalarRaw(kCoefficient1);
  // exp(a) -> 1 as a -> 0, so rounding may reach 2^(bits-1): saturate to One().
  return SaturatingAdd(F::FromScalarRaw(kCoefficient1), poly * x);
}

/// exp(a) for a <= 0 (precondition; positive inputs give meaningless results). exp(0) is One(),
/// i.e. saturated. Writes a = r - n with r in [-1/4, 0) and n >= 0 a multiple of 1/4, then
/// exp(a) = exp(r) * prod over the set bits 2^k of n of exp(-2^k). Results below the format's
/// resolution (a <= -32 in particular) are 0.
/// Max abs error 1.54 LSB (2^-30.4) for int32, 1.46 LSB (2^-14.5) for int16; test
/// ExpOnNegativeValues. Requires at least 2 fractional bits (IntegerBits <= bits - 3).
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> AccurateExpOnNegativeValues(FixedPoint<Raw, IntegerBits> a) {
  using ResultF = FixedPoint<Raw, 0>;
  using Scalar = ScalarRawTypeOf<Raw>;
  constexpr int kFractionalBits = FixedPoint<Raw, IntegerBits>::kFractionalBits;
  // exp(-2^k) for k = -2 .. 4; e^-32 is below 2^-46, zero in every format.
  constexpr double kExpOfMinusPowerOfTwo[] = {
      0.778800783071404868245170266978,      0.606530659712633423603799534991,
      0.367879441171442321595523770161,      0.135335283236612691893999494972,
      0.0183156388887341802937180212732,     0.000335462627902511838821389125781,
      0.00000011253517471925911451377517906,
  };
  // As raw constants, so that no floating point is left to run time (train/ relies on it).
  constexpr Scalar kFactorRaw[] = {
      ResultF::ScalarRawFromDouble(kExpOfMinusPowerOfTwo[0]),
      ResultF::ScalarRawFromDouble(kExpOfMinusPowerOfTwo[1]),
      ResultF::ScalarRawFromDouble(kExpOfMinusPowerOfTwo[2]),
      ResultF::ScalarRawFromDouble(kExpOfMinusPowerOfTwo[3]),
      ResultF::ScalarRawFromDouble(kExpOfMinusPowerOfTwo[4]),
      ResultF::ScalarRawFromDouble(kExpOfMinusPowerOfTwo[5]),
      ResultF::ScalarRawFromDouble(kExpOfMinusPowerOfTwo[6]),
  };
  Raw n;
  ResultF result = detail::ExpByQuarters(
      a, [](ResultF r) { return AccurateExpOnNegativeQuarter(r); },
      [&](int k) { return ResultF::FromScalarRaw(kFactorRaw[k + 2]); }, &n);
  if constexpr (IntegerBits > 5) {
    const Raw n_at_least_32 =
        MaskIfGreaterThanOrEqual(n, Dup<Raw>(static_cast<Scalar>(Scalar{32} << kFractionalBits)));
    result = SelectUsingMask(n_at_least_32, ResultF::Zero(), result);
  }
  return SelectUsingMask(MaskIfZero(a), ResultF::One(), result);
}

/// 1 / (1 + x) for x in [0, 1] (precondition), a value in [1/2, 1]. Newton-Raphson for the root of
/// (1 + x) z - 1, z <- z + z (1 - (1 + x) z), from the best linear start 16/17 - 8/17 x (relative
/// error at most 1/17). The error squares each step; three steps reach (1/17)^8 < 2^-32. Every
/// quantity stays in [-1, 1), so it all runs in the format without integer bits, and 1 - z is
/// formed exactly. Exact results 1 (x == 0) saturate to One().
/// Max abs error 1.25 LSB (2^-30.7) for int32, 1.0 LSB (2^-15, at x == 0) for int16; test
/// OneOverOnePlusX. int16 results can step back by one LSB between adjacent inputs.
template <typename Raw>
FixedPoint<Raw, 0> AccurateOneOverOnePlusX(FixedPoint<Raw, 0> x) {
  using F = FixedPoint<Raw, 0>;
  F z = F::FromDouble(16.0 / 17.0) - F::FromDouble(8.0 / 17.0) * x;
  for (int step = 0; step < 3; ++step) {
    const F residual = detail::OneMinus(z) - x * z;
    z = SaturatingAdd(z, z * residual);
  }
  return z;
}

/// (1 - x) / (1 + x) for x in [0, 1] (precondition), a value in [0, 1]: (1 - x) * 1 / (1 + x),
/// which keeps the error proportional to the (small) result as x -> 1. x == 0 gives One().
/// Max abs error 1.50 LSB (2^-30.4) for int32, 1.0 LSB (2^-15) for int16; test
/// OneMinusXOverOnePlusX.
template <typename Raw>
FixedPoint<Raw, 0> AccurateOneMinusXOverOnePlusX(FixedPoint<Raw, 0> x) {
  using F = FixedPoint<Raw, 0>;
  // At x == 0 both factors saturate and their product would fall 2 LSB short of One().
  return SelectUsingMask(MaskIfZero(x), F::One(), detail::OneMinus(x) * AccurateOneOverOnePlusX(x));
}

/// tanh(a) = sign(a) (1 - e) / (1 + e) with e = exp(-2|a|). Computed on |a| (-a is formed only for
/// a >= 0, so it cannot overflow), which makes tanh(-a) == -tanh(a) exactly whenever -a is
/// representable. tanh(0) is exactly 0 (exp(0) saturates to One(), which alone would leave
/// 2^-(bits-1)). Requires IntegerBits <= bits - 4 (2|a| must have 2 fractional bits).
/// Max abs error 3.38 LSB (2^-29.2) for int32, 2.36 LSB (2^-13.8) for int16, near |tanh| = 1 where
/// the error of exp(-2|a|) is doubled; test Tanh.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> AccurateTanh(FixedPoint<Raw, IntegerBits> a) {
  using ResultF = FixedPoint<Raw, 0>;
  const Raw negative = MaskIfLessThan(a, FixedPoint<Raw, IntegerBits>::Zero());
  const ResultF exp_minus_two_abs =
      AccurateExpOnNegativeValues(ExactMulByPot<1>(detail::MinusAbs(a, negative)));
  const ResultF tanh_abs = AccurateOneMinusXOverOnePlusX(exp_minus_two_abs);
  return SelectUsingMask(MaskIfZero(a), ResultF::Zero(),
                         SelectUsingMask(negative, -tanh_abs, tanh_abs));
}

/// logistic(a) = 1 / (1 + exp(-a)). Computed as 1 / (1 + exp(-|a|)) and, for a < 0, 1 minus that
/// (exact), so logistic(a) + logistic(-a) == 1 exactly whenever -a is representable, and
/// logistic(0) is exactly 1/2. Requires IntegerBits <= bits - 3.
/// Max abs error 2.19 LSB (2^-29.9) for int32, 1.30 LSB (2^-14.6) for int16; test Logistic. With
/// IntegerBits <= 1, int16 results can step back by one LSB between adjacent inputs.
template <typename Raw, int IntegerBits>
FixedPoint<Raw, 0> AccurateLogistic(FixedPoint<Raw, IntegerBits> a) {
  using ResultF = FixedPoint<Raw, 0>;
  const Raw negative = MaskIfLessThan(a, FixedPoint<Raw, IntegerBits>::Zero());
  const ResultF logistic_abs =
      AccurateOneOverOnePlusX(AccurateExpOnNegativeValues(detail::MinusAbs(a, negative)));
  return SelectUsingMask(MaskIfZero(a), ResultF::template ConstantPOT<-1>(),
                         SelectUsingMask(negative, detail::OneMinus(logistic_abs), logistic_abs));
}

}  // namespace fixedpoint
}  // namespace lowbit

#endif  // LOWBIT_FIXEDPOINT_FIXEDPOINT_H_
