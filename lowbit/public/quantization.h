// Quantization helpers: scales and zero points from float ranges, real multipliers as the
// fixed-point parameters of the requantizing output stages, and quantize / dequantize of buffers.
#ifndef LOWBIT_PUBLIC_QUANTIZATION_H_
#define LOWBIT_PUBLIC_QUANTIZATION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lowbit {

/// real = scale * (q - zero_point) (doc/design.md section 8).
struct QuantizationParams {
  double scale;
  std::int32_t zero_point;
};

/// The integers a quantized value may take: [0, 2^bits - 1] unsigned, [-2^(bits-1), 2^(bits-1) - 1]
/// signed, bits in [2, 8]. Narrow unsigned types are stored in uint8_t, narrow signed in int8_t.
struct QuantizedType {
  bool is_signed;
  int bits;

  static constexpr QuantizedType Uint8() { return {false, 8}; }
  static constexpr QuantizedType Int8() { return {true, 8}; }
  static constexpr QuantizedType Unsigned(int bits) { return {false, bits}; }
  static constexpr QuantizedType Signed(int bits) { return {true, bits}; }

  /// The smallest and largest quantized value (for bits in [2, 8]).
  constexpr std::int32_t min() const { return is_signed ? -(1 << (bits - 1)) : 0; }
  constexpr std::int32_t max() const { return is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1; }
};

enum class QuantizationMode {
  /// The whole [min(min, 0), max(max, 0)] range maps onto [type.min(), type.max()]; the zero point
  /// is rounded to an integer, which moves each end of the range by at most half a step.
  kAsymmetric,
  /// The zero point is fixed: 0 for a signed type, 2^(bits-1) for an unsigned one (uint8: 128, the
  /// int8 grid shifted by 128), and scale = max(|min|, |max|) / (type.max() - zero_point), so
  /// that -max(|min|, |max|) and +max(|min|, |max|) are both exact (int8: [-127, 127] is used,
  /// -128 stays representable). The usual choice for weights.
  kSymmetric,
};

/// The params that cover [min, max] (widened to contain 0, so that 0.0 is exact) in `type`.
/// A degenerate range (min == max == 0, e.g. an all-zero weight channel) gives scale 1 and the
/// zero point of the mode, so that every value quantizes to it and dequantizes to 0.
/// Throws lowbit::Error, naming the argument, for a NaN or infinite min or max, min > max,
/// type.bits outside [2, 8], an unknown mode, or a range whose scale is not a finite normal double.
QuantizationParams ChooseQuantizationParams(double min, double max,
                                            QuantizedType type = QuantizedType::Uint8(),
                                            QuantizationMode mode = QuantizationMode::kAsymmetric);

/// The same for each channel c of a per-channel (per-axis) tensor from min[c] and max[c]: the
/// params of weights quantized per output channel. Errors name the channel ("min[3]").
std::vector<QuantizationParams> ChooseQuantizationParamsPerChannel(
    const std::vector<float>& min, const std::vector<float>& max,
    QuantizedType type = QuantizedType::Int8(),
    QuantizationMode mode = QuantizationMode::kSymmetric);

/// A positive real multiplier m as multiplier * 2^(exponent - 31), multiplier in [2^30, 2^31):
/// exactly the result_fixedpoint_multiplier and result_exponent of
/// OutputStageScaleInt32ByFixedPointAndExponent (left shift by max(exponent, 0), SRDHM by the
/// multiplier, rounding right shift by max(-exponent, 0)), TFLite's QuantizeMultiplier.
struct FixedPointMultiplier {
  std::int32_t multiplier;
  int exponent;
};

/// m rounded to the nearest multiplier (ties away from zero): the relative error
/// |multiplier * 2^(exponent - 31) - m| / m is at most 2^-31. Applied to an accumulator acc by
/// the stage, the result (less the offset) differs from acc * m by at most
/// 1/2 + (exponent < 0 ? 2^(exponent - 1) : 0) + |acc * m| * 2^-31 (the SRDHM's rounding, the
/// right shift's, the multiplier's error), provided acc * 2^max(exponent, 0) fits in int32; for
/// |acc * m| < 2^29 that is within 1 of the correctly rounded acc * m.
/// Accepts m in [2^-32 (1 - 2^-32), 2^30 (1 - 2^-32)), the m whose exponent lands in the stage's
/// [-31, 30]. Throws lowbit::Error naming "real_multiplier" for zero, negative, NaN or infinite
/// m and for m outside that range.
FixedPointMultiplier QuantizeMultiplier(double real_multiplier);

/// The same for m < 1 in the form of OutputStageQuantizeDownInt32ByFixedPoint:
/// result_fixedpoint_multiplier = multiplier and result_shift = -exponent, in [0, 31]; bit-exact
/// with QuantizeMultiplier applied through OutputStageScaleInt32ByFixedPointAndExponent.
/// Throws lowbit::Error naming "real_multiplier" also for m >= 1 after rounding.
struct FixedPointMultiplierAndShift {
  std::int32_t multiplier;
  int right_shift;
};
FixedPointMultiplierAndShift QuantizeMultiplierSmallerThanOne(double real_multiplier);

/// QuantizeMultiplier for each channel, as the two vectors
/// OutputStageScaleInt32ByFixedPointAndExponentPerChannel takes (wrap them in VectorMaps).
/// Errors name the channel ("real_multipliers[3]"); nothing is returned if any is rejected.
struct FixedPointMultipliers {
  std::vector<std::int32_t> multipliers;
  std::vector<std::int32_t> exponents;
};
FixedPointMultipliers QuantizeMultipliers(const std::vector<double>& real_multipliers);

/// q[i] = clamp(zero_point + round(values[i] / scale), type.min(), type.max()), the quotient
/// computed in double and rounded half away from zero (std::round: TFLite's and gemmlowp's
/// reference quantization, and the rounding of lowbit's fixed-point stages). +-infinity
/// saturate. `type` defaults to the full range of the output type and must have its signedness.
/// Throws lowbit::Error, before writing anything, for a NaN value (naming "values[i]"), a scale
/// that is not finite and positive, a zero point outside the type's range, or a null pointer.
void Quantize(const float* values, std::size_t count, const QuantizationParams& params,
              std::uint8_t* quantized, QuantizedType type = QuantizedType::Uint8());
void Quantize(const float* values, std::size_t count, const QuantizationParams& params,
              std::int8_t* quantized, QuantizedType type = QuantizedType::Int8());

/// values[i] = scale * (quantized[i] - zero_point), computed in double and rounded to float.
/// Throws lowbit::Error for a scale that is not finite and positive or a null pointer.
void Dequantize(const std::uint8_t* quantized, std::size_t count, const QuantizationParams& params,
                float* values);
void Dequantize(const std::int8_t* quantized, std::size_t count, const QuantizationParams& params,
                float* values);

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_QUANTIZATION_H_
