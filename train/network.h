// An integer-only network (a list of layers: Linear, Conv2d, pooling, ReLU, Flatten) and its
// training step: forward, loss, backward and update, with integers only (doc/training.md).
#ifndef LOWBIT_TRAIN_NETWORK_H_
#define LOWBIT_TRAIN_NETWORK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lowbit/lowbit.h"
#include "train/dyadic.h"
#include "train/image_layers.h"
#include "train/layer.h"
#include "train/layers.h"

namespace lowbit {
namespace train {

// kMse: squared error against one-hot targets 1.0. kCrossEntropy: softmax cross-entropy, the
// softmax from the fixed-point library's exp (lowbit/fixedpoint/fixedpoint.h) in Q0.15.
enum class Loss { kMse, kCrossEntropy };

enum class LayerKind { kLinear, kConv2d, kMaxPool, kAvgPool, kRelu, kFlatten };

// One layer of an architecture. `outputs`: a Linear layer's outputs or a Conv2d's channels.
// `window`: a Conv2d's kernel, stride and padding, or a pooling layer's size (kernel = stride =
// size, no padding).
struct LayerSpec {
  LayerKind kind = LayerKind::kLinear;
  int outputs = 0;
  Window window;
};

// A network's layers and the shape of its input examples. The last layer is the Linear one
// whose outputs are the classes.
struct Architecture {
  ImageShape input;
  std::vector<LayerSpec> layers;
  int classes() const { return layers.empty() ? 0 : layers.back().outputs; }
};

// An MLP: Linear layers of the given widths (input first), ReLU between them; the input is
// widths.front() features.
Architecture MlpArchitecture(const std::vector<int>& widths);

// The shape of each layer's output, in order. Throws lowbit::Error naming `argument` unless
// every layer fits its input (windows within the image, image layers before the first
// Flatten or Linear) and the last layer is Linear.
std::vector<ImageShape> LayerShapes(const Architecture& architecture, const std::string& argument);

// The weights of a layer that learns: a Linear layer itself, or a Conv2d's filters. Throws
// lowbit::Error for a layer without weights.
const Linear& LayerWeights(const Layer& layer);

struct NetworkSettings {
  Architecture architecture;
  // The exponent of the input, and of every Linear and Conv2d layer's output: each forward
  // shift is chosen to give it. The gradient of the output comes at the output's exponent, and each
  // backward shift keeps it.
  int input_exponent = 5;
  int activation_exponent = 5;
  int bits = 8;
  TrainRounding rounding = TrainRounding::kStochastic;
  Loss loss = Loss::kMse;
  SgdSettings sgd;
  std::uint64_t seed = 1;
};

// The exponent of the output's gradient with the cross-entropy loss: p - y lies in [-1, 1].
constexpr int kCrossEntropyGradientExponent = 7;

// Softmax cross-entropy of one example: from a row of int8 logits at `exponent`, the softmax in
// Q0.15 (each entry in [0, 2^15], their sum within a few units of 2^15), and -log2 of the label's
// probability with 8 fractional bits. Integers only.
void Softmax(const std::int8_t* logits, int count, int exponent, std::int32_t* probabilities);
std::int32_t MinusLog2(std::int32_t probability);

// What one training step measured: the loss summed over the batch (MSE: squares of mantissas,
// exponent 2 * the output's; cross-entropy: -log2 of the label's probability, in bits, exponent
// 8), and the clipped forward outputs of the layers that learn (Linear and Conv2d).
struct StepStatistics {
  std::int64_t loss_mantissa = 0;
  int loss_exponent = 0;
  std::int64_t clipped = 0;
  std::int64_t outputs = 0;
};

class Network {
 public:
  explicit Network(const NetworkSettings& settings);

  const NetworkSettings& settings() const { return settings_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // The output shape of each layer.
  const std::vector<ImageShape>& shapes() const { return shapes_; }
  // The layers that learn (Linear and Conv2d), first to last.
  std::vector<Layer*> LearningLayers() const;

  // The output (logits) for a batch x the input shape's size input at input_exponent.
  const DyadicInt8& Forward(Context* context, const DyadicInt8& input);
  // One step on a batch: forward, the loss's gradient, backward and update.
  StepStatistics TrainStep(Context* context, const DyadicInt8& input,
                           const std::vector<int>& labels);
  // The class with the largest output for each example.
  std::vector<int> Predict(Context* context, const DyadicInt8& input);

  // The exponent of each learning layer's output in the forward pass, and of each learning
  // layer's input gradient in the last backward pass (first layer first).
  const std::vector<int>& ForwardExponents() const { return forward_exponents_; }
  const std::vector<int>& BackwardExponents() const { return backward_exponents_; }

 private:
  NetworkSettings settings_;
  SeedSequence seeds_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<ImageShape> shapes_;
  std::vector<int> forward_exponents_;
  std::vector<int> backward_exponents_;
};

// What an epoch measured, summed over its steps.
struct EpochStatistics {
  StepStatistics totals;
  int examples = 0;
};

// Throws lowbit::Error naming "labels" unless there is one label per example and every label is
// in [0, classes).
void CheckLabels(const std::vector<int>& labels, int examples, int classes);

// The order in which an epoch shuffled by `seed` visits `examples` examples.
std::vector<int> EpochOrder(int examples, std::uint64_t seed);

// One epoch: the examples (rows of `inputs`, at the network's input exponent) in an order
// shuffled by `seed`, in batches of `batch` (the last one smaller). `progress`, if set, is
// called after each batch with the examples done so far and the total.
EpochStatistics TrainEpoch(Network* network, Context* context, const DyadicInt8& inputs,
                           const std::vector<int>& labels, int batch, std::uint64_t seed,
                           const std::function<void(int, int)>& progress = nullptr);

// How many of the examples the network classifies right, in batches of `batch`.
int CountCorrect(Network* network, Context* context, const DyadicInt8& inputs,
                 const std::vector<int>& labels, int batch);

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_NETWORK_H_
