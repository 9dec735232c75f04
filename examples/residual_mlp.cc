// A two-layer quantized MLP with a residual connection, y = W2 relu(W1 x + b1) + b2 + x, run in
// float and quantized (doc/quantization.md): uint8 activations, int8 per-channel weights, int32
// biases, the ReLU fused as a clamp, and the residual add fused into the second GEMM as an
// output stage. Prints the quantized output's error against the float network, and checks that
// the fused add gives the bits of the second GEMM stored and then added with QuantizedAdd.
// Usage: residual_mlp [features batch].
#include <lowbit/lowbit.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

// Matrices are stored as the GEMM reads them: weights row-major (out x in), activations
// column-major (features x batch, one example per column).
struct FloatLayer {
  int outputs, inputs;
  std::vector<float> weights, bias;
};

// weights * input + bias, in double, for a features x batch column-major input.
std::vector<float> Affine(const FloatLayer& layer, const std::vector<float>& input, int batch) {
  std::vector<float> output(static_cast<std::size_t>(layer.outputs) * batch);
  for (int b = 0; b < batch; ++b) {
    for (int o = 0; o < layer.outputs; ++o) {
      double sum = layer.bias[o];
      for (int i = 0; i < layer.inputs; ++i) {
        sum += double{layer.weights[o * layer.inputs + i]} * input[b * layer.inputs + i];
      }
      output[b * layer.outputs + o] = static_cast<float>(sum);
    }
  }
  return output;
}

lowbit::QuantizationParams RangeOf(const std::vector<float>& values) {
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  return lowbit::ChooseQuantizationParams(*min, *max);
}

// A layer's quantized weights (int8, symmetric, one scale per output channel), its bias at the
// accumulators' scale (input scale times each channel's weight scale), and the per-channel
// multipliers that take the accumulators to `output`'s scale.
struct QuantizedLayer {
  std::vector<std::int8_t> weights;
  std::vector<std::int32_t> bias;
  lowbit::FixedPointMultipliers requantize;
};

