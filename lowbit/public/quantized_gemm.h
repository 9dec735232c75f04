// A GEMM of quantized matrices in a few lines: QuantizedMatrix (data with its scale and zero
// point), the output pipeline that takes two of them to a third (MakeQuantizedGemmPipeline),
// QuantizedGemm, and a fully-connected layer with int8 per-channel weights packed once
// (QuantizedFullyConnected). doc/quantization.md, sections 11 and 12.
#ifndef LOWBIT_PUBLIC_QUANTIZED_GEMM_H_
#define LOWBIT_PUBLIC_QUANTIZED_GEMM_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "lowbit/public/context.h"
#include "lowbit/public/error.h"
#include "lowbit/public/gemm.h"
#include "lowbit/public/map.h"
#include "lowbit/public/output_stages.h"
#include "lowbit/public/prepacked.h"
#include "lowbit/public/quantization.h"

namespace lowbit {

/// A quantized matrix: real(r, c) = params.scale * (map(r, c) - params.zero_point). Scalar is
/// uint8_t or int8_t, const for an input.
template <typename Scalar>
struct QuantizedMatrix {
  MatrixMap<Scalar> map;
  QuantizationParams params;
};

/// An activation fused into the result's clamp.
enum class FusedActivation {
  kNone,
  kRelu,   // real result >= 0: quantized >= the zero point
  kRelu6,  // 0 <= real result <= 6
};

/// A range of real values: what a calibration observed of a tensor, or what it is known to hold.
struct FloatRange {
  double min;
  double max;
};

/// What takes the int32 accumulators of a GEMM of two quantized matrices to a third:
///   result = clamp(round(acc * lhs.scale * rhs.scale / result.scale) + result.zero_point)
/// with acc = sum (lhs - lhs.zero_point) (rhs - rhs.zero_point), i.e. the GEMM's offsets, and the
/// clamp to the result type narrowed by the activation.
struct QuantizedGemmPipeline {
  QuantizationParams lhs, rhs, result;  // the params it was made for
  std::int32_t lhs_offset;              // -lhs.zero_point
  std::int32_t rhs_offset;              // -rhs.zero_point
  OutputStageScaleInt32ByFixedPointAndExponent requantize;
  OutputStageClamp clamp;

  /// The stages for a Result (uint8_t or int8_t) result: the requantization, the clamp, the cast.
  template <typename Result>
  auto Stages() const {
    static_assert(
        std::is_same<Result, std::uint8_t>::value || std::is_same<Result, std::int8_t>::value,
        "the result is uint8_t or int8_t");
    using Cast =
        std::conditional_t<std::is_same<Result, std::uint8_t>::value,
                           OutputStageSaturatingCastToUint8, OutputStageSaturatingCastToInt8>;
    return std::make_tuple(requantize, clamp, Cast{});
  }
};

/// The pipeline for lhs x rhs -> result with these params, the result in `result_type`.
/// Throws lowbit::Error naming the argument for a scale that is not finite and positive
/// ("lhs.scale", "rhs.scale", "result.scale"), an lhs or rhs zero point outside [-255, 255] or a
/// result zero point outside `result_type` ("result.zero_point"), a type whose bits are outside
/// [2, 8] ("result_type.bits"), an unknown activation, and a multiplier lhs.scale * rhs.scale /
/// result.scale outside QuantizeMultiplier's range ("result.scale").
QuantizedGemmPipeline MakeQuantizedGemmPipeline(
    const QuantizationParams& lhs, const QuantizationParams& rhs, const QuantizationParams& result,
    QuantizedType result_type = QuantizedType::Uint8(),
    FusedActivation activation = FusedActivation::kNone);

/// The same from the real ranges of lhs, rhs and result: each gets the asymmetric params of its
/// range in its type (ChooseQuantizationParams; the pipeline's lhs, rhs and result fields give
/// them back, to quantize the operands with). Also throws lowbit::Error naming "lhs.min",
/// "rhs.max", ... as ChooseQuantizationParams names "min" and "max", and "lhs_type.bits", ...
QuantizedGemmPipeline MakeQuantizedGemmPipeline(
    const FloatRange& lhs, QuantizedType lhs_type, const FloatRange& rhs, QuantizedType rhs_type,
    const FloatRange& result, QuantizedType result_type = QuantizedType::Uint8(),
    FusedActivation activation = FusedActivation::kNone);

/// result = lhs x rhs in real terms, quantized with result->params, the activation fused. The
/// zero points must fit the data types (checked, "lhs.params.zero_point", ...); everything else
/// as MakeQuantizedGemmPipeline and GemmWithOutputPipeline check it, before anything is written.
template <typename LhsScalar, typename RhsScalar, typename ResultScalar>
void QuantizedGemm(Context* context, const QuantizedMatrix<LhsScalar>& lhs,
                   const QuantizedMatrix<RhsScalar>& rhs, QuantizedMatrix<ResultScalar>* result,
                   FusedActivation activation = FusedActivation::kNone);

/// A fully-connected layer, output = activation(input W^T + bias), for a batch of examples as the
/// rows of `input` (batch x inputs) and of `output` (batch x outputs): uint8 or int8 activations
/// quantized per tensor, int8 weights quantized symmetrically per output channel, an int32 bias
/// at each channel's accumulator scale, the activation fused. The weights are packed once, for the
/// kernel of the context given to the constructor: Run must get a context running that kernel.
/// Copies share the packed weights; Run may be called from several threads with their own
/// contexts.
class QuantizedFullyConnected {
 public:
  /// From float weights (outputs x inputs, row-major) and bias (outputs entries, or null for
  /// none): each output channel's weights are quantized to int8 with the symmetric params of
  /// their range (ChooseQuantizationParamsPerChannel), the bias to int32 at input.scale times the
  /// channel's scale. Throws lowbit::Error naming the argument: "context", "weights" or "bias"
  /// (null, or a value that is not finite), "inputs" or "outputs" (not positive), "input.*" and
  /// "output.*" (scales, zero points outside the types), "input_type", "output_type" (bits other
  /// than 8), "activation", "bias[c]" (beyond int32 at its scale), "output.scale" (a channel's
  /// multiplier out of range).
  QuantizedFullyConnected(Context* context, const float* weights, const float* bias, int inputs,
                          int outputs, const QuantizationParams& input, QuantizedType input_type,
                          const QuantizationParams& output, QuantizedType output_type,
                          FusedActivation activation = FusedActivation::kNone);

