// The float twin (train/float_twin.h): plain float32 loops, vectorized by the compiler, and the
// integer layers' image loops (train/image_layers.h) on floats. Outside the training step's
// objects: the float-free check does not scan it.
#include "train/float_twin.h"

#include <algorithm>
#include <cmath>

namespace lowbit {
namespace train {
namespace {

// The products run over every weight of every example: GCC compiles AVX-512 and AVX2 clones as
// well, chosen when the program loads. Sanitizer builds keep one plain version (their runtimes
// start after the loader resolves the clones).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define LOWBIT_FLOAT_TWIN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define LOWBIT_FLOAT_TWIN_CLONES
#endif

// The products run over every weight of every example (row) in one call each, so that the
// clone is chosen once per product, not per row.

// y (rows x outputs) = x (rows x inputs) W^T + b, with W^T given (inputs x outputs): each row
// a sum of rows of W^T, vectorized along the outputs.
// Restrict: the outputs cannot alias the weights, so the short loops need no overlap checks.
LOWBIT_FLOAT_TWIN_CLONES void MultiplyRows(const float* __restrict__ x, int rows, int inputs,
                                           const float* __restrict__ weights_transposed,
                                           const float* __restrict__ bias, int outputs,
                                           float* __restrict__ y) {
  for (int row = 0; row < rows; ++row) {
    const float* in = x + static_cast<std::size_t>(row) * inputs;
    float* out = y + static_cast<std::size_t>(row) * outputs;
    for (int o = 0; o < outputs; ++o) out[o] = bias[o];
    for (int i = 0; i < inputs; ++i) {
      const float a = in[i];
      const float* w = weights_transposed + static_cast<std::size_t>(i) * outputs;
      for (int o = 0; o < outputs; ++o) out[o] += a * w[o];
    }
  }
}

// weight_gradient (outputs x inputs) += dy^T x and bias_gradient += dy's column sums; with
// `weights`, also dx (rows x inputs) = dy W.
LOWBIT_FLOAT_TWIN_CLONES void BackwardRows(const float* __restrict__ dy,
                                           const float* __restrict__ x, int rows, int inputs,
                                           int outputs, const float* __restrict__ weights,
                                           float* __restrict__ weight_gradient,
                                           float* __restrict__ bias_gradient,
                                           float* __restrict__ dx) {
  for (int row = 0; row < rows; ++row) {
    const float* in = x + static_cast<std::size_t>(row) * inputs;
    float* back = dx == nullptr ? nullptr : dx + static_cast<std::size_t>(row) * inputs;
    for (int o = 0; o < outputs; ++o) {
      const float g = dy[static_cast<std::size_t>(row) * outputs + o];
      if (g == 0) continue;
      bias_gradient[o] += g;
      float* wg = weight_gradient + static_cast<std::size_t>(o) * inputs;
      for (int i = 0; i < inputs; ++i) wg[i] += g * in[i];
      if (back == nullptr) continue;
      const float* w = weights + static_cast<std::size_t>(o) * inputs;
      for (int i = 0; i < inputs; ++i) back[i] += g * w[i];
    }
  }
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
    : loss_(network.settings().loss),
      sgd_(network.settings().sgd),
      input_(network.settings().architecture.input) {
  const Architecture& architecture = network.settings().architecture;
  ImageShape shape = input_;
  for (std::size_t k = 0; k < architecture.layers.size(); ++k) {
    Layer layer;
    layer.kind = architecture.layers[k].kind;
    layer.window = architecture.layers[k].window;
    layer.input_shape = shape;
    layer.output_shape = network.shapes()[k];
    shape = layer.output_shape;
    if (network.layers()[k]->learns()) {
      const Linear& linear = LayerWeights(*network.layers()[k]);
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
    }
    layers_.push_back(std::move(layer));
  }
}

const std::vector<float>& FloatTwin::Logits(const float* x, int rows) {
  std::vector<float> first(x, x + static_cast<std::size_t>(rows) * input_.size());
  const std::vector<float>* input = &first;
  std::vector<float> weights_transposed;
  for (Layer& layer : layers_) {
    const std::size_t out_size = static_cast<std::size_t>(rows) * layer.output_shape.size();
    std::vector<float>& output = layer.output;
    output.resize(out_size);
    switch (layer.kind) {
      case LayerKind::kLinear:
      case LayerKind::kConv2d: {
        // A Conv2d multiplies its im2col patches, as the integer layer does.
        const int product_rows = static_cast<int>(out_size / layer.outputs);
        if (layer.kind == LayerKind::kLinear) {
          layer.operand = *input;
        } else {
          layer.operand.resize(static_cast<std::size_t>(product_rows) * layer.inputs +
                               kIm2colSlackBytes / sizeof(float));
          Im2col(input->data(), rows, layer.input_shape, layer.window, layer.output_shape,
                 layer.operand.data());
        }
        weights_transposed.resize(layer.weights.size());
        for (int o = 0; o < layer.outputs; ++o) {
          for (int i = 0; i < layer.inputs; ++i) {
            weights_transposed[static_cast<std::size_t>(i) * layer.outputs + o] =
                layer.weights[static_cast<std::size_t>(o) * layer.inputs + i];
          }
        }
        MultiplyRows(layer.operand.data(), product_rows, layer.inputs, weights_transposed.data(),
                     layer.bias.data(), layer.outputs, output.data());
        break;
      }
      case LayerKind::kMaxPool:
        layer.operand = *input;
        MaxPool(input->data(), rows, layer.input_shape, layer.window.kernel, layer.output_shape,
                output.data());
        break;
      case LayerKind::kAvgPool: {
        const int size = layer.window.kernel;
        const int channels = layer.input_shape.channels;
        std::fill(output.begin(), output.end(), 0.0f);
        for (int b = 0; b < rows; ++b) {
          for (int y = 0; y < layer.output_shape.height * size; ++y) {
            for (int x_ = 0; x_ < layer.output_shape.width * size; ++x_) {
              for (int c = 0; c < channels; ++c) {
                output[static_cast<std::size_t>(b) * layer.output_shape.size() +
                       ((y / size) * layer.output_shape.width + x_ / size) * channels + c] +=
                    (*input)[static_cast<std::size_t>(b) * layer.input_shape.size() +
                             (y * layer.input_shape.width + x_) * channels + c];
              }
            }
          }
        }
        for (float& v : output) v /= static_cast<float>(size * size);
        break;
      }
      case LayerKind::kRelu:
        for (std::size_t i = 0; i < out_size; ++i) output[i] = std::max((*input)[i], 0.0f);
        break;
      case LayerKind::kFlatten:
        std::copy(input->begin(), input->end(), output.begin());
        break;
    }
    input = &output;
  }
  return layers_.back().output;
}

void FloatTwin::BackwardAndUpdate(std::vector<float> gradient, int rows) {
  std::vector<float> input_gradient;
  std::vector<float> patch_gradient;
  for (std::size_t k = layers_.size(); k-- > 0;) {
    Layer& layer = layers_[k];
    const bool wanted = k > 0;  // the first layer's input needs no gradient
    input_gradient.assign(wanted ? static_cast<std::size_t>(rows) * layer.input_shape.size() : 0,
                          0.0f);
    switch (layer.kind) {
      case LayerKind::kLinear:
      case LayerKind::kConv2d: {
        const bool conv = layer.kind == LayerKind::kConv2d;
        const int product_rows = rows * layer.output_shape.height * layer.output_shape.width;
        layer.weight_gradient.assign(layer.weights.size(), 0.0f);
        layer.bias_gradient.assign(layer.outputs, 0.0f);
        float* dx = nullptr;
        if (wanted) {
          patch_gradient.assign(conv ? static_cast<std::size_t>(product_rows) * layer.inputs : 0,
                                0.0f);
          dx = conv ? patch_gradient.data() : input_gradient.data();
        }
        BackwardRows(gradient.data(), layer.operand.data(), product_rows, layer.inputs,
                     layer.outputs, layer.weights.data(), layer.weight_gradient.data(),
                     layer.bias_gradient.data(), dx);
        if (wanted && conv) {
          Col2im(patch_gradient.data(), rows, layer.input_shape, layer.window, layer.output_shape,
                 input_gradient.data());
        }
        break;
      }
      case LayerKind::kMaxPool:
        if (wanted) {
          MaxPoolGradient(layer.operand.data(), rows, layer.input_shape, layer.window.kernel,
                          layer.output_shape, layer.output.data(), gradient.data(),
                          input_gradient.data());
        }
        break;
      case LayerKind::kAvgPool: {
        const int size = layer.window.kernel;
        const int channels = layer.input_shape.channels;
        const float area = static_cast<float>(size * size);
        for (int b = 0; wanted && b < rows; ++b) {
          for (int y = 0; y < layer.output_shape.height * size; ++y) {
            for (int x = 0; x < layer.output_shape.width * size; ++x) {
              for (int c = 0; c < channels; ++c) {
                input_gradient[static_cast<std::size_t>(b) * layer.input_shape.size() +
                               (y * layer.input_shape.width + x) * channels + c] =
                    gradient[static_cast<std::size_t>(b) * layer.output_shape.size() +
                             ((y / size) * layer.output_shape.width + x / size) * channels + c] /
                    area;
              }
            }
          }
        }
        break;
      }
      case LayerKind::kRelu:
        for (std::size_t i = 0; i < input_gradient.size(); ++i) {
          input_gradient[i] = layer.output[i] > 0 ? gradient[i] : 0.0f;
        }
        break;
      case LayerKind::kFlatten:
        if (wanted) input_gradient = gradient;
        break;
    }
    std::swap(gradient, input_gradient);
  }
  for (Layer& layer : layers_) {
    if (layer.weights.empty()) continue;
    Move(sgd_, layer.weight_max_step, layer.weight_gradient, &layer.weights,
         &layer.weight_velocity);
    Move(sgd_, layer.bias_max_step, layer.bias_gradient, &layer.bias, &layer.bias_velocity);
  }
}

FloatEpochStatistics FloatTwin::TrainEpoch(const FloatExamples& inputs,
                                           const std::vector<int>& labels, int batch,
                                           std::uint64_t seed,
                                           const std::function<void(int, int)>& progress) {
  CheckExamples(inputs, labels, input_.size(), layers_.back().outputs);
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
  CheckExamples(inputs, labels, input_.size(), layers_.back().outputs);
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
