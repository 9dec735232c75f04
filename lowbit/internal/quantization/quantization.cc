// The quantization helpers of lowbit/public/quantization.h: every argument is checked before any
// output is written, and the arithmetic is done in double.
#include "lowbit/public/quantization.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "lowbit/internal/driver/avx2_clones.h"
#include "lowbit/internal/quantization/quantization_checks.h"
#include "lowbit/public/error.h"

namespace lowbit {
namespace {

using internal::CheckPointer;
using internal::CheckScale;
using internal::CheckType;
using internal::CheckZeroPoint;
using internal::ChooseChecked;
using internal::QuantizeChecked;
using internal::Text;

void CheckFinite(double value, const std::string& name) {
  if (!std::isfinite(value)) throw Error(name, "must be finite, got " + Text(value));
}

// The fixed zero point of QuantizationMode::kSymmetric.
std::int32_t SymmetricZeroPoint(const QuantizedType& type) {
  return type.is_signed ? 0 : (1 << (type.bits - 1));
}

}  // namespace

namespace internal {

QuantizationParams ChooseChecked(double min, double max, const QuantizedType& type,
                                 QuantizationMode mode, const std::string& min_name,
                                 const std::string& max_name) {
  CheckFinite(min, min_name);
  CheckFinite(max, max_name);
  if (min > max) {
    throw Error(min_name, "must not exceed " + max_name + " (" + Text(max) + "), got " + Text(min));
  }
  if (mode != QuantizationMode::kAsymmetric && mode != QuantizationMode::kSymmetric) {
    throw Error("mode", "must be QuantizationMode::kAsymmetric or kSymmetric, got " +
                            std::to_string(static_cast<int>(mode)));
  }
  // 0.0 must be representable: zero padding, ReLU outputs and all-zero channels stay exact.
  min = std::min(min, 0.0);
  max = std::max(max, 0.0);
  const bool symmetric = mode == QuantizationMode::kSymmetric;
  if (min == max) {
    // Any positive scale represents an all-zero range exactly; 1 keeps the multipliers derived
    // from it finite, where TFLite's scale 0 would make them 0.
    return {1.0, symmetric ? SymmetricZeroPoint(type) : 0};
  }
  double scale;
  std::int32_t zero_point;
  if (symmetric) {
    zero_point = SymmetricZeroPoint(type);
    scale = std::max(-min, max) / (type.max() - zero_point);
  } else {
    scale = (max - min) / (type.max() - type.min());
    // min <= 0 <= max keeps the real zero point in [type.min(), type.max()] up to rounding; the
    // clamp only guards the last bit.
    const double real_zero_point = type.min() - min / scale;
    zero_point = static_cast<std::int32_t>(
        std::min<double>(std::max<double>(std::round(real_zero_point), type.min()), type.max()));
  }
  // max - min overflows for ranges near DBL_MAX; a subnormal scale loses precision.
  if (!std::isfinite(scale) || scale < std::numeric_limits<double>::min()) {
    throw Error(max_name, "the range [" + Text(min) + ", " + Text(max) + "] gives scale " +
                              Text(scale) + ", which must be finite and at least DBL_MIN");
  }
  return {scale, zero_point};
}

}  // namespace internal

namespace {

void CheckParams(const QuantizationParams& params, const QuantizedType& type, bool check_type) {
  CheckScale(params.scale, "params.scale");
  if (check_type) CheckZeroPoint(params.zero_point, type, "params.zero_point");
}

// The buffer loops have AVX2 clones (avx2_clones.h), and are written branch-free so that they
// vectorize: std::round and an early exit on NaN keep a loop scalar.

LOWBIT_AVX2_CLONES
bool AnyNan(const float* values, std::size_t count) {
  int any = 0;
  for (std::size_t i = 0; i < count; ++i) any |= values[i] != values[i];
  return any != 0;
}

// std::round(values[i] / scale), clamped to [low, high] steps, without the libm call (or
// std::trunc, which GCC vectorizes only without trapping math): the quotient is first clamped
// to one step beyond the bounds (which keeps huge values and +-infinity defined), truncated by
// the conversion to int32, and its fraction, exact in double, moves it one step away from zero
// from one half on.
template <typename Quantized>
inline __attribute__((always_inline)) void QuantizeValuesInline(const float* values,
                                                                std::size_t count, double scale,
                                                                std::int32_t low, std::int32_t high,
                                                                std::int32_t zero_point,
                                                                Quantized* quantized) {
  const double below = low - 1.0, beyond = high + 1.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double quotient = std::min(std::max(values[i] / scale, below), beyond);
    const auto truncated = static_cast<std::int32_t>(quotient);
    const double fraction = quotient - truncated;
    const std::int32_t away = std::int32_t{fraction >= 0.5} - std::int32_t{fraction <= -0.5};
    const std::int32_t steps = std::min(std::max(truncated + away, low), high);
    quantized[i] = static_cast<Quantized>(steps + zero_point);
  }
}

// One clone set per output type: clang's target_clones takes no function templates.
LOWBIT_AVX2_CLONES void QuantizeValues(const float* values, std::size_t count, double scale,
                                       std::int32_t low, std::int32_t high, std::int32_t zero_point,
                                       std::uint8_t* quantized) {
  QuantizeValuesInline(values, count, scale, low, high, zero_point, quantized);
}
LOWBIT_AVX2_CLONES void QuantizeValues(const float* values, std::size_t count, double scale,
                                       std::int32_t low, std::int32_t high, std::int32_t zero_point,
                                       std::int8_t* quantized) {
  QuantizeValuesInline(values, count, scale, low, high, zero_point, quantized);
}

template <typename Quantized>
void QuantizeImpl(const float* values, std::size_t count, const QuantizationParams& params,
                  Quantized* quantized, const QuantizedType& type) {
  CheckType(type, "type");
  if (type.is_signed != std::numeric_limits<Quantized>::is_signed) {
    throw Error("type.is_signed", std::numeric_limits<Quantized>::is_signed
                                      ? "must be true for an int8_t output"
                                      : "must be false for a uint8_t output");
  }
  CheckParams(params, type, true);
  CheckPointer(values, count, "values");
  CheckPointer(quantized, count, "quantized");
  // NaN has no quantized value: reject it before writing anything.
  if (AnyNan(values, count)) {
    const std::size_t first = static_cast<std::size_t>(
        std::find_if(values, values + count, [](float value) { return std::isnan(value); }) -
        values);
    throw Error("values[" + std::to_string(first) + "]", "must not be NaN");
  }
  QuantizeValues(values, count, params.scale, type.min() - params.zero_point,
                 type.max() - params.zero_point, params.zero_point, quantized);
}

template <typename Quantized>
void DequantizeImpl(const Quantized* quantized, std::size_t count, const QuantizationParams& params,
                    float* values) {
  CheckParams(params, QuantizedType::Uint8(), false);
  CheckPointer(quantized, count, "quantized");
  CheckPointer(values, count, "values");
  for (std::size_t i = 0; i < count; ++i) {
    // The difference is exact in int64 for any int32 zero point, and in double.
    values[i] = static_cast<float>(
        params.scale * static_cast<double>(std::int64_t{quantized[i]} - params.zero_point));
  }
}

}  // namespace