QuantizedLayer Quantize(const FloatLayer& layer, const lowbit::QuantizationParams& input,
                        const lowbit::QuantizationParams& output) {
  std::vector<float> channel_min(layer.outputs), channel_max(layer.outputs);
  for (int o = 0; o < layer.outputs; ++o) {
    const auto row = layer.weights.begin() + o * layer.inputs;
    channel_min[o] = *std::min_element(row, row + layer.inputs);
    channel_max[o] = *std::max_element(row, row + layer.inputs);
  }
  const std::vector<lowbit::QuantizationParams> weight_params =
      lowbit::ChooseQuantizationParamsPerChannel(channel_min, channel_max);
  QuantizedLayer quantized;
  quantized.weights.resize(layer.weights.size());
  std::vector<double> multipliers(layer.outputs);
  for (int o = 0; o < layer.outputs; ++o) {
    lowbit::Quantize(layer.weights.data() + o * layer.inputs, layer.inputs, weight_params[o],
                     quantized.weights.data() + o * layer.inputs);
    const double accumulator_scale = input.scale * weight_params[o].scale;
    quantized.bias.push_back(
        static_cast<std::int32_t>(std::round(layer.bias[o] / accumulator_scale)));
    multipliers[o] = accumulator_scale / output.scale;
  }
  quantized.requantize = lowbit::QuantizeMultipliers(multipliers);
  return quantized;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 3) {
    std::fprintf(stderr, "usage: %s [features batch]\n", argv[0]);
    return 2;
  }
  const int features = argc > 1 ? std::stoi(argv[1]) : 64;
  const int batch = argc > 1 ? std::stoi(argv[2]) : 32;

  // ---- The float network and its activations on a random batch ----
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float weight_scale = 1.0f / std::sqrt(static_cast<float>(features));
  FloatLayer first{features, features, {}, {}}, second{features, features, {}, {}};
  for (FloatLayer* layer : {&first, &second}) {
    for (int i = 0; i < layer->outputs * layer->inputs; ++i) {
      layer->weights.push_back(normal(random) * weight_scale);
    }
    for (int o = 0; o < layer->outputs; ++o) layer->bias.push_back(0.1f * normal(random));
  }
  std::vector<float> x(static_cast<std::size_t>(features) * batch);
  for (float& value : x) value = normal(random);
  std::vector<float> hidden = Affine(first, x, batch);
  for (float& value : hidden) value = std::max(value, 0.0f);
  const std::vector<float> branch = Affine(second, hidden, batch);
  std::vector<float> y(branch.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = branch[i] + x[i];

  // ---- Quantization parameters, from the observed ranges (a calibration batch) ----
  const lowbit::QuantizationParams x_params = RangeOf(x);
  const lowbit::QuantizationParams hidden_params = RangeOf(hidden);  // [0, max]: zero point 0
  const lowbit::QuantizationParams branch_params = RangeOf(branch);
  const lowbit::QuantizationParams y_params = RangeOf(y);
  const QuantizedLayer first_q = Quantize(first, x_params, hidden_params);
  const QuantizedLayer second_q = Quantize(second, hidden_params, branch_params);
  const lowbit::QuantizedAddPlan residual_plan = lowbit::MakeQuantizedAddPlan(
      {lowbit::QuantizedType::Uint8(), {branch_params}, lowbit::ChannelAxis::kRow},
      {lowbit::QuantizedType::Uint8(), {x_params}, lowbit::ChannelAxis::kRow}, y_params);

  // ---- The quantized network: two GEMMs, integers only ----
  std::vector<std::uint8_t> x_q(x.size());
  lowbit::Quantize(x.data(), x.size(), x_params, x_q.data());
  lowbit::Context context;
  const auto weights = [&](const QuantizedLayer& layer) {
    return lowbit::MatrixMap<const std::int8_t>(layer.weights.data(), features, features,
                                                lowbit::Order::kRowMajor);
  };
  const auto activations = [&](const std::vector<std::uint8_t>& data) {
    return lowbit::MatrixMap<const std::uint8_t>(data.data(), features, batch,
                                                 lowbit::Order::kColMajor);
  };
  const auto bias = [&](const QuantizedLayer& layer) {
    return lowbit::OutputStageBiasAddition{
        lowbit::VectorMap<const std::int32_t>(layer.bias.data(), features),
        lowbit::ChannelAxis::kRow};
  };
  const auto requantize = [&](const QuantizedLayer& layer, std::int32_t zero_point) {
    return lowbit::OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
        lowbit::VectorMap<const std::int32_t>(layer.requantize.multipliers.data(), features),
        lowbit::VectorMap<const std::int32_t>(layer.requantize.exponents.data(), features),
        zero_point, lowbit::ChannelAxis::kRow};
  };
  // Symmetric weights have zero point 0: the lhs offset is 0, the rhs offset the activations'
  // -zero_point.
  std::vector<std::uint8_t> hidden_q(hidden.size());
  lowbit::MatrixMap<std::uint8_t> hidden_map(hidden_q.data(), features, batch,
                                             lowbit::Order::kColMajor);
  lowbit::GemmWithOutputPipeline(
      &context, weights(first_q), activations(x_q), &hidden_map, 0, -x_params.zero_point,
      std::make_tuple(bias(first_q), requantize(first_q, hidden_params.zero_point),
                      lowbit::OutputStageClamp{hidden_params.zero_point, 255},  // the ReLU
                      lowbit::OutputStageSaturatingCastToUint8{}));
  std::vector<std::uint8_t> y_q(y.size());
  lowbit::MatrixMap<std::uint8_t> y_map(y_q.data(), features, batch, lowbit::Order::kColMajor);
  lowbit::GemmWithOutputPipeline(
      &context, weights(second_q), activations(hidden_q), &y_map, 0, -hidden_params.zero_point,
      std::make_tuple(bias(second_q), requantize(second_q, branch_params.zero_point),
                      lowbit::MakeOutputStageQuantizedAdd(residual_plan, activations(x_q)),
                      lowbit::OutputStageSaturatingCastToUint8{}));

  // ---- The same add unfused: the branch stored in uint8, then QuantizedAdd ----
  std::vector<std::uint8_t> branch_q(branch.size()), y_unfused(y.size());
  lowbit::MatrixMap<std::uint8_t> branch_map(branch_q.data(), features, batch,
                                             lowbit::Order::kColMajor);
  lowbit::GemmWithOutputPipeline(
      &context, weights(second_q), activations(hidden_q), &branch_map, 0, -hidden_params.zero_point,
      std::make_tuple(bias(second_q), requantize(second_q, branch_params.zero_point),
                      lowbit::OutputStageSaturatingCastToUint8{}));
  lowbit::QuantizedAdd(residual_plan, branch_q.data(), x_q.data(), branch_q.size(),
                       y_unfused.data());
  const bool fused_is_exact = y_q == y_unfused;

  // ---- The error against the float network, in steps of the output's scale; for comparison,
  // the error of quantizing the float output itself (at most half a step) ----
  const auto error_steps = [&](const std::vector<std::uint8_t>& quantized, double* mean) {
    std::vector<float> back(quantized.size());
    lowbit::Dequantize(quantized.data(), quantized.size(), y_params, back.data());
    double worst = 0, total = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double error = std::abs(double{back[i]} - y[i]) / y_params.scale;
      worst = std::max(worst, error);
      total += error;
    }
    *mean = total / static_cast<double>(y.size());
    return worst;
  };
  std::vector<std::uint8_t> y_rounded(y.size());
  lowbit::Quantize(y.data(), y.size(), y_params, y_rounded.data());
  double mean = 0, rounding_mean = 0;
  const double worst = error_steps(y_q, &mean);
  const double rounding_worst = error_steps(y_rounded, &rounding_mean);
  std::printf(
      "residual MLP %d-%d-%d (+ input), batch %d, uint8 activations, int8 per-channel "
      "weights\n",
      features, features, features, batch);
  std::printf("output scale %.5f: mean error %.3f steps, worst %.3f steps (%.5f in real terms)\n",
              y_params.scale, mean, worst, worst * y_params.scale);
  std::printf("the float output quantized directly: mean error %.3f steps, worst %.3f steps\n",
              rounding_mean, rounding_worst);
  std::printf("fused residual stage = GEMM stored + QuantizedAdd: %s\n",
              fused_is_exact ? "bit for bit" : "DIFFERENT");
  return fused_is_exact ? 0 : 1;
}
