// The quantized GEMM's pipeline and the fully-connected layer of lowbit/public/quantized_gemm.h:
// every argument checked and every scale turned into integers once, in double, before any packing.
#include "lowbit/public/quantized_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lowbit/internal/quantization/quantization_checks.h"
#include "lowbit/public/error.h"

namespace lowbit {

namespace quantized_gemm_detail {

void CheckZeroPoint(std::int32_t zero_point, const QuantizedType& type, const char* name) {
  internal::CheckZeroPoint(zero_point, type, name);
}

void CheckDataType(const QuantizedType& type, const QuantizedType& expected, const char* name) {
  if (type.is_signed != expected.is_signed) {
    throw Error(name, std::string("must be ") + (type.is_signed ? "int8_t" : "uint8_t") +
                          " data: the layer was built for that type");
  }
}

}  // namespace quantized_gemm_detail

namespace {

using internal::CheckScale;
using internal::Text;

void CheckActivation(FusedActivation activation) {
  if (activation != FusedActivation::kNone && activation != FusedActivation::kRelu &&
      activation != FusedActivation::kRelu6) {
    throw Error("activation", "must be FusedActivation::kNone, kRelu or kRelu6, got " +
                                  std::to_string(static_cast<int>(activation)));
  }
}

// An 8-bit type (the layer's activations).
void CheckEightBits(const QuantizedType& type, const std::string& name) {
  if (type.bits != 8) {
    throw Error(name + ".bits",
                "must be 8 (QuantizedType::Uint8() or Int8()), got " + std::to_string(type.bits));
  }
}

// The multiplier `accumulator_scale / result.scale`, an error naming "result_name.scale" if it
// has no fixed-point form.
FixedPointMultiplier ResultMultiplier(double accumulator_scale, double result_scale,
                                      const std::string& result_name) {
  const double real_multiplier = accumulator_scale / result_scale;
  try {
    return internal::QuantizeChecked(real_multiplier, "the multiplier");
  } catch (const Error& error) {
    throw Error(result_name + ".scale", "gives a multiplier (input scales / " + result_name +
                                            ".scale) with no fixed-point form: " + error.what());
  }
}

// The result type's range, narrowed by the activation: a real 0 is the zero point, a real 6 is
// round(6 / scale) steps above it.
OutputStageClamp ActivationClamp(const QuantizationParams& result, const QuantizedType& type,
                                 FusedActivation activation) {
  std::int32_t min = type.min(), max = type.max();
  if (activation != FusedActivation::kNone) min = std::max(min, result.zero_point);
  if (activation == FusedActivation::kRelu6) {
    const double six = std::round(6.0 / result.scale) + result.zero_point;
    max = static_cast<std::int32_t>(std::min<double>(std::max<double>(six, min), max));
  }
  return {min, max};
}

void CheckActivations(const QuantizationParams& input, const QuantizedType& input_type,
                      const QuantizationParams& output, const QuantizedType& output_type,
                      FusedActivation activation) {
  CheckEightBits(input_type, "input_type");
  CheckEightBits(output_type, "output_type");
  CheckScale(input.scale, "input.scale");
  internal::CheckZeroPoint(input.zero_point, input_type, "input.zero_point");
  CheckScale(output.scale, "output.scale");
  internal::CheckZeroPoint(output.zero_point, output_type, "output.zero_point");
  CheckActivation(activation);
}

}  // namespace

QuantizedGemmPipeline MakeQuantizedGemmPipeline(const QuantizationParams& lhs,
                                                const QuantizationParams& rhs,
                                                const QuantizationParams& result,
                                                QuantizedType result_type,
                                                FusedActivation activation) {
  CheckScale(lhs.scale, "lhs.scale");
  CheckScale(rhs.scale, "rhs.scale");
  CheckScale(result.scale, "result.scale");
  for (const auto& [params, name] :
       {std::pair<const QuantizationParams&, const char*>{lhs, "lhs"},
        std::pair<const QuantizationParams&, const char*>{rhs, "rhs"}}) {
    if (params.zero_point < -255 || params.zero_point > 255) {
      throw Error(std::string(name) + ".zero_point",
                  "must be in [-255, 255] (a uint8 or int8 zero point), got " +
                      std::to_string(params.zero_point));
    }
  }
  internal::CheckType(result_type, "result_type");
  internal::CheckZeroPoint(result.zero_point, result_type, "result.zero_point");
  CheckActivation(activation);
  const FixedPointMultiplier multiplier =
      ResultMultiplier(lhs.scale * rhs.scale, result.scale, "result");
  return {lhs,
          rhs,
          result,
          -lhs.zero_point,
          -rhs.zero_point,
          OutputStageScaleInt32ByFixedPointAndExponent{multiplier.multiplier, multiplier.exponent,
                                                       result.zero_point},
          ActivationClamp(result, result_type, activation)};
}

QuantizedGemmPipeline MakeQuantizedGemmPipeline(const FloatRange& lhs, QuantizedType lhs_type,
                                                const FloatRange& rhs, QuantizedType rhs_type,
                                                const FloatRange& result, QuantizedType result_type,
                                                FusedActivation activation) {
  const auto params = [](const FloatRange& range, const QuantizedType& type,
                         const std::string& name) {
    internal::CheckType(type, name + "_type");
    return internal::ChooseChecked(range.min, range.max, type, QuantizationMode::kAsymmetric,
                                   name + ".min", name + ".max");
  };
  const QuantizationParams lhs_params = params(lhs, lhs_type, "lhs");
  const QuantizationParams rhs_params = params(rhs, rhs_type, "rhs");
  const QuantizationParams result_params = params(result, result_type, "result");
  return MakeQuantizedGemmPipeline(lhs_params, rhs_params, result_params, result_type, activation);
}

namespace {

// The bias of channel c at the accumulators' scale, rounded; an error naming `name` beyond int32.
std::int32_t QuantizeBias(double bias, double accumulator_scale, const std::string& name) {
  const double steps = std::round(bias / accumulator_scale);
  if (!(std::abs(steps) <= std::numeric_limits<std::int32_t>::max())) {
    throw Error(name, "is " + Text(steps) + " steps of input.scale * the channel's weight scale (" +
                          Text(accumulator_scale) + "), beyond int32");
  }
  return static_cast<std::int32_t>(steps);
}

}  // namespace

// Each channel's weights to int8 with the symmetric params of their range.
QuantizedFullyConnected::QuantizedWeights QuantizedFullyConnected::FromFloat(
    Context* context, const float* weights, const float* bias, int inputs, int outputs,
    const QuantizationParams& input, const QuantizedType& input_type,
    const QuantizationParams& output, const QuantizedType& output_type,
    FusedActivation activation) {
  if (context == nullptr) throw Error("context", "must not be null");
  if (inputs <= 0) throw Error("inputs", "must be positive, got " + std::to_string(inputs));
  if (outputs <= 0) throw Error("outputs", "must be positive, got " + std::to_string(outputs));
  if (weights == nullptr) throw Error("weights", "must not be null");
  CheckActivations(input, input_type, output, output_type, activation);
  const std::size_t count = static_cast<std::size_t>(inputs) * static_cast<std::size_t>(outputs);
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(weights[i])) {
      throw Error("weights[" + std::to_string(i) + "]", "must be finite, got " + Text(weights[i]));
    }
  }
  std::vector<float> channel_min(outputs), channel_max(outputs);
  for (int c = 0; c < outputs; ++c) {
    const float* row = weights + static_cast<std::size_t>(c) * inputs;
    channel_min[c] = *std::min_element(row, row + inputs);
    channel_max[c] = *std::max_element(row, row + inputs);
  }
  QuantizedFullyConnected::QuantizedWeights quantized;
  quantized.params = ChooseQuantizationParamsPerChannel(channel_min, channel_max);
  quantized.weights.resize(count);
  for (int c = 0; c < outputs; ++c) {
    const std::size_t first = static_cast<std::size_t>(c) * inputs;
    Quantize(weights + first, inputs, quantized.params[c], quantized.weights.data() + first);
  }
  quantized.bias.assign(outputs, 0);
  if (bias != nullptr) {
    for (int c = 0; c < outputs; ++c) {
      const std::string name = "bias[" + std::to_string(c) + "]";
      if (!std::isfinite(bias[c])) throw Error(name, "must be finite, got " + Text(bias[c]));
      quantized.bias[c] = QuantizeBias(bias[c], input.scale * quantized.params[c].scale, name);
    }
  }
  return quantized;
}

