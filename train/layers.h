// The layers of an integer-only network: Linear (every product one call of lowbit's GEMM, every
// requantization an output stage) and ReLU, forward and backward, on dyadic tensors.
#ifndef LOWBIT_TRAIN_LAYERS_H_
#define LOWBIT_TRAIN_LAYERS_H_

#include <cstdint>
#include <vector>

#include "lowbit/lowbit.h"
#include "train/dyadic.h"

namespace lowbit {
namespace train {

// How weights learn, all as power-of-two shifts (doc/training.md): the step is the gradient
// times 2^-learning_rate_shift; the velocity decays by 2^-momentum_shift per step (momentum
// 1 - 2^-momentum_shift; 0: none); weight decay adds weight * 2^-weight_decay_shift to the
// gradient (0: none); each step moves a master weight by at most max_step of its units (0: no
// clipping). The arithmetic is int32 with fixed bounds: a gradient (weight decay included) is
// clipped to +-2^29, a velocity and a step to +-2^30. The shifts these settings make between a
// tensor's gradient and master exponents must lie in [-30, 30] (momentum_shift in [0, 30]);
// Linear::Update throws lowbit::Error naming the setting otherwise.
struct SgdSettings {
  int learning_rate_shift = 8;
  int momentum_shift = 0;
  int weight_decay_shift = 0;
  std::int32_t max_step = 0;
};

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

// Y = X W^T + b with int8 weights W (outputs x inputs) and int32 bias at the product's
// exponent; both derive, by rounding to nearest, from int32 master copies that carry
// kMasterBits more bits, which the updates move.
class Linear {
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

  // What training moves, as one int32 array: the master weights, the master bias, then the
  // weights' and the bias' velocities (StateSize() entries). SetState rounds the weights and bias
  // from it.
  std::size_t StateSize() const;
  void GetState(std::int32_t* state) const;
  void SetState(const std::int32_t* state);

  // x: batch x inputs at exponents().input_exponent. Keeps x and the output for Backward.
  const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed);
  // dy: batch x outputs, the gradient of the last Forward's output. Zeroes it where that
  // output was clipped (straight-through estimator), computes the weights' and bias' gradients,
  // and returns the input's gradient (when `input_gradient` is not null).
  void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                DyadicInt8* input_gradient);
  // Moves the masters by the last gradients, and rounds the weights and bias from them.
  void Update(const SgdSettings& sgd, SeedSequence* seeds);

  // Fraction of the last Forward's outputs at a bound (clipped), as a count and a total.
  std::int64_t clipped_outputs() const { return clipped_outputs_; }

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
  std::int64_t clipped_outputs_ = 0;
};

// y = max(x, 0); the gradient passes where x > 0.
class Relu {
 public:
  const DyadicInt8& Forward(const DyadicInt8& x);
  void Backward(const DyadicInt8& dy, DyadicInt8* input_gradient) const;

 private:
  DyadicInt8 output_;
};

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_LAYERS_H_