  /// From weights already quantized (outputs x inputs int8, row-major, zero point 0) with one
  /// scale per output channel (`weight_scales`, outputs entries) and an int32 bias (outputs
  /// entries at input.scale * weight_scales[c], or null): a model quantized elsewhere (TFLite).
  QuantizedFullyConnected(Context* context, const std::int8_t* weights,
                          const std::vector<double>& weight_scales, const std::int32_t* bias,
                          int inputs, const QuantizationParams& input, QuantizedType input_type,
                          const QuantizationParams& output, QuantizedType output_type,
                          FusedActivation activation = FusedActivation::kNone);

  /// output = the layer applied to each row of input. Input and Output are uint8_t or int8_t and
  /// must match the types given at construction ("input", "output"); input.cols() must be
  /// inputs(), output->cols() outputs() and the rows equal; the rest as GemmWithOutputPipeline
  /// checks it (a context running another kernel than the weights were packed for is "rhs").
  template <typename Input, typename Output>
  void Run(Context* context, const MatrixMap<const Input>& input, MatrixMap<Output>* output) const;

  int inputs() const { return weights_.rows(); }
  int outputs() const { return weights_.cols(); }
  /// The int8 weights (outputs x inputs, row-major), their per-channel params and the bias.
  const std::vector<std::int8_t>& quantized_weights() const { return quantized_weights_; }
  const std::vector<QuantizationParams>& weight_params() const { return weight_params_; }
  const std::vector<std::int32_t>& bias() const { return bias_; }

 private:
  /// The layer's weights in int8 with their per-channel params, and the int32 bias.
  struct QuantizedWeights {
    std::vector<std::int8_t> weights;
    std::vector<QuantizationParams> params;
    std::vector<std::int32_t> bias;
  };
  static QuantizedWeights FromFloat(Context* context, const float* weights, const float* bias,
                                    int inputs, int outputs, const QuantizationParams& input,
                                    const QuantizedType& input_type,
                                    const QuantizationParams& output,
                                    const QuantizedType& output_type, FusedActivation activation);
  static QuantizedWeights FromInt8(Context* context, const std::int8_t* weights,
                                   const std::vector<double>& weight_scales,
                                   const std::int32_t* bias, int inputs,
                                   const QuantizationParams& input, const QuantizedType& input_type,
                                   const QuantizationParams& output,
                                   const QuantizedType& output_type, FusedActivation activation);
  /// Each channel's multiplier input.scale * weight scale / output.scale.
  static FixedPointMultipliers Requantization(const std::vector<QuantizationParams>& weight_params,
                                              const QuantizationParams& input,
                                              const QuantizationParams& output);
  QuantizedFullyConnected(Context* context, QuantizedWeights&& quantized, int inputs,
                          const QuantizationParams& input, QuantizedType input_type,
                          const QuantizationParams& output, QuantizedType output_type,
                          FusedActivation activation);