QuantizationParams ChooseQuantizationParams(double min, double max, QuantizedType type,
                                            QuantizationMode mode) {
  CheckType(type, "type");
  return ChooseChecked(min, max, type, mode, "min", "max");
}

std::vector<QuantizationParams> ChooseQuantizationParamsPerChannel(const std::vector<float>& min,
                                                                   const std::vector<float>& max,
                                                                   QuantizedType type,
                                                                   QuantizationMode mode) {
  CheckType(type, "type");
  if (min.size() != max.size()) {
    throw Error("max", "must have one entry per entry of min (" + std::to_string(min.size()) +
                           "), got " + std::to_string(max.size()));
  }
  std::vector<QuantizationParams> params;
  params.reserve(min.size());
  for (std::size_t c = 0; c < min.size(); ++c) {
    const std::string index = "[" + std::to_string(c) + "]";
    params.push_back(ChooseChecked(min[c], max[c], type, mode, "min" + index, "max" + index));
  }
  return params;
}

FixedPointMultiplier QuantizeMultiplier(double real_multiplier) {
  return QuantizeChecked(real_multiplier, "real_multiplier");
}

FixedPointMultiplierAndShift QuantizeMultiplierSmallerThanOne(double real_multiplier) {
  const FixedPointMultiplier quantized = QuantizeChecked(real_multiplier, "real_multiplier");
  // An exponent of 1 or more means m rounded to 1 or more: the stage's shift cannot be negative.
  if (quantized.exponent > 0) {
    throw Error("real_multiplier",
                "must be below 1 after rounding to 31 bits "
                "(OutputStageQuantizeDownInt32ByFixedPoint shifts right "
                "only; use QuantizeMultiplier), got " +
                    Text(real_multiplier));
  }
  return {quantized.multiplier, -quantized.exponent};
}

