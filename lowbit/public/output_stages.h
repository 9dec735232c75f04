// The built-in output stages: plain structs, applied left to right to each int32 accumulator.
// Each has `Eval(value, row, col)` and `Validate(rows, cols, name)`; a custom stage is any struct
// with the same members (doc/output-pipeline.md), so built-in and user stages compose alike.
// Most also have `Compile(program)`, their description for the library's vectorized writers;
// a pipeline with any stage lacking it runs the scalar Eval path.
#ifndef LOWBIT_PUBLIC_OUTPUT_STAGES_H_
#define LOWBIT_PUBLIC_OUTPUT_STAGES_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "lowbit/fixedpoint/fixedpoint.h"
#include "lowbit/internal/output/output_program.h"
#include "lowbit/public/checks.h"
#include "lowbit/public/map.h"

namespace lowbit {

namespace stage_detail {

inline int ChannelIndex(ChannelAxis axis, int row, int col) {
  return axis == ChannelAxis::kRow ? row : col;
}

/// Two's-complement wrapping arithmetic, the behaviour of the SIMD back ends (and of gemmlowp's
/// scalar code on every compiler in practice), without signed-overflow UB.
inline std::int32_t WrappingAdd(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
inline std::int32_t WrappingMul(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}
inline std::int32_t WrappingShiftLeft(std::int32_t a, int shift) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) << shift);
}

inline std::int32_t SaturateToInt32(std::int64_t x) {
  return static_cast<std::int32_t>(
      std::min<std::int64_t>(std::max<std::int64_t>(x, std::numeric_limits<std::int32_t>::min()),
                             std::numeric_limits<std::int32_t>::max()));
}

/// The fixed-point requantization shared by the scalar and per-channel stages:
/// RoundingDivideByPOT(SRDHM(acc << left_shift, multiplier), right_shift) + offset.
inline std::int32_t ScaleByFixedPoint(std::int32_t acc, std::int32_t multiplier, int left_shift,
                                      int right_shift, std::int32_t offset) {
  return fixedpoint::QuantizeDownByFixedPoint(WrappingShiftLeft(acc, left_shift), multiplier,
                                              right_shift, offset);
}

/// The legacy gemmlowp requantization: RoundingDivideByPOT((acc + offset) * multiplier, shift),
/// the sum and the product wrapping in int32 as gemmlowp's do.
inline std::int32_t LegacyScale(std::int32_t acc, std::int32_t offset, std::int32_t multiplier,
                                int shift) {
  return fixedpoint::RoundingDivideByPOT(WrappingMul(WrappingAdd(acc, offset), multiplier), shift);
}

/// 32 random bits that depend only on (seed, row, col) (internal::StochasticRoundingHash):
/// stochastic rounding then gives the same bits whatever the blocking, thread count or ISA.
inline std::uint32_t StochasticRoundingBits(std::uint32_t seed, int row, int col) {
  return internal::StochasticRoundingHash::Bits(seed, row, col);
}

/// real(q) = (q - zero) / amplitude, as a FixedPoint<int32, 3> raw value, for q strictly inside
/// the +-8 cutoff where such a value is representable.
inline std::int32_t CenteredToFixedPoint3(std::int64_t centered, std::int32_t amplitude) {
  const std::int64_t numerator = centered * (std::int64_t{1} << 28);
  const std::int64_t half = amplitude / 2;
  return static_cast<std::int32_t>(numerator >= 0 ? (numerator + half) / amplitude
                                                  : -((-numerator + half) / amplitude));
}

/// zero + amplitude * value for a FixedPoint<int32, 0> value, rounded to nearest.
inline std::int32_t FixedPoint0ToQuantized(std::int32_t raw, std::int32_t zero,
                                           std::int32_t amplitude) {
  const std::int64_t product = static_cast<std::int64_t>(raw) * amplitude;
  const std::int64_t rounded = product >= 0 ? (product + (std::int64_t{1} << 30)) >> 31
                                            : -((-product + (std::int64_t{1} << 30)) >> 31);
  return SaturateToInt32(zero + rounded);
}

