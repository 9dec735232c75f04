// The integer-only network (train/network.h): layers built from an architecture, exponents chosen
// from the layers' fan-in, the losses' gradients, and the step that runs forward, backward and
// update.
#include "train/network.h"

#include <algorithm>

#include "lowbit/fixedpoint/fixedpoint.h"

namespace lowbit {
namespace train {
namespace {

// The finest weight exponent at which He's initial bound sqrt(6 / inputs) still leaves the
// weights a factor of two of headroom in int8: 2 * bound * 2^s <= 127.
int WeightExponent(int inputs) {
  int exponent = 0;
  while (std::int64_t{24} << (2 * (exponent + 1)) <= std::int64_t{127} * 127 * inputs) {
    ++exponent;
  }
  return exponent;
}

}  // namespace

void Softmax(const std::int8_t* logits, int count, int exponent, std::int32_t* probabilities) {
  // exp(z - max z) in Q0.31 from the differences as FixedPoint<int32, 5>: 26 fractional bits,
  // down to -32, below which exp is 0 in Q0.31 anyway.
  using Input = fixedpoint::FixedPoint<std::int32_t, 5>;
  const std::int8_t largest = *std::max_element(logits, logits + count);
  std::int64_t sum = 0;
  for (int i = 0; i < count; ++i) {
    const std::int64_t difference = std::int64_t{logits[i]} - largest;  // in [-255, 0]
    const std::int64_t raw = exponent <= 26 ? difference * (std::int64_t{1} << (26 - exponent))
                                            : -((-difference) >> (exponent - 26));
    const std::int64_t clamped = std::max<std::int64_t>(raw, -(std::int64_t{32} << 26));
    probabilities[i] =
        fixedpoint::AccurateExpOnNegativeValues(Input::FromRaw(static_cast<std::int32_t>(clamped)))
            .raw();
    sum += probabilities[i];
  }
  // The largest entry's exp is 1 (2^31 - 1), so sum >= 2^31 - 1 and each quotient <= 2^15.
  for (int i = 0; i < count; ++i) {
    probabilities[i] = static_cast<std::int32_t>((std::int64_t{probabilities[i]} << 15) / sum);
  }
}

std::int32_t MinusLog2(std::int32_t probability) {
  // log2 of a Q0.15 value as 8.8 fixed point: the integer part from the leading bit, each
  // fractional bit by squaring the mantissa in [1, 2) (Q1.30) and halving when it reaches 2.
  const std::int32_t p = std::max(probability, 1);
  int integer = 0;
  while ((p >> (integer + 1)) != 0) ++integer;
  std::int64_t mantissa = std::int64_t{p} << (30 - integer);
  std::int32_t fraction = 0;
  for (int bit = 7; bit >= 0; --bit) {
    mantissa = (mantissa * mantissa) >> 30;
    if (mantissa >= (std::int64_t{2} << 30)) {
      mantissa >>= 1;
      fraction |= 1 << bit;
    }
  }
  return ((15 - integer) << 8) - fraction;
}

Architecture MlpArchitecture(const std::vector<int>& widths) {
  Architecture architecture;
  if (!widths.empty()) architecture.input = {1, 1, widths.front()};
  for (std::size_t k = 1; k < widths.size(); ++k) {
    architecture.layers.push_back({LayerKind::kLinear, widths[k], {}});
    if (k + 1 < widths.size()) architecture.layers.push_back({LayerKind::kRelu, 0, {}});
  }
  return architecture;
}

std::vector<ImageShape> LayerShapes(const Architecture& architecture, const std::string& argument) {
  const auto fail = [&argument](std::size_t k, const std::string& fault) {
    throw Error(argument, "layer " + std::to_string(k + 1) + ": " + fault);
  };
  if (architecture.input.size() < 1 || architecture.input.height < 1 ||
      architecture.input.width < 1) {
    throw Error(argument, "needs an input of at least one value");
  }
  if (architecture.layers.empty() || architecture.layers.back().kind != LayerKind::kLinear) {
    throw Error(argument, "must end with a Linear layer, whose outputs are the classes");
  }
  std::vector<ImageShape> shapes;
  ImageShape shape = architecture.input;
  bool flat = false;  // after a Flatten or Linear layer, image layers no longer apply
  for (std::size_t k = 0; k < architecture.layers.size(); ++k) {
    const LayerSpec& spec = architecture.layers[k];
    const Window& window = spec.window;
    const bool image_layer = spec.kind == LayerKind::kConv2d || spec.kind == LayerKind::kMaxPool ||
                             spec.kind == LayerKind::kAvgPool;
    if (image_layer && flat) fail(k, "image layers must come before Flatten and Linear layers");
    if (image_layer && (window.kernel < 1 || window.stride < 1 || window.padding < 0 ||
                        window.Outputs(shape.height) < 1 || window.Outputs(shape.width) < 1)) {
      fail(k, "a " + std::to_string(window.kernel) + " x " + std::to_string(window.kernel) +
                  " window (stride " + std::to_string(window.stride) + ", padding " +
                  std::to_string(window.padding) + ") does not fit its " +
                  std::to_string(shape.height) + " x " + std::to_string(shape.width) + " input");
    }
    if ((spec.kind == LayerKind::kLinear || spec.kind == LayerKind::kConv2d) && spec.outputs < 1) {
      fail(k, "needs at least one output, got " + std::to_string(spec.outputs));
    }
    switch (spec.kind) {
      case LayerKind::kLinear:
        shape = {1, 1, spec.outputs};
        flat = true;
        break;
      case LayerKind::kConv2d:
        shape = {window.Outputs(shape.height), window.Outputs(shape.width), spec.outputs};
        break;
      case LayerKind::kMaxPool:
      case LayerKind::kAvgPool:
        shape = {window.Outputs(shape.height), window.Outputs(shape.width), shape.channels};
        break;
      case LayerKind::kRelu:
        break;
      case LayerKind::kFlatten:
        shape = {1, 1, shape.size()};
        flat = true;
        break;
    }
    shapes.push_back(shape);
  }
  return shapes;
}

const Linear& LayerWeights(const Layer& layer) {
  if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) return conv->filters();
  if (const auto* linear = dynamic_cast<const Linear*>(&layer)) return *linear;
  throw Error("layer", "has no weights");
}

Network::Network(const NetworkSettings& settings) : settings_(settings), seeds_(settings.seed) {
  shapes_ = LayerShapes(settings.architecture, "architecture");
  if (settings.bits < 2 || settings.bits > 8) {
    throw Error("bits", "must be in [2, 8], got " + std::to_string(settings.bits));
  }
  SeedSequence init(seeds_.Next64());
  ImageShape shape = settings.architecture.input;
  int exponent = settings.input_exponent;
  // The exponents of a layer with weights whose products sum `fan_in` terms: the forward shift
  // brings its output to the activation exponent, the backward shift keeps the gradient's.
  const auto exponents_for = [&](int fan_in) {
    LinearExponents exponents;
    exponents.input_exponent = exponent;
    exponents.weight_exponent = WeightExponent(fan_in);
    exponents.forward_shift =
        exponents.input_exponent + exponents.weight_exponent - settings.activation_exponent;
    exponents.backward_shift = exponents.weight_exponent;
    return exponents;
  };
  for (std::size_t k = 0; k < settings.architecture.layers.size(); ++k) {
    const LayerSpec& spec = settings.architecture.layers[k];
    const Window& window = spec.window;
    switch (spec.kind) {
      case LayerKind::kLinear:
        layers_.push_back(std::make_unique<Linear>(shape.size(), spec.outputs,
                                                   exponents_for(shape.size()), settings.bits,
                                                   settings.rounding, &init));
        exponent = settings.activation_exponent;
        break;
      case LayerKind::kConv2d:
        layers_.push_back(
            std::make_unique<Conv2d>(shape, spec.outputs, window,
                                     exponents_for(window.kernel * window.kernel * shape.channels),
                                     settings.bits, settings.rounding, &init));
        exponent = settings.activation_exponent;
        break;
      case LayerKind::kMaxPool:
        layers_.push_back(std::make_unique<MaxPool2d>(shape, window.kernel));
        break;
      case LayerKind::kAvgPool:
        layers_.push_back(std::make_unique<AvgPool2d>(shape, window.kernel, settings.rounding));
        break;
      case LayerKind::kRelu:
        layers_.push_back(std::make_unique<Relu>());
        break;
      case LayerKind::kFlatten:
        layers_.push_back(std::make_unique<Flatten>());
        break;
    }
    if (layers_.back()->learns()) forward_exponents_.push_back(exponent);
    shape = shapes_[k];
  }
  for (std::size_t k = 1; k < layers_.size(); ++k) {
    if (settings.architecture.layers[k].kind == LayerKind::kRelu && layers_[k - 1]->FuseRelu()) {
      static_cast<Relu&>(*layers_[k]).Fuse();
    }
  }
}

std::vector<Layer*> Network::LearningLayers() const {
  std::vector<Layer*> learning;
  for (const std::unique_ptr<Layer>& layer : layers_) {
    if (layer->learns()) learning.push_back(layer.get());
  }
  return learning;
}

const DyadicInt8& Network::Forward(Context* context, const DyadicInt8& input) {
  const DyadicInt8* x = &input;
  for (const std::unique_ptr<Layer>& layer : layers_) {
    if (layer->HandsOn()) continue;
    x = &layer->Forward(context, *x, layer->rounds() ? seeds_.Next() : 0);
  }
  return *x;
}

StepStatistics Network::TrainStep(Context* context, const DyadicInt8& input,
                                  const std::vector<int>& labels) {
  CheckLabels(labels, input.rows, settings_.architecture.classes());
  const DyadicInt8& output = Forward(context, input);
  StepStatistics statistics;
  DyadicInt8 gradient(output.rows, output.cols, output.exponent);
  if (settings_.loss == Loss::kMse) {
    // Against one-hot targets 1.0 at the output's exponent: the gradient (Y - T) at the
    // output's exponent (the loss's factor 2 / batch is in the learning rate).
    const std::int32_t one = std::min(std::int32_t{1} << output.exponent, QMax(settings_.bits));
    for (int row = 0; row < output.rows; ++row) {
      for (int col = 0; col < output.cols; ++col) {
        const std::int32_t difference = output.at(row, col) - (col == labels[row] ? one : 0);
        statistics.loss_mantissa += std::int64_t{difference} * difference;
        gradient.at(row, col) = static_cast<std::int8_t>(std::clamp(difference, QMin(8), QMax(8)));
      }
    }
    statistics.loss_exponent = 2 * output.exponent;
  } else {
    // p - y in Q0.15, rounded to nearest to exponent kCrossEntropyGradientExponent.
    gradient.exponent = kCrossEntropyGradientExponent;
    std::vector<std::int32_t> probabilities(output.cols);
    for (int row = 0; row < output.rows; ++row) {
      Softmax(&output.mantissas[static_cast<std::size_t>(row) * output.cols], output.cols,
              output.exponent, probabilities.data());
      statistics.loss_mantissa += MinusLog2(probabilities[labels[row]]);
      for (int col = 0; col < output.cols; ++col) {
        const std::int32_t difference =
            probabilities[col] - (col == labels[row] ? std::int32_t{1} << 15 : 0);
        gradient.at(row, col) = static_cast<std::int8_t>(
            std::clamp(ShiftRound(difference, 15 - kCrossEntropyGradientExponent,
                                  TrainRounding::kNearest, 0, row, col),
                       QMin(8), QMax(8)));
      }
    }
    statistics.loss_exponent = 8;
  }
  backward_exponents_.clear();
  DyadicInt8 input_gradient;
  for (std::size_t k = layers_.size(); k-- > 0;) {
    Layer& layer = *layers_[k];
    if (layer.HandsOn()) continue;
    if (layer.learns()) {
      backward_exponents_.insert(backward_exponents_.begin(),
                                 layer.InputGradientExponent(gradient.exponent));
    }
    layer.Backward(context, gradient, layer.rounds() ? seeds_.Next() : 0,
                   k > 0 ? &input_gradient : nullptr);
    if (layer.learns()) {
      statistics.clipped += layer.clipped_outputs();
      statistics.outputs += static_cast<std::int64_t>(input.rows) * shapes_[k].size();
    }
    std::swap(gradient, input_gradient);
  }
  for (const std::unique_ptr<Layer>& layer : layers_) layer->Update(settings_.sgd, &seeds_);
  return statistics;
}

std::vector<int> Network::Predict(Context* context, const DyadicInt8& input) {
  const DyadicInt8& output = Forward(context, input);
  std::vector<int> predictions(output.rows);
  for (int row = 0; row < output.rows; ++row) {
    int best = 0;
    for (int col = 1; col < output.cols; ++col) {
      if (output.at(row, col) > output.at(row, best)) best = col;
    }
    predictions[row] = best;
  }
  return predictions;
}

namespace {

DyadicInt8 Gather(const DyadicInt8& inputs, const std::vector<int>& order, int first, int count) {
  DyadicInt8 batch(count, inputs.cols, inputs.exponent);
  for (int i = 0; i < count; ++i) {
    std::copy_n(
        inputs.mantissas.begin() + static_cast<std::ptrdiff_t>(order[first + i]) * inputs.cols,
        inputs.cols, batch.mantissas.begin() + static_cast<std::ptrdiff_t>(i) * inputs.cols);
  }
  return batch;
}

// Before any step: the labels' count and range, and the batch.
void CheckExamples(const Network& network, const DyadicInt8& inputs, const std::vector<int>& labels,
                   int batch) {
  CheckLabels(labels, inputs.rows, network.settings().architecture.classes());
  if (batch < 1) throw Error("batch", "must be at least 1, got " + std::to_string(batch));
}

}  // namespace

void CheckLabels(const std::vector<int>& labels, int examples, int classes) {
  if (static_cast<int>(labels.size()) != examples) {
    throw Error("labels", "must hold one label per example (" + std::to_string(examples) +
                              "), got " + std::to_string(labels.size()));
  }
  for (const int label : labels) {
    if (label < 0 || label >= classes) {
      throw Error("labels",
                  "must be in [0, " + std::to_string(classes) + "), got " + std::to_string(label));
    }
  }
}

std::vector<int> EpochOrder(int examples, std::uint64_t seed) {
  std::vector<int> order(examples);
  for (int i = 0; i < examples; ++i) order[i] = i;
  // Fisher-Yates with the run's own generator: the same order on every platform.
  SeedSequence shuffle(seed);
  for (int i = examples - 1; i > 0; --i) {
    std::swap(order[i], order[shuffle.Next64() % static_cast<std::uint64_t>(i + 1)]);
  }
  return order;
}

EpochStatistics TrainEpoch(Network* network, Context* context, const DyadicInt8& inputs,
                           const std::vector<int>& labels, int batch, std::uint64_t seed,
                           const std::function<void(int, int)>& progress) {
  CheckExamples(*network, inputs, labels, batch);
  const std::vector<int> order = EpochOrder(inputs.rows, seed);
  EpochStatistics epoch;
  std::vector<int> batch_labels;
  for (int first = 0; first < inputs.rows; first += batch) {
    const int count = std::min(batch, inputs.rows - first);
    batch_labels.resize(count);
    for (int i = 0; i < count; ++i) batch_labels[i] = labels[order[first + i]];
    const StepStatistics step =
        network->TrainStep(context, Gather(inputs, order, first, count), batch_labels);
    epoch.totals.loss_mantissa += step.loss_mantissa;
    epoch.totals.loss_exponent = step.loss_exponent;
    epoch.totals.clipped += step.clipped;
    epoch.totals.outputs += step.outputs;
    epoch.examples += count;
    if (progress) progress(epoch.examples, inputs.rows);
  }
  return epoch;
}

int CountCorrect(Network* network, Context* context, const DyadicInt8& inputs,
                 const std::vector<int>& labels, int batch) {
  CheckExamples(*network, inputs, labels, batch);
  std::vector<int> order(inputs.rows);
  for (int i = 0; i < inputs.rows; ++i) order[i] = i;
  int correct = 0;
  for (int first = 0; first < inputs.rows; first += batch) {
    const int count = std::min(batch, inputs.rows - first);
    const std::vector<int> predictions =
        network->Predict(context, Gather(inputs, order, first, count));
    for (int i = 0; i < count; ++i) correct += predictions[i] == labels[first + i];
  }
  return correct;
}

}  // namespace train
}  // namespace lowbit
