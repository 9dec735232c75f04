// The layers of an integer-only network that see each example as a vector: Linear (every product
// one call of lowbit's GEMM, every requantization an output stage), ReLU and Flatten, forward and
// backward on dyadic tensors. Convolutions and pooling are in train/image_layers.h.
#ifndef LOWBIT_TRAIN_LAYERS_H_
#define LOWBIT_TRAIN_LAYERS_H_

#include <cstdint>
#include <vector>

#include "lowbit/lowbit.h"
#include "train/dyadic.h"
#include "train/layer.h"

namespace lowbit {
namespace train {

// The exponents of one Linear layer (design section 7). Its input has `input_exponent`, its
// int8 weights `weight_exponent`; the forward product X W^T (exponent input + weight) is
// shifted right by `forward_shift`, so the output has input + weight - forward_shift. The
// backward product dY W (exponent gradient + weight) is shifted right by `backward_shift`, so
// the input's gradient has gradient + weight - backward_shift.
struct LinearExponents {
  int input_exponent = 0;
  int weight_exponent = 0;
  int forward_shift = 0;
  int backward_shift = 0;
  int output_exponent() const { return input_exponent + weight_exponent - forward_shift; }
  int input_gradient_exponent(int output_gradient_exponent) const {
    return output_gradient_exponent + weight_exponent - backward_shift;
  }
};

// Where a product over many rows puts them in lowbit's GEMM. kLhs: the rows are the GEMM's lhs
// rows, as written. kRhs: the transposed product, the rows being the rhs's columns and the result
// column-major in the same memory; lowbit runs it about twice as fast when the rows far
// outnumber the outputs and the depth is small (a convolution's patches: 50176 x 16 x 9 in 0.7
// instead of 1.4 ms). Their stochastic roundings differ: the random bits follow the GEMM's
// result row and column.
enum class RowsIn { kLhs, kRhs };

// Y = X W^T + b with int8 weights W (outputs x inputs) and int32 bias at the product's
// exponent; both derive, by rounding to nearest, from int32 master copies that carry
// kMasterBits more bits, which the updates move.
class Linear : public Layer {
 public:
  static constexpr int kMasterBits = 8;

  // Weights uniform on +-sqrt(6 / inputs) (He), drawn from `init`; bias 0.
  Linear(int inputs, int outputs, const LinearExponents& exponents, int bits,
         TrainRounding rounding, SeedSequence* init);

  int inputs() const { return inputs_; }
  int outputs() const { return outputs_; }
  const LinearExponents& exponents() const { return exponents_; }
  const DyadicInt8& weights() const { return weights_; }
  const std::vector<std::int32_t>& bias() const { return bias_; }
  // The last backward pass's gradients: weights (exponent gradient + input) and bias
  // (exponent gradient).
  const DyadicInt32& weight_gradient() const { return weight_gradient_; }
  const DyadicInt32& bias_gradient() const { return bias_gradient_; }

  // Sets the weights' mantissas (and their masters) directly, for tests and loading.
  void SetWeights(const std::vector<std::int8_t>& weights, const std::vector<std::int32_t>& bias);

  bool rounds() const override { return true; }
  bool learns() const override { return true; }

  // x: batch x inputs at exponents().input_exponent. Keeps x and the output for Backward.
  const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) override;
  // dy: batch x outputs, the gradient of the last Forward's output. Zeroes it where that
  // output was clipped (straight-through estimator), computes the weights' and bias' gradients,
  // and returns the input's gradient (when `input_gradient` is not null).
  void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                DyadicInt8* input_gradient) override;
  int InputGradientExponent(int output_gradient_exponent) const override {
    return exponents_.input_gradient_exponent(output_gradient_exponent);
  }
  // Moves the masters by the last gradients, and rounds the weights and bias from them.
  void Update(const SgdSettings& sgd, SeedSequence* seeds) override;

  // What training moves, as one int32 array: the master weights, the master bias, then the
  // weights' and the bias' velocities (StateSize() entries). SetState rounds the weights and bias
  // from it.
  std::size_t StateSize() const override;
  void GetState(std::int32_t* state) const override;
  void SetState(const std::int32_t* state) override;

  std::int64_t clipped_outputs() const override { return clipped_outputs_; }
  bool FuseRelu() override {
    relu_fused_ = true;
    return true;
  }

  // The same products on rows the caller holds, for layers that multiply other rows by these
  // weights (Conv2d: its im2col patches). Each is one GEMM, or one per 2^16 rows where the
  // rows are the depth.
  //
  // y (rows x outputs) = x (rows x inputs) W^T + b, requantized as Forward does; returns how
  // many outputs clipped.
  std::int64_t Multiply(Context* context, const std::int8_t* x, int rows, RowsIn rows_in,
                        std::uint32_t seed, std::int8_t* y) const;
  // masked (count entries) = dy where y did not clip, else 0: the straight-through estimator.
  void MaskClipped(const std::int8_t* dy, const std::int8_t* y, std::size_t count,
                   std::int8_t* masked) const;
  // The weights' and bias' gradients from `rows` masked output gradients (rows x outputs, at
  // `gradient_exponent`) and the inputs they came from (rows x inputs).
  void ComputeGradients(Context* context, const std::int8_t* masked, int gradient_exponent,
                        const std::int8_t* x, int rows, RowsIn rows_in);
  // masked dY W before any rounding: rows x inputs int32 accumulators at the exponent
  // gradient + weight (a convolution sums them over patches before it rounds).
  void InputGradientAccumulators(Context* context, const std::int8_t* masked, int rows,
                                 RowsIn rows_in, std::int32_t* accumulators) const;

 private:
  void RoundFromMasters();

  int inputs_;
  int outputs_;
  LinearExponents exponents_;
  int bits_;
  TrainRounding rounding_;
  DyadicInt32 master_weights_;
  DyadicInt8 weights_;
  std::vector<std::int32_t> master_bias_;
  std::vector<std::int32_t> bias_;
  DyadicInt32 weight_velocity_;
  std::vector<std::int32_t> bias_velocity_;
  DyadicInt8 input_;
  DyadicInt8 output_;
  DyadicInt8 masked_gradient_;
  DyadicInt32 weight_gradient_;
  DyadicInt32 bias_gradient_;
  std::vector<std::int32_t> gradient_chunk_;
  std::int64_t clipped_outputs_ = 0;
  bool relu_fused_ = false;
};

// y = max(x, 0); the gradient passes where x > 0. Once fused into the layer before it
// (Layer::FuseRelu), it hands both passes' tensors on unchanged.
class Relu : public Layer {
 public:
  void Fuse() { fused_ = true; }
  bool HandsOn() const override { return fused_; }
  const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) override;
  void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                DyadicInt8* input_gradient) override;

 private:
  bool fused_ = false;
  DyadicInt8 output_;
};

// Between image layers and Linear ones: an example's height x width x channels values become
// one vector. The storage (NHWC) already is that vector, so both passes hand their tensor on.
class Flatten : public Layer {
 public:
  bool HandsOn() const override { return true; }
  const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) override;
  void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                DyadicInt8* input_gradient) override;
};

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_LAYERS_H_