/// Applies a fixed-point function f: [-8, 8) -> [-1, 1] to the real value (acc - zero) /
/// amplitude and quantizes the result the same way. Beyond the cutoff the result is the
/// function's limit: zero + amplitude for large x, zero + low_limit * amplitude for very
/// negative x (tanh: -1, logistic: 0).
template <typename Function>
std::int32_t EvalOnRealValue(std::int32_t acc, std::int32_t zero, std::int32_t amplitude,
                             int low_limit, Function f) {
  const std::int64_t centered = static_cast<std::int64_t>(acc) - zero;
  const std::int64_t cutoff = std::int64_t{8} * amplitude;
  if (centered >= cutoff) return SaturateToInt32(std::int64_t{zero} + amplitude);
  if (centered <= -cutoff) return SaturateToInt32(zero + std::int64_t{low_limit} * amplitude);
  const auto x =
      fixedpoint::FixedPoint<std::int32_t, 3>::FromRaw(CenteredToFixedPoint3(centered, amplitude));
  return FixedPoint0ToQuantized(f(x).raw(), zero, amplitude);
}

/// gemmlowp's OutputStageTanh, bit for bit: (acc - zero) / amplitude as a FixedPoint<int32, 3>
/// through the reciprocal of the amplitude normalized to [1/2, 1] (in double, as gemmlowp forms
/// it), gemmlowp's tanh, then times the amplitude normalized to [1/2, 1) and shifted back; inputs
/// at or beyond 8 amplitudes from zero give the end points. gemmlowp's bits need zero +- 8 *
/// amplitude within int32 (OutputStageTanh::Validate); other parameters give some value, computed
/// without overflow (a non-positive amplitude leaves every input at an end point).
inline std::int32_t GemmlowpTanh(std::int32_t acc, std::int32_t zero, std::int32_t amplitude) {
  using F0 = fixedpoint::FixedPoint<std::int32_t, 0>;
  using F3 = fixedpoint::FixedPoint<std::int32_t, 3>;
  const std::int64_t reach = std::int64_t{8} * amplitude;
  if (acc <= zero - reach) return SaturateToInt32(std::int64_t{zero} - amplitude);
  if (acc >= zero + reach) return SaturateToInt32(std::int64_t{zero} + amplitude);
  double inverse_amplitude = 1.0 / amplitude;
  int inverse_exponent = 0;
  while (inverse_amplitude < 0.5) {
    inverse_amplitude *= 2;
    ++inverse_exponent;
  }
  int amplitude_exponent = 0;
  while ((std::int64_t{1} << amplitude_exponent) <= amplitude) ++amplitude_exponent;
  // amplitude / 2^amplitude_exponent, in [1/2, 1), exactly.
  const F0 amplitude_normalized = F0::FromRaw(amplitude << (31 - amplitude_exponent));
  F3 x = F3::FromRaw(WrappingAdd(acc, WrappingMul(zero, -1))) * F0::FromDouble(inverse_amplitude);
  x.raw() = fixedpoint::SaturatingRoundingMultiplyByPOT(x.raw(), 28 - inverse_exponent);
  const F0 y = fixedpoint::tanh(x) * amplitude_normalized;
  return WrappingAdd(zero, y.raw() >> (31 - amplitude_exponent));
}

/// The per-channel fixed-point stages: one non-negative multiplier and one shift (exponent) in
/// [min, max] per channel.
inline void ValidatePerChannelScale(const std::string& name,
                                    const VectorMap<const std::int32_t>& multipliers,
                                    const char* shift_field,
                                    const VectorMap<const std::int32_t>& shifts, int min, int max,
                                    ChannelAxis axis, int rows, int cols) {
  checks::CheckChannelVector(name, "result_fixedpoint_multiplier", multipliers, axis, rows, cols);
  checks::CheckChannelVector(name, shift_field, shifts, axis, rows, cols);
  checks::CheckEachInRange(name, "result_fixedpoint_multiplier", multipliers, 0,
                           std::numeric_limits<std::int32_t>::max());
  checks::CheckEachInRange(name, shift_field, shifts, min, max);
}

}  // namespace stage_detail