FixedPointMultipliers QuantizeMultipliers(const std::vector<double>& real_multipliers) {
  FixedPointMultipliers result;
  result.multipliers.reserve(real_multipliers.size());
  result.exponents.reserve(real_multipliers.size());
  for (std::size_t c = 0; c < real_multipliers.size(); ++c) {
    const FixedPointMultiplier quantized =
        QuantizeChecked(real_multipliers[c], "real_multipliers[" + std::to_string(c) + "]");
    result.multipliers.push_back(quantized.multiplier);
    result.exponents.push_back(quantized.exponent);
  }
  return result;
}

void Quantize(const float* values, std::size_t count, const QuantizationParams& params,
              std::uint8_t* quantized, QuantizedType type) {
  QuantizeImpl(values, count, params, quantized, type);
}

void Quantize(const float* values, std::size_t count, const QuantizationParams& params,
              std::int8_t* quantized, QuantizedType type) {
  QuantizeImpl(values, count, params, quantized, type);
}

void Dequantize(const std::uint8_t* quantized, std::size_t count, const QuantizationParams& params,
                float* values) {
  DequantizeImpl(quantized, count, params, values);
}

void Dequantize(const std::int8_t* quantized, std::size_t count, const QuantizationParams& params,
                float* values) {
  DequantizeImpl(quantized, count, params, values);
}

namespace internal {

std::string Text(double value) {
  for (int precision : {6, 15, 17}) {
    std::ostringstream stream;
    stream.precision(precision);
    stream << value;
    if (precision == 17 || std::strtod(stream.str().c_str(), nullptr) == value) {
      return stream.str();
    }
  }
  return {};
}

void CheckScale(double scale, const std::string& name) {
  if (!std::isfinite(scale) || scale <= 0) {
    throw Error(name, "must be finite and positive, got " + Text(scale));
  }
}

void CheckType(const QuantizedType& type, const std::string& name) {
  if (type.bits < 2 || type.bits > 8) {
    throw Error(name + ".bits", "must be in [2, 8], got " + std::to_string(type.bits));
  }
}

void CheckZeroPoint(std::int32_t zero_point, const QuantizedType& type, const std::string& name) {
  if (zero_point < type.min() || zero_point > type.max()) {
    throw Error(name, "must be in [" + std::to_string(type.min()) + ", " +
                          std::to_string(type.max()) + "], got " + std::to_string(zero_point));
  }
}

void CheckPointer(const void* pointer, std::size_t count, const std::string& name) {
  if (pointer == nullptr && count > 0) {
    throw Error(name, "must not be null for a count of " + std::to_string(count));
  }
}

// `real_multiplier` = fraction * 2^exponent, fraction in [0.5, 1), rounded to a Q31 fraction.
FixedPointMultiplier QuantizeChecked(double real_multiplier, const std::string& name) {
  if (std::isnan(real_multiplier) || std::isinf(real_multiplier)) {
    throw Error(name, "must be finite, got " + Text(real_multiplier));
  }
  if (real_multiplier <= 0) {
    throw Error(name, "must be positive, got " + Text(real_multiplier));
  }
  int exponent;
  const double fraction = std::frexp(real_multiplier, &exponent);
  // fraction * 2^31 < 2^31 is exact in a double up to the rounding to an integer (ties away).
  auto multiplier = static_cast<std::int64_t>(std::round(fraction * 2147483648.0));
  if (multiplier == (std::int64_t{1} << 31)) {
    // fraction rounded up to 1: 2^31 * 2^(exponent - 31) = 2^30 * 2^(exponent + 1 - 31).
    multiplier = std::int64_t{1} << 30;
    ++exponent;
  }
  // OutputStageScaleInt32ByFixedPointAndExponent accepts exponents in [-31, 30].
  if (exponent < -31 || exponent > 30) {
    throw Error(name,
                "must be in [2^-32 (1 - 2^-32), 2^30 (1 - 2^-32)) so that its exponent is in "
                "[-31, 30] (OutputStageScaleInt32ByFixedPointAndExponent), got " +
                    Text(real_multiplier) + " (exponent " + std::to_string(exponent) + ")");
  }
  return {static_cast<std::int32_t>(multiplier), exponent};
}

}  // namespace internal
}  // namespace lowbit