QuantizedFullyConnected::QuantizedWeights QuantizedFullyConnected::FromInt8(
    Context* context, const std::int8_t* weights, const std::vector<double>& weight_scales,
    const std::int32_t* bias, int inputs, const QuantizationParams& input,
    const QuantizedType& input_type, const QuantizationParams& output,
    const QuantizedType& output_type, FusedActivation activation) {
  if (context == nullptr) throw Error("context", "must not be null");
  if (inputs <= 0) throw Error("inputs", "must be positive, got " + std::to_string(inputs));
  if (weight_scales.empty()) {
    throw Error("weight_scales", "must have one scale per output channel, got none");
  }
  if (weights == nullptr) throw Error("weights", "must not be null");
  CheckActivations(input, input_type, output, output_type, activation);
  const int outputs = static_cast<int>(weight_scales.size());
  QuantizedFullyConnected::QuantizedWeights quantized;
  for (int c = 0; c < outputs; ++c) {
    CheckScale(weight_scales[c], "weight_scales[" + std::to_string(c) + "]");
    quantized.params.push_back({weight_scales[c], 0});
  }
  quantized.weights.assign(weights, weights + static_cast<std::size_t>(inputs) * outputs);
  quantized.bias.assign(outputs, 0);
  if (bias != nullptr) quantized.bias.assign(bias, bias + outputs);
  return quantized;
}