/// acc + bias[row] (kRow) or acc + bias[col] (kCol).
struct OutputStageBiasAddition {
  VectorMap<const std::int32_t> bias;
  ChannelAxis axis;

  void Validate(int rows, int cols, const std::string& name) const {
    checks::CheckChannelVector(name, "bias", bias, axis, rows, cols);
  }
  /// The caller memory Eval reads, for the check that it does not lie in the result.
  template <typename Visit>
  void VisitInputs(Visit&& visit) const {
    visit("bias", bias);
  }
  bool Compile(internal::OutputProgram* program) const {
    return program->Append(
        {internal::OutputOpcode::kAdd, internal::PerChannel(bias.data(), axis), {}, 0, 0});
  }
  std::int32_t Eval(std::int32_t acc, int row, int col) const {
    return stage_detail::WrappingAdd(acc, bias(stage_detail::ChannelIndex(axis, row, col)));
  }
};

/// RoundingDivideByPOT(SRDHM(acc, result_fixedpoint_multiplier), result_shift)
///   + result_offset_after_shift; the TFLite/gemmlowp requantization with a non-negative
/// multiplier (a real scale in [0, 1) as Q0.31) and a right shift in [0, 31].
struct OutputStageQuantizeDownInt32ByFixedPoint {
  std::int32_t result_fixedpoint_multiplier;
  int result_shift;
  std::int32_t result_offset_after_shift;

  void Validate(int, int, const std::string& name) const {
    checks::CheckInRange(name, "result_fixedpoint_multiplier", result_fixedpoint_multiplier, 0,
                         std::numeric_limits<std::int32_t>::max());
    checks::CheckInRange(name, "result_shift", result_shift, 0, 31);
  }
  bool Compile(internal::OutputProgram* program) const {
    return program->Append({internal::OutputOpcode::kScaleByFixedPoint,
                            internal::OneValue(result_fixedpoint_multiplier),
                            internal::OneValue(-result_shift), result_offset_after_shift, 0});
  }
  std::int32_t Eval(std::int32_t acc, int, int) const {
    return stage_detail::ScaleByFixedPoint(acc, result_fixedpoint_multiplier, 0, result_shift,
                                           result_offset_after_shift);
  }
};

/// The same with one multiplier and one shift per output channel.
struct OutputStageQuantizeDownInt32ByFixedPointPerChannel {
  VectorMap<const std::int32_t> result_fixedpoint_multiplier;
  VectorMap<const std::int32_t> result_shift;
  std::int32_t result_offset_after_shift;
  ChannelAxis axis;

  void Validate(int rows, int cols, const std::string& name) const {
    stage_detail::ValidatePerChannelScale(name, result_fixedpoint_multiplier, "result_shift",
                                          result_shift, 0, 31, axis, rows, cols);
  }
  /// The caller memory Eval reads, for the check that it does not lie in the result.
  template <typename Visit>
  void VisitInputs(Visit&& visit) const {
    visit("result_fixedpoint_multiplier", result_fixedpoint_multiplier);
    visit("result_shift", result_shift);
  }
  bool Compile(internal::OutputProgram* program) const {
    return program->Append({internal::OutputOpcode::kScaleByFixedPoint,
                            internal::PerChannel(result_fixedpoint_multiplier.data(), axis),
                            internal::PerChannel(result_shift.data(), axis, /*negated=*/true),
                            result_offset_after_shift, 0});
  }
  std::int32_t Eval(std::int32_t acc, int row, int col) const {
    const int channel = stage_detail::ChannelIndex(axis, row, col);
    return stage_detail::ScaleByFixedPoint(acc, result_fixedpoint_multiplier(channel), 0,
                                           result_shift(channel), result_offset_after_shift);
  }
};

/// Left shift by max(e, 0) (wrapping), SRDHM by the multiplier, rounding right shift by
/// max(-e, 0), plus the offset: TFLite's MultiplyByQuantizedMultiplier with exponent e.
struct OutputStageScaleInt32ByFixedPointAndExponent {
  std::int32_t result_fixedpoint_multiplier;
  int result_exponent;
  std::int32_t result_offset_after_exponent;

