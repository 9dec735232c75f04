// The float twin of an integer network (lowbit-train --float): the same architecture, initial
// values, batches and update rule, in float32, as the reference the integer network is judged by.
#ifndef LOWBIT_TRAIN_FLOAT_TWIN_H_
#define LOWBIT_TRAIN_FLOAT_TWIN_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "train/network.h"

namespace lowbit {
namespace train {

// Examples as real numbers: the rows of `inputs` (examples x features, row-major).
struct FloatExamples {
  int rows = 0;
  int cols = 0;
  std::vector<float> values;
};

// The real values of dyadic int8 inputs: the integer network and its twin see the same numbers.
FloatExamples RealValues(const DyadicInt8& inputs);

// What a float epoch measured: the loss summed over its examples, in the integer network's units
// (MSE: the squared error; cross-entropy: -log2 of the label's probability, in bits).
struct FloatEpochStatistics {
  double loss = 0;
  int examples = 0;
};

// The integer network's layers (Linear, Conv2d, pooling, ReLU, Flatten) with weights and biases
// in float32, trained by the rule the integer network follows with its rounding taken away: the
// loss's gradient is summed over the batch (MSE: Y - T against one-hot targets 1.0;
// cross-entropy: softmax(Y) - T), the velocity is V = (1 - 2^-momentum_shift) V + G
// (+ W 2^-weight_decay_shift), and each parameter moves by V 2^-learning_rate_shift, clipped to
// max_step of its integer master's units. Average pooling divides; max pooling passes the
// gradient to the first maximum, as the integer layer does.
class FloatTwin {
 public:
  // The twin of `network` as it stands (normally just built): its layers, loss and SGD
  // settings, and its master weights and biases as real numbers.
  explicit FloatTwin(const Network& network);

  // One epoch in the order EpochOrder(examples, seed) gives, in batches of `batch`: the batches
  // of the integer TrainEpoch with the same seed. `progress` as there.
  FloatEpochStatistics TrainEpoch(const FloatExamples& inputs, const std::vector<int>& labels,
                                  int batch, std::uint64_t seed,
                                  const std::function<void(int, int)>& progress = nullptr);

  // How many of the examples the twin classifies right.
  int CountCorrect(const FloatExamples& inputs, const std::vector<int>& labels);

  // The logits of `rows` examples starting at `x` (rows x the input shape's size); the layers
  // keep what a backward pass needs.
  const std::vector<float>& Logits(const float* x, int rows);

 private:
  struct Layer {
    LayerKind kind = LayerKind::kLinear;
    ImageShape input_shape;  // one example's
    ImageShape output_shape;
    Window window;
    // Linear and Conv2d: weights of `outputs` x `inputs` (a Conv2d's over its im2col patches).
    int inputs = 0;
    int outputs = 0;
    std::vector<float> weights;  // outputs x inputs, row-major
    std::vector<float> bias;
    std::vector<float> weight_velocity;
    std::vector<float> bias_velocity;
    float weight_max_step = 0;  // 0: no clipping
    float bias_max_step = 0;
    // The last forward pass: the product's left operand (a Linear layer's input, a Conv2d's
    // patches; a max pool's input), the output; and the last backward pass's gradients.
    std::vector<float> operand;
    std::vector<float> output;
    std::vector<float> weight_gradient;
    std::vector<float> bias_gradient;
  };

  // Backward and update for the last Logits, from the gradient of its logits.
  void BackwardAndUpdate(std::vector<float> gradient, int rows);

  Loss loss_;
  SgdSettings sgd_;
  ImageShape input_;
  std::vector<Layer> layers_;
};

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_FLOAT_TWIN_H_
