// An integer-only multilayer perceptron (Linear and ReLU layers) and its training step: forward,
// loss, backward and update, with integers only (doc/training.md).
#ifndef LOWBIT_TRAIN_NETWORK_H_
#define LOWBIT_TRAIN_NETWORK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lowbit/lowbit.h"
#include "train/dyadic.h"
#include "train/layers.h"

namespace lowbit {
namespace train {

// kMse: squared error against one-hot targets 1.0. kCrossEntropy: softmax cross-entropy, the
// softmax from the fixed-point library's exp (lowbit/fixedpoint/fixedpoint.h) in Q0.15.
enum class Loss { kMse, kCrossEntropy };

struct NetworkSettings {
  // Widths from the input to the output, e.g. {4, 8, 8, 3}: Linear layers with ReLU between.
  std::vector<int> widths;
  // The exponent of the input, and of every Linear layer's output: each forward shift is chosen
  // to give it. The gradient of the output comes at the output's exponent, and each backward
  // shift keeps it.
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

// Parses "4-8-8-3" into widths; throws lowbit::Error naming `argument` for anything else.
std::vector<int> ParseArchitecture(const std::string& architecture, const std::string& argument);

// What one training step measured: the loss summed over the batch (MSE: squares of mantissas,
// exponent 2 * the output's; cross-entropy: -log2 of the label's probability, in bits, exponent
// 8), and the clipped forward outputs of the Linear layers.
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
  const std::vector<Linear>& linear_layers() const { return linear_; }
  std::vector<Linear>& linear_layers() { return linear_; }

  // The output (logits) for a batch x widths.front() input at input_exponent.
  const DyadicInt8& Forward(Context* context, const DyadicInt8& input);
  // One step on a batch: forward, the loss's gradient, backward and update.
  StepStatistics TrainStep(Context* context, const DyadicInt8& input,
                           const std::vector<int>& labels);
  // The class with the largest output for each example.
  std::vector<int> Predict(Context* context, const DyadicInt8& input);

  // The exponent of each Linear layer's output in the forward pass, and of each Linear layer's
  // input gradient in the last backward pass (first layer first).
  std::vector<int> ForwardExponents() const;
  const std::vector<int>& BackwardExponents() const { return backward_exponents_; }

 private:
  NetworkSettings settings_;
  SeedSequence seeds_;
  std::vector<Linear> linear_;
  std::vector<Relu> relu_;  // after each Linear layer but the last
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