  void Validate(int, int, const std::string& name) const {
    checks::CheckInRange(name, "result_fixedpoint_multiplier", result_fixedpoint_multiplier, 0,
                         std::numeric_limits<std::int32_t>::max());
    checks::CheckInRange(name, "result_exponent", result_exponent, -31, 30);
  }
  bool Compile(internal::OutputProgram* program) const {
    return program->Append({internal::OutputOpcode::kScaleByFixedPoint,
                            internal::OneValue(result_fixedpoint_multiplier),
                            internal::OneValue(result_exponent), result_offset_after_exponent, 0});
  }
  std::int32_t Eval(std::int32_t acc, int, int) const {
    return stage_detail::ScaleByFixedPoint(
        acc, result_fixedpoint_multiplier, std::max(result_exponent, 0),
        std::max(-result_exponent, 0), result_offset_after_exponent);
  }
};

/// The same with one multiplier and one exponent per output channel.
struct OutputStageScaleInt32ByFixedPointAndExponentPerChannel {
  VectorMap<const std::int32_t> result_fixedpoint_multiplier;
  VectorMap<const std::int32_t> result_exponent;
  std::int32_t result_offset_after_exponent;
  ChannelAxis axis;

  void Validate(int rows, int cols, const std::string& name) const {
    stage_detail::ValidatePerChannelScale(name, result_fixedpoint_multiplier, "result_exponent",
                                          result_exponent, -31, 30, axis, rows, cols);
  }
  /// The caller memory Eval reads, for the check that it does not lie in the result.
  template <typename Visit>
  void VisitInputs(Visit&& visit) const {
    visit("result_fixedpoint_multiplier", result_fixedpoint_multiplier);
    visit("result_exponent", result_exponent);
  }
  bool Compile(internal::OutputProgram* program) const {
    return program->Append({internal::OutputOpcode::kScaleByFixedPoint,
                            internal::PerChannel(result_fixedpoint_multiplier.data(), axis),
                            internal::PerChannel(result_exponent.data(), axis),
                            result_offset_after_exponent, 0});
  }
  std::int32_t Eval(std::int32_t acc, int row, int col) const {
    const int channel = stage_detail::ChannelIndex(axis, row, col);
    const int exponent = result_exponent(channel);
    return stage_detail::ScaleByFixedPoint(acc, result_fixedpoint_multiplier(channel),
                                           std::max(exponent, 0), std::max(-exponent, 0),
                                           result_offset_after_exponent);
  }
};

/// Legacy gemmlowp requantization, its bits: RoundingDivideByPOT((acc + result_offset) *
/// result_mult_int, result_shift), the sum and the product wrapping in int32.
struct OutputStageQuantizeDownInt32ToUint8Scale {
  std::int32_t result_offset;
  std::int32_t result_mult_int;
  int result_shift;

  void Validate(int, int, const std::string& name) const {
    checks::CheckInRange(name, "result_mult_int", result_mult_int, 0,
                         std::numeric_limits<std::int32_t>::max());
    checks::CheckInRange(name, "result_shift", result_shift, 0, 31);
  }
  std::int32_t Eval(std::int32_t acc, int, int) const {
    return stage_detail::LegacyScale(acc, result_offset, result_mult_int, result_shift);
  }
};

/// The legacy requantization with one offset and one multiplier per output channel.
struct OutputStageQuantizeDownInt32ToUint8ScalePerChannel {
  VectorMap<const std::int32_t> result_offset;
  VectorMap<const std::int32_t> result_mult_int;
  int result_shift;
  ChannelAxis axis;