  std::vector<std::int8_t> quantized_weights_;
  std::vector<QuantizationParams> weight_params_;
  std::vector<std::int32_t> bias_;
  FixedPointMultipliers requantization_;
  PrepackedRhs weights_;
  QuantizedType input_type_, output_type_;
  std::int32_t input_offset_, output_zero_point_;
  OutputStageClamp clamp_;
};

namespace quantized_gemm_detail {

/// The QuantizedType of a uint8_t or int8_t matrix, whatever its constness.
template <typename Scalar>
constexpr QuantizedType TypeOf() {
  using Plain = std::remove_const_t<Scalar>;
  static_assert(std::is_same<Plain, std::uint8_t>::value || std::is_same<Plain, std::int8_t>::value,
                "quantized data is uint8_t or int8_t");
  return std::is_same<Plain, std::int8_t>::value ? QuantizedType::Int8() : QuantizedType::Uint8();
}

/// Throws lowbit::Error naming `name` unless zero_point lies in the type's range.
void CheckZeroPoint(std::int32_t zero_point, const QuantizedType& type, const char* name);
/// Throws lowbit::Error naming `name` unless `type` is `expected` (the data's type).
void CheckDataType(const QuantizedType& type, const QuantizedType& expected, const char* name);

}  // namespace quantized_gemm_detail

template <typename LhsScalar, typename RhsScalar, typename ResultScalar>
void QuantizedGemm(Context* context, const QuantizedMatrix<LhsScalar>& lhs,
                   const QuantizedMatrix<RhsScalar>& rhs, QuantizedMatrix<ResultScalar>* result,
                   FusedActivation activation) {
  using quantized_gemm_detail::TypeOf;
  if (result == nullptr) throw Error("result", "must not be null");
  quantized_gemm_detail::CheckZeroPoint(lhs.params.zero_point, TypeOf<LhsScalar>(),
                                        "lhs.params.zero_point");
  quantized_gemm_detail::CheckZeroPoint(rhs.params.zero_point, TypeOf<RhsScalar>(),
                                        "rhs.params.zero_point");
  const QuantizedGemmPipeline pipeline = MakeQuantizedGemmPipeline(
      lhs.params, rhs.params, result->params, TypeOf<ResultScalar>(), activation);
  GemmWithOutputPipeline(context, lhs.map, rhs.map, &result->map, pipeline.lhs_offset,
                         pipeline.rhs_offset, pipeline.Stages<ResultScalar>());
}

template <typename Input, typename Output>
void QuantizedFullyConnected::Run(Context* context, const MatrixMap<const Input>& input,
                                  MatrixMap<Output>* output) const {
  using quantized_gemm_detail::TypeOf;
  quantized_gemm_detail::CheckDataType(input_type_, TypeOf<Input>(), "input");
  if (output == nullptr) throw Error("output", "must not be null");
  quantized_gemm_detail::CheckDataType(output_type_, TypeOf<Output>(), "output");
  if (input.cols() != inputs()) {
    throw Error("input", "must have one column per input of the layer (" +
                             std::to_string(inputs()) + "), got " + std::to_string(input.cols()));
  }
  if (output->cols() != outputs() || output->rows() != input.rows()) {
    throw Error("output",
                "must be " + std::to_string(input.rows()) + " x " + std::to_string(outputs()) +
                    " (the input's rows, one column per "
                    "output of the layer), got " +
                    std::to_string(output->rows()) + " x " + std::to_string(output->cols()));
  }
  const VectorMap<const std::int32_t> per_channel_bias(bias_.data(), outputs());
  const VectorMap<const std::int32_t> multipliers(requantization_.multipliers.data(), outputs());
  const VectorMap<const std::int32_t> exponents(requantization_.exponents.data(), outputs());
  using Cast =
      std::conditional_t<std::is_same<Output, std::uint8_t>::value,
                         OutputStageSaturatingCastToUint8, OutputStageSaturatingCastToInt8>;
  GemmWithOutputPipeline(
      context, input, weights_, output, input_offset_, 0,
      std::make_tuple(OutputStageBiasAddition{per_channel_bias, ChannelAxis::kCol},
                      OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
                          multipliers, exponents, output_zero_point_, ChannelAxis::kCol},
                      clamp_, Cast{}));
}

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_QUANTIZED_GEMM_H_
