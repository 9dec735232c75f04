// The float twin (train/float_twin.h): plain float32 loops, vectorized by the compiler. Outside
// the training step's objects: the float-free check does not scan it.
#include "train/float_twin.h"

#include <algorithm>
#include <cmath>

namespace lowbit {
namespace train {
namespace {

// The products run over every weight of every example: GCC compiles AVX2 clones as well, chosen
// when the program loads. Sanitizer builds keep one plain version (their runtimes start after
// the loader resolves the clones).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define LOWBIT_FLOAT_TWIN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LOWBIT_FLOAT_TWIN_CLONES
#endif

// a . b over n entries, in eight partial sums so that the sum vectorizes without reassociation
// flags.
LOWBIT_FLOAT_TWIN_CLONES float Dot(const float* a, const float* b, int n) {
  constexpr int kLanes = 8;
  float partial[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += a[i + lane] * b[i + lane];
  }
  float sum = 0;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (const float p : partial) sum += p;
  return sum;
}

// y += alpha x over n entries.
LOWBIT_FLOAT_TWIN_CLONES void Axpy(float alpha, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// The SGD rule of SgdSettings on real numbers (FloatTwin's comment).
void Move(const SgdSettings& sgd, float max_step, const std::vector<float>& gradient,
          std::vector<float>* parameters, std::vector<float>* velocity) {
  const float keep = 1.0f - std::ldexp(1.0f, -sgd.momentum_shift);
  const float decay = sgd.weight_decay_shift > 0 ? std::ldexp(1.0f, -sgd.weight_decay_shift) : 0;
  const float rate = std::ldexp(1.0f, -sgd.learning_rate_shift);
  for (std::size_t i = 0; i < parameters->size(); ++i) {
    float& w = (*parameters)[i];
    float& v = (*velocity)[i];
    v = keep * v + gradient[i] + decay * w;
    float step = rate * v;
    if (max_step > 0) step = std::clamp(step, -max_step, max_step);
    w -= step;
  }
}

int ArgMax(const float* values, int count) {
  return static_cast<int>(std::max_element(values, values + count) - values);
}

// Before any work: the inputs' shape and every label.
void CheckExamples(const FloatExamples& inputs, const std::vector<int>& labels, int features,
                   int classes) {
  if (inputs.cols != features ||
      inputs.values.size() != static_cast<std::size_t>(inputs.rows) * inputs.cols) {
    throw Error("float twin inputs", "must have " + std::to_string(features) + " features");
  }
  CheckLabels(labels, inputs.rows, classes);
}

}  // namespace

FloatExamples RealValues(const DyadicInt8& inputs) {
  FloatExamples real;
  real.rows = inputs.rows;
  real.cols = inputs.cols;
  real.values.resize(inputs.mantissas.size());
  for (std::size_t i = 0; i < inputs.mantissas.size(); ++i) {
    real.values[i] = std::ldexp(static_cast<float>(inputs.mantissas[i]), -inputs.exponent);
  }
  return real;
}

FloatTwin::FloatTwin(const Network& network)
    : loss_(network.settings().loss), sgd_(network.settings().sgd) {
  for (const Linear& linear : network.linear_layers()) {
    Layer layer;
    layer.inputs = linear.inputs();
    layer.outputs = linear.outputs();
    const std::size_t weights = static_cast<std::size_t>(layer.inputs) * layer.outputs;
    std::vector<std::int32_t> state(linear.StateSize());
    linear.GetState(state.data());
    // The masters' exponents: the weights' plus kMasterBits, and the bias's (at the product's
    // exponent) plus kMasterBits.
    const int weight_exponent = linear.exponents().weight_exponent + Linear::kMasterBits;
    const int bias_exponent = linear.exponents().input_exponent + weight_exponent;
    for (std::size_t i = 0; i < weights; ++i) {
      layer.weights.push_back(std::ldexp(static_cast<float>(state[i]), -weight_exponent));
    }
    for (int i = 0; i < layer.outputs; ++i) {
      layer.bias.push_back(std::ldexp(static_cast<float>(state[weights + i]), -bias_exponent));
    }
    layer.weight_velocity.assign(weights, 0.0f);
    layer.bias_velocity.assign(layer.outputs, 0.0f);
    layer.weight_max_step = std::ldexp(static_cast<float>(sgd_.max_step), -weight_exponent);
    layer.bias_max_step = std::ldexp(static_cast<float>(sgd_.max_step), -bias_exponent);
    layers_.push_back(std::move(layer));
  }
}

const std::vector<float>& FloatTwin::Logits(const float* x, int rows) {
  const std::vector<float>* input = nullptr;
  for (std::size_t k = 0; k < layers_.size(); ++k) {
    Layer& layer = layers_[k];
    if (input == nullptr) {
      layer.input.assign(x, x + static_cast<std::size_t>(rows) * layer.inputs);
    } else {
      layer.input = *input;
    }
    layer.output.resize(static_cast<std::size_t>(rows) * layer.outputs);
    const bool relu = k + 1 < layers_.size();
    for (int row = 0; row < rows; ++row) {
      const float* in = &layer.input[static_cast<std::size_t>(row) * layer.inputs];
      float* out = &layer.output[static_cast<std::size_t>(row) * layer.outputs];
      for (int o = 0; o < layer.outputs; ++o) {
        const float y =
            layer.bias[o] +
            Dot(in, &layer.weights[static_cast<std::size_t>(o) * layer.inputs], layer.inputs);
        out[o] = relu ? std::max(y, 0.0f) : y;
      }
    }
    input = &layer.output;
  }
  return layers_.back().output;
}

void FloatTwin::BackwardAndUpdate(std::vector<float> gradient, int rows) {
  for (std::size_t k = layers_.size(); k-- > 0;) {
    Layer& layer = layers_[k];
    layer.weight_gradient.assign(layer.weights.size(), 0.0f);
    layer.bias_gradient.assign(layer.outputs, 0.0f);
    std::vector<float> input_gradient(k > 0 ? static_cast<std::size_t>(rows) * layer.inputs : 0);
    for (int row = 0; row < rows; ++row) {
      const float* in = &layer.input[static_cast<std::size_t>(row) * layer.inputs];
      for (int o = 0; o < layer.outputs; ++o) {
        const float g = gradient[static_cast<std::size_t>(row) * layer.outputs + o];
        if (g == 0) continue;
        layer.bias_gradient[o] += g;
        const std::size_t weight_row = static_cast<std::size_t>(o) * layer.inputs;
        Axpy(g, in, &layer.weight_gradient[weight_row], layer.inputs);
        if (k > 0) {
          Axpy(g, &layer.weights[weight_row],
               &input_gradient[static_cast<std::size_t>(row) * layer.inputs], layer.inputs);
        }
      }
    }
    // The input is the previous layer's ReLU output: the gradient passes where it is positive.
    for (std::size_t i = 0; i < input_gradient.size(); ++i) {
      if (layer.input[i] <= 0) input_gradient[i] = 0;
    }
    gradient = std::move(input_gradient);
  }
  for (Layer& layer : layers_) {
    Move(sgd_, layer.weight_max_step, layer.weight_gradient, &layer.weights,
         &layer.weight_velocity);
    Move(sgd_, layer.bias_max_step, layer.bias_gradient, &layer.bias, &layer.bias_velocity);
  }
}

FloatEpochStatistics FloatTwin::TrainEpoch(const FloatExamples& inputs,
                                           const std::vector<int>& labels, int batch,
                                           std::uint64_t seed,
                                           const std::function<void(int, int)>& progress) {
  CheckExamples(inputs, labels, layers_.front().inputs, layers_.back().outputs);
  if (batch < 1) throw Error("batch", "must be at least 1, got " + std::to_string(batch));
  const std::vector<int> order = EpochOrder(inputs.rows, seed);
  const int classes = layers_.back().outputs;
  FloatEpochStatistics epoch;
  std::vector<float> x;
  for (int first = 0; first < inputs.rows; first += batch) {
    const int count = std::min(batch, inputs.rows - first);
    x.resize(static_cast<std::size_t>(count) * inputs.cols);
    for (int i = 0; i < count; ++i) {
      std::copy_n(&inputs.values[static_cast<std::size_t>(order[first + i]) * inputs.cols],
                  inputs.cols, &x[static_cast<std::size_t>(i) * inputs.cols]);
    }
    std::vector<float> gradient = Logits(x.data(), count);
    for (int i = 0; i < count; ++i) {
      float* row = &gradient[static_cast<std::size_t>(i) * classes];
      const int label = labels[order[first + i]];
      if (loss_ == Loss::kMse) {
        for (int c = 0; c < classes; ++c) {
          row[c] -= c == label ? 1.0f : 0.0f;
          epoch.loss += double{row[c]} * row[c];
        }
      } else {
        const float largest = *std::max_element(row, row + classes);
        float sum = 0;
        for (int c = 0; c < classes; ++c) sum += row[c] = std::exp(row[c] - largest);
        for (int c = 0; c < classes; ++c) row[c] /= sum;
        epoch.loss -= std::log2(std::max(double{row[label]}, 1e-30));
        row[label] -= 1.0f;
      }
    }
    BackwardAndUpdate(std::move(gradient), count);
    epoch.examples += count;
    if (progress) progress(epoch.examples, inputs.rows);
  }
  return epoch;
}

int FloatTwin::CountCorrect(const FloatExamples& inputs, const std::vector<int>& labels) {
  CheckExamples(inputs, labels, layers_.front().inputs, layers_.back().outputs);
  constexpr int kChunk = 256;
  const int classes = layers_.back().outputs;
  int correct = 0;
  for (int first = 0; first < inputs.rows; first += kChunk) {
    const int count = std::min(kChunk, inputs.rows - first);
    const std::vector<float>& logits =
        Logits(&inputs.values[static_cast<std::size_t>(first) * inputs.cols], count);
    for (int i = 0; i < count; ++i) {
      correct +=
          ArgMax(&logits[static_cast<std::size_t>(i) * classes], classes) == labels[first + i];
    }
  }
  return correct;
}

}  // namespace train
}  // namespace lowbit