  void Validate(int rows, int cols, const std::string& name) const {
    checks::CheckChannelVector(name, "result_offset", result_offset, axis, rows, cols);
    checks::CheckChannelVector(name, "result_mult_int", result_mult_int, axis, rows, cols);
    checks::CheckEachInRange(name, "result_mult_int", result_mult_int, 0,
                             std::numeric_limits<std::int32_t>::max());
    checks::CheckInRange(name, "result_shift", result_shift, 0, 31);
  }
  /// The caller memory Eval reads, for the check that it does not lie in the result.
  template <typename Visit>
  void VisitInputs(Visit&& visit) const {
    visit("result_offset", result_offset);
    visit("result_mult_int", result_mult_int);
  }
  std::int32_t Eval(std::int32_t acc, int row, int col) const {
    const int channel = stage_detail::ChannelIndex(axis, row, col);
    return stage_detail::LegacyScale(acc, result_offset(channel), result_mult_int(channel),
                                     result_shift);
  }
};

enum class Rounding {
  kNearest,     // ties away from zero (RoundingDivideByPOT)
  kStochastic,  // floor(x / 2^s + u), u uniform in [0, 1) from a hash of (seed, row, col)
};

/// Multiplies by 2^exponent: a saturating left shift for exponent > 0, a rounding right shift
/// for exponent < 0. Stochastic rounding is unbiased and reproducible for a given seed.
struct OutputStageShiftByPOT {
  int exponent;
  Rounding rounding = Rounding::kNearest;
  std::uint32_t seed = 0;

  void Validate(int, int, const std::string& name) const {
    checks::CheckInRange(name, "exponent", exponent, -31, 31);
    if (rounding != Rounding::kNearest && rounding != Rounding::kStochastic) {
      throw Error(name + ".rounding", "must be Rounding::kNearest or kStochastic, got " +
                                          std::to_string(static_cast<int>(rounding)));
    }
  }
  bool Compile(internal::OutputProgram* program) const {
    if (exponent >= 0) {
      return program->Append({internal::OutputOpcode::kSaturatingShiftLeft, {}, {}, 0, exponent});
    }
    if (rounding == Rounding::kStochastic) {
      return program->Append({internal::OutputOpcode::kStochasticShiftRight,
                              {},
                              {},
                              static_cast<std::int32_t>(seed),
                              -exponent});
    }
    return program->Append({internal::OutputOpcode::kRoundingShiftRight, {}, {}, 0, -exponent});
  }
  std::int32_t Eval(std::int32_t acc, int row, int col) const {
    if (exponent >= 0) {
      return stage_detail::SaturateToInt32(static_cast<std::int64_t>(acc) *
                                           (std::int64_t{1} << exponent));
    }
    const int shift = -exponent;
    if (rounding == Rounding::kNearest) return fixedpoint::RoundingDivideByPOT(acc, shift);
    const std::uint32_t random = stage_detail::StochasticRoundingBits(seed, row, col);
    return static_cast<std::int32_t>((static_cast<std::int64_t>(acc) + (random >> (32 - shift))) >>
                                     shift);
  }
};

struct OutputStageClamp {
  std::int32_t min;
  std::int32_t max;

  void Validate(int, int, const std::string& name) const {
    if (min > max) {
      throw Error(name + ".min",
                  "must not exceed max (" + std::to_string(max) + "), got " + std::to_string(min));
    }
  }
  bool Compile(internal::OutputProgram* program) const {
    return program->Append({internal::OutputOpcode::kClamp, {}, {}, min, max});
  }
  std::int32_t Eval(std::int32_t acc, int, int) const { return std::min(std::max(acc, min), max); }
};

template <typename Narrow>
struct SaturatingCast {
  void Validate(int, int, const std::string&) const {}
  bool Compile(internal::OutputProgram* program) const {
    return program->Append({internal::OutputOpcode::kClamp,
                            {},
                            {},
                            std::numeric_limits<Narrow>::min(),
                            std::numeric_limits<Narrow>::max()});
  }
  Narrow Eval(std::int32_t acc, int, int) const {
    return static_cast<Narrow>(
        std::min<std::int32_t>(std::max<std::int32_t>(acc, std::numeric_limits<Narrow>::min()),
                               std::numeric_limits<Narrow>::max()));
  }
};
struct OutputStageSaturatingCastToUint8 : SaturatingCast<std::uint8_t> {};
struct OutputStageSaturatingCastToInt8 : SaturatingCast<std::int8_t> {};
struct OutputStageSaturatingCastToInt16 : SaturatingCast<std::int16_t> {};