QuantizedFullyConnected::QuantizedFullyConnected(
    Context* context, const float* weights, const float* bias, int inputs, int outputs,
    const QuantizationParams& input, QuantizedType input_type, const QuantizationParams& output,
    QuantizedType output_type, FusedActivation activation)
    : QuantizedFullyConnected(context,
                              FromFloat(context, weights, bias, inputs, outputs, input, input_type,
                                        output, output_type, activation),
                              inputs, input, input_type, output, output_type, activation) {}

QuantizedFullyConnected::QuantizedFullyConnected(
    Context* context, const std::int8_t* weights, const std::vector<double>& weight_scales,
    const std::int32_t* bias, int inputs, const QuantizationParams& input, QuantizedType input_type,
    const QuantizationParams& output, QuantizedType output_type, FusedActivation activation)
    : QuantizedFullyConnected(context,
                              FromInt8(context, weights, weight_scales, bias, inputs, input,
                                       input_type, output, output_type, activation),
                              inputs, input, input_type, output, output_type, activation) {}

QuantizedFullyConnected::QuantizedFullyConnected(Context* context, QuantizedWeights&& quantized,
                                                 int inputs, const QuantizationParams& input,
                                                 QuantizedType input_type,
                                                 const QuantizationParams& output,
                                                 QuantizedType output_type,
                                                 FusedActivation activation)
    : quantized_weights_(std::move(quantized.weights)),
      weight_params_(std::move(quantized.params)),
      bias_(std::move(quantized.bias)),
      requantization_(Requantization(weight_params_, input, output)),
      // outputs x inputs row-major is the inputs x outputs rhs, column-major.
      weights_(context, MatrixMap<const std::int8_t>(quantized_weights_.data(), inputs,
                                                     static_cast<int>(weight_params_.size()),
                                                     Order::kColMajor)),
      input_type_(input_type),
      output_type_(output_type),
      input_offset_(-input.zero_point),
      output_zero_point_(output.zero_point),
      clamp_(ActivationClamp(output, output_type, activation)) {}

FixedPointMultipliers QuantizedFullyConnected::Requantization(
    const std::vector<QuantizationParams>& weight_params, const QuantizationParams& input,
    const QuantizationParams& output) {
  FixedPointMultipliers requantization;
  for (const QuantizationParams& channel : weight_params) {
    const FixedPointMultiplier multiplier =
        ResultMultiplier(input.scale * channel.scale, output.scale, "output");
    requantization.multipliers.push_back(multiplier.multiplier);
    requantization.exponents.push_back(multiplier.exponent);
  }
  return requantization;
}

}  // namespace lowbit