/// Keeps the low 8 bits (acc mod 256).
struct OutputStageTruncatingCastToUint8 {
  void Validate(int, int, const std::string&) const {}
  bool Compile(internal::OutputProgram* program) const {
    return program->Append({internal::OutputOpcode::kTruncateToUint8, {}, {}, 0, 0});
  }
  std::uint8_t Eval(std::int32_t acc, int, int) const {
    return static_cast<std::uint8_t>(static_cast<std::uint32_t>(acc) & 0xffU);
  }
};

/// Which tanh OutputStageTanh computes: gemmlowp's (its OutputStageTanh, bit for bit, the
/// default) or lowbit's own, nearer the exact value (doc/output-pipeline.md compares them).
enum class TanhArithmetic { kGemmlowp, kAccurate };

/// The real value of an int32 q is (q - real_zero_as_int32) / real_amplitude_as_int32, on input
/// and on output. Tanh maps it to real_zero + real_amplitude * tanh(x), in
/// [real_zero - real_amplitude, real_zero + real_amplitude]; inputs at or beyond |x| = 8 give
/// the end points (tanh(8) is within 2^-22 of 1). gemmlowp's arithmetic needs
/// real_zero +- 8 * real_amplitude within int32 (gemmlowp forms those bounds in int32); the
/// accurate one takes any positive amplitude.
struct OutputStageTanh {
  std::int32_t real_zero_as_int32;
  std::int32_t real_amplitude_as_int32;
  TanhArithmetic arithmetic = TanhArithmetic::kGemmlowp;

  void Validate(int, int, const std::string& name) const {
    checks::CheckInRange(name, "real_amplitude_as_int32", real_amplitude_as_int32, 1,
                         std::numeric_limits<std::int32_t>::max());
    if (arithmetic == TanhArithmetic::kGemmlowp) {
      const std::int64_t reach = std::int64_t{8} * real_amplitude_as_int32;
      if (real_zero_as_int32 - reach < std::numeric_limits<std::int32_t>::min() ||
          real_zero_as_int32 + reach > std::numeric_limits<std::int32_t>::max()) {
        throw Error(name + ".real_amplitude_as_int32",
                    "with gemmlowp's arithmetic, real_zero_as_int32 +- 8 * real_amplitude_as_int32 "
                    "must lie within int32, got zero " +
                        std::to_string(real_zero_as_int32) + " and amplitude " +
                        std::to_string(real_amplitude_as_int32) +
                        " (TanhArithmetic::kAccurate takes any positive amplitude)");
      }
    }
  }
  std::int32_t Eval(std::int32_t acc, int, int) const {
    if (arithmetic == TanhArithmetic::kGemmlowp) {
      return stage_detail::GemmlowpTanh(acc, real_zero_as_int32, real_amplitude_as_int32);
    }
    return stage_detail::EvalOnRealValue(
        acc, real_zero_as_int32, real_amplitude_as_int32, -1,
        [](fixedpoint::FixedPoint<std::int32_t, 3> x) { return fixedpoint::AccurateTanh(x); });
  }
};

/// Logistic maps the real value x to real_zero + real_amplitude * logistic(x), in
/// [real_zero, real_zero + real_amplitude]; |x| >= 8 gives the end points. gemmlowp has no such
/// stage: this one is lowbit's, on lowbit's accurate logistic.
struct OutputStageLogistic {
  std::int32_t real_zero_as_int32;
  std::int32_t real_amplitude_as_int32;

  void Validate(int, int, const std::string& name) const {
    checks::CheckInRange(name, "real_amplitude_as_int32", real_amplitude_as_int32, 1,
                         std::numeric_limits<std::int32_t>::max());
  }
  std::int32_t Eval(std::int32_t acc, int, int) const {
    return stage_detail::EvalOnRealValue(
        acc, real_zero_as_int32, real_amplitude_as_int32, 0,
        [](fixedpoint::FixedPoint<std::int32_t, 3> x) { return fixedpoint::AccurateLogistic(x); });
  }
};

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_OUTPUT_STAGES_H_
